"""The baseline bot: shanten-based, deterministic, cheap. It plays auto-play seats (报听, timeouts,
disconnects), load tests and the demo.

Policy: always win when allowed (legality already includes the room's minimum fan); declare ready
when a discard leaves the hand ready (the discard with the most live waits); take a T5 offer or use
偷天换日 when it lowers shanten; otherwise discard the tile that leaves the lowest shanten, ties broken by
the most live waits when ready and then by the least connected tile; claim (pong, chi, kong) only when
that lowers shanten (judged after the discard that follows), kong concealed when it does not raise it;
keep the dealt hand; double (开始加倍) only as dealer; guess big at 猜大小 (positive expectation).
"""

from __future__ import annotations

from itertools import combinations

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.engine.legal import shanten_after_discards
from duelmahjong.engine.state import TableState
from duelmahjong.rules.analysis import shanten, shanten_keys, waits


def isolation(counts: list[int], kind: int) -> int:
    """How little a tile connects: honours and tiles with no neighbours score highest."""
    if kind >= 27:
        return 4 - counts[kind]
    rank = kind % 9
    near = counts[kind] - 1
    for step in (-2, -1, 1, 2):
        if 0 <= rank + step <= 8:
            near += counts[kind + step]
    return 3 - near + (1 if rank in (0, 8) else 0)


def _live_waits(state: TableState, seat: int, counts: list[int], melded: list[int]) -> int:
    """Copies of the waiting tiles this seat cannot see: in the wall, pool or the opponent's hand."""
    profile = state.settings.profile
    total = 0
    for kind in waits(counts, profile=profile, melded_tiles=melded):
        total += 4 - counts[kind] - state.visible[kind] - melded.count(kind)
    return total


def group(legal: list[Action]) -> dict[str, list[Action]]:
    """The legal actions by kind, in their order."""
    by_kind: dict[str, list[Action]] = {}
    for action in legal:
        by_kind.setdefault(action.kind, []).append(action)
    return by_kind


def choose(state: TableState, seat: int, legal: list[Action]) -> Action:
    """The bot's action for ``seat`` among ``legal`` (which must hold more than leaving)."""
    by_kind = group(legal)
    for kind in (A.SELF_DRAW_WIN, A.WIN):
        if kind in by_kind:
            return by_kind[kind][0]
    if A.EXCHANGE in by_kind:
        return Action(seat, A.EXCHANGE)  # keep the dealt hand
    if A.CHOOSE_DOUBLING in by_kind:  # 开始加倍 before the deal: only the dealer (14 tiles, first move)
        return by_kind[A.CHOOSE_DOUBLING if seat == state.dealer else A.DECLINE_DOUBLING][0]
    if A.GUESS_BIG in by_kind:
        # T12: big is right with probability 105/216 and pays 2–5 times (3.5 on average), wrong loses
        # the winnings once: 0.486 × 3.5 − 0.514 > 0, so guessing beats collecting.
        return by_kind[A.GUESS_BIG][0]
    profile = state.settings.profile
    counts = state.hands[seat]
    melded = state.melded_tiles(seat)
    if A.DISCARD in by_kind:
        return _turn(state, seat, by_kind, counts, melded)
    if any(kind in by_kind for kind in (A.PONG, A.CHI, A.KONG)):
        before = shanten(counts, profile=profile, melded_tiles=melded)
        best: tuple[int, Action] | None = None
        for action in by_kind.get(A.KONG, []) + by_kind.get(A.PONG, []) + by_kind.get(A.CHI, []):
            after = _after_claim(profile, counts, melded, action, state.last_discard)
            if after < before and (best is None or after < best[0]):
                best = (after, action)
        if best is not None:
            return best[1]
    if A.PASS in by_kind:
        return by_kind[A.PASS][0]
    return next(a for a in legal if a.kind != A.LEAVE)


def _trade(
    state: TableState,
    seat: int,
    by_kind: dict[str, list[Action]],
    counts: list[int],
    melded: list[int],
    current: int,
) -> Action | None:
    """Take a T5 offer or use 偷天换日 (T6) when it lowers shanten; else None."""
    profile = state.settings.profile

    def after(give: list[int], take: list[int]) -> int:
        work = list(counts)
        for tile in give:
            work[tile] -= 1
        for tile in take:
            work[tile] += 1
        return shanten(work, profile=profile, melded_tiles=melded)

    if A.TAKE_TRIPLET in by_kind:
        triplet = [state.offer_tile] * 3
        # Give back three of the least connected tiles: every choice among the five least connected.
        loose = sorted(
            (t for t in range(34) for _ in range(counts[t]) if t != state.offer_tile),
            key=lambda t: -isolation(counts, t),
        )[:5]
        gives = {tuple(sorted(c)) for c in combinations(loose, 3)}
        if gives:
            give = min(sorted(gives), key=lambda g: after(list(g), triplet))
            if after(list(give), triplet) < current:
                return Action(seat, A.TAKE_TRIPLET, tiles=give)
    if A.RUB in by_kind:
        drawn = state.last_draw
        best = min(by_kind[A.RUB], key=lambda a: after([drawn], [a.tile]))
        if after([drawn], [best.tile]) < current:
            return best
    if A.SWAP_ITEM in by_kind:
        worst = max((t for t in range(34) if counts[t]), key=lambda t: isolation(counts, t))
        targets = sorted({a.target for a in by_kind[A.SWAP_ITEM]})
        best_target = min(targets, key=lambda u: after([worst], [u])) if targets else -1
        if best_target >= 0 and best_target != worst and after([worst], [best_target]) < current:
            return Action(seat, A.SWAP_ITEM, worst, target=best_target)
    return None


def _after_claim(profile: str, counts: list[int], melded: list[int], action: Action, discard: int) -> int:
    work = list(counts)
    if action.kind == A.CHI:
        used = [t for t in (action.tile, action.tile + 1, action.tile + 2) if t != discard]
        meld = [action.tile, action.tile + 1, action.tile + 2]
    else:
        used = [discard] * (3 if action.kind == A.KONG else 2)
        meld = [discard] * (4 if action.kind == A.KONG else 3)
    for tile in used:
        work[tile] -= 1
    # After a pong or chi the hand is 3k+2 and a discard follows: a complete shape (-1) still leaves it
    # only ready (0) once the discard is made. After a kong the hand is 3k+1 and a draw follows.
    after = shanten(work, profile=profile, melded_tiles=melded + meld)
    return after if action.kind == A.KONG else max(after, 0)


def _turn(
    state: TableState, seat: int, by_kind: dict[str, list[Action]], counts: list[int], melded: list[int]
) -> Action:
    profile = state.settings.profile
    if A.DECLARE_READY in by_kind:
        best_ready = None
        for action in by_kind[A.DECLARE_READY]:
            counts[action.tile] -= 1
            live = _live_waits(state, seat, counts, melded)
            counts[action.tile] += 1
            if best_ready is None or live > best_ready[0]:
                best_ready = (live, action)
        if best_ready is not None and best_ready[0] > 0:
            return best_ready[1]
    m, p, s, z = state.keys[seat]  # the state's suit keys: the hand's shanten without re-encoding it
    current = shanten_keys(m, p, s, z, state.sizes[seat], state.duel, state.green_melds[seat])
    trade = _trade(state, seat, by_kind, counts, melded, current)
    if trade is not None:
        return trade
    for action in by_kind.get(A.CONCEALED_KONG, []) + by_kind.get(A.ADDED_KONG, []):
        work = list(counts)
        work[action.tile] -= 4 if action.kind == A.CONCEALED_KONG else 1
        if shanten(work, profile=profile, melded_tiles=melded) <= current:
            return action

    after_discard = shanten_after_discards(state, seat)
    # The lowest shanten first; live waits and isolation only break ties among those discards (the same
    # choice as one min over (shanten, -live, -isolation), for less work).
    lowest = min(after_discard[action.tile] for action in by_kind[A.DISCARD])
    candidates = [action for action in by_kind[A.DISCARD] if after_discard[action.tile] == lowest]
    if len(candidates) == 1:
        return candidates[0]

    def discard_key(action: Action) -> tuple[int, int]:
        tile = action.tile
        live = 0
        if lowest == 0:
            counts[tile] -= 1
            live = _live_waits(state, seat, counts, melded)
            counts[tile] += 1
        return (-live, -isolation(counts, tile))

    return min(candidates, key=discard_key)
