"""The deterministic, event-sourced two-player table. Pure: no network or protobuf."""
