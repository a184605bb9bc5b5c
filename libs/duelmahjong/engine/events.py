"""Events: the only way a table's state changes, one frozen class per kind, each field tagged with who may
see it.

A field is written to one of three parts: ``public`` (both seats and spectators), ``seat`` (only the
event's seat; ``private`` in the JSON) or ``server`` (nobody but the table authority: the seed, the wall
order, the unused pool). :data:`CATALOGUE` holds one row per kind: its class and, field by field, the
part it is written to and how its value is written in JSON. A service routes ``event.seen_by(n)`` to
seat ``n`` when ``event.visible_to(n)`` and stores ``event.to_json()`` in the log, without knowing any
rule. A few events are no fact for the other seat at all (a silent pass, ``seat_only`` rows): they reach
only their own seat, and do not count in the other seat's stream.

Tile values are tile kinds (ints) in memory and tile notation (``"5m"``) in JSON, so golden logs read
like mahjong. ``canonical()`` is the byte-exact serialisation used to check determinism; a log read back
with :meth:`Event.from_json` serialises to the same bytes.

>>> event = Drew(seat=1, source="wall", tile=4)
>>> event.canonical()
'{"kind":"drew","private":{"tile":"5m"},"public":{"source":"wall"},"seat":1}'
>>> event.seen_by(0)
Drew(seat=1, source='wall', tile=-1)
>>> Event.from_json(event.to_json()) == event
True
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any, ClassVar

from duelmahjong.engine.errors import ReplayError
from duelmahjong.engine.outcome import Guess, Outcome
from duelmahjong.rules.tiles import Tile, tile_name, tile_names

PUBLIC = "public"
SEAT = "seat"
SERVER = "server"
_JSON_PARTS = {PUBLIC: "public", SEAT: "private", SERVER: "server"}

NO_SEAT = -1
NO_TILE = -1  # a tile the seat is not shown

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


# --- the events -------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """One fact of the table. ``seat`` is the seat the event is about (``-1`` for none)."""

    kind: ClassVar[str]
    row: ClassVar[EventRow]  # set by the catalogue
    seat: int = NO_SEAT

    def visible_to(self, seat: int) -> bool:
        """Whether ``seat`` (``-1``: a spectator) learns of this event at all."""
        row = self.row
        return seat == self.seat or not row.seat_only or bool(row.encode(self, PUBLIC))

    def seen_by(self, seat: int) -> Event:
        """The event as ``seat`` may see it: its seat-only fields hidden unless it is about ``seat``."""
        row = self.row
        if seat == self.seat or not row.hidden:
            return self
        values = dict(zip(row.names, row.values(self), strict=True))
        for slot in row.hidden:
            if slot.when is None or slot.when(self):
                values[slot.name] = slot.hidden
        return row.cls(**values)

    def for_seat(self, seat: int) -> dict[str, Any]:
        """The JSON this seat may see: the public part, plus the seat part if it is about this seat."""
        out: dict[str, Any] = {"kind": self.kind, "seat": self.seat}
        out.update(self.row.encode(self, PUBLIC))
        if seat == self.seat:
            out.update(self.row.encode(self, SEAT))
        return out

    def to_json(self) -> dict[str, Any]:
        return self.row.to_json(self)

    def canonical(self) -> str:
        return canonical_json(self.to_json())

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Event:
        try:
            row = CATALOGUE.by_kind[data["kind"]]
        except (KeyError, TypeError) as exc:
            raise ReplayError(f"unknown event kind in {data!r}") from exc
        try:
            return row.decode(int(data.get("seat", NO_SEAT)), data)
        except (KeyError, TypeError, ValueError) as exc:
            raise ReplayError(f"malformed event {data!r}: {exc}") from exc


@dataclass(frozen=True, slots=True, kw_only=True)
class TableOpened(Event):
    kind: ClassVar[str] = "table_opened"
    settings: dict[str, Any]  # RoomSettings.to_json()


@dataclass(frozen=True, slots=True, kw_only=True)
class HandStarted(Event):
    kind: ClassVar[str] = "hand_started"
    hand_number: int
    dealer: int
    dealer_passes: int
    round_wind: int  # 0 east … 3 north
    progressive: int
    commitment: str | None = None  # hex, with a salt (duelmahjong.engine.fairness)
    bonus: tuple[int, ...] = ()  # duel D1
    task: dict[str, Any] | None = None  # erren T8
    salt: str | None = None  # hex
    qiankun: tuple[int, ...] = ()  # the seats using 乾坤大挪移 (T6)
    items: tuple[dict[str, int], ...] | None = None  # each seat's item counts (T6)
    seed: int
    wall: tuple[int, ...]
    pool: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DoublingChosen(Event):
    kind: ClassVar[str] = "doubling_chosen"
    double: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class DoublingRevealed(Event):
    kind: ClassVar[str] = "doubling_revealed"
    choices: tuple[bool, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Dealt(Event):
    kind: ClassVar[str] = "dealt"
    count: int
    flowers: tuple[int, ...] = ()
    tiles: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Drew(Event):
    kind: ClassVar[str] = "drew"
    source: str  # FROM_WALL, FROM_KONG, FROM_FLOWER, FROM_POOL
    tile: int  # face up when a flower (补花), else the seat's own

    @property
    def flower(self) -> bool:
        return self.tile >= 34


@dataclass(frozen=True, slots=True, kw_only=True)
class Exchanged(Event):
    kind: ClassVar[str] = "exchanged"
    count: int
    paid: int  # erren T4: the exchanged tiles after the first
    given: tuple[int, ...]
    received: tuple[int, ...]
    pool: tuple[int, ...] | None = None  # duel: the unused pool after
    wall: tuple[int, ...] | None = None  # erren: the wall after


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayStarted(Event):
    kind: ClassVar[str] = "play_started"
    tenpai: tuple[bool, ...] | None = None  # duel T9: ready since the deal


@dataclass(frozen=True, slots=True, kw_only=True)
class Discarded(Event):
    kind: ClassVar[str] = "discarded"
    tile: int
    ready: bool = False  # 报听 (T3)
    first_turn: bool = False  # 天听
    tenpai: bool | None = None  # duel T9: whether the hand waits after it


@dataclass(frozen=True, slots=True, kw_only=True)
class Passed(Event):
    kind: ClassVar[str] = "passed"
    declined_win: bool = False  # T8 胡加倍


@dataclass(frozen=True, slots=True, kw_only=True)
class Claimed(Event):
    kind: ClassVar[str] = "claimed"
    meld: str  # chi, pong, exposed_kong
    tile: int  # a chow's lowest tile


@dataclass(frozen=True, slots=True, kw_only=True)
class Konged(Event):
    kind: ClassVar[str] = "konged"
    meld: str  # concealed_kong (its tile the seat's own), added_kong
    tile: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Offered(Event):
    kind: ClassVar[str] = "offered"
    offer: str  # "triplet", "rub" or "" (a T5 roll that offered nothing)
    tile: int | None = None  # the triplet's kind


@dataclass(frozen=True, slots=True, kw_only=True)
class Swapped(Event):
    kind: ClassVar[str] = "swapped"
    reason: str  # triplet, rub (T5); swap_item, shuffle_item (T6)
    given: tuple[int, ...]
    received: tuple[int, ...]
    wall: tuple[int, ...]
    pool: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ThrownAway(Event):
    kind: ClassVar[str] = "thrown_away"
    tile: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Exhausted(Event):
    kind: ClassVar[str] = "exhausted"
    ready: tuple[bool, ...]
    extra_seat: int | None = None  # duel T9
    extra_draws: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Won(Event):
    kind: ClassVar[str] = "won"
    tile: int
    self_drawn: bool
    description: dict[str, Any]  # §7
    evaluation: dict[str, Any]  # Evaluation.to_json()
    task_completed: bool
    tiles: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Guessed(Event):
    kind: ClassVar[str] = "guessed"
    choice: str
    dice: tuple[int, ...] | None = None
    right: bool | None = None
    factor: int | None = None

    @property
    def guess(self) -> Guess:
        dice = self.dice
        return Guess(
            self.choice, None if dice is None else (dice[0], dice[1], dice[2]), self.right, self.factor
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Escaped(Event):
    kind: ClassVar[str] = "escaped"


@dataclass(frozen=True, slots=True, kw_only=True)
class HandEnded(Event):
    kind: ClassVar[str] = "hand_ended"
    outcome: Outcome


@dataclass(frozen=True, slots=True, kw_only=True)
class PairingEnded(Event):
    kind: ClassVar[str] = "pairing_ended"


# --- the catalogue ----------------------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    """A JSON value as held in memory: a list becomes a tuple (nested values stay JSON)."""
    return tuple(value) if type(value) is list else value


def _tile(value: Any) -> int:
    return Tile.parse(value).kind


def _tiles(value: Any) -> tuple[int, ...]:
    return tuple(Tile.parse(v).kind for v in value)


_REQUIRED: Any = object()


@dataclass(frozen=True, slots=True)
class Slot:
    """One field of a kind: its part, its JSON key, how it is written and read, when it is left out."""

    name: str
    part: str
    key: str
    encode: Callable[[Any], Any] | None  # None: written as held
    decode: Callable[[Any], Any]
    absent: Any = _REQUIRED  # a value written as no key at all
    hidden: Any = None  # what another seat is shown of a seat field
    when: Callable[[Any], bool] | None = None  # the field is in this part only for such events


def plain(name: str, *, absent: Any = _REQUIRED, key: str = "") -> Slot:
    return Slot(name, PUBLIC, key or name, None, _plain, absent)


def tile(name: str, *, absent: Any = _REQUIRED) -> Slot:
    return Slot(name, PUBLIC, name, tile_name, _tile, absent)


def tiles(name: str, *, absent: Any = _REQUIRED) -> Slot:
    return Slot(name, PUBLIC, name, tile_names, _tiles, absent)


def outcome(name: str, *, key: str) -> Slot:
    return Slot(name, PUBLIC, key, Outcome.to_json, Outcome.from_json)


def own(slot: Slot, hidden: Any, *, when: Callable[[Any], bool] | None = None) -> Slot:
    """``slot`` written to the seat part: other seats are shown ``hidden`` instead."""
    return Slot(slot.name, SEAT, slot.key, slot.encode, slot.decode, slot.absent, hidden, when)


def server(slot: Slot) -> Slot:
    return Slot(slot.name, SERVER, slot.key, slot.encode, slot.decode, slot.absent)


def public_when(slot: Slot, when: Callable[[Any], bool]) -> Slot:
    return Slot(slot.name, PUBLIC, slot.key, slot.encode, slot.decode, slot.absent, None, when)


class EventRow:
    """One kind of the catalogue: its class and its fields' slots, grouped by part."""

    def __init__(self, cls: type[Event], slots: Sequence[Slot], *, seat_only: bool = False) -> None:
        self.cls = cls
        self.kind = cls.kind
        self.seat_only = seat_only  # without a public part, only its own seat learns of it
        self.names = tuple(f.name for f in fields(cls))
        self.by_part = {part: tuple(s for s in slots if s.part == part) for part in _JSON_PARTS}
        self.parts = tuple(part for part in _JSON_PARTS if self.by_part[part])
        self.hidden = self.by_part[SEAT]
        # Every field's value, in ``names`` order (seat and at least one field: a tuple).
        self.values: Callable[[Event], tuple[Any, ...]] = (
            attrgetter(*self.names) if len(self.names) > 1 else lambda event: (event.seat,)
        )
        by_key: dict[str, Slot] = {}
        for slot in slots:
            known = by_key.setdefault(slot.key, slot)
            if (known.name, known.decode) != (slot.name, slot.decode):
                raise ValueError(f"{self.kind}: key {slot.key!r} is read two ways")
        unwritten = set(self.names) - {"seat"} - {s.name for s in slots}
        if unwritten:
            raise ValueError(f"{self.kind}: fields {sorted(unwritten)} are written nowhere")
        # Each JSON key's field and reader, whichever part holds it.
        self._readers = {key: (slot.name, slot.decode) for key, slot in by_key.items()}
        self._compile()

    def encode(self, event: Event, part: str) -> dict[str, Any]:
        """``event``'s ``part`` (PUBLIC, SEAT or SERVER) as JSON."""
        return self._encoders[part](event)

    def _compile(self) -> None:
        """The row's writers as Python functions, made once from its slots (as ``dataclass`` makes an
        ``__init__``): a table server writes every event it sends, and a generic loop over the slots
        costs more than the slots' own work."""
        scope: dict[str, Any] = {"kind": self.kind}
        lines = ["def to_json(event):", "    out = {'kind': kind, 'seat': event.seat}"]
        for part, json_part in _JSON_PARTS.items():
            body = []
            for number, slot in enumerate(self.by_part[part]):
                tag = f"{part}_{number}"
                scope[f"encode_{tag}"], scope[f"absent_{tag}"], scope[f"when_{tag}"] = (
                    slot.encode,
                    slot.absent,
                    slot.when,
                )
                value = f"encode_{tag}(value)" if slot.encode is not None else "value"
                conditions = []
                if slot.absent is not _REQUIRED:
                    conditions.append(
                        f"value is not absent_{tag}" if slot.absent is None else f"value != absent_{tag}"
                    )
                if slot.when is not None:
                    conditions.append(f"when_{tag}(event)")
                body.append(f"    value = event.{slot.name}")
                guard = f"if {' and '.join(conditions)}: " if conditions else ""
                body.append(f"    {guard}written[{slot.key!r}] = {value}")
            part_lines = [f"def encode_{part}(event):", "    written = {}", *body, "    return written"]
            exec("\n".join(part_lines), scope)  # source made above from the catalogue
            if body:
                lines += ["    written = {}", *body, f"    if written: out[{json_part!r}] = written"]
        lines.append("    return out")
        exec("\n".join(lines), scope)
        self.to_json: Callable[[Event], dict[str, Any]] = scope["to_json"]
        self._encoders: dict[str, Callable[[Event], dict[str, Any]]] = {
            part: scope[f"encode_{part}"] for part in _JSON_PARTS
        }

    def decode(self, seat: int, data: dict[str, Any]) -> Event:
        """The event of ``data`` (its JSON); a value is read whichever part holds it."""
        values: dict[str, Any] = {"seat": seat}
        readers = self._readers
        for part in ("public", "private", "server"):
            written = data.get(part)
            if written:
                for key, value in written.items():
                    reader = readers.get(key)
                    if reader is None:
                        raise ReplayError(f"a {self.kind} event has no {key!r}")
                    values[reader[0]] = reader[1](value)
        return self.cls(**values)


class Catalogue:
    """The event kinds, one row each."""

    def __init__(self, rows: Sequence[EventRow]) -> None:
        self.rows = tuple(rows)
        self.by_kind = {row.kind: row for row in rows}
        for row in rows:
            row.cls.row = row

    def __iter__(self) -> Iterable[EventRow]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


def _is_flower(event: Any) -> bool:
    return bool(event.tile >= 34)


def _is_concealed(event: Any) -> bool:
    return bool(event.meld == "concealed_kong")


# One row per kind, in docs/engine.md's order: each field of the kind's class, where it is written
# (``plain``/``tile``/``tiles``: public; ``own``: the seat's, others shown ``hidden``; ``server``: the
# table authority's) and, for an optional field, the value written as no key (``absent``).
# fmt: off
CATALOGUE = Catalogue([
    EventRow(TableOpened, [plain("settings")]),
    EventRow(HandStarted, [
        plain("hand_number"), plain("dealer"), plain("dealer_passes"), plain("round_wind"),
        plain("progressive"), plain("commitment", absent=None), tiles("bonus", absent=()),
        plain("task", absent=None),
        server(plain("salt", absent=None)), server(plain("qiankun", absent=())),
        server(plain("items", absent=None)), server(plain("seed")), server(tiles("wall")),
        server(tiles("pool")),
    ]),
    EventRow(DoublingChosen, [own(plain("double"), False)]),  # secret until both have chosen (T8)
    EventRow(DoublingRevealed, [plain("choices")]),
    EventRow(Dealt, [plain("count"), tiles("flowers", absent=()), own(tiles("tiles"), ())]),
    EventRow(Drew, [
        plain("source"), public_when(tile("tile"), _is_flower),
        own(tile("tile"), NO_TILE, when=lambda e: not _is_flower(e)),
    ]),
    EventRow(Exchanged, [
        plain("count"), plain("paid"), own(tiles("given"), ()), own(tiles("received"), ()),
        server(tiles("pool", absent=None)), server(tiles("wall", absent=None)),
    ]),
    EventRow(PlayStarted, [server(plain("tenpai", absent=None))]),
    EventRow(Discarded, [
        tile("tile"), plain("ready", absent=False), plain("first_turn", absent=False),
        server(plain("tenpai", absent=None)),
    ]),
    # A claim or robbing window opens only when the opponent has an option (T2, D13): a pass shown to the
    # discarder or the konger would tell it that the opponent could win, kong, pong or chi on its tile.
    # A pass that announces 胡加倍 (T8) is a public decision (docs/engine.md "Claim windows").
    EventRow(Passed, [plain("declined_win", absent=False)], seat_only=True),
    EventRow(Claimed, [plain("meld"), tile("tile")]),
    EventRow(Konged, [  # a concealed kong is laid face down
        plain("meld"), public_when(tile("tile"), lambda e: not _is_concealed(e)),
        own(tile("tile"), NO_TILE, when=_is_concealed),
    ]),
    EventRow(Offered, [plain("offer"), own(tile("tile", absent=None), None)]),
    EventRow(Swapped, [
        plain("reason"), own(tiles("given"), ()), own(tiles("received"), ()), server(tiles("wall")),
        server(tiles("pool")),
    ]),
    EventRow(ThrownAway, [tile("tile")]),
    EventRow(Exhausted, [
        plain("ready"), plain("extra_seat", absent=None), plain("extra_draws", absent=None),
    ]),
    EventRow(Won, [
        tile("tile"), plain("self_drawn"), plain("description"), plain("evaluation"),
        plain("task_completed"), tiles("tiles"),
    ]),
    EventRow(Guessed, [
        plain("choice"), plain("dice", absent=None), plain("right", absent=None),
        plain("factor", absent=None),
    ]),
    EventRow(Escaped, []),
    EventRow(HandEnded, [outcome("outcome", key="result")]),
    EventRow(PairingEnded, []),
])
# fmt: on


def events_for_seat(events: list[Event], seat: int) -> list[dict[str, Any]]:
    """The stream ``seat`` receives: the events it learns of, each as it may read it, in log order."""
    return [event.for_seat(seat) for event in events if event.visible_to(seat)]


def canonical_log(events: list[Event]) -> str:
    """One canonical JSON line per event: equal logs are equal strings, byte for byte."""
    return "\n".join(event.canonical() for event in events)
