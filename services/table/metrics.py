"""The table server's own metrics, ``duel_table_<what>_<unit>`` (dashboards read these names)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import Counter, Gauge, Histogram

from duelmahjong.platform.metrics import ServiceMetrics


@dataclass
class TableMetrics:
    """The table server's own metrics, ``duel_table_<what>_<unit>`` (dashboards read these names)."""

    live_tables: Gauge
    actions: Counter
    action_latency: Histogram
    timeouts: Counter
    autoplays: Counter
    reconnects: Counter
    escapes: Counter
    queue_full: Counter
    tickets_verified: Counter
    hands: Counter
    fenced: Counter
    settlements_unclaimed: Counter
    settlement_latency: Histogram
    settlements_foreign: Counter
    # actions' children by (kind, origin): labels() checks and locks on every call, once per action.
    _actions_by: dict[tuple[str, str], Counter] = field(default_factory=dict)

    def action_applied(self, kind: str, origin: str) -> None:
        child = self._actions_by.get((kind, origin))
        if child is None:
            child = self._actions_by[kind, origin] = self.actions.labels(kind=kind, origin=origin)
        child.inc()

    @classmethod
    def create(cls, metrics: ServiceMetrics) -> TableMetrics:
        return cls(
            live_tables=metrics.gauge("live_tables", "count", "tables hosted now"),
            actions=metrics.counter(
                "actions", "total", "actions applied, by engine kind and origin", ["kind", "origin"]
            ),
            action_latency=metrics.histogram(
                "action_latency", "seconds", "a seat's action received → its events written ahead and sent"
            ),
            timeouts=metrics.counter("timeouts", "total", "decisions the server played by default (T11)"),
            autoplays=metrics.counter(
                "autoplays", "total", "decisions the bot played for a disconnected seat"
            ),
            reconnects=metrics.counter("reconnects", "total", "seats that came back to their table"),
            escapes=metrics.counter("escapes", "total", "players who left during a hand (T10)"),
            queue_full=metrics.counter(
                "queue_full", "total", "actions refused BUSY: the table's queue was full"
            ),
            tickets_verified=metrics.counter(
                "tickets_verified",
                "total",
                "table tickets that seated a Play stream, by the key they were signed with",
                ["key"],
            ),
            hands=metrics.counter("hands", "total", "hands finished, by outcome", ["outcome"]),
            fenced=metrics.counter(
                "fencing_refusals", "total", "write-ahead appends refused: another server writes the table"
            ),
            settlements_unclaimed=metrics.counter(
                "settlements_unclaimed",
                "total",
                "hand settlements of this server's tables that came when no table waited for them; dropped",
            ),
            settlement_latency=metrics.histogram(
                "settlement_latency",
                "seconds",
                "a hand's end → its settlement taken from the table's inbox (or the wait given up)",
            ),
            settlements_foreign=metrics.counter(
                "settlements_foreign", "total", "hand settlements of other servers' tables heard; dropped"
            ),
        )
