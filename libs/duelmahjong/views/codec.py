"""The contract's words for the engine's values (table side), which every message the table builds uses:
seats, phases, room rules, actions and legal actions, refusal texts, timestamps. The messages
themselves are built by the module that owns each (the list is in :mod:`services.table`).

Engine seats are 0 and 1; the contract's are ``SEAT_FIRST`` and ``SEAT_SECOND`` (fixed for the
pairing). Engine actions are small values with a text form; the contract's are the ``Action`` oneof.
Nothing here holds a seat's hidden state: what a seat is shown is filtered by the engine first
(``Table.view(seat)``, ``Event.for_seat(seat)``) and only re-shaped after.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from duelmahjong.contract import MAX_CLAIM_WINDOW_MS, MELD_KINDS, PROFILES
from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action, act
from duelmahjong.engine.errors import IllegalActionError
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.platform.errors import InvalidArgument
from duelmahjong.rules.tiles import NUM_KINDS_WITH_FLOWERS, Tile, format_tiles, parse_tiles, tile_name
from duelmahjong.v1 import play_pb2, rules_pb2, tiles_pb2

SEATS = (rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND)
_KONG_OF_MELD = {
    tiles_pb2.MELD_KIND_EXPOSED_KONG: A.KONG,
    tiles_pb2.MELD_KIND_CONCEALED_KONG: A.CONCEALED_KONG,
    tiles_pb2.MELD_KIND_ADDED_KONG: A.ADDED_KONG,
}
PHASES = {
    "idle": play_pb2.HAND_PHASE_BETWEEN_HANDS,
    "doubling": play_pb2.HAND_PHASE_DOUBLING,
    "exchange": play_pb2.HAND_PHASE_EXCHANGE,
    "turn": play_pb2.HAND_PHASE_PLAY,
    "claim": play_pb2.HAND_PHASE_PLAY,
    "rob_kong": play_pb2.HAND_PHASE_PLAY,
    "extra_draw": play_pb2.HAND_PHASE_EXTRA_DRAW,
    "guess": play_pb2.HAND_PHASE_GUESS,
    "over": play_pb2.HAND_PHASE_BETWEEN_HANDS,
    "closed": play_pb2.HAND_PHASE_ENDED,
}
# Engine action kind → contract action kind (the LegalActions list groups by the latter).
ACTION_KINDS = {
    A.CHOOSE_DOUBLING: play_pb2.ACTION_KIND_CHOOSE_DOUBLING,
    A.DECLINE_DOUBLING: play_pb2.ACTION_KIND_CHOOSE_DOUBLING,
    A.EXCHANGE: play_pb2.ACTION_KIND_EXCHANGE,
    A.DISCARD: play_pb2.ACTION_KIND_DISCARD,
    A.DECLARE_READY: play_pb2.ACTION_KIND_DECLARE_READY,
    A.SELF_DRAW_WIN: play_pb2.ACTION_KIND_WIN,
    A.WIN: play_pb2.ACTION_KIND_WIN,
    A.CONCEALED_KONG: play_pb2.ACTION_KIND_KONG,
    A.ADDED_KONG: play_pb2.ACTION_KIND_KONG,
    A.KONG: play_pb2.ACTION_KIND_KONG,
    A.TAKE_TRIPLET: play_pb2.ACTION_KIND_RESPOND_OFFER,
    A.RUB: play_pb2.ACTION_KIND_RESPOND_OFFER,
    A.SWAP_ITEM: play_pb2.ACTION_KIND_USE_ITEM,
    A.SHUFFLE_ITEM: play_pb2.ACTION_KIND_USE_ITEM,
    A.PONG: play_pb2.ACTION_KIND_PONG,
    A.CHI: play_pb2.ACTION_KIND_CHI,
    A.PASS: play_pb2.ACTION_KIND_PASS,
    A.GUESS_BIG: play_pb2.ACTION_KIND_GUESS,
    A.GUESS_SMALL: play_pb2.ACTION_KIND_GUESS,
    A.COLLECT: play_pb2.ACTION_KIND_GUESS,
    A.LEAVE: play_pb2.ACTION_KIND_LEAVE,
}


def seat_enum(seat: int) -> rules_pb2.Seat.ValueType:
    return SEATS[seat] if seat in (0, 1) else rules_pb2.SEAT_UNSPECIFIED


def seat_index(seat: rules_pb2.Seat.ValueType) -> int:
    """The engine's seat (0, 1) of a contract seat; -1 for none."""
    return SEATS.index(seat) if seat in SEATS else -1


def _compact(kinds: Sequence[int]) -> str:
    return format_tiles(kinds) if kinds else ""


def timestamp(when: datetime | None = None) -> Timestamp:
    if when is None:  # the hot path (every event to every seat): no datetime arithmetic
        nanos = time.time_ns()
        return Timestamp(seconds=nanos // 1_000_000_000, nanos=nanos % 1_000_000_000)
    stamp = Timestamp()
    stamp.FromDatetime(when)
    return stamp


# --- room rules ---------------------------------------------------------------------------------------
def room_settings(rules: rules_pb2.RoomRules, negotiated: int) -> RoomSettings:
    """The engine's settings of a room (validated by the engine: bad rules are INVALID_ARGUMENT)."""
    profile = {v: k for k, v in PROFILES.items()}.get(rules.profile)
    if profile is None:
        raise InvalidArgument("room rules need a profile (PROFILE_DUEL or PROFILE_ERREN)")
    options: dict[str, Any] = {
        "profile": profile,
        "triplet_offer_probability": rules.triplet_offer_probability,
        "rub_offer_probability": rules.pick_offer_probability,
        "items_enabled": rules.items_enabled,
        "guess_enabled": rules.guess_enabled,
        "exchange_fee": rules.exchange_fee,
        "negotiated_multiplier": negotiated if profile == "duel" else 1,
    }
    if rules.minimum_fan:
        options["minimum_fan"] = rules.minimum_fan
    if rules.revealed_bonus_tiles:
        options["bonus_tile_count"] = rules.revealed_bonus_tiles
    if rules.task_multiplier:
        options["task_multiplier"] = rules.task_multiplier
    if rules.claim_window_ms > MAX_CLAIM_WINDOW_MS:
        raise InvalidArgument(
            f"claim_window_ms must be 0..{MAX_CLAIM_WINDOW_MS} (0 = none), got {rules.claim_window_ms}"
        )
    if rules.decision_millis:
        options["decision_seconds"] = rules.decision_millis / 1000
    if rules.time_bank_millis or rules.decision_millis:
        options["time_bank_seconds"] = rules.time_bank_millis / 1000
    try:
        return RoomSettings(**options)
    except ValueError as err:
        raise InvalidArgument(f"room rules are not valid: {err}") from None


# --- actions ------------------------------------------------------------------------------------------
def encode_action(action: Action) -> play_pb2.Action:
    """The contract's form of an engine action (for listing choices, defaults and the log)."""
    kind, tile = action.kind, tile_name(action.tile) if action.tile >= 0 else ""
    if kind in (A.CHOOSE_DOUBLING, A.DECLINE_DOUBLING):
        return play_pb2.Action(
            choose_doubling=play_pb2.ChooseDoublingAction(start_doubled=kind == A.CHOOSE_DOUBLING)
        )
    if kind == A.EXCHANGE:
        return play_pb2.Action(exchange=play_pb2.ExchangeAction(tiles=_compact(action.tiles)))
    if kind == A.DISCARD:
        return play_pb2.Action(discard=play_pb2.DiscardAction(tile=tile))
    if kind == A.DECLARE_READY:
        return play_pb2.Action(declare_ready=play_pb2.DeclareReadyAction(discard=tile))
    if kind in (A.SELF_DRAW_WIN, A.WIN):
        return play_pb2.Action(win=play_pb2.WinAction())
    if kind in (A.CONCEALED_KONG, A.ADDED_KONG, A.KONG):
        meld = {A.CONCEALED_KONG: "concealed_kong", A.ADDED_KONG: "added_kong", A.KONG: "exposed_kong"}[kind]
        return play_pb2.Action(kong=play_pb2.KongAction(kind=MELD_KINDS[meld], tile=tile))
    if kind == A.TAKE_TRIPLET:
        return play_pb2.Action(
            respond_offer=play_pb2.RespondOfferAction(accept=True, give_back=_compact(action.tiles))
        )
    if kind == A.RUB:
        return play_pb2.Action(respond_offer=play_pb2.RespondOfferAction(accept=True, pick=tile))
    if kind == A.SWAP_ITEM:
        target = tile_name(action.target)
        return play_pb2.Action(
            use_item=play_pb2.UseItemAction(
                item=rules_pb2.ITEM_KIND_SWAP_SUN_FOR_SKY, tiles=tile, target=target
            )
        )
    if kind == A.SHUFFLE_ITEM:
        return play_pb2.Action(
            use_item=play_pb2.UseItemAction(
                item=rules_pb2.ITEM_KIND_GRAFT_BLOSSOMS, tiles=_compact(action.tiles)
            )
        )
    if kind == A.PONG:
        return play_pb2.Action(pong=play_pb2.PongAction())
    if kind == A.CHI:
        return play_pb2.Action(
            chi=play_pb2.ChiAction(tiles=_compact([action.tile, action.tile + 1, action.tile + 2]))
        )
    if kind == A.PASS:
        return _pass()
    if kind in (A.GUESS_BIG, A.GUESS_SMALL):
        guess = rules_pb2.GUESS_BIG if kind == A.GUESS_BIG else rules_pb2.GUESS_SMALL
        return play_pb2.Action(guess=play_pb2.GuessAction(guess=guess))
    if kind == A.COLLECT:
        return play_pb2.Action(guess=play_pb2.GuessAction(skip=True))
    return play_pb2.Action(leave=play_pb2.LeaveAction())


def _pass() -> play_pb2.Action:
    # ``pass`` is a Python keyword: the generated field is reachable only by name.
    message = play_pb2.Action()
    getattr(message, "pass").SetInParent()
    return message


def _tiles(text: str, what: str) -> tuple[int, ...]:
    try:
        return tuple(sorted(parse_tiles(text)))
    except ValueError as err:
        raise InvalidArgument(f"{what} {text!r} is not tile notation: {err}") from None


def _tile(text: str, what: str) -> int:
    try:
        return Tile.parse(text).kind
    except ValueError as err:
        raise InvalidArgument(f"{what} {text!r} is not one tile: {err}") from None


def _one_of(legal: Sequence[Action], kinds: Sequence[str], why: str) -> Action:
    for action in legal:
        if action.kind in kinds:
            return action
    raise IllegalActionError(why)


def decode_action(message: play_pb2.Action, seat: int, legal: Sequence[Action]) -> Action:
    """The engine action a seat's message means, given the seat's legal actions (which tell a win on
    a discard from a self-draw and name the claimed tile). Raises :class:`InvalidArgument` for bad
    notation and :class:`IllegalActionError` for an action that cannot mean anything now."""
    which = message.WhichOneof("kind")
    if which is None:
        raise InvalidArgument("the action has no kind set")
    # act() gives the shared value the legal lists hold, so the engine's checks find it by identity
    # (tiles here are checked kinds 0–41: the shared values stay a few hundred).
    if which == "discard":
        return act(seat, A.DISCARD, _tile(message.discard.tile, "discard"))
    if which == "declare_ready":
        return act(seat, A.DECLARE_READY, _tile(message.declare_ready.discard, "declare_ready.discard"))
    if which == "exchange":
        return Action(seat, A.EXCHANGE, tiles=_tiles(message.exchange.tiles, "exchange.tiles"))
    if which == "chi":
        tiles = _tiles(message.chi.tiles, "chi.tiles")
        if len(tiles) != 3:
            raise InvalidArgument(f"a chow is three tiles, got {message.chi.tiles!r}")
        return act(seat, A.CHI, tiles[0])
    if which == "pong":
        return _one_of(legal, (A.PONG,), "there is no discard you can pong now")
    if which == "kong":
        tile = _tile(message.kong.tile, "kong.tile")
        kinds = (
            (_KONG_OF_MELD[message.kong.kind],)
            if message.kong.kind in _KONG_OF_MELD
            else tuple(_KONG_OF_MELD.values())
        )
        for action in legal:
            if action.kind in kinds and action.tile == tile:
                return action
        return act(seat, kinds[0], tile)
    if which == "win":
        return _one_of(legal, (A.SELF_DRAW_WIN, A.WIN), "there is no win for you now")
    if which in ("pass", "decline_win"):
        return act(seat, A.PASS)
    if which == "respond_offer":
        offer = message.respond_offer
        if not offer.accept:
            raise IllegalActionError("decline an offer by simply playing your turn (discard)")
        if offer.give_back:
            return Action(seat, A.TAKE_TRIPLET, tiles=_tiles(offer.give_back, "give_back"))
        return act(seat, A.RUB, _tile(offer.pick, "pick"))
    if which == "use_item":
        item = message.use_item
        if item.item == rules_pb2.ITEM_KIND_SWAP_SUN_FOR_SKY:
            return Action(seat, A.SWAP_ITEM, _tile(item.tiles, "tiles"), target=_tile(item.target, "target"))
        if item.item == rules_pb2.ITEM_KIND_GRAFT_BLOSSOMS:
            return Action(seat, A.SHUFFLE_ITEM, tiles=_tiles(item.tiles, "tiles"))
        raise IllegalActionError("that item is not used during play")
    if which == "choose_doubling":
        kind = A.CHOOSE_DOUBLING if message.choose_doubling.start_doubled else A.DECLINE_DOUBLING
        return act(seat, kind)
    if which == "guess":
        if message.guess.skip:
            return act(seat, A.COLLECT)
        return act(seat, A.GUESS_BIG if message.guess.guess == rules_pb2.GUESS_BIG else A.GUESS_SMALL)
    if which == "leave":
        return act(seat, A.LEAVE)
    if which == "draw":
        raise IllegalActionError("the table draws for you: there is no draw to ask for")
    raise IllegalActionError(f"{which} is not an action of a hand in play")


def encode_legal(
    legal: Sequence[Action], exchange_limit: int | None, hand_size: int
) -> list[play_pb2.LegalAction]:
    """The seat's legal actions grouped by contract kind, each with its tile choices."""
    # Grouped in plain dicts (insertion order keeps the first-seen order of kinds and choices) and
    # built into messages once: appending to a repeated field and searching it per action cost more.
    grouped: dict[play_pb2.ActionKind.ValueType, dict[str, None]] = {}
    exchange_kind: play_pb2.ActionKind.ValueType | None = None
    for action in legal:
        # Most of a turn's list: a discard or ready discard, whose choice is the tile's name.
        entry = _ONE_TILE_ENTRIES.get((action.kind, action.tile)) or _ENTRIES.get(action)
        if entry is None:
            entry = _ENTRIES[action] = (ACTION_KINDS[action.kind], _choice(action))
            if len(_ENTRIES) > _ENTRIES_KEPT:  # actions are interned per seat and kind; bound it anyway
                _ENTRIES.clear()
        kind, choice = entry
        choices = grouped.get(kind)
        if choices is None:
            choices = grouped[kind] = {}
        if choice:
            choices[choice] = None
        if action.kind == A.EXCHANGE:
            exchange_kind = kind
    out = []
    for kind, choices in grouped.items():
        message = play_pb2.LegalAction(kind=kind, choices=list(choices))
        if kind == exchange_kind:
            message.max_tiles = hand_size if exchange_limit is None else min(exchange_limit, hand_size)
        out.append(message)
    return out


# (engine kind, tile) → (contract kind, choice) of the kinds whose choice is the tile's name (_choice).
_ONE_TILE_ENTRIES = {
    (kind, tile): (ACTION_KINDS[kind], tile_name(tile))
    for kind in (A.DISCARD, A.DECLARE_READY)
    for tile in range(NUM_KINDS_WITH_FLOWERS)
}
# Action → (contract kind, choice): the same few hundred actions are listed over and over.
_ENTRIES: dict[Action, tuple[play_pb2.ActionKind.ValueType, str]] = {}
_ENTRIES_KEPT = 65536


def _choice(action: Action) -> str:
    if action.kind == A.CHI:
        return _compact([action.tile, action.tile + 1, action.tile + 2])
    if action.kind in (A.EXCHANGE, A.TAKE_TRIPLET, A.SHUFFLE_ITEM):
        return _compact(action.tiles)
    if action.kind in (A.CHOOSE_DOUBLING, A.DECLINE_DOUBLING):
        return "double" if action.kind == A.CHOOSE_DOUBLING else "no_double"
    if action.kind in (A.GUESS_BIG, A.GUESS_SMALL, A.COLLECT):
        return action.kind
    if action.kind in (A.PONG, A.WIN, A.SELF_DRAW_WIN, A.PASS, A.LEAVE):
        return ""
    name = tile_name(action.tile) if action.tile >= 0 else ""
    return f"{name}>{tile_name(action.target)}" if action.kind == A.SWAP_ITEM else name


def between_hands_legal() -> list[play_pb2.LegalAction]:
    """Between hands a seat continues or leaves (T7 / T10); the table, not the engine, decides this."""
    return [
        play_pb2.LegalAction(kind=play_pb2.ACTION_KIND_CONTINUE),
        play_pb2.LegalAction(kind=play_pb2.ACTION_KIND_LEAVE),
    ]


# --- refusals -----------------------------------------------------------------------------------------
# What a seat is told it may do, in the contract's words (never the engine's notation "0 discard 2m").
_KIND_WORDS = {
    play_pb2.ACTION_KIND_DRAW: "draw",
    play_pb2.ACTION_KIND_DISCARD: "discard",
    play_pb2.ACTION_KIND_CHI: "chi",
    play_pb2.ACTION_KIND_PONG: "pong",
    play_pb2.ACTION_KIND_KONG: "kong",
    play_pb2.ACTION_KIND_WIN: "win",
    play_pb2.ACTION_KIND_PASS: "pass",
    play_pb2.ACTION_KIND_DECLARE_READY: "declare ready (报听)",
    play_pb2.ACTION_KIND_EXCHANGE: "exchange tiles (换牌)",
    play_pb2.ACTION_KIND_RESPOND_OFFER: "take the offer",
    play_pb2.ACTION_KIND_USE_ITEM: "use an item",
    play_pb2.ACTION_KIND_CHOOSE_DOUBLING: "choose 开始加倍",
    play_pb2.ACTION_KIND_DECLINE_WIN: "decline the win",
    play_pb2.ACTION_KIND_GUESS: "guess (猜大小)",
    play_pb2.ACTION_KIND_LEAVE: "leave",
    play_pb2.ACTION_KIND_CONTINUE: "continue",
}
_KIND_OF_FIELD = {
    field.name: play_pb2.ActionKind.Value(f"ACTION_KIND_{field.name.upper()}")
    for field in play_pb2.Action.DESCRIPTOR.oneofs_by_name["kind"].fields
    if field.name != "continue_playing"
} | {"continue_playing": play_pb2.ACTION_KIND_CONTINUE, "decline_win": play_pb2.ACTION_KIND_PASS}
_COMBINATORIAL = frozenset({"exchange", "respond_offer", "use_item"})
_ENGINE_NOTATION = re.compile(r"^\d |.*'\d \w")  # "0 discard 2m…", "… e.g. '0 exchange [1m]'"


def refusal(message: play_pb2.Action, legal: Sequence[Action], engine_reason: str) -> str:
    """Why an action was refused, in words a player reads: what was asked, what is possible now. The
    engine's reason is kept where it already speaks of tiles and rules (换牌, offers, items)."""
    which = message.WhichOneof("kind") or ""
    kind = _KIND_OF_FIELD.get(which, play_pb2.ACTION_KIND_UNSPECIFIED)
    listed = encode_legal(legal, None, 14)
    allowed = [entry.kind for entry in listed]
    may = ", ".join(_KIND_WORDS.get(k, "?") for k in allowed)
    if which in _COMBINATORIAL and not _ENGINE_NOTATION.match(engine_reason):
        return engine_reason
    if kind not in allowed:
        return f"you cannot {_KIND_WORDS.get(kind, which)} now; you may: {may}"
    choices = next((list(entry.choices) for entry in listed if entry.kind == kind), [])
    options = ", ".join(choices)
    if which == "discard":
        return f"you cannot discard {message.discard.tile}: it is not in your hand (you hold {options})"
    if which == "declare_ready":
        tile = message.declare_ready.discard
        return f"discarding {tile} does not leave your hand ready; 报听 is possible with: {options}"
    if which == "chi":
        return f"{message.chi.tiles} is not a chow you can make now; you can chi: {options}"
    if which == "kong":
        return f"you have no kong of {message.kong.tile} now; you can kong: {options}"
    return f"you cannot {_KIND_WORDS[kind]} that way now; you may: {may}"
