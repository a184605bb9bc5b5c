"""The settlement screen of ``duel play``: how the hand ended and what it moved.

Drawn once the hand is revealed: the outcome (who won, on a discard or self-drawn; a drawn hand; an
escape), both hands face up, the patterns with their fan, the amount (fan × multipliers × 1番, and
whether a carry capped it), the transfer, each player's room fee, the balances after the hand, the
skill ratings the hand moved (when the wallet's answer carried them), a 猜大小 and the erren task,
then the keys: continue or leave.
"""

from __future__ import annotations

from duelmahjong.client.narrate import pattern_id
from duelmahjong.tui.board import INDENT, Line, fit, melds_line, rule
from duelmahjong.tui.seat import PersonSeat
from duelmahjong.tui.tiles import TileStyle
from duelmahjong.v1 import play_pb2, rules_pb2

_DICE = "⚀⚁⚂⚃⚄⚅"


class SettlementView:
    def __init__(self, seat: PersonSeat, style: TileStyle) -> None:
        self.seat, self.style = seat, style

    def _name(self, seat: int) -> str:
        return self.seat.names.get(0 if seat == rules_pb2.SEAT_FIRST else 1, "?")

    def _player(self, player_id: str) -> str:
        return "you" if player_id == self.seat.me else self.seat.players.get(player_id, player_id)

    def lines(self, width: int) -> list[Line]:
        revealed = self.seat.revealed
        view = self.seat.view
        assert revealed is not None
        number = view.table.hand_number if view else 0
        out: list[Line] = [rule(width, f"hand {number} is over")]
        out.append([("class:title", " " + self._outcome(revealed))])
        out += self._hands(revealed)
        out += self._patterns(revealed, width)
        out += self._money(width)
        out += self._extras(width)
        out.append(rule(width))
        out.append(self._keys())
        return out

    def _outcome(self, revealed: play_pb2.HandRevealed) -> str:
        if revealed.outcome == rules_pb2.HAND_OUTCOME_WIN:
            how = "self-drawn (自摸)" if revealed.self_drawn else "on a discard"
            who = self._name(revealed.winner)
            verb = "win" if who == "you" else "wins"
            return f"胡 {who} {verb} {how} · {revealed.evaluation.total_fan} fan"
        if revealed.outcome == rules_pb2.HAND_OUTCOME_ESCAPE:
            return f"逃跑 {self._name(revealed.escaper)} left during the hand (escape)"
        return "流局 drawn hand: the wall is empty and nobody won"

    def _hands(self, revealed: play_pb2.HandRevealed) -> list[Line]:
        out: list[Line] = []
        view = self.seat.view
        for hand in revealed.hands:
            melds = []
            if view is not None:
                public = next((s for s in view.table.seats if s.seat == hand.seat), None)
                melds = list(public.melds) if public else []
            label = self._name(hand.seat)[:10].ljust(11)
            line: Line = [("", INDENT + label), ("class:tile", self.style.tiles(hand.concealed)), ("", " ")]
            out.append(line + melds_line(self.style, melds) if melds else line)
        description = revealed.description
        if description.win_tile:
            out.append(
                [
                    ("", INDENT + "win tile".ljust(11)),
                    ("class:picked", self.style.tile(description.win_tile)),
                    ("class:dim", f" {description.win_tile}"),
                ]
            )
        return out

    def _patterns(self, revealed: play_pb2.HandRevealed, width: int) -> list[Line]:
        evaluation = revealed.evaluation
        if revealed.outcome != rules_pb2.HAND_OUTCOME_WIN or not evaluation.patterns:
            return []
        parts = [f"{p.name_zh} {pattern_id(p)} {p.fan}" for p in evaluation.patterns]
        rows: list[Line] = []
        text = ""
        for part in parts:
            if text and len(text) + len(part) + 3 > width - 14:
                rows.append([("", INDENT + ("patterns" if not rows else "").ljust(11)), ("class:keys", text)])
                text = ""
            text = f"{text} · {part}" if text else part
        rows.append([("", INDENT + ("patterns" if not rows else "").ljust(11)), ("class:keys", text)])
        return rows[:3]

    def _money(self, width: int) -> list[Line]:
        settled = self.seat.settled
        if settled is None:
            return [[("class:dim", INDENT + "waiting for the wallet's settlement…")]]
        s = settled.settlement
        if not s.hand_id:
            return [[("class:dim", INDENT + "the wallet's answer did not reach the table")]]
        m = s.multipliers
        amount = (
            f"{s.total_fan} fan × {m.negotiated} negotiated × {m.progressive} progressive × {m.fan_rate}"
            f" = {s.fan_amount}"
        )
        out: list[Line] = []
        d = s.doubling
        if s.HasField("doubling") and d.doubled_fan:  # erren H2: F from B, S, H and T
            amount = f"{d.doubled_fan} fan × {m.fan_rate} = {s.fan_amount}"
            terms = (
                f"B {d.base_fan} · S {d.s} (开始加倍) · H {d.h} (胡加倍) · T {d.t} (task) → F {d.doubled_fan}"
            )
            out.append([("", INDENT + "doubling".ljust(11)), ("", fit(terms, width - 14))])
        out.append([("", INDENT + "amount".ljust(11)), ("", fit(amount, width - 14))])
        if s.HasField("transfer") and s.transfer.amount:
            capped = " (capped by a carry)" if s.capped_by_carry else ""
            payer, payee = self._player(s.transfer.from_player_id), self._player(s.transfer.to_player_id)
            out.append(
                [
                    ("", INDENT + "transfer".ljust(11)),
                    ("class:money", f"{payer} → {payee} {s.transfer.amount} 威望{capped}"),
                ]
            )
        else:
            out.append([("", INDENT + "transfer".ljust(11)), ("class:dim", "nothing moved between players")])
        fees = [p for p in s.postings if p.reason == rules_pb2.POSTING_REASON_FEE and p.amount < 0]
        fee_text = ", ".join(f"{self._player(p.account.removeprefix('player:'))} {-p.amount}" for p in fees)
        out.append([("", INDENT + "fees".ljust(11)), ("", fee_text or f"{s.fee} each")])
        balances = " · ".join(f"{self._name(b.seat)} {b.balance}" for b in settled.balances)
        out.append([("", INDENT + "balances".ljust(11)), ("class:balance", balances)])
        ratings = []
        for change in settled.ratings:
            before, after = change.before.rating, change.after.rating
            ratings.append(f"{self._name(change.seat)} {before:.0f} → {after:.0f} ({after - before:+.0f})")
        if ratings:
            out.append(
                [("", INDENT + "rating".ljust(11)), ("class:keys", fit(" · ".join(ratings), width - 14))]
            )
        return out

    def _extras(self, width: int) -> list[Line]:
        out: list[Line] = []
        guess = self.seat.guess
        if guess is not None:
            if guess.skipped:
                text = "skipped: the winnings are kept"
            else:
                dice = " ".join(_DICE[d - 1] if 1 <= d <= 6 else str(d) for d in guess.dice)
                said = rules_pb2.Guess.Name(guess.guess).removeprefix("GUESS_").lower()
                result = f"won ×{guess.payout_multiplier}" if guess.won else "lost"
                text = f"{said} · dice {dice} ({sum(guess.dice)}) · {result}"
            out.append([("", INDENT + "猜大小".ljust(8)), ("", fit(text, width - 14))])
        revealed = self.seat.revealed
        if revealed is not None and revealed.HasField("task") and revealed.task.multiplier:
            done = "completed" if revealed.task.completed_by_winner else "not completed"
            out.append([("", INDENT + "task".ljust(11)), ("", f"×{revealed.task.multiplier} {done}")])
        return out

    def _keys(self) -> Line:
        seat = self.seat
        if seat.ended:
            return [("class:prompt", f" table closed: {seat.ended}")]
        if not seat.between_hands():
            return [("class:dim", " waiting for the other player to continue or leave…")]
        table = seat.view.table if seat.view else None
        if table is not None and table.profile == rules_pb2.PROFILE_DUEL:  # T7: it doubles each hand
            doubled = table.multipliers.progressive * 2
            keys = f" c continue (next hand ×{doubled} progressive)   x leave the table"
        else:
            keys = " c continue with the next hand   x leave the table"
        if seat.has_grand_shift():
            keys += "   g continue with 乾坤大挪移"
        own, _ = seat.clocks()
        return [("class:prompt", keys), ("class:dim", f"   ({own:.0f} s, then leave)")]
