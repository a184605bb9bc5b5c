"""Events: the only way a table's state changes, each tagged with who may see which part.

An event has three parts: ``public`` (both seats and spectators), ``private`` (only ``seat``) and
``server`` (nobody but the table authority: the seed, the wall order, the unused pool). A service routes
``event.for_seat(n)`` to seat ``n`` when ``event.visible_to(n)`` and stores ``event.to_json()`` in the
log, without knowing any rule. A few events are no fact for the other seat at all (a silent pass, see
``SEAT_ONLY_KINDS``): they reach only their own seat, and do not count in the other seat's stream.

Tile values are tile kinds (ints) in memory and tile notation (``"5m"``) in JSON, so golden logs read
like mahjong. ``canonical()`` is the byte-exact serialisation used to check determinism.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from duelmahjong.engine.errors import ReplayError
from duelmahjong.engine.outcome import Outcome
from duelmahjong.rules.tiles import Tile, tile_name, tile_names

PUBLIC = "public"
SEAT = "seat"
SERVER = "server"

# Payload keys holding one tile kind / a sequence of tile kinds; everything else is plain JSON.
TILE_KEYS = frozenset({"tile", "target", "discard"})
TILE_LIST_KEYS = frozenset({"tiles", "wall", "pool", "bonus", "given", "received", "flowers"})

NO_SEAT = -1

# The canonical serialisation: keys sorted, no spaces, UTF-8 text as is — json.dumps(value,
# sort_keys=True, separators=(",", ":"), ensure_ascii=False), whose C encoder is made once here instead
# of per call (a table server serialises every event it sends). No circular check: events are trees.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
# The C encoder's factory (None without the C accelerator); typeshed does not declare it.
_make_encoder: Callable[..., Callable[[Any, int], Iterable[str]]] | None = json.encoder.c_make_encoder  # type: ignore[attr-defined]
_canonical_chunks = (
    _make_encoder(None, _CANONICAL.default, json.encoder.encode_basestring, None, ":", ",", True, False, True)
    if _make_encoder is not None
    else None
)


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON (see :meth:`Event.canonical`).

    >>> canonical_json({"b": "五", "a": [1, 2]})
    '{"a":[1,2],"b":"五"}'
    """
    if _canonical_chunks is None or isinstance(value, str):
        return _CANONICAL.encode(value)
    return "".join(_canonical_chunks(value, 0))


# Kinds that, without a public part, only their own seat learns of. A claim or robbing window opens only
# when the opponent has an option (T2, D13): a ``passed`` shown to the discarder or the konger would tell
# it that the opponent could win, kong, pong or chi on its tile. A pass that announces 胡加倍 (T8, public
# ``declined_win``) is a public decision and stays visible (docs/engine.md "Claim windows").
SEAT_ONLY_KINDS = frozenset({"passed"})


def _encode(payload: dict[str, Any] | None) -> dict[str, Any] | None:
    if payload is None:
        return None
    out: dict[str, Any] = {}
    for key, value in payload.items():
        if key in TILE_KEYS and value is not None:
            out[key] = tile_name(value)
        elif key in TILE_LIST_KEYS:
            out[key] = tile_names(value)
        else:
            out[key] = value
    return out


def _decode(payload: dict[str, Any] | None) -> dict[str, Any] | None:
    if payload is None:
        return None
    out: dict[str, Any] = {}
    for key, value in payload.items():
        if key in TILE_KEYS and value is not None:
            out[key] = Tile.parse(value).kind
        elif key in TILE_LIST_KEYS:
            out[key] = tuple(Tile.parse(v).kind for v in value)
        elif isinstance(value, list):
            out[key] = tuple(value)
        else:
            out[key] = value
    return out


@dataclass(frozen=True, slots=True)
class Event:
    """One fact of the table. ``seat`` is the seat the event is about (``-1`` for none)."""

    kind: str
    seat: int = NO_SEAT
    public: dict[str, Any] | None = None
    private: dict[str, Any] | None = None
    server: dict[str, Any] | None = None

    @property
    def outcome(self) -> Outcome:
        """The hand's outcome a ``hand_ended`` event carries."""
        return Outcome.from_json((self.public or {})["result"])

    @property
    def audience(self) -> str:
        """The narrowest visibility of any part: ``server`` if it has a server part, ``seat`` if private."""
        if self.server:
            return SERVER
        if self.private:
            return SEAT
        return PUBLIC

    def visible_to(self, seat: int) -> bool:
        """Whether ``seat`` (``-1``: a spectator) learns of this event at all."""
        return seat == self.seat or bool(self.public) or self.kind not in SEAT_ONLY_KINDS

    def for_seat(self, seat: int) -> dict[str, Any]:
        """The JSON this seat may see: the public part, plus the private part if it is about this seat."""
        out: dict[str, Any] = {"kind": self.kind, "seat": self.seat}
        out.update(_encode(self.public) or {})
        if self.private and seat == self.seat:
            out.update(_encode(self.private) or {})
        return out

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "seat": self.seat}
        for part in ("public", "private", "server"):
            value = getattr(self, part)
            if value:
                out[part] = _encode(value)
        return out

    def canonical(self) -> str:
        return canonical_json(self.to_json())

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Event:
        try:
            return cls(
                kind=data["kind"],
                seat=int(data.get("seat", NO_SEAT)),
                public=_decode(data.get("public")),
                private=_decode(data.get("private")),
                server=_decode(data.get("server")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ReplayError(f"malformed event {data!r}: {exc}") from exc


def events_for_seat(events: list[Event], seat: int) -> list[dict[str, Any]]:
    """The stream ``seat`` receives: the events it learns of, each as it may read it, in log order."""
    return [event.for_seat(seat) for event in events if event.visible_to(seat)]


def canonical_log(events: list[Event]) -> str:
    """One canonical JSON line per event: equal logs are equal strings, byte for byte."""
    return "\n".join(event.canonical() for event in events)
