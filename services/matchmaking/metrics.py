"""Matchmaking's metrics, read from the matchmaker when Prometheus scrapes (the core stays free of
Prometheus): ``duel_matchmaking_queue_waiting_players{room}``,
``duel_matchmaking_awaiting_table_pairings`` and ``duel_matchmaking_<outcome>_total{room}`` for the
outcomes ``paired``, ``expired``, ``declined``, ``hold_refused``, ``bot_fill``, ``table_opened``,
``table_lost``, ``private_opened``, ``private_joined``, ``cancelled``, ``unfollowed``, ``lapsed``;
``duel_matchmaking_table_adopted_total{kind}`` (``orphan``, ``handed_over``) for the tables another
server took over; the histogram ``duel_matchmaking_queue_wait_seconds{room}``, observed as humans are
paired; and the fleet's health as this replica sees it (docs/operations.md "When a matchmaking replica
dies"): ``duel_matchmaking_deadlines_overdue``, ``duel_matchmaking_stranded_holds``,
``duel_matchmaking_store_current``, ``duel_matchmaking_rooms_owned``,
``duel_matchmaking_cas_conflicts_total{what}`` and ``duel_matchmaking_holds_released_total{how}``.
The gauges of stored state are the same on every replica (each mirrors the whole store): alert on
their ``max``, not their sum."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from duelmahjong.platform.metrics import ServiceMetrics
from services.matchmaking.core import Matchmaker
from services.matchmaking.events import ADOPTION_KINDS

OUTCOMES = {
    "paired": "pairings made",
    "expired": "queue tickets that expired unpaired",
    "declined": "pairings ended by a declined multiplier (T7)",
    "hold_refused": "pairings undone because the wallet refused a hold",
    "bot_fill": "bots started to fill an empty seat",
    "table_opened": "tables opened for pairings",
    "table_lost": "tables closed by matchmaking because their server restarted or fell silent",
    "private_opened": "private tables opened (OpenPrivateTable), each with its code",
    "private_joined": "private tables a friend joined with the code (JoinPrivateTable)",
    "cancelled": "queue tickets cancelled by their player",
    "unfollowed": "unpaired queue tickets cancelled because no stream followed them for the grace",
    "lapsed": "pairings that lapsed before both holds were placed (their placer died or stalled)",
}
RELEASES = ("ended", "refused", "expired", "lapsed")


class MatchmakingCollector(Collector):
    def __init__(self, metrics: ServiceMetrics, matchmaker: Matchmaker) -> None:
        self._metrics, self._matchmaker = metrics, matchmaker

    def collect(self) -> Iterator[Metric]:
        name = self._metrics.name
        waiting = GaugeMetricFamily(
            name("queue_waiting", "players"), "players queued, unpaired", labels=["room"]
        )
        for room_id in self._matchmaker.rooms:
            waiting.add_metric([room_id], self._matchmaker.waiting(room_id))
        yield waiting
        yield GaugeMetricFamily(
            name("awaiting_table", "pairings"),
            "pairings waiting for a table server with room",
            value=self._matchmaker.awaiting_table(),
        )
        for outcome, doc in OUTCOMES.items():
            # CounterMetricFamily adds the _total suffix itself.
            family = CounterMetricFamily(name(outcome, "total").removesuffix("_total"), doc, labels=["room"])
            for room_id in self._matchmaker.rooms:
                family.add_metric([room_id], self._matchmaker.counts[outcome, room_id])
            yield family
        adopted = CounterMetricFamily(
            name("table_adopted", "total").removesuffix("_total"),
            "tables another table server adopted (TableAdopted), by how: orphan, handed_over",
            labels=["kind"],
        )
        for kind in ADOPTION_KINDS.values():
            adopted.add_metric([kind], self._matchmaker.allocation.adoptions.get(kind, 0))
        yield adopted
        matchmaker = self._matchmaker
        yield GaugeMetricFamily(
            name("deadlines", "overdue"),
            "stored deadlines passed more than 5 s ago that no replica has acted on",
            value=matchmaker.overdue(),
        )
        yield GaugeMetricFamily(
            name("stranded", "holds"),
            "pairings and private tables whose holds should have been released over 60 s ago and are not",
            value=matchmaker.stranded(),
        )
        leases = matchmaker.leases
        yield GaugeMetricFamily(
            name("store", "current"),
            "1 while this replica's view of the shared store is current (its heartbeat acknowledged)",
            value=1 if leases is None or leases.current() else 0,
        )
        yield GaugeMetricFamily(
            name("rooms", "owned"),
            "rooms this replica owns (pairs and acts on the deadlines of)",
            value=len(matchmaker.rooms) if leases is None else len(leases.owned()),
        )
        conflicts = CounterMetricFamily(
            name("cas_conflicts", "total").removesuffix("_total"),
            "compare-and-set writes lost to another writer, by record kind",
            labels=["what"],
        )
        for what, n in sorted(matchmaker.records.mirror.conflicts.items()):
            conflicts.add_metric([what], n)
        yield conflicts
        released = CounterMetricFamily(
            name("holds_released", "total").removesuffix("_total"),
            "holds released by matchmaking, by how: ended, refused, expired, lapsed",
            labels=["how"],
        )
        for how in RELEASES:
            released.add_metric([how], matchmaker.holds_released[how])
        yield released


# Queue wait buckets: a pairing takes from a second (a full room) to minutes (rating windows widen).
WAIT_BUCKETS = (1.0, 2.5, 5.0, 10.0, 15.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0, 600.0)


def register(metrics: ServiceMetrics, matchmaker: Matchmaker) -> None:
    metrics.registry.register(MatchmakingCollector(metrics, matchmaker))
    waits = metrics.histogram(
        "queue_wait", "seconds", "a player's time from Enqueue to paired", ["room"], buckets=WAIT_BUCKETS
    )
    matchmaker.observe_wait = lambda room_id, seconds: waits.labels(room=room_id).observe(seconds)
