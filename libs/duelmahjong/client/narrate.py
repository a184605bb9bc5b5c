"""Readable lines for what one seat receives on its Play stream (the demo prints them).

Draws are hidden: even the watching seat's own draws print as "draws a tile". Discards, melds, 报听,
the revealed winning hand with its breakdown and the prestige moved are shown; and :func:`hand_summary`
turns a revealed + settled hand into the demo's JSON record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from duelmahjong.v1 import play_pb2, rules_pb2, table_pb2, tiles_pb2

_OUTCOMES = {
    rules_pb2.HAND_OUTCOME_WIN: "win",
    rules_pb2.HAND_OUTCOME_DRAWN: "drawn",
    rules_pb2.HAND_OUTCOME_ESCAPE: "escape",
}
_MELDS = {
    tiles_pb2.MELD_KIND_CHI: "chi",
    tiles_pb2.MELD_KIND_PONG: "pong",
    tiles_pb2.MELD_KIND_EXPOSED_KONG: "kong",
    tiles_pb2.MELD_KIND_CONCEALED_KONG: "concealed kong",
    tiles_pb2.MELD_KIND_ADDED_KONG: "added kong",
}


def seat_index(seat: int) -> int:
    return 0 if seat == rules_pb2.SEAT_FIRST else 1


def pattern_id(pattern: rules_pb2.PatternScore) -> str:
    return rules_pb2.PatternId.Name(pattern.id).removeprefix("PATTERN_ID_").lower()


def winning_hand(description: rules_pb2.HandDescription) -> str:
    """``123m [555z] + 4m (self-drawn)`` from the contract's description."""
    concealed, win_tile, self_drawn = description.concealed, description.win_tile, description.self_drawn
    melds = [m.tiles for m in description.melds]
    shown = " ".join([concealed, *(f"[{tiles or '????'}]" for tiles in melds)])
    return f"{shown} + {win_tile} ({'self-drawn' if self_drawn else 'on a discard'})"


def _patterns(evaluation: rules_pb2.Evaluation) -> tuple[list[dict[str, Any]], int]:
    patterns = [{"id": pattern_id(p), "name_zh": p.name_zh, "fan": p.fan} for p in evaluation.patterns]
    return patterns, evaluation.total_fan


def hand_summary(
    revealed: play_pb2.HandRevealed,
    settled: play_pb2.HandSettled | None,
    players: Mapping[int, str],
    won: play_pb2.HandWon | None = None,
) -> dict[str, Any]:
    """One hand as the demo's JSON reports it (``won``: the hand's won event, when the reveal lacks it)."""
    outcome = _OUTCOMES.get(revealed.outcome, "unknown")
    source = revealed if revealed.description.win_tile or won is None else won
    patterns, total_fan = _patterns(source.evaluation) if outcome == "win" else ([], 0)
    description = source.description if source.description.win_tile else None
    record: dict[str, Any] = {
        "outcome": outcome,
        "winner": players.get(seat_index(revealed.winner)) if outcome == "win" else None,
        "escaper": players.get(seat_index(revealed.escaper)) if outcome == "escape" else None,
        "total_fan": total_fan,
        "patterns": patterns,
        "winning_hand": winning_hand(description) if outcome == "win" and description else None,
        "transfer": 0,
    }
    if settled is not None:
        settlement = settled.settlement
        record["transfer"] = settlement.transfer.amount
        record["from"] = settlement.transfer.from_player_id or None
        record["to"] = settlement.transfer.to_player_id or None
        record["multipliers"] = {
            "negotiated": settlement.multipliers.negotiated,
            "progressive": settlement.multipliers.progressive,
            "fan_rate": settlement.multipliers.fan_rate,
        }
        record["balances"] = {
            players.get(seat_index(b.seat), str(b.seat)): b.balance for b in settled.balances
        }
        # Each player's skill rating after the hand (the wallet moved both in the hand's transaction).
        record["ratings"] = {
            r.player_id: {"before": round(r.before.rating, 1), "after": round(r.after.rating, 1)}
            for r in settled.ratings
        }
    return record


class Narrator:
    """Prints one seat's stream as the hands go; ``names`` maps seat index → a display name."""

    def __init__(self, names: Mapping[int, str], say: Callable[[str], None] = print) -> None:
        self.names = names
        self.say = say

    def __call__(self, response: table_pb2.PlayResponse) -> None:
        if response.WhichOneof("kind") != "event":
            return
        event = response.event
        which = event.WhichOneof("kind")
        if which is None:
            return
        handler = getattr(self, f"_{which}", None)
        if handler is not None:
            handler(getattr(event, which))

    def _won(self, won: play_pb2.HandWon) -> None:
        self.say(f"   {self._name(won.seat)} wins: {winning_hand(won.description)}")
        for pattern in won.evaluation.patterns:
            self.say(f"      {pattern.name_zh} {pattern_id(pattern)} {pattern.fan}")
        self.say(f"      total {won.evaluation.total_fan} fan")

    def _seat_connection(self, connection: play_pb2.SeatConnection) -> None:
        state = "is back" if connection.connected else "is away (托管)" if connection.auto_play else "is away"
        self.say(f"   {self._name(connection.seat)} {state}")

    def _exhausted(self, exhausted: play_pb2.WallExhausted) -> None:
        extra = f"; {self._name(exhausted.extra_draw_seat)} draws extra" if exhausted.extra_draws else ""
        self.say(f"   the wall is empty{extra}")

    def _name(self, seat: int) -> str:
        return self.names.get(seat_index(seat), "?")

    def _hand_started(self, started: play_pb2.HandStarted) -> None:
        m = started.multipliers
        bonus = f", 花牌 {started.revealed_bonus_tiles}" if started.revealed_bonus_tiles else ""
        negotiated = f"{m.negotiated}× negotiated · " if m.negotiated else ""
        self.say(
            f"\n── hand {started.hand_number}: dealer {self._name(started.dealer)}, "
            f"multipliers {negotiated}{m.progressive}× progressive · 1番 = {m.fan_rate}{bonus}"
        )

    def _tile_drawn(self, drawn: play_pb2.TileDrawn) -> None:
        self.say(f"   {self._name(drawn.seat)} draws a tile")

    def _tile_discarded(self, discarded: play_pb2.TileDiscarded) -> None:
        ready = " and declares ready (报听)" if discarded.declared_ready else ""
        ready += " (天听)" if discarded.first_turn else ""
        self.say(f"   {self._name(discarded.seat)} discards {discarded.tile}{ready}")

    def _meld_made(self, made: play_pb2.MeldMade) -> None:
        tiles = made.meld.tiles or "(face down)"
        self.say(f"   {self._name(made.seat)} {_MELDS.get(made.meld.kind, 'meld')} {tiles}")

    def _ready_declared(self, ready: play_pb2.ReadyDeclared) -> None:
        self.say(f"   {self._name(ready.seat)} is ready{' (天听)' if ready.first_turn else ''}")

    def _hand_revealed(self, revealed: play_pb2.HandRevealed) -> None:
        outcome = _OUTCOMES.get(revealed.outcome, "?")
        if outcome == "escape":
            self.say(f"   {self._name(revealed.escaper)} left mid-hand: escape (逃跑)")
        elif outcome == "drawn":
            self.say("   drawn hand (no winner)")

    def _hand_settled(self, settled: play_pb2.HandSettled) -> None:
        transfer = settled.settlement.transfer
        balances = ", ".join(f"{self._name(b.seat)} {b.balance}" for b in settled.balances)
        self.say(f"   prestige moved: {transfer.amount}" + (f"; balances {balances}" if balances else ""))
        if settled.ratings:
            moved = ", ".join(
                f"{self._name(r.seat)} {r.before.rating:.0f} → {r.after.rating:.0f} ± {r.after.deviation:.0f}"
                for r in settled.ratings
            )
            self.say(f"   ratings: {moved}")

    def _table_ended(self, ended: play_pb2.TableEnded) -> None:
        self.say(f"── table closed: {ended.reason}")
