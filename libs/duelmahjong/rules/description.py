"""The hand description: everything scoring needs to know about one win (docs/decisions.md §7).

The engine produces it, the scoring service consumes it, the proto carries it and ``duel score`` reads
it as JSON lines. :meth:`HandDescription.from_json` validates everything it is given and raises
:class:`~duelmahjong.rules.errors.InvalidHandError` / :class:`~duelmahjong.rules.errors.NotationError`
with a message saying what is wrong; :meth:`HandDescription.to_json` gives it back in canonical form.

>>> HandDescription.from_json({"profile": "duel", "concealed": "123m456p789s1z23m", "win_tile": "1m"})
Traceback (most recent call last):
...
duelmahjong.rules.errors.InvalidHandError: concealed (12 tiles) + 3 per meld (0 melds) must make 13 ...
>>> desc = HandDescription.from_json({"profile": "duel", "concealed": "123m456p789s11z23m",
...     "win_tile": "1m", "context": {"revealed_bonus_tiles": ["1z"]}})
>>> desc.to_json()["concealed"], desc.context.revealed_bonus_tiles
('12233m456p789s11z', (27,))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from duelmahjong.rules.errors import InvalidHandError, NotationError
from duelmahjong.rules.hand import MELD_KINDS, Meld
from duelmahjong.rules.setups import Setup, get_setup
from duelmahjong.rules.tiles import EAST, WIND_NAMES, format_tiles, parse_tiles

FIRST_TURN_WINS: tuple[str, ...] = ("dealer_initial_hand", "nondealer_first_draw", "dealer_first_discard")
FLOWER_FIRST = 34  # tile kinds 34..41 are the flowers 1f..8f
HAND_SIZE = 13  # concealed tiles + 3 per meld, before the winning tile


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str | None:
    if value is None:
        return None
    if value not in allowed:
        raise InvalidHandError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return str(value)


@dataclass(frozen=True, slots=True)
class Context:
    """The circumstances of a win (docs/decisions.md §7); an absent key is False / None / empty."""

    dealer: bool = False
    seat_wind: str | None = None
    round_wind: str | None = None
    flowers: tuple[int, ...] = ()
    revealed_bonus_tiles: tuple[int, ...] = ()
    declared_ready: bool = False
    declared_first_turn: bool = False
    first_turn_after_declare: bool = False
    last_wall_tile: bool = False
    last_discard: bool = False
    after_kong: bool = False
    after_flower_replacement: bool = False
    robbing_kong: bool = False
    fourth_tile_visible: bool = False
    extra_draw_after_exhaustion: bool = False
    first_turn_win: str | None = None

    def __post_init__(self) -> None:
        # Also when built in code rather than from JSON: a wind or first-turn event must be a known one.
        for name, allowed in (("seat_wind", WIND_NAMES), ("round_wind", WIND_NAMES)):
            _choice(f"context.{name}", getattr(self, name), allowed)
        _choice("context.first_turn_win", self.first_turn_win, FIRST_TURN_WINS)

    @property
    def seat_wind_tile(self) -> int | None:
        """The tile kind of the seat wind (``east`` -> 1z), or None."""
        return None if self.seat_wind is None else EAST + WIND_NAMES.index(self.seat_wind)

    @property
    def round_wind_tile(self) -> int | None:
        """The tile kind of the round wind, or None."""
        return None if self.round_wind is None else EAST + WIND_NAMES.index(self.round_wind)

    @classmethod
    def from_json(cls, data: Any) -> Context:
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise InvalidHandError(f"context must be an object, got {type(data).__name__}")
        unknown = sorted(set(data) - _CONTEXT_KEYS)
        if unknown:
            raise InvalidHandError(f"unknown context key(s) {unknown}; known keys: {sorted(_CONTEXT_KEYS)}")
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key in _BOOL_KEYS:
                values[key] = _boolean(f"context.{key}", value)
            elif key in ("seat_wind", "round_wind"):
                values[key] = _choice(f"context.{key}", value, WIND_NAMES)
            elif key == "first_turn_win":
                values[key] = _choice("context.first_turn_win", value, FIRST_TURN_WINS)
            else:  # flowers, revealed_bonus_tiles: a list of tiles or one notation string
                values[key] = _tile_list(f"context.{key}", value)
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for field in fields(self):
            value = getattr(self, field.name)
            if value == field.default:
                continue
            if field.name in ("flowers", "revealed_bonus_tiles"):
                value = [format_tiles([kind]) for kind in value]
            out[field.name] = value
        return out


_CONTEXT_KEYS = frozenset(field.name for field in fields(Context))
# The true/false circumstances of a win, in field order: the one list of them (facts, codecs).
CONTEXT_FLAGS: tuple[str, ...] = tuple(field.name for field in fields(Context) if field.default is False)
_BOOL_KEYS = frozenset(CONTEXT_FLAGS)


@dataclass(frozen=True, slots=True)
class HandDescription:
    """One winning hand: ``concealed`` (13 - 3 per meld tiles, sorted, without the winning tile),
    the declared ``melds``, the ``win_tile``, whether it was ``self_drawn`` and the ``context``."""

    profile: str
    concealed: tuple[int, ...]
    melds: tuple[Meld, ...]
    win_tile: int
    self_drawn: bool = False
    context: Context = Context()

    @classmethod
    def from_json(cls, data: Any) -> HandDescription:
        """Validate and build a description from its JSON object (docs/decisions.md §7)."""
        if not isinstance(data, Mapping):
            raise InvalidHandError(f"a hand description must be a JSON object, got {type(data).__name__}")
        unknown = sorted(set(data) - {"profile", "concealed", "melds", "win_tile", "self_drawn", "context"})
        if unknown:
            raise InvalidHandError(f"unknown key(s) {unknown} in hand description")
        for key in ("profile", "concealed", "win_tile"):
            if key not in data:
                raise InvalidHandError(f"hand description lacks {key!r}")
        if not isinstance(data["profile"], str):
            raise InvalidHandError("profile must be a string such as 'duel' or 'erren'")
        setup = get_setup(data["profile"])
        concealed = tuple(sorted(_tiles("concealed", data["concealed"])))
        melds = tuple(_meld(i, raw) for i, raw in enumerate(_list("melds", data.get("melds", []))))
        win = _tiles("win_tile", data["win_tile"])
        if len(win) != 1:
            raise InvalidHandError(f"win_tile must be exactly one tile, got {len(win)}")
        desc = cls(
            profile=setup.id,
            concealed=concealed,
            melds=melds,
            win_tile=win[0],
            self_drawn=_boolean("self_drawn", data.get("self_drawn", False)),
            context=Context.from_json(data.get("context")),
        )
        _check_tiles(desc)
        _check_setup(desc, setup)
        seats = _ERREN_SEAT_WINDS if setup.id == "erren" else None  # duel scores no wind (D11)
        _check_context(
            desc, has_flowers=setup.has_flowers, has_unused_pool=setup.has_unused_pool, seat_winds=seats
        )
        return desc

    def to_json(self) -> dict[str, Any]:
        """The canonical JSON object; ``from_json(d.to_json()) == d``."""
        out: dict[str, Any] = {
            "profile": self.profile,
            "concealed": format_tiles(self.concealed),
            "melds": [{"kind": meld.kind, "tiles": format_tiles(meld.tiles)} for meld in self.melds],
            "win_tile": format_tiles([self.win_tile]),
            "self_drawn": self.self_drawn,
        }
        context = self.context.to_json()
        if context:
            out["context"] = context
        return out

    def all_tiles(self) -> list[int]:
        """Every tile of the winning hand: concealed, melds (kongs 4) and the winning tile."""
        tiles = [*self.concealed, self.win_tile]
        for meld in self.melds:
            tiles.extend(meld.tiles)
        return tiles


def _check_tiles(desc: HandDescription) -> None:
    """Profile-independent checks: 13 tiles before the win, no flower in the hand, no fifth copy."""
    size = len(desc.concealed) + 3 * len(desc.melds)
    if size != HAND_SIZE:
        raise InvalidHandError(
            f"concealed ({len(desc.concealed)} tiles) + 3 per meld ({len(desc.melds)} melds) must make "
            f"{HAND_SIZE} tiles, got {size}"
        )
    tiles = desc.all_tiles()
    flowers = [kind for kind in tiles if kind >= FLOWER_FIRST]
    if flowers:
        raise InvalidHandError(
            f"flower {format_tiles(flowers[:1])} cannot be part of a hand; list it in context.flowers"
        )
    copies = [0] * FLOWER_FIRST
    for kind in tiles:
        copies[kind] += 1
    for kind, count in enumerate(copies):
        if count > 4:
            raise InvalidHandError(f"{count} copies of {format_tiles([kind])} in the hand; there are only 4")
    # Revealed bonus tiles name kinds; they are not checked against the hand's copies, since D1 scores
    # kongs of a revealed kind (the pool can feed tiles back through offers and items, T5/T6).
    for kind in desc.context.revealed_bonus_tiles:
        if kind >= FLOWER_FIRST:
            raise InvalidHandError(f"revealed bonus tile {format_tiles([kind])} must not be a flower")
    for kind in desc.context.flowers:
        if kind < FLOWER_FIRST:
            raise InvalidHandError(f"context.flowers lists {format_tiles([kind])}, which is not a flower")
    if len(set(desc.context.flowers)) != len(desc.context.flowers):
        raise InvalidHandError("context.flowers lists a flower twice; each flower exists once")


def _check_setup(desc: HandDescription, setup: Setup) -> None:
    """What the profile does not have: tiles outside its set, flowers, revealed bonus tiles."""
    outside = sorted({kind for kind in desc.all_tiles() if kind not in setup.tile_kinds})
    if outside:
        raise InvalidHandError(f"{format_tiles(outside)} not in the {setup.id} tile set")
    if desc.context.flowers and not setup.has_flowers:
        raise InvalidHandError(f"profile {setup.id} has no flower tiles; context.flowers must be empty")
    bonus = desc.context.revealed_bonus_tiles
    if bonus and not setup.revealed_bonus_tiles:
        raise InvalidHandError(f"profile {setup.id} has no revealed bonus tiles (花牌)")
    if len(bonus) > 4:
        raise InvalidHandError(f"at most 4 revealed bonus tiles, got {len(bonus)}")
    outside = sorted({kind for kind in bonus if kind not in setup.tile_kinds})
    if outside:
        raise InvalidHandError(f"revealed bonus tile {format_tiles(outside)} not in the {setup.id} tile set")


# D10 / E7: what each first-turn event is — whether the win is self-drawn, and whose it is.
_FIRST_TURN_SHAPE: dict[str, tuple[bool, bool]] = {
    "dealer_initial_hand": (True, True),  # 天和 / 天胡: the dealer's 14 dealt tiles
    "nondealer_first_draw": (True, False),  # 人和 (duel) / 地胡 (erren): the non-dealer's first draw
    "dealer_first_discard": (False, False),  # 地和 (duel) / 人胡 (erren): the dealer's first discard
}


# Declarations of ready (T3, E8): a first-turn win comes before the winner has discarded anything.
_READY_FLAGS = ("declared_ready", "declared_first_turn", "first_turn_after_declare")
# What the first turn has not seen yet: a kong (its replacement draw), a shown copy, the wall's end.
_LATER_FLAGS = (
    "after_kong",
    "fourth_tile_visible",
    "last_wall_tile",
    "last_discard",
    "extra_draw_after_exhaustion",
)


# E17: the dealer sits East, the non-dealer West (对家) — 000 门风刻 "以庄为东风位".
_ERREN_SEAT_WINDS = ("east", "west")


def _check_context(
    desc: HandDescription,
    *,
    has_flowers: bool,
    has_unused_pool: bool,
    seat_winds: tuple[str, str] | None,
) -> None:
    """Context flags that contradict the hand. They would otherwise score a limit hand the play
    cannot have produced (a discard win named the non-dealer's first draw is not 人和)."""
    context = desc.context
    if seat_winds is not None and context.seat_wind is not None:
        seat = seat_winds[0] if context.dealer else seat_winds[1]
        if context.seat_wind != seat:
            who = "the dealer" if context.dealer else "the non-dealer"
            raise InvalidHandError(
                f"context.seat_wind {context.seat_wind}: in profile {desc.profile} {who} sits {seat} (E17)"
            )
    event = context.first_turn_win
    if event is not None:
        self_drawn, dealer = _FIRST_TURN_SHAPE[event]
        if desc.self_drawn != self_drawn:
            kind = "a self-drawn win" if self_drawn else "a win on a discard"
            raise InvalidHandError(
                f"context.first_turn_win {event} is {kind}; self_drawn must be {str(self_drawn).lower()}"
            )
        if context.dealer != dealer:
            whose = "the dealer's win" if dealer else "the non-dealer's win"
            raise InvalidHandError(
                f"context.first_turn_win {event} is {whose}; context.dealer must be {str(dealer).lower()}"
            )
        if desc.melds:
            raise InvalidHandError(
                f"context.first_turn_win {event} comes before any claim or kong: the hand holds no "
                f"declared meld, got {len(desc.melds)}"
            )
        if context.robbing_kong:  # an added kong needs a pong, so a claim, before it
            raise InvalidHandError(f"context.first_turn_win {event} cannot be a robbed kong")
        declared = [flag for flag in _READY_FLAGS if getattr(context, flag)]
        if declared:  # T3: ready is declared together with a discard (天听 too)
            raise InvalidHandError(
                f"context.first_turn_win {event} comes before the winner's first discard, and ready is "
                f"declared with a discard (T3): context.{declared[0]} must be false"
            )
        later = [flag for flag in _LATER_FLAGS if getattr(context, flag)]
        if later:  # they would add 杠上开花, 和绝张, 妙手回春… to a first-turn win
            raise InvalidHandError(
                f"context.first_turn_win {event} comes before any kong, any shown copy and the end of "
                f"the wall: context.{later[0]} must be false"
            )
    if context.declared_first_turn:
        # 天听 is declared on the first turn, before any claim, and a declared-ready hand claims
        # nothing but the win (T3), except that erren may still kong: a concealed kong, or an exposed
        # kong of the opponent's discard. A pong (so an added kong) or a chow cannot stand beside it.
        kongs = ("concealed_kong", "exposed_kong") if desc.profile == "erren" else ("concealed_kong",)
        opened = [meld for meld in desc.melds if meld.kind not in kongs]
        if opened:
            allowed = "a concealed or exposed kong" if desc.profile == "erren" else "a concealed kong"
            raise InvalidHandError(
                f"context.declared_first_turn (天听) comes before any claim and a ready hand claims "
                f"only the win (T3), so beside it the hand holds no open meld but {allowed}; "
                f"got {opened[0]}"
            )
    if context.robbing_kong:
        # D13: only an added kong is robbed, so the opponent's pong holds the other three copies.
        robbed = desc.win_tile
        held = desc.concealed.count(robbed) + sum(meld.tiles.count(robbed) for meld in desc.melds)
        if held:
            name = format_tiles([robbed])
            raise InvalidHandError(
                f"context.robbing_kong: the robbed {name} completes the opponent's added kong, so the "
                f"winner holds no other copy of {name}; the hand holds {held}"
            )
    if context.fourth_tile_visible and desc.win_tile in desc.concealed:
        # E13 和绝张: the other three copies are on the table (melds and discards), none concealed.
        name = format_tiles([desc.win_tile])
        raise InvalidHandError(
            f"context.fourth_tile_visible: the other three copies of {name} are shown, so the winner's "
            f"concealed tiles hold none; they hold {desc.concealed.count(desc.win_tile)}"
        )
    if context.after_flower_replacement and not has_flowers:
        raise InvalidHandError(
            f"profile {desc.profile} has no flower tiles; context.after_flower_replacement must be false"
        )
    if context.after_flower_replacement and (not desc.self_drawn or context.robbing_kong):
        raise InvalidHandError(
            "context.after_flower_replacement is a win on the tile drawn for a flower (E14), so self_drawn "
            "must be true and context.robbing_kong false"
        )
    if context.extra_draw_after_exhaustion and not has_unused_pool:
        # T9: only duel draws on from its unused pool; an exhausted erren wall is a drawn hand.
        raise InvalidHandError(
            f"profile {desc.profile} has no extra draw after exhaustion (its exhausted wall is a drawn "
            "hand, T9); context.extra_draw_after_exhaustion must be false"
        )


def _boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidHandError(f"{name} must be true or false, got {value!r}")
    return value


def _list(name: str, value: Any) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise InvalidHandError(f"{name} must be a list, got {type(value).__name__}")
    return list(value)


def _tiles(name: str, value: Any) -> list[int]:
    if not isinstance(value, str):
        raise InvalidHandError(f"{name} must be tile notation such as '123m', got {value!r}")
    try:
        return parse_tiles(value)
    except NotationError as err:
        raise NotationError(f"{name}: {err}") from None


def _tile_list(name: str, value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(sorted(_tiles(name, value)))
    kinds: list[int] = []
    for item in _list(name, value):
        kinds.extend(_tiles(name, item))
    return tuple(sorted(kinds))


def _meld(index: int, raw: Any) -> Meld:
    where = f"melds[{index}]"
    if not isinstance(raw, Mapping) or set(raw) != {"kind", "tiles"}:
        raise InvalidHandError(f"{where} must be an object with exactly 'kind' and 'tiles', got {raw!r}")
    kind = raw["kind"]
    if kind not in MELD_KINDS:
        raise InvalidHandError(f"{where}.kind must be one of {', '.join(MELD_KINDS)}; got {kind!r}")
    tiles = tuple(_tiles(f"{where}.tiles", raw["tiles"]))  # its errors already say where
    try:
        return Meld(kind, tiles)
    except InvalidHandError as error:
        raise InvalidHandError(f"{where}: {error}") from None
