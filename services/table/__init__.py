"""The table service."""
