"""The numbered keys of a decision: every offered action that is not a tile of the hand picked with
the arrows, an item, a triplet offer or leaving — 胡, 胡加倍, 杠, 碰, 吃, 搓牌 picks, 开始加倍, 猜大小,
draw, pass — in that order, as ``1`` … ``9``.
"""

from __future__ import annotations

from dataclasses import dataclass

from duelmahjong.client.policy import pass_action
from duelmahjong.tui.tiles import split_tiles
from duelmahjong.v1 import play_pb2, rules_pb2

K = play_pb2
PICKS_AS_KEYS = 4  # a 搓牌 offer of more tiles is answered by typing the tile (p)
_GUESSES = {"big": rules_pb2.GUESS_BIG, "small": rules_pb2.GUESS_SMALL}
# The order numbered actions are listed in: the winning and claiming ones first.
_ORDER = [
    K.ACTION_KIND_WIN,
    K.ACTION_KIND_DECLINE_WIN,
    K.ACTION_KIND_KONG,
    K.ACTION_KIND_PONG,
    K.ACTION_KIND_CHI,
    K.ACTION_KIND_RESPOND_OFFER,
    K.ACTION_KIND_CHOOSE_DOUBLING,
    K.ACTION_KIND_GUESS,
    K.ACTION_KIND_DRAW,
    K.ACTION_KIND_PASS,
]


@dataclass(frozen=True)
class Choice:
    key: str
    label: str
    action: play_pb2.Action


def make_action(**kind: object) -> play_pb2.Action:
    """An Action with one kind set (``make_action(pong=PongAction())``)."""
    return play_pb2.Action(**kind)  # type: ignore[arg-type]


def numbered_choices(legal: play_pb2.LegalActions) -> list[Choice]:
    """The actions offered as number keys (all but the hand's tile picks, items and leaving)."""
    found: list[tuple[str, play_pb2.Action]] = []
    for kind in _ORDER:
        for entry in (e for e in legal.actions if e.kind == kind):
            found += _entries(entry)
    return [Choice(str(i), label, action) for i, (label, action) in enumerate(found[:9], 1)]


def _entries(entry: play_pb2.LegalAction) -> list[tuple[str, play_pb2.Action]]:
    kind = entry.kind
    if kind == K.ACTION_KIND_WIN:
        return [("胡 win", make_action(win=K.WinAction()))]
    if kind == K.ACTION_KIND_DECLINE_WIN:
        return [("胡加倍 decline the win to double", make_action(decline_win=K.DeclineWinAction()))]
    if kind == K.ACTION_KIND_PONG:
        return [("碰 pong", make_action(pong=K.PongAction()))]
    if kind == K.ACTION_KIND_CHI:
        return [(f"吃 chi {c}", make_action(chi=K.ChiAction(tiles=c))) for c in entry.choices]
    if kind == K.ACTION_KIND_KONG:
        return [(f"杠 kong {c}", make_action(kong=K.KongAction(tile=c))) for c in entry.choices]
    if kind == K.ACTION_KIND_RESPOND_OFFER:  # 搓牌 picks; a triplet offer is taken with marks and t
        picks = [c for c in entry.choices if len(split_tiles(c)) == 1]
        if len(picks) > PICKS_AS_KEYS:
            return []  # typed after p instead
        return [
            (f"搓牌 take {c}", make_action(respond_offer=K.RespondOfferAction(accept=True, pick=c)))
            for c in picks
        ]
    if kind == K.ACTION_KIND_CHOOSE_DOUBLING:
        return [
            ("开始加倍 double", make_action(choose_doubling=K.ChooseDoublingAction(start_doubled=True))),
            ("no doubling", make_action(choose_doubling=K.ChooseDoublingAction(start_doubled=False))),
        ]
    if kind == K.ACTION_KIND_GUESS:
        out = [
            (f"猜大小 {c}", make_action(guess=K.GuessAction(guess=_GUESSES[c])))
            for c in entry.choices
            if c in _GUESSES
        ]
        return [*out, ("keep the winnings", make_action(guess=K.GuessAction(skip=True)))]
    if kind == K.ACTION_KIND_DRAW:
        return [("draw", make_action(draw=K.DrawAction()))]
    if kind == K.ACTION_KIND_PASS:
        return [("pass", pass_action())]
    return []
