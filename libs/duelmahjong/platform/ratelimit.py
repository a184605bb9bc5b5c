"""A per-key token bucket (e.g. per client address), and the client address of a gRPC call.

Each key may do ``burst`` things at once and ``per_minute`` a minute after that: its bucket holds at most
``burst`` tokens, refilled continuously, and each action takes one. A refused action learns how long
until a token is back, so the refusal can say when to retry. The clock is a parameter, so the
arithmetic is tested without waiting:

>>> now = [0.0]
>>> limit = RateLimiter(per_minute=6, burst=2, clock=lambda: now[0])
>>> [limit.take("1.2.3.4") for _ in range(3)]   # two at once, then one token every 10 s
[0.0, 0.0, 10.0]
>>> limit.take("5.6.7.8")                        # another address has its own bucket
0.0
>>> now[0] = 4.0
>>> round(limit.take("1.2.3.4"), 3)
6.0
>>> now[0] = 10.0
>>> limit.take("1.2.3.4")
0.0

The buckets kept are bounded (``max_keys``): the least recently used key is forgotten first, which
can only give that key a full bucket again.
"""

from __future__ import annotations

import ipaddress
import time
from collections import OrderedDict
from collections.abc import Callable

DEFAULT_MAX_KEYS = 100_000


class RateLimiter:
    """``per_minute`` actions a minute per key, ``burst`` at once; ``per_minute`` 0 = no limit."""

    def __init__(
        self,
        *,
        per_minute: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = DEFAULT_MAX_KEYS,
    ) -> None:
        if per_minute < 0 or burst < 1:
            raise ValueError("a rate limit needs per_minute >= 0 and burst >= 1")
        self.per_minute = per_minute
        self.burst = burst
        self._rate = per_minute / 60.0  # tokens a second
        self._clock = clock
        self._max_keys = max_keys
        # key -> (tokens left, when they were counted), least recently used first
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    @property
    def unlimited(self) -> bool:
        return self.per_minute == 0

    def take(self, key: str) -> float:
        """Take one token for ``key``: 0.0 when allowed, else the seconds until one is back."""
        if self.unlimited:
            return 0.0
        now = self._clock()
        tokens, since = self._buckets.pop(key, (float(self.burst), now))
        left, wait = self.spend(tokens, since, now)
        self._remember(key, left, now)
        return wait

    def spend(self, tokens: float, since: float, now: float) -> tuple[float, float]:
        """One token from a bucket that held ``tokens`` at ``since``, refilled until ``now``: the
        tokens left, and 0.0 (taken) or the seconds until one is back (refused). For buckets kept
        elsewhere (a store several processes share)."""
        if self.unlimited:
            return float(self.burst), 0.0
        tokens = min(float(self.burst), tokens + max(0.0, now - since) * self._rate)
        if tokens >= 1.0:
            return tokens - 1.0, 0.0
        return tokens, (1.0 - tokens) / self._rate

    def idle_after(self) -> float:
        """Seconds after which a bucket is full again whatever it held: then it need not be kept."""
        return 0.0 if self.unlimited else self.burst / self._rate

    def _remember(self, key: str, tokens: float, now: float) -> None:
        self._buckets[key] = (tokens, now)
        while len(self._buckets) > self._max_keys:
            self._buckets.popitem(last=False)


def client_address(peer: str) -> str:
    """The caller's address as a rate-limit key, from ``context.peer()``.

    IPv4 is the address itself; IPv6 is its /64 network (one subscriber usually holds a whole /64, so
    counting single addresses would let it rotate through them); anything else (a Unix socket) is
    returned as it is.

    >>> client_address("ipv4:203.0.113.7:51234")
    '203.0.113.7'
    >>> client_address("ipv6:[2001:db8:1:2:aaaa::1]:443")
    '2001:db8:1:2::/64'
    >>> client_address("ipv6:%5B::1%5D:50051")
    '::/64'
    >>> client_address("unix:/tmp/socket")
    'unix:/tmp/socket'
    """
    kind, _, rest = peer.partition(":")
    rest = rest.replace("%5B", "[").replace("%5D", "]")
    if kind == "ipv4":
        return rest.rpartition(":")[0] or rest
    if kind == "ipv6":
        host = rest.rpartition("]")[0].lstrip("[") if "]" in rest else rest
        try:
            return str(ipaddress.IPv6Network(f"{host.split('%')[0]}/64", strict=False))
        except ValueError:
            return peer
    return peer
