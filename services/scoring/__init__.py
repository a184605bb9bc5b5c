"""The scoring service."""
