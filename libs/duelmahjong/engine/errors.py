"""Engine errors: which kind of wrong, with a readable reason (the gRPC edge alone maps them)."""

from __future__ import annotations


class EngineError(ValueError):
    """Base of every error the engine raises on bad input."""


class IllegalActionError(EngineError):
    """An action that is not legal in the current state; the state is left untouched.

    ``reason`` is the readable explanation a service sends back to the client.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SettingsError(EngineError):
    """Room settings that cannot describe a table (a probability above 1, an unknown profile…)."""


class ReplayError(EngineError):
    """An event log that does not fold into a table (wrong first event, unknown event kind…)."""
