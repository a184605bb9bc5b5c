"""The matchmaking service."""
