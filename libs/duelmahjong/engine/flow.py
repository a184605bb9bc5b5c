"""What follows from an action: the events of §5's table rules, produced one at a time and folded at once.

``perform`` turns a validated action into events; ``advance`` then plays every step nobody has to
decide (draws, claims nobody can make, the auto-play of a declared-ready hand, T3) until a seat has a
real choice or the hand ends. Random outcomes come from ``derived_random(seed, state.rng_counter)`` and
are written into the events.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.engine.events import Event
from duelmahjong.engine.legal import claim_actions, hand_waits, legal_actions, unseen_kinds, win_allowed
from duelmahjong.engine.result import describe_win, evaluate_json, task_completed
from duelmahjong.engine.state import (
    CLAIM,
    DOUBLING,
    EXCHANGE,
    EXTRA_DRAW,
    FROM_FLOWER,
    FROM_KONG,
    FROM_POOL,
    FROM_WALL,
    ROB_KONG,
    TURN,
    TableState,
)
from duelmahjong.engine.swaps import give_for_unseen
from duelmahjong.engine.wall import HandTiles, derived_random, shuffle_hand
from duelmahjong.rules.tiles import format_tiles, tiles_of

if TYPE_CHECKING:
    from duelmahjong.engine.table import Table

EXTRA_DRAWS = 3  # T9


# --- starting a hand ---------------------------------------------------------------------------------------
def start_hand(
    table: Table, seed: int, items: Any, qiankun: frozenset[int], stacked: HandTiles | None
) -> None:
    state = table.state
    settings = state.settings
    tiles = stacked or shuffle_hand(
        settings.profile,
        seed,
        bonus_count=settings.bonus_tile_count,
        task_multiplier=settings.task_multiplier,
    )
    previous = state.results[-1] if state.results else None
    if previous is None:
        dealer, passes = tiles.first_dealer, 0  # T1: first hand random
    else:
        winner = previous.get("winner", -1)
        dealer = winner if winner >= 0 else previous["dealer"]  # T1: winner deals, a draw keeps the dealer
        passes = previous["dealer_passes"] + (dealer != previous["dealer"])
    public: dict[str, Any] = {
        "hand_number": state.hand_number + 1,
        "dealer": dealer,
        "dealer_passes": passes,
        "round_wind": (passes // 2) % 4,  # E17: a full pass of the deal through both players
        "progressive": 2**state.hand_number if settings.is_duel else 1,  # T7
        "items": [dict(items[0]), dict(items[1])],
    }
    if tiles.bonus:
        public["bonus"] = tiles.bonus
    if tiles.task:
        public["task"] = tiles.task
    table.emit(
        Event("hand_started", public=public, server={"seed": seed, "wall": tiles.wall, "pool": tiles.pool})
    )
    if settings.is_duel:
        deal(table)


def deal(table: Table) -> None:
    """Dealer 14, non-dealer 13 from the head of the wall, then 补花 (erren) dealer first."""
    state = table.state
    dealer = state.dealer
    for seat, size in ((dealer, 14), (1 - dealer, 13)):
        dealt = state.wall[state.head : state.head + size]
        hand = tuple(sorted(t for t in dealt if t < 34))
        flowers = tuple(t for t in dealt if t >= 34)
        public: dict[str, Any] = {"count": size}
        if flowers:
            public["flowers"] = flowers
        table.emit(Event("dealt", seat, public=public, private={"tiles": hand}))
    for seat in (dealer, 1 - dealer):
        for _ in range(len(state.flowers[seat])):
            _draw_replacement(table, seat, FROM_FLOWER)


# --- drawing -------------------------------------------------------------------------------------------
def _draw_event(state: TableState, seat: int, source: str) -> Event:
    if source == FROM_WALL:
        tile = state.wall[state.head]
    elif source == FROM_POOL:
        tile = state.pool[0]
    else:
        tile = state.wall[state.tail - 1]
    if tile >= 34:  # flowers are shown at once (补花)
        return Event("drew", seat, public={"source": source, "tile": tile})
    return Event("drew", seat, public={"source": source}, private={"tile": tile})


def _draw_replacement(table: Table, seat: int, source: str) -> bool:
    """Draw from the end of the wall (kong or flower replacement, T2); False if the wall is empty."""
    state = table.state
    while True:
        if state.wall_remaining == 0:
            return False
        event = _draw_event(state, seat, source)
        table.emit(event)
        if event.public and "tile" in event.public:  # a flower: replace it too
            source = FROM_FLOWER
            continue
        return True


def draw_for(table: Table, seat: int) -> None:
    """The seat's next draw from the wall (flowers replaced), or exhaustion if the wall is empty (T9)."""
    state = table.state
    if state.wall_remaining == 0:
        exhaust(table)
        return
    event = _draw_event(state, seat, FROM_WALL)
    table.emit(event)
    if event.public and "tile" in event.public and not _draw_replacement(table, seat, FROM_FLOWER):
        exhaust(table)
        return
    _maybe_offer(table, seat)


def _maybe_offer(table: Table, seat: int) -> None:
    """T5: after a draw, with the room's probabilities, a triplet offer or 搓牌 (duel, not when ready)."""
    state = table.state
    settings = state.settings
    p_triplet, p_rub = settings.triplet_offer_probability, settings.rub_offer_probability
    if not settings.is_duel or state.ready[seat] or (p_triplet <= 0 and p_rub <= 0):
        return
    rng = derived_random(state.seed, state.rng_counter)
    roll = rng.random()
    if roll < p_triplet:
        unseen = state.wall[state.head : state.tail] + state.pool
        triplets = [k for k in range(34) if unseen.count(k) >= 3]
        if triplets:
            table.emit(
                Event("offered", seat, public={"offer": "triplet"}, private={"tile": rng.choice(triplets)})
            )
            return
    elif roll < p_triplet + p_rub and unseen_kinds(state):
        table.emit(Event("offered", seat, public={"offer": "rub"}))
        return
    # Nothing offered: still advance the counter so the next roll differs.
    table.emit(Event("offered", seat, public={"offer": ""}))


def exhaust(table: Table) -> None:
    """T9: erren → drawn hand; duel → the ready player (the first ready if both) draws up to 3 extra."""
    state = table.state
    if not state.settings.is_duel:
        table.emit(Event("exhausted", public={"ready": [False, False]}))
        end_hand(table, outcome="drawn")
        return
    ready = [bool(hand_waits(state, seat)) for seat in (0, 1)]
    public: dict[str, Any] = {"ready": ready}
    if any(ready):
        if all(ready):
            # Both ready: the one who became ready first draws; -1 (never recorded) counts as last.
            since = [s if s >= 0 else 1 << 30 for s in state.tenpai_since]
            first = 0 if since[0] <= since[1] else 1
        else:
            first = ready.index(True)
        public["extra_seat"] = first
        public["extra_draws"] = min(EXTRA_DRAWS, len(state.pool))
    table.emit(Event("exhausted", public=public))
    if not any(ready) or not public["extra_draws"]:
        end_hand(table, outcome="drawn")


# --- performing an action ---------------------------------------------------------------------------------
def perform(table: Table, action: Action) -> None:
    seat, kind = action.seat, action.kind
    if kind == A.LEAVE:
        _leave(table, seat)
        return
    handler = _PERFORMERS[kind]
    handler(table, action)
    advance(table)


def _leave(table: Table, seat: int) -> None:
    """T10: leaving during a hand is escape; between hands it ends the pairing without penalty."""
    state = table.state
    if state.phase in (DOUBLING, EXCHANGE, TURN, CLAIM, ROB_KONG, EXTRA_DRAW):
        table.emit(Event("escaped", seat))
        end_hand(table, outcome="escape", escaper=seat)
    table.emit(Event("pairing_ended", seat))


def _doubling(table: Table, action: Action) -> None:
    state = table.state
    table.emit(Event("doubling_chosen", action.seat, private={"double": action.kind == A.CHOOSE_DOUBLING}))
    if None not in state.doubling:
        table.emit(Event("doubling_revealed", public={"choices": tuple(state.doubling)}))
        deal(table)


def _exchange(table: Table, action: Action) -> None:
    """T4: duel from/to the unused pool; erren from the wall, returned tiles shuffled back in."""
    state = table.state
    seat, given = action.seat, action.tiles
    server: dict[str, Any] = {}
    if state.settings.is_duel:
        received = tuple(state.pool[: len(given)])
        server["pool"] = (*state.pool[len(given) :], *given)
    else:
        wall = state.wall[state.head : state.tail]
        received_list: list[int] = []
        for tile in list(wall):
            if len(received_list) == len(given):
                break
            if tile < 34:
                received_list.append(tile)
                wall.remove(tile)
        received = tuple(received_list)
        rng = derived_random(state.seed, state.rng_counter + 1000 + seat)
        for tile in given:
            wall.insert(rng.randrange(len(wall) + 1), tile)
        server["wall"] = tuple(wall)
    fee_count = max(0, len(given) - 1) if not state.settings.is_duel else 0  # erren: the first is free
    table.emit(
        Event(
            "exchanged",
            seat,
            public={"count": len(given), "paid": fee_count},
            private={"given": given, "received": received},
            server=server,
        )
    )
    if all(state.exchanged):
        table.emit(Event("play_started", state.dealer))


def _discard(table: Table, action: Action) -> None:
    state = table.state
    seat, tile = action.seat, action.tile
    if not state.settings.is_duel and any(a.kind == A.SELF_DRAW_WIN for a in table.legal_actions(seat)):
        _decline_win(table, seat)
    ready = action.kind == A.DECLARE_READY
    public: dict[str, Any] = {"tile": tile}
    if ready:
        public["ready"] = True
        if _first_turn_ready(state, seat, tile):
            public["first_turn"] = True  # T3 天听
    server: dict[str, Any] | None = None
    if state.settings.is_duel:
        counts = state.hands[seat]
        counts[tile] -= 1
        try:
            tenpai = ready or state.ready[seat] or bool(hand_waits(state, seat, counts))
        finally:
            counts[tile] += 1
        server = {"tenpai": tenpai}
    table.emit(Event("discarded", seat, public=public, server=server))


def _first_turn_ready(state: TableState, seat: int, tile: int) -> bool:
    """T3 天听: the dealer's first discard, or the non-dealer's first draw discarded at once; no call
    before it."""
    if state.calls or state.discards[seat]:
        return False
    if seat == state.dealer:
        return not state.dealer_konged
    return state.draws[seat] == 1 and tile == state.last_draw


def _decline_win(table: Table, seat: int) -> None:
    """T8 胡加倍: each declined win doubles, at most the room's maximum (8)."""
    state = table.state
    declined = state.win_doublings[seat] < state.settings.max_win_doublings and not state.settings.is_duel
    table.emit(Event("passed", seat, public={"declined_win": declined} if declined else None))


def _pass(table: Table, action: Action) -> None:
    state = table.state
    seat = action.seat
    phase = state.phase
    had_win = any(a.kind in (A.WIN, A.SELF_DRAW_WIN) for a in table.legal_actions(seat))
    if had_win:
        _decline_win(table, seat)
    else:
        table.emit(Event("passed", seat))
    if phase == CLAIM:
        draw_for(table, seat)
    elif phase == ROB_KONG:
        _after_kong(table, 1 - seat)
    elif phase == EXTRA_DRAW:
        table.emit(Event("thrown_away", seat, public={"tile": state.last_draw}))


def _claim(table: Table, action: Action) -> None:
    meld = {A.CHI: "chi", A.PONG: "pong", A.KONG: "exposed_kong"}[action.kind]
    table.emit(Event("claimed", action.seat, public={"meld": meld, "tile": action.tile}))
    if meld == "exposed_kong":
        _after_kong(table, action.seat)


def _kong(table: Table, action: Action) -> None:
    seat, tile = action.seat, action.tile
    if action.kind == A.CONCEALED_KONG:
        # A concealed kong is laid face down: the opponent sees that it happened, not which tile.
        table.emit(Event("konged", seat, public={"meld": "concealed_kong"}, private={"tile": tile}))
        _after_kong(table, seat)
    else:
        table.emit(Event("konged", seat, public={"meld": "added_kong", "tile": tile}))
        # D13: the opponent may rob it; advance() moves on when it cannot.


def _after_kong(table: Table, seat: int) -> None:
    if not _draw_replacement(table, seat, FROM_KONG):
        exhaust(table)


def _win(table: Table, action: Action) -> None:
    state = table.state
    seat, phase = action.seat, state.phase
    self_drawn = action.kind == A.SELF_DRAW_WIN
    robbing = phase == ROB_KONG
    description = describe_win(state, seat, action.tile, self_drawn=self_drawn, robbing=robbing)
    evaluation = evaluate_json(description)
    table.emit(
        Event(
            "won",
            seat,
            public={
                "tile": action.tile,
                "self_drawn": self_drawn or robbing,
                "description": description,
                "evaluation": evaluation.to_json(),
                "task_completed": task_completed(state, seat, evaluation),
                "tiles": tuple(tiles_of(state.hands[seat])),
            },
        )
    )
    if not (state.settings.is_duel and state.settings.guess_enabled):
        end_hand(table, outcome="win")


def _guess(table: Table, action: Action) -> None:
    """T12 猜大小: three dice; big 11–17, small 4–10, triples lose; right → ×2–5 from the house."""
    state = table.state
    guess: dict[str, Any] = {"choice": action.kind}
    if action.kind != A.COLLECT:
        rng = derived_random(state.seed, state.rng_counter)
        dice = (rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 6))
        total = sum(dice)
        triple = dice[0] == dice[1] == dice[2]
        right = not triple and ((total >= 11) == (action.kind == A.GUESS_BIG))
        guess.update(dice=dice, right=right, factor=rng.randint(2, 5) if right else 0)
    table.emit(Event("guessed", action.seat, public=guess))
    end_hand(table, outcome="win", guess=guess)


def _offer_response(table: Table, action: Action) -> None:
    give_for_unseen(table, action)


# --- the automatic steps ----------------------------------------------------------------------------------
def advance(table: Table) -> None:
    """Play every forced step until a seat has a real decision or the hand is over."""
    state = table.state
    while True:
        phase = state.phase
        seat = state.current
        if phase == CLAIM:
            if claim_actions(state, seat):
                return
            draw_for(table, seat)
        elif phase == TURN and state.ready[seat] and state.last_draw >= 0:
            choices = [a for a in legal_actions(state, seat) if a.kind not in (A.DISCARD, A.LEAVE)]
            if choices:
                return
            table.emit(Event("discarded", seat, public={"tile": state.last_draw}, server=_tenpai(state)))
        elif phase == ROB_KONG:
            if win_allowed(state, seat, state.kong_tile, self_drawn=False, robbing=True):
                return
            _after_kong(table, 1 - seat)
        elif phase == EXTRA_DRAW:
            if state.last_draw >= 0:
                if win_allowed(state, seat, state.last_draw, self_drawn=True):
                    return
                table.emit(Event("thrown_away", seat, public={"tile": state.last_draw}))
            elif state.extra_draws_left > 0 and state.pool:
                table.emit(_draw_event(state, seat, FROM_POOL))
            else:
                end_hand(table, outcome="drawn")
        else:
            return


def _tenpai(state: TableState) -> dict[str, Any] | None:
    return {"tenpai": True} if state.settings.is_duel else None


# --- the end of a hand ------------------------------------------------------------------------------------
def end_hand(
    table: Table, *, outcome: str, escaper: int = -1, guess: Mapping[str, Any] | None = None
) -> None:
    state = table.state
    win = state.win if outcome == "win" else None
    winner = state.winner if win else -1
    result: dict[str, Any] = {
        "hand": state.hand_number,
        "outcome": outcome,
        "dealer": state.dealer,
        "dealer_passes": 0,
        "winner": winner,
        "loser": 1 - winner if winner >= 0 else -1,
        "escaper": escaper,
        "negotiated": state.settings.negotiated_multiplier,
        "progressive": state.progressive,
        "hands": [format_tiles(tiles_of(state.hands[seat])) for seat in (0, 1)],
    }
    started = next(e for e in reversed(table.events) if e.kind == "hand_started")
    result["dealer_passes"] = (started.public or {})["dealer_passes"]
    if win:
        result["self_drawn"] = win["self_drawn"]
        result["description"] = win["description"]
        result["evaluation"] = win["evaluation"]
    if not state.settings.is_duel:
        result["doubling"] = [bool(choice) for choice in state.doubling]
        result["win_doublings"] = state.win_doublings[winner] if winner >= 0 else 0
        result["task"] = state.task
        result["task_completed"] = bool(win and win["task_completed"])
        result["exchange_fees"] = [max(0, n - 1) for n in state.exchange_counts]
    if guess:
        result["guess"] = dict(guess)
    table.emit(Event("hand_ended", public={"result": result}))


_PERFORMERS = {
    A.CHOOSE_DOUBLING: _doubling,
    A.DECLINE_DOUBLING: _doubling,
    A.EXCHANGE: _exchange,
    A.DISCARD: _discard,
    A.DECLARE_READY: _discard,
    A.SELF_DRAW_WIN: _win,
    A.WIN: _win,
    A.CONCEALED_KONG: _kong,
    A.ADDED_KONG: _kong,
    A.KONG: _claim,
    A.PONG: _claim,
    A.CHI: _claim,
    A.PASS: _pass,
    A.TAKE_TRIPLET: _offer_response,
    A.RUB: _offer_response,
    A.SWAP_ITEM: _offer_response,
    A.SHUFFLE_ITEM: _offer_response,
    A.GUESS_BIG: _guess,
    A.GUESS_SMALL: _guess,
    A.COLLECT: _guess,
}
