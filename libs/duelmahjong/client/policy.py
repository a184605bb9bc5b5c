"""Policies: what a client does when the table asks it to act.

A policy sees only what the server sent this seat — its :class:`SeatView` and :class:`LegalActions` —
and answers one contract :class:`Action` among them. :class:`BaselineBot` is the engine's baseline bot
(:func:`duelmahjong.engine.bot.choose`) run over the seat's view, :class:`StrongBot` the strong bot
(:func:`duelmahjong.engine.bots.strong.choose`, docs/evaluation.md): :func:`seat_board` builds an
engine state holding only what the view shows (own tiles, melds, rivers, tiles visible on the table,
the last discard, who declared ready, the bonus tiles), so a bot client plays like the server's
auto-play without ever seeing hidden state. :data:`POLICIES` names them for room settings.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol

from duelmahjong.engine import actions as A
from duelmahjong.engine import bot
from duelmahjong.engine.actions import Action
from duelmahjong.engine.bots import strong
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.state import DISCARD_CLAIMED, DISCARD_DRAWN, DISCARD_READY, TableState
from duelmahjong.rules.analysis import shanten
from duelmahjong.rules.tiles import counts_of, format_tiles, parse_tiles
from duelmahjong.v1 import play_pb2, rules_pb2, tiles_pb2

_PROFILES = {rules_pb2.PROFILE_DUEL: "duel", rules_pb2.PROFILE_ERREN: "erren"}
_KONG_KINDS = {
    A.CONCEALED_KONG: tiles_pb2.MELD_KIND_CONCEALED_KONG,
    A.ADDED_KONG: tiles_pb2.MELD_KIND_ADDED_KONG,
    A.KONG: tiles_pb2.MELD_KIND_EXPOSED_KONG,
}
# Contract action kinds the bot never takes by itself (a match plan decides continue / leave).
_NOT_FOR_THE_BOT = {play_pb2.ACTION_KIND_LEAVE, play_pb2.ACTION_KIND_USE_ITEM, play_pb2.ACTION_KIND_DRAW}


# A policy's answer: the action, or an awaitable of it when a person decides (``duel play``): the
# stream goes on reading meanwhile, so a decision the server timed out is seen gone.
Decision = play_pb2.Action | Awaitable[play_pb2.Action]


class Policy(Protocol):
    """Chooses one of ``legal`` for the seat whose view is ``view``."""

    def decide(self, view: play_pb2.SeatView, legal: play_pb2.LegalActions) -> Decision: ...


def pass_action() -> play_pb2.Action:
    message = play_pb2.Action()
    getattr(message, "pass").SetInParent()  # ``pass`` is a Python keyword
    return message


def _kinds(text: str) -> list[int]:
    return [k for k in parse_tiles(text) if k < 34] if text else []


_MELD_NAMES = {
    tiles_pb2.MELD_KIND_CHI: "chi",
    tiles_pb2.MELD_KIND_PONG: "pong",
    tiles_pb2.MELD_KIND_EXPOSED_KONG: "exposed_kong",
    tiles_pb2.MELD_KIND_CONCEALED_KONG: "concealed_kong",
    tiles_pb2.MELD_KIND_ADDED_KONG: "added_kong",
}


def seat_board(view: play_pb2.SeatView, seat: int) -> TableState:
    """An engine state holding only what ``view`` shows its seat — own tiles (and drawn tile), both
    seats' melds and rivers with their marks, who declared ready, the last discard, the dealer, the
    tiles left to draw, duel's revealed bonus tiles — for the engine's bots to read. The opponent's
    hand, the wall's tiles and the pool stay empty: the client never knows them."""
    state = TableState()
    state.settings = RoomSettings(profile=_PROFILES.get(view.table.profile, "duel"))
    state.duel = state.settings.is_duel
    state.minimum_fan = state.settings.effective_minimum_fan
    for kind in _kinds(view.concealed) + _kinds(view.drawn_tile):
        state._move(seat, kind, 1)  # the engine's own bookkeeping: counts, suit keys and size in step
    state.last_draw = _kinds(view.drawn_tile)[0] if view.drawn_tile else -1
    state.current = seat if view.drawn_tile else -1
    state.dealer = next((i for i, public in enumerate(view.table.seats) if public.dealer), -1)
    state.tail = view.table.wall_remaining  # a count only: wall_remaining = tail - head
    state.bonus = tuple(_kinds(view.table.revealed_bonus_tiles))
    # erren 开始加倍: the view shows the seat's own choice only (the opponent's is an event's).
    state.doubling[seat] = view.start_doubled
    for index, public in enumerate(view.table.seats):
        state.ready[index] = public.declared_ready
        state.win_doublings[index] = public.win_declines
        for meld in public.melds:
            tiles = _kinds(meld.tiles)
            if tiles and meld.kind in _MELD_NAMES:
                state.melds[index].append((_MELD_NAMES[meld.kind], min(tiles)))
                for kind in tiles:
                    state.visible[kind] += 1
        state._melds_changed(index)  # the engine's own derived meld facts (green melds, tile lists)
        for discard in public.discards:
            for kind in _kinds(discard.tile):
                flags = (
                    (DISCARD_READY if discard.declared_ready else 0)
                    | (DISCARD_DRAWN if discard.drawn_tile else 0)
                    | (DISCARD_CLAIMED if discard.claimed else 0)
                )
                state.river_marks[index].append([kind, flags])
                if not discard.claimed:  # a claimed tile is counted in the claimer's meld
                    state.visible[kind] += 1
                    state.rivers[index].append(kind)
        if index != seat and public.discards:
            state.last_discard = _kinds(public.discards[-1].tile)[0]
    return state


class BaselineBot:
    """The engine's baseline bot as a client policy (wins, 报听, discards, claims, kongs, 开始加倍 and
    猜大小 as the engine's bot decides them). It declines T5 offers, uses 偷天换日 when that brings
    its hand closer to ready (T6; no other item), and never leaves by itself: a match plan decides that."""

    name = "baseline"

    @staticmethod
    def choose(state: TableState, seat: int, legal: list[Action]) -> Action:
        return bot.choose(state, seat, legal)

    def decide(self, view: play_pb2.SeatView, legal: play_pb2.LegalActions) -> play_pb2.Action:
        seat = 0 if view.seat == rules_pb2.SEAT_FIRST else 1
        swap = self._better_swap(view, legal, seat)
        if swap is not None:
            return swap
        options = self._engine_options(view, legal, seat)
        if not options:
            return legal.default_action if legal.HasField("default_action") else pass_action()
        choice = self.choose(seat_board(view, seat), seat, list(options))
        if choice.kind == A.EXCHANGE and choice.tiles:  # T4: any tiles of the hand may be given back
            return play_pb2.Action(exchange=play_pb2.ExchangeAction(tiles=format_tiles(list(choice.tiles))))
        return options.get(choice) or next(iter(options.values()))

    @staticmethod
    def _better_swap(
        view: play_pb2.SeatView, legal: play_pb2.LegalActions, seat: int
    ) -> play_pb2.Action | None:
        """T6 偷天换日 (choices "5m>7z": the held tile, the kind it becomes) when it lowers the hand's
        shanten, the lowest first; None when no swap helps, so the item is kept for a better turn."""
        choices = [
            choice
            for entry in legal.actions
            if entry.kind == play_pb2.ACTION_KIND_USE_ITEM
            for choice in entry.choices
            if ">" in choice
        ]
        if not choices:
            return None
        own = counts_of(_kinds(view.concealed) + _kinds(view.drawn_tile))
        melded = [kind for meld in view.table.seats[seat].melds for kind in _kinds(meld.tiles)]
        best, best_choice = shanten(own, melded_tiles=melded), ""
        for choice in choices:
            given, target = (_kinds(part)[0] for part in choice.split(">"))
            after = list(own)
            after[given] -= 1
            after[target] += 1
            if after[target] > 4:
                continue
            value = shanten(after, melded_tiles=melded)
            if value < best:
                best, best_choice = value, choice
        if not best_choice:
            return None
        given_name, target_name = best_choice.split(">")
        use = play_pb2.UseItemAction(
            item=rules_pb2.ITEM_KIND_SWAP_SUN_FOR_SKY, tiles=given_name, target=target_name
        )
        return play_pb2.Action(use_item=use)

    @staticmethod
    def _engine_options(
        view: play_pb2.SeatView, legal: play_pb2.LegalActions, seat: int
    ) -> dict[Action, play_pb2.Action]:
        """Each legal choice as the engine action the bot understands → the contract action to send."""
        own = counts_of(_kinds(view.concealed) + _kinds(view.drawn_tile))
        my_turn = bool(view.drawn_tile) or (sum(own) + 3 * len(view.table.seats[seat].melds)) % 3 == 2
        options: dict[Action, play_pb2.Action] = {}
        for entry in legal.actions:
            kind = entry.kind
            if kind in _NOT_FOR_THE_BOT:
                continue
            if kind == play_pb2.ACTION_KIND_DISCARD:
                for tile in entry.choices:
                    options[Action(seat, A.DISCARD, _kinds(tile)[0])] = play_pb2.Action(
                        discard=play_pb2.DiscardAction(tile=tile)
                    )
            elif kind == play_pb2.ACTION_KIND_DECLARE_READY:
                for tile in entry.choices:
                    options[Action(seat, A.DECLARE_READY, _kinds(tile)[0])] = play_pb2.Action(
                        declare_ready=play_pb2.DeclareReadyAction(discard=tile)
                    )
            elif kind == play_pb2.ACTION_KIND_WIN:
                win = A.SELF_DRAW_WIN if my_turn else A.WIN
                options[Action(seat, win)] = play_pb2.Action(win=play_pb2.WinAction())
            elif kind == play_pb2.ACTION_KIND_KONG:
                for tile in entry.choices:
                    kind_tile = _kinds(tile)[0]
                    if not my_turn:
                        engine_kind = A.KONG  # on the opponent's discard
                    elif own[kind_tile] == 4:
                        engine_kind = A.CONCEALED_KONG
                    else:
                        engine_kind = A.ADDED_KONG  # the fourth tile onto an own pong
                    options[Action(seat, engine_kind, kind_tile)] = play_pb2.Action(
                        kong=play_pb2.KongAction(kind=_KONG_KINDS[engine_kind], tile=tile)
                    )
            elif kind == play_pb2.ACTION_KIND_PONG:
                options[Action(seat, A.PONG)] = play_pb2.Action(pong=play_pb2.PongAction())
            elif kind == play_pb2.ACTION_KIND_CHI:
                for tiles in entry.choices:
                    options[Action(seat, A.CHI, min(_kinds(tiles)))] = play_pb2.Action(
                        chi=play_pb2.ChiAction(tiles=tiles)
                    )
            elif kind == play_pb2.ACTION_KIND_PASS:
                options[Action(seat, A.PASS)] = pass_action()
            elif kind == play_pb2.ACTION_KIND_EXCHANGE:
                options[Action(seat, A.EXCHANGE)] = play_pb2.Action(
                    exchange=play_pb2.ExchangeAction(tiles="")
                )
            elif kind == play_pb2.ACTION_KIND_CHOOSE_DOUBLING:
                for doubled, engine_kind in ((True, A.CHOOSE_DOUBLING), (False, A.DECLINE_DOUBLING)):
                    options[Action(seat, engine_kind)] = play_pb2.Action(
                        choose_doubling=play_pb2.ChooseDoublingAction(start_doubled=doubled)
                    )
            elif kind == play_pb2.ACTION_KIND_GUESS:
                options[Action(seat, A.COLLECT)] = play_pb2.Action(guess=play_pb2.GuessAction(skip=True))
                for choice, engine_kind, guess in (
                    ("big", A.GUESS_BIG, rules_pb2.GUESS_BIG),
                    ("small", A.GUESS_SMALL, rules_pb2.GUESS_SMALL),
                ):
                    if choice in entry.choices:
                        options[Action(seat, engine_kind)] = play_pb2.Action(
                            guess=play_pb2.GuessAction(guess=guess)
                        )
            elif kind == play_pb2.ACTION_KIND_DECLINE_WIN:
                continue  # the bot always wins when it may
        return options


class StrongBot(BaselineBot):
    """The strong bot (docs/evaluation.md) as a client policy: the baseline's contract handling, the
    strong bot's decisions. erren's 胡加倍 works over the contract too: passing on a win, or
    discarding the drawn tile instead of a self-draw, declines it (T8)."""

    name = "strong"

    @staticmethod
    def choose(state: TableState, seat: int, legal: list[Action]) -> Action:
        return strong.choose(state, seat, legal)


# The policies a room may name for its house bots (``bot_policy``).
POLICIES: dict[str, type[BaselineBot]] = {"baseline": BaselineBot, "strong": StrongBot}
