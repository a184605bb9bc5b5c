"""The table screen of ``duel play``: both seats, the wall, the decision and its clocks.

Drawn as lines of prompt_toolkit fragments ``(style, text)`` for a terminal of at least 80 × 24: the
header (room, hand, multipliers, wall count, revealed 花牌), the opponent (concealed count, melds,
river), the person (river, melds, hand with the picked tile marked), the decision's keys, the
decision timer and time bank counting down, one line for notes and the last events.
"""

from __future__ import annotations

from wcwidth import wcswidth

from duelmahjong.tui.choices import PICKS_AS_KEYS
from duelmahjong.tui.events import item_name
from duelmahjong.tui.seat import PersonSeat
from duelmahjong.tui.tiles import TileStyle, split_tiles
from duelmahjong.v1 import play_pb2, rules_pb2, tiles_pb2

Fragment = tuple[str, str]
Line = list[Fragment]
_WINDS = {rules_pb2.WIND_EAST: "East", rules_pb2.WIND_SOUTH: "South", rules_pb2.WIND_WEST: "West"}
_WINDS |= {rules_pb2.WIND_NORTH: "North"}
_PHASES = {
    play_pb2.HAND_PHASE_DOUBLING: "开始加倍",
    play_pb2.HAND_PHASE_EXCHANGE: "换牌",
    play_pb2.HAND_PHASE_PLAY: "play",
    play_pb2.HAND_PHASE_EXTRA_DRAW: "extra draws",
    play_pb2.HAND_PHASE_GUESS: "猜大小",
    play_pb2.HAND_PHASE_BETWEEN_HANDS: "between hands",
    play_pb2.HAND_PHASE_ENDED: "closed",
    play_pb2.HAND_PHASE_SETTLING: "settling",
}
INDENT = "  "
LABEL = 8  # "river  " etc.


def rule(width: int, title: str = "") -> Line:
    text = f"── {title} " if title else ""
    return [("class:rule", (text + "─" * width)[:width])]


def wrap_tiles(style: TileStyle, tiles: list[tuple[str, str]], width: int) -> list[Line]:
    """Rows of (style class, tile) fragments, each row at most ``width`` columns."""
    per_row = max(1, width // (2 if style.unicode else 3))
    rows: list[Line] = []
    for start in range(0, len(tiles), per_row):
        row: Line = []
        for klass, tile in tiles[start : start + per_row]:
            row.append((klass, style.tile(tile)))
            if not style.unicode:
                row.append(("", " "))
        rows.append(row)
    return rows or [[("class:dim", "—")]]


def melds_line(style: TileStyle, melds: list[tiles_pb2.Meld]) -> Line:
    line: Line = []
    for meld in melds:
        tiles = meld.tiles
        shown = style.tiles(tiles) if tiles else _backs(style, 4)
        line += [("class:meld", f"[{shown}]"), ("", " ")]
    return line or [("class:dim", "—")]


def melds_and_flowers(style: TileStyle, seat: play_pb2.PublicSeatState) -> Line:
    """A seat's melds, then its erren flowers set aside (E14)."""
    line = melds_line(style, list(seat.melds))
    if seat.flowers:
        line = [f for f in line if f[0] != "class:dim"] + [
            ("class:dim", "花 "),
            ("class:tile", style.tiles(seat.flowers)),
        ]
    return line


def river(
    style: TileStyle, seat: play_pb2.PublicSeatState, width: int, claimable: bool = False
) -> list[Line]:
    """The seat's discards in order; ``claimable``: the last one is the tile the person may claim
    now, drawn picked and pointed at."""
    tiles = []
    for discard in seat.discards:
        klass = "class:claimed" if discard.claimed else "class:ready" if discard.declared_ready else ""
        tiles.append((klass, discard.tile))
    if claimable and tiles:
        tiles[-1] = ("class:picked", tiles[-1][1])
    rows = wrap_tiles(style, tiles, width - LABEL - len(INDENT) - 2)
    if claimable and tiles:
        rows[-1].append(("class:cursor", "◀"))
    return rows[-2:]  # the latest two rows: a long river keeps its end in view


class Board:
    def __init__(self, seat: PersonSeat, style: TileStyle, room_name: str) -> None:
        self.seat, self.style, self.room_name = seat, style, room_name

    def lines(self, width: int) -> list[Line]:
        view = self.seat.view
        if view is None:
            return [[("class:title", " Duel Mahjong ")], [("", "")], [("", "  waiting for the table…")]]
        me = 0 if view.seat == rules_pb2.SEAT_FIRST else 1
        table = view.table
        out = [self._header(table, width), rule(width)]
        if len(table.seats) == 2:
            out += self._opponent(table.seats[1 - me], table, width)
            out.append(rule(width))
            out += self._me(table.seats[me], width)
        out.append(rule(width))
        out += self._decision(width)
        out.append(self._note(width))
        return out

    def _header(self, table: play_pb2.PublicTableState, width: int) -> Line:
        m = table.multipliers
        phase = _PHASES.get(table.phase, "")
        times = f"×{m.negotiated}×{m.progressive}"
        # The room name last: on a narrow terminal it is what is cut.
        left = f" hand {table.hand_number} · {times} · 1番={m.fan_rate} · {self.room_name}"
        task = _task(table.task) if table.HasField("task") else ""
        right = " · ".join(part for part in (task, phase, f"wall {table.wall_remaining} ") if part)
        bonus: Line = []
        if table.revealed_bonus_tiles:
            bonus = [("", " · 花牌 "), ("class:tile", self.style.tiles(table.revealed_bonus_tiles))]
        left = fit(left, width - _columns(right) - sum(_columns(t) for _, t in bonus) - 1)
        used = _columns(left) + _columns(right) + sum(_columns(t) for _, t in bonus)
        return [("class:title", left), *bonus, ("", " " * max(1, width - used)), ("class:wall", right)]

    def _who(self, seat: play_pb2.PublicSeatState, table: play_pb2.PublicTableState) -> str:
        marks = [_WINDS.get(seat.seat_wind, "")]
        if seat.dealer:
            marks.append("dealer")
        if seat.declared_ready:
            marks.append("报听")
        if table.turn == seat.seat and table.phase == play_pb2.HAND_PHASE_PLAY:
            marks.append("to play")
        if not seat.connected:
            marks.append("托管" if seat.auto_play else "away")
        return " · ".join(m for m in marks if m)

    def _balance(self, seat: play_pb2.PublicSeatState) -> str:
        settled = self.seat.settled
        if settled is None:
            return ""
        shown = next((b.balance for b in settled.balances if b.seat == seat.seat), None)
        return "" if shown is None else f"威望 {shown}"

    def _opponent(
        self, seat: play_pb2.PublicSeatState, table: play_pb2.PublicTableState, width: int
    ) -> list[Line]:
        name = seat.display_name or seat.player_id
        count = seat.concealed_count + (1 if seat.holding_drawn_tile else 0)
        head = f" {name} · {self._who(seat, table)} · {count} concealed"
        out: list[Line] = [_spread([("class:opponent", head)], self._balance(seat), width)]
        hidden = _backs(self.style, seat.concealed_count)
        drawn = f"  {_backs(self.style, 1)}" if seat.holding_drawn_tile else ""
        out.append([("", INDENT + "hand".ljust(LABEL)), ("class:back", hidden + drawn)])
        out.append([("", INDENT + "melds".ljust(LABEL)), *melds_and_flowers(self.style, seat)])
        out += self._river_lines(seat, width, self.seat.claim_window())
        return out

    def _river_lines(self, seat: play_pb2.PublicSeatState, width: int, claimable: bool = False) -> list[Line]:
        rows = river(self.style, seat, width, claimable)
        lines = [
            [("", INDENT + ("river" if i == 0 else "").ljust(LABEL)), *row] for i, row in enumerate(rows)
        ]
        return lines + [[("", "")]] * (2 - len(lines))

    def _me(self, seat: play_pb2.PublicSeatState, width: int) -> list[Line]:
        view = self.seat.view
        assert view is not None
        head = f" you · {self._who(seat, view.table)}"
        if view.waits:
            head += f" · waiting on {' '.join(split_tiles(view.waits))}"
        items = ", ".join(f"{item_name(i.item)} ×{i.count}" for i in view.items if i.count)
        if items:
            head += f" · items {items}"
        out: list[Line] = [_spread([("class:me", head)], self._balance(seat), width)]
        out += self._river_lines(seat, width)
        out.append([("", INDENT + "melds".ljust(LABEL)), *melds_and_flowers(self.style, seat)])
        out += self._hand(width)
        return out

    def _hand(self, width: int) -> list[Line]:
        seat = self.seat
        hand = seat.hand()
        drawn = bool(seat.view and seat.view.drawn_tile)
        allowed = seat.discards() | seat.ready_discards()
        line: Line = [("", INDENT + "hand".ljust(LABEL))]
        marks = " " * (len(INDENT) + LABEL)
        step = 2 if self.style.unicode else 3
        for index, tile in enumerate(hand):
            if drawn and index == len(hand) - 1:
                line.append(("", " "))
                marks += " "
            picked = index == seat.cursor and seat.deciding() and not seat.between_hands()
            klass = "class:picked" if picked else "class:marked" if index in seat.marked else "class:tile"
            if seat.deciding() and allowed and tile not in allowed and not picked:
                klass = "class:dim"
            line.append((klass, self.style.tile(tile)))
            if not self.style.unicode:
                line.append(("", " "))
            marks += ("▲" if picked else "•" if index in seat.marked else " ").ljust(step)
        return [line, [("class:cursor", marks.rstrip())]]

    def _decision(self, width: int) -> list[Line]:
        seat = self.seat
        if seat.reconnecting:
            return [[("class:alert", f" reconnecting… ({seat.reconnecting})")], [("", "")], [("", "")]]
        if not seat.deciding():
            waiting = "the opponent is deciding" if seat.view and not seat.ended else ""
            return [[("class:dim", f" {waiting}")], [("", "")], [("", "")]]
        keys: list[str] = []
        more = [f"{c.key} {c.label}" for c in seat.choices()]
        if seat.typing is not None:
            what, choices = ("搓牌 take", seat.picks()) if seat.typing_pick else ("item", seat.items())
            return [
                [
                    ("class:prompt", f" {what}: "),
                    ("class:typing", seat.typing + "_"),
                    ("class:dim", "  Esc back"),
                ],
                [("class:dim", " " + fit("choices: " + " ".join(choices), width - 2))],
                self._clock_line(width),
            ]
        if (entry := seat.exchange()) is not None:
            keys.append(f"换牌: Space mark (≤ {entry.max_tiles}) · Enter exchange the marked (none: keep)")
        elif seat.discards():
            keys.append("←/→ pick a tile · Enter discard it")
            if seat.ready_discards():
                keys.append("r 报听 discarding it")
        if (offer := seat.triplet_offer()) is not None:
            keys.append(f"Space mark 3 · t take {offer.tiles}")
        if seat.items():
            more.append("i item")
        if len(seat.picks()) > PICKS_AS_KEYS:
            more.append("p 搓牌 take a tile")
        more.append("x escape" if not seat.confirm_escape else "x again: ESCAPE (penalty)")
        first = len(seat.choices()) or 1
        if not keys:  # no tile to pick: the numbered actions come first
            keys, more = ["   ".join(more[:first])], more[first:]
        listed = "   ".join(more)
        return [
            [("class:prompt", " your move: "), ("class:keys", fit(" · ".join(keys), width - 13))],
            [("class:keys", " " + fit(listed, width - 2))],
            self._clock_line(width),
        ]

    def _clock_line(self, width: int) -> Line:
        own, bank = self.seat.clocks()
        total = max(1.0, (self.seat.legal.decision_millis_remaining if self.seat.legal else 1000) / 1000)
        bar = 20
        full = round(bar * min(1.0, own / total))
        klass = "class:alert" if own < 5 and bank < 5 else "class:clock"
        return [
            ("", " time "),
            (klass, "█" * full + "░" * (bar - full)),
            (klass, f" {own:4.1f} s"),
            ("class:dim", f"   bank {bank:4.1f} s"),
        ]

    def _note(self, width: int) -> Line:
        return [("class:note", " " + fit(self.seat.note, width - 2))]

    def log_lines(self, count: int, width: int) -> list[Line]:
        lines = [line.strip() for line in self.seat.log if line.strip() and not line.endswith(" a tile")]
        return [[("class:log", " " + fit(text, width - 2))] for text in lines[-count:]] if count > 0 else []


def _columns(text: str) -> int:
    width = wcswidth(text)
    return width if width >= 0 else len(text)


def fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` terminal columns (CJK and 🀄 take two)."""
    if _columns(text) <= width:
        return text
    while text and _columns(text) > width - 1:
        text = text[:-1]
    return text + "…"


def _backs(style: TileStyle, count: int) -> str:
    return (style.back() * count).rstrip() if style.unicode else " ".join([style.back()] * count)


def _spread(left: Line, right: str, width: int) -> Line:
    left = [(style, fit(text, width - _columns(right) - 2)) for style, text in left]
    used = sum(_columns(t) for _, t in left) + _columns(right)
    return [*left, ("", " " * max(1, width - used - 1)), ("class:balance", right)]


def _task(task: rules_pb2.HandTask) -> str:
    """erren T8: the hand's task, as the header shows it."""
    if not task.multiplier:
        return ""
    kind = rules_pb2.TaskKind.Name(task.kind).removeprefix("TASK_KIND_").lower()
    if task.kind == rules_pb2.TASK_KIND_PATTERN:
        kind = rules_pb2.PatternId.Name(task.pattern).removeprefix("PATTERN_ID_").lower()
    return f"task {kind} ×{task.multiplier}"
