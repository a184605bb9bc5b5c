"""What follows from an action: the events of §5's table rules, produced one at a time and folded at once.

``perform`` turns a validated action into events; ``advance`` then plays every step nobody has to
decide (draws, claims nobody can make, the auto-play of a declared-ready hand, T3) until a seat has a
real choice or the hand ends. Random outcomes come from ``derived_random(seed, state.rng_counter)`` and
are written into the events.
"""

from __future__ import annotations

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.engine.dealing import deal
from duelmahjong.engine.draws import draw_event, draw_for, draw_replacement
from duelmahjong.engine.ending import end_hand, exhaust
from duelmahjong.engine.events import (
    Claimed,
    Discarded,
    DoublingChosen,
    DoublingRevealed,
    Escaped,
    Exchanged,
    Guessed,
    Konged,
    PairingEnded,
    Passed,
    PlayStarted,
    ThrownAway,
    Won,
)
from duelmahjong.engine.legal import is_ready
from duelmahjong.engine.outcome import Termination
from duelmahjong.engine.result import describe_win, evaluate_json, task_completed
from duelmahjong.engine.sink import Seats
from duelmahjong.engine.state import (
    CLAIM,
    DOUBLING,
    EXCHANGE,
    EXTRA_DRAW,
    FROM_KONG,
    FROM_POOL,
    ROB_KONG,
    TURN,
    TableState,
)
from duelmahjong.engine.swaps import give_for_unseen
from duelmahjong.engine.wall import derived_random
from duelmahjong.rules.tiles import tiles_of


# --- performing an action ---------------------------------------------------------------------------------
def perform(table: Seats, action: Action) -> None:
    seat, kind = action.seat, action.kind
    if kind == A.LEAVE:
        _leave(table, seat)
        return
    handler = _PERFORMERS[kind]
    handler(table, action)
    advance(table)


def _leave(table: Seats, seat: int) -> None:
    """T10: leaving during a hand is escape; between hands it ends the pairing without penalty."""
    state = table.state
    if state.phase in (DOUBLING, EXCHANGE, TURN, CLAIM, ROB_KONG, EXTRA_DRAW):
        table.emit(Escaped(seat=seat))
        end_hand(table, Termination.ESCAPE, escaper=seat)
    table.emit(PairingEnded(seat=seat))


def _doubling(table: Seats, action: Action) -> None:
    state = table.state
    table.emit(DoublingChosen(seat=action.seat, double=action.kind == A.CHOOSE_DOUBLING))
    if None not in state.doubling:
        table.emit(DoublingRevealed(choices=tuple(bool(choice) for choice in state.doubling)))
        deal(table)


def _exchange(table: Seats, action: Action) -> None:
    """T4: duel from/to the unused pool; erren from the wall, returned tiles shuffled back in."""
    state = table.state
    seat, given = action.seat, action.tiles
    pool: tuple[int, ...] | None = None
    after: tuple[int, ...] | None = None
    if state.duel:
        received = tuple(state.pool[: len(given)])
        pool = (*state.pool[len(given) :], *given)
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
        after = tuple(wall)
    fee_count = max(0, len(given) - 1) if not state.duel else 0  # erren: the first is free
    table.emit(
        Exchanged(
            seat=seat,
            count=len(given),
            paid=fee_count,
            given=given,
            received=received,
            pool=pool,
            wall=after,
        )
    )
    if all(state.exchanged):
        # T9 "the one who became ready first": a non-dealer's hand ready after the deal and 换牌 has been
        # ready since before the dealer's first discard could make the dealer ready.
        other = 1 - state.dealer
        ready_from_deal = state.duel and is_ready(state, other)
        tenpai = tuple(seat == other for seat in (0, 1)) if ready_from_deal else None
        table.emit(PlayStarted(seat=state.dealer, tenpai=tenpai))


def _discard(table: Seats, action: Action) -> None:
    state = table.state
    seat, tile = action.seat, action.tile
    if not state.duel and _could_self_draw(table, seat):
        _decline_win(table, seat)
    ready = action.kind == A.DECLARE_READY
    first_turn = ready and _first_turn_ready(state, seat, tile)  # T3 天听
    tenpai: bool | None = None
    if state.duel:
        # T9 order: whether the hand waits after this discard. The legal actions of this turn (cached)
        # already list every discard that leaves the hand ready (报听 is offered with each of them).
        tenpai = ready or state.ready[seat]
        if not tenpai:
            for legal in table.legal_actions(seat):
                if legal.kind == A.DECLARE_READY and legal.tile == tile:
                    tenpai = True
                    break
    table.emit(Discarded(seat=seat, tile=tile, ready=ready, first_turn=first_turn, tenpai=tenpai))


def _first_turn_ready(state: TableState, seat: int, tile: int) -> bool:
    """T3 天听: the dealer's first discard, or the non-dealer's first draw discarded at once; no call
    before it."""
    if state.calls or state.discards[seat]:
        return False
    if seat == state.dealer:
        return not state.dealer_konged
    return state.draws[seat] == 1 and tile == state.last_draw


def _could_self_draw(table: Seats, seat: int) -> bool:
    """Whether ``seat`` may win on its own tile now (a self-drawn win is listed first on a turn)."""
    legal = table.legal_actions(seat)
    return legal[0].kind == A.SELF_DRAW_WIN


def _decline_win(table: Seats, seat: int) -> None:
    """T8 胡加倍: each declined win doubles, at most the room's maximum (8)."""
    state = table.state
    declined = state.win_doublings[seat] < state.settings.max_win_doublings and not state.duel
    table.emit(Passed(seat=seat, declined_win=declined))


def _pass(table: Seats, action: Action) -> None:
    state = table.state
    seat = action.seat
    phase = state.phase
    had_win = any(a.kind in (A.WIN, A.SELF_DRAW_WIN) for a in table.legal_actions(seat))
    if had_win:
        _decline_win(table, seat)
    else:
        table.emit(Passed(seat=seat))
    if phase == CLAIM:
        draw_for(table, seat)
    elif phase == ROB_KONG:
        _after_kong(table, 1 - seat)
    elif phase == EXTRA_DRAW:
        table.emit(ThrownAway(seat=seat, tile=state.last_draw))


def _claim(table: Seats, action: Action) -> None:
    meld = {A.CHI: "chi", A.PONG: "pong", A.KONG: "exposed_kong"}[action.kind]
    table.emit(Claimed(seat=action.seat, meld=meld, tile=action.tile))
    if meld == "exposed_kong":
        _after_kong(table, action.seat)


def _kong(table: Seats, action: Action) -> None:
    seat, tile = action.seat, action.tile
    if not table.state.duel and _could_self_draw(table, seat):
        _decline_win(table, seat)  # T8 胡加倍: konging instead of winning gives the win up too
    if action.kind == A.CONCEALED_KONG:
        # A concealed kong is laid face down: the opponent sees that it happened, not which tile.
        table.emit(Konged(seat=seat, meld="concealed_kong", tile=tile))
        _after_kong(table, seat)
    else:
        table.emit(Konged(seat=seat, meld="added_kong", tile=tile))
        # D13: the opponent may rob it; advance() moves on when it cannot.


def _after_kong(table: Seats, seat: int) -> None:
    if not draw_replacement(table, seat, FROM_KONG):
        exhaust(table)


def _win(table: Seats, action: Action) -> None:
    state = table.state
    seat, phase = action.seat, state.phase
    self_drawn = action.kind == A.SELF_DRAW_WIN
    robbing = phase == ROB_KONG
    description = describe_win(state, seat, action.tile, self_drawn=self_drawn, robbing=robbing)
    evaluation = evaluate_json(description)
    table.emit(
        Won(
            seat=seat,
            tile=action.tile,
            self_drawn=description["self_drawn"],  # D13: a robbed kong in duel
            description=description,
            evaluation=evaluation.to_json(),
            task_completed=task_completed(state, seat, evaluation),
            tiles=tuple(tiles_of(state.hands[seat])),
        )
    )
    if not (state.duel and state.settings.guess_enabled):
        end_hand(table, Termination.WIN)


def _guess(table: Seats, action: Action) -> None:
    """T12 猜大小: three dice; big 11–17, small 4–10, triples lose; right → ×2–5 from the house."""
    state = table.state
    event = Guessed(seat=action.seat, choice=action.kind)
    if action.kind != A.COLLECT:
        rng = derived_random(state.seed, state.rng_counter)
        dice = (rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 6))
        total = sum(dice)
        triple = dice[0] == dice[1] == dice[2]
        right = not triple and ((total >= 11) == (action.kind == A.GUESS_BIG))
        factor = rng.randint(2, 5) if right else 0
        event = Guessed(seat=action.seat, choice=action.kind, dice=dice, right=right, factor=factor)
    table.emit(event)
    end_hand(table, Termination.WIN, guess=event.guess)


def _offer_response(table: Seats, action: Action) -> None:
    give_for_unseen(table, action)


# --- the automatic steps ----------------------------------------------------------------------------------
def advance(table: Seats) -> None:
    """Play every forced step until a seat has a real decision or the hand is over.

    A seat has a decision when its legal actions hold more than leaving; they are computed through the
    table's cache, so the list a client asks for next is the one computed here."""
    state = table.state
    while True:
        phase = state.phase
        seat = state.current
        if phase == CLAIM:
            if len(table.legal_actions(seat)) > 1:
                return
            draw_for(table, seat)
        elif phase == TURN and state.ready[seat] and state.last_draw >= 0:
            if any(a.kind not in (A.DISCARD, A.LEAVE) for a in table.legal_actions(seat)):
                return
            tenpai = True if state.duel else None
            table.emit(Discarded(seat=seat, tile=state.last_draw, tenpai=tenpai))
        elif phase == ROB_KONG:
            if len(table.legal_actions(seat)) > 1:
                return
            _after_kong(table, 1 - seat)
        elif phase == EXTRA_DRAW:
            if state.last_draw >= 0:
                if len(table.legal_actions(seat)) > 1:
                    return
                table.emit(ThrownAway(seat=seat, tile=state.last_draw))
            elif state.extra_draws_left > 0 and state.pool:
                table.emit(draw_event(state, seat, FROM_POOL))
            else:
                end_hand(table, Termination.DRAWN)
        else:
            return


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
