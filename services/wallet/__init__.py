"""The wallet service."""
