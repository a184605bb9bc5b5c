"""Prometheus metrics of one service, named ``duel_<service>_<what>_<unit>``, served on ``/metrics``.

Each service owns one :class:`ServiceMetrics` with its own registry, so several services (or tests) can
live in one process without clashing. Counters take the unit ``total``.

>>> metrics = ServiceMetrics("scoring")
>>> hands = metrics.counter("hands_scored", "total", "hands scored", ["profile"])
>>> hands.labels(profile="duel").inc()
>>> b"duel_scoring_hands_scored_total" in metrics.exposition()
True
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Generic, TypeVar
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, start_http_server

_PART = re.compile(r"^[a-z][a-z0-9_]*$")
# Latency buckets for RPCs and event handling: 0.5 ms .. 10 s.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


M = TypeVar("M", Counter, Gauge, Histogram)


class Children(Generic[M]):
    """A labelled metric's children, each looked up once: ``labels()`` validates its arguments and
    takes a lock on every call, which shows on a path taken for every event.

    >>> handled = Children(Counter("handled", "events", ["kind"], registry=None))
    >>> handled("hand") is handled("hand")
    True
    """

    def __init__(self, metric: M) -> None:
        self._metric: M = metric
        self._children: dict[tuple[str, ...], M] = {}

    def __call__(self, *values: str) -> M:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self._metric.labels(*values)
        return child


class ServiceMetrics:
    """Factory and registry of one service's metrics, plus its HTTP endpoint."""

    def __init__(self, service: str, registry: CollectorRegistry | None = None) -> None:
        if not _PART.match(service):
            raise ValueError(f"service name {service!r} cannot be part of a metric name")
        self.service = service
        self.registry = registry if registry is not None else CollectorRegistry()
        self._http: WSGIServer | None = None

    def name(self, what: str, unit: str) -> str:
        """``duel_<service>_<what>_<unit>``; ``what`` and ``unit`` are snake_case."""
        for part in (what, unit):
            if not _PART.match(part):
                raise ValueError(f"metric name part {part!r} must be snake_case")
        return f"duel_{self.service}_{what}_{unit}"

    def counter(self, what: str, unit: str, doc: str, labels: Sequence[str] = ()) -> Counter:
        return Counter(self.name(what, unit), doc, list(labels), registry=self.registry)

    def gauge(self, what: str, unit: str, doc: str, labels: Sequence[str] = ()) -> Gauge:
        return Gauge(self.name(what, unit), doc, list(labels), registry=self.registry)

    def histogram(
        self,
        what: str,
        unit: str,
        doc: str,
        labels: Sequence[str] = (),
        buckets: Sequence[float] = LATENCY_BUCKETS,
    ) -> Histogram:
        return Histogram(self.name(what, unit), doc, list(labels), registry=self.registry, buckets=buckets)

    def exposition(self) -> bytes:
        """The text ``/metrics`` serves right now."""
        return generate_latest(self.registry)

    def serve_http(self, host: str, port: int) -> int:
        """Serve ``/metrics`` on ``host:port`` (0 = a free port) in a daemon thread; returns the port."""
        if self._http is not None:
            raise RuntimeError("the metrics endpoint is already being served")
        self._http, _thread = start_http_server(port, addr=host, registry=self.registry)
        return int(self._http.server_address[1])

    def close(self) -> None:
        """Stop the HTTP endpoint (if any)."""
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
