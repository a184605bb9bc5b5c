"""A seat's stream as the env sees it: :func:`seat_observation_from_view` builds the env's
:class:`~duelmahjong.env.observation.SeatObservation` from a ``SeatView`` and its ``LegalActions``, equal
to ``duelmahjong.env.observe(table, seat)`` at the same moment; :func:`legal_mask` is the env's action
mask over it (``duelmahjong.env.selection.fill_mask``), choices of several tiles included.

Everything comes from the contract (docs/protocol.md "Bring your own bot"): the view's public state
(with its unused pool's count, last discard, play step and the 开始加倍 each seat may know), the seat's
own tiles, offer and items, and its legal actions, turned back into the engine's actions in the
engine's order (the list groups them by contract kind, each kind's choices in the engine's order). One
fact is the client's own: the tile a seat had drawn when it won on it (``won_with``), which the engine
keeps as the drawn tile through 猜大小 while the view shows the hand whole.

Needs the ``env`` extra (numpy): the client library imports this only for ``duel bot --policy``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from duelmahjong.contract import MELD_KIND_WORDS, PROFILE_WORDS, WIND_WORDS
from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.env import layout as L
from duelmahjong.env.observation import (
    DISCARD_CLAIMED,
    DISCARD_DRAWN,
    DISCARD_READY,
    HIDDEN_KONG,
    NO_TILE,
    Meld,
    SeatObservation,
    Task,
)
from duelmahjong.env.policy import pending_kind
from duelmahjong.env.selection import Choice, Mask, fill_legal
from duelmahjong.rules.tiles import WIND_NAMES, Tile, counts_of, parse_tiles
from duelmahjong.v1 import play_pb2, rules_pb2, tiles_pb2
from duelmahjong.views.codec import seat_index
from duelmahjong.views.items import ENGINE_NAMES
from duelmahjong.views.seat_views import PLAY_STEPS, START_DOUBLING, TASK_KINDS

_PHASES = {
    play_pb2.HAND_PHASE_DOUBLING: "doubling",
    play_pb2.HAND_PHASE_EXCHANGE: "exchange",
    play_pb2.HAND_PHASE_EXTRA_DRAW: "extra_draw",
    play_pb2.HAND_PHASE_GUESS: "guess",
    play_pb2.HAND_PHASE_SETTLING: "over",
    play_pb2.HAND_PHASE_ENDED: "closed",
}
# The contract's words back into the engine's (the table's view builder's tables, inverted).
_STEPS = {step: phase for phase, step in PLAY_STEPS.items()}
_DOUBLING = {shown: doubled for doubled, shown in START_DOUBLING.items()}
_TASK_KINDS = {kind: name for name, kind in TASK_KINDS.items()}


def _tile(text: str) -> int:
    return Tile.parse(text).kind if text else NO_TILE


def _phase(table: play_pb2.PublicTableState) -> str:
    if table.phase == play_pb2.HAND_PHASE_PLAY:
        return _STEPS.get(table.play_step, "turn")
    if table.phase == play_pb2.HAND_PHASE_BETWEEN_HANDS:
        return "over" if table.hand_number else "idle"
    return _PHASES.get(table.phase, "idle")


def _meld(meld: tiles_pb2.Meld) -> Meld:
    tiles = parse_tiles(meld.tiles) if meld.tiles else []
    return Meld(MELD_KIND_WORDS[meld.kind], min(tiles) if tiles else HIDDEN_KONG)


def _flags(discard: play_pb2.Discard) -> int:
    return (
        (DISCARD_READY if discard.declared_ready else 0)
        | (DISCARD_DRAWN if discard.drawn_tile else 0)
        | (DISCARD_CLAIMED if discard.claimed else 0)
    )


def _task(table: play_pb2.PublicTableState) -> Task | None:
    if not table.HasField("task") or table.task.kind == rules_pb2.TASK_KIND_UNSPECIFIED:
        return None
    task = table.task
    pattern = ""
    if task.pattern != rules_pb2.PATTERN_ID_UNSPECIFIED:
        pattern = rules_pb2.PatternId.Name(task.pattern).removeprefix("PATTERN_ID_").lower()
    return Task(kind=_TASK_KINDS[task.kind], pattern=pattern, multiplier=task.multiplier)


def seat_observation_from_view(
    view: play_pb2.SeatView, legal: play_pb2.LegalActions | None = None, *, won_with: int = NO_TILE
) -> SeatObservation:
    """The env's observation of the seat whose ``view`` this is, with ``legal`` (default: the view's
    own) as its legal actions. ``won_with``: during 猜大小, the tile the seat drew and won on, if it
    did (the env keeps it as the drawn tile; the view shows the hand whole)."""
    if legal is None:
        legal = view.legal_actions
    table = view.table
    seat = seat_index(view.seat)
    phase = _phase(table)
    seats = table.seats
    own_tiles = parse_tiles(view.concealed) if view.concealed else []
    drawn = _tile(view.drawn_tile)
    if drawn >= 0:
        own_tiles.append(drawn)
    elif phase == "guess":
        drawn = won_with
    hand = tuple(counts_of(own_tiles))
    offer, offer_tile = "", NO_TILE
    for shown in view.offers:
        offer = "triplet" if shown.kind == play_pb2.Offer.KIND_TRIPLET else "rub"
        offer_tile = _tile(shown.tiles[:2]) if offer == "triplet" and shown.tiles else NO_TILE
    rivers = tuple(tuple(_tile(d.tile) for d in s.discards) for s in seats)
    flags = tuple(tuple(_flags(d) for d in s.discards) for s in seats)
    sizes = [s.concealed_count + int(s.holding_drawn_tile) for s in seats]  # the drawn tile counts
    observation = SeatObservation(
        profile=PROFILE_WORDS[table.profile],
        seat=seat,
        phase=phase,
        to_move=seat_index(table.turn),
        hand_number=table.hand_number,
        dealer=seat_index(table.dealer),
        round_wind=WIND_NAMES.index(WIND_WORDS[table.round_wind]),
        progressive=table.multipliers.progressive,
        wall_remaining=table.wall_remaining,
        pool_remaining=table.pool_remaining,
        bonus_tiles=tuple(parse_tiles(table.revealed_bonus_tiles)),
        task=_task(table),
        last_discard=_tile(table.last_discard),
        hand=hand,
        drawn=drawn,
        hand_sizes=(sizes[0], sizes[1]),
        melds=(tuple(_meld(m) for m in seats[0].melds), tuple(_meld(m) for m in seats[1].melds)),
        rivers=(rivers[0], rivers[1]),
        river_flags=(flags[0], flags[1]),
        flowers=(tuple(parse_tiles(seats[0].flowers)), tuple(parse_tiles(seats[1].flowers))),
        ready=(seats[0].declared_ready, seats[1].declared_ready),
        doubling=(_DOUBLING.get(seats[0].start_doubling), _DOUBLING.get(seats[1].start_doubling)),
        win_doublings=(seats[0].win_declines, seats[1].win_declines),
        items=tuple(sorted((ENGINE_NAMES[i.item], i.count) for i in view.items if i.item in ENGINE_NAMES)),
        offer=offer,
        offer_tile=offer_tile,
        legal=(),
    )
    return replace(observation, legal=tuple(engine_actions(observation, legal, _tile(table.kong_tile))))


def engine_actions(
    obs: SeatObservation, legal: play_pb2.LegalActions, kong_tile: int = NO_TILE
) -> list[Action]:
    """The engine's legal actions a contract decision lists, in the engine's order (``legal_actions``
    lists each contract kind's actions together, and the contract keeps the order of kinds and of
    each kind's choices). The tiles the list does not name come from the observation: a win's or a
    claim's tile is the last discard (or the robbable kong's), a self-drawn win's the drawn tile."""
    seat = obs.seat
    out: list[Action] = []
    for entry in legal.actions:
        kind, choices = entry.kind, list(entry.choices)
        if kind == play_pb2.ACTION_KIND_CHOOSE_DOUBLING:
            out += [Action(seat, A.CHOOSE_DOUBLING if c == "double" else A.DECLINE_DOUBLING) for c in choices]
        elif kind == play_pb2.ACTION_KIND_EXCHANGE:
            out.append(Action(seat, A.EXCHANGE))
            out += [Action(seat, A.EXCHANGE, tiles=tuple(sorted(parse_tiles(c)))) for c in choices]
        elif kind == play_pb2.ACTION_KIND_DISCARD:
            out += [Action(seat, A.DISCARD, _tile(c)) for c in choices]
        elif kind == play_pb2.ACTION_KIND_DECLARE_READY:
            out += [Action(seat, A.DECLARE_READY, _tile(c)) for c in choices]
        elif kind == play_pb2.ACTION_KIND_WIN:
            out.append(_win(obs, kong_tile))
        elif kind == play_pb2.ACTION_KIND_KONG:
            out += [Action(seat, _kong_kind(obs, _tile(c)), _tile(c)) for c in choices]
        elif kind == play_pb2.ACTION_KIND_PONG:
            out.append(Action(seat, A.PONG, obs.last_discard))
        elif kind == play_pb2.ACTION_KIND_CHI:
            out += [Action(seat, A.CHI, min(parse_tiles(c))) for c in choices]
        elif kind == play_pb2.ACTION_KIND_PASS:
            out.append(Action(seat, A.PASS))
        elif kind == play_pb2.ACTION_KIND_RESPOND_OFFER:
            out += [_offer_action(seat, c) for c in choices]
        elif kind == play_pb2.ACTION_KIND_USE_ITEM:
            out += [_item_action(seat, c) for c in choices]
        elif kind == play_pb2.ACTION_KIND_GUESS:
            out += [Action(seat, c) for c in choices]
        elif kind == play_pb2.ACTION_KIND_LEAVE:
            out.append(Action(seat, A.LEAVE))
    return out


def _win(obs: SeatObservation, kong_tile: int) -> Action:
    if obs.phase == "claim":
        return Action(obs.seat, A.WIN, obs.last_discard)
    if obs.phase == "rob_kong":
        return Action(obs.seat, A.WIN, kong_tile)
    held = [kind for kind, count in enumerate(obs.hand) if count]
    # A self-drawn win is on the drawn tile; the dealer's first turn (no draw) names its highest kind.
    return Action(obs.seat, A.SELF_DRAW_WIN, obs.drawn if obs.drawn >= 0 else held[-1])


def _kong_kind(obs: SeatObservation, tile: int) -> str:
    if obs.phase == "claim":
        return A.KONG  # on the opponent's discard
    return A.CONCEALED_KONG if obs.hand[tile] == 4 else A.ADDED_KONG


def _offer_action(seat: int, choice: str) -> Action:
    tiles = tuple(sorted(parse_tiles(choice)))
    if len(tiles) == 3:
        return Action(seat, A.TAKE_TRIPLET, tiles=tiles)
    return Action(seat, A.RUB, tiles[0])


def _item_action(seat: int, choice: str) -> Action:
    if ">" in choice:
        given, target = choice.split(">")
        return Action(seat, A.SWAP_ITEM, _tile(given), target=_tile(target))
    return Action(seat, A.SHUFFLE_ITEM, tiles=tuple(sorted(parse_tiles(choice))))


# --- the action mask --------------------------------------------------------------------------------
def legal_mask(
    obs: SeatObservation, choice: Choice, legal: play_pb2.LegalActions, *, allow_leave: bool = True
) -> Mask:
    """The env's mask (``selection.fill_mask``) of the seat whose observation ``obs`` is, with
    ``choice`` in progress; ``legal`` tells what the observation does not: how many tiles 换牌 may
    still give back, and the kinds 偷天换日 may turn a tile into."""
    limit = next((e.max_tiles for e in legal.actions if e.kind == play_pb2.ACTION_KIND_EXCHANGE), 0)
    if obs.profile == "duel":
        limit = min(limit, obs.pool_remaining)  # duel's exchanges draw from the unused pool
    targets = next((e.swap_targets for e in legal.actions if e.swap_targets), "")
    return fill_legal(
        obs.legal,
        obs.hand,
        choice,
        pending_kind(obs, choice),
        np.zeros(L.ACTION_COUNT, np.int8),
        unseen=sorted(set(parse_tiles(targets))) if targets else [],
        exchange_ok=lambda tiles: len(tiles) <= limit,
        allow_leave=allow_leave,
    )
