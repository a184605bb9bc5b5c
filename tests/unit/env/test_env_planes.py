"""The planes of a hand-written observation: each channel says what docs/env.md says it does."""

from __future__ import annotations

import numpy as np

from duelmahjong.env.observation import DISCARD_CLAIMED, DISCARD_DRAWN, HIDDEN_KONG, Meld, SeatObservation
from duelmahjong.env.planes import CHANNEL, CHANNELS, SHAPE, planes
from duelmahjong.env.selection import Choice
from duelmahjong.rules.tiles import Tile


def k(name: str) -> int:
    return Tile.parse(name).kind


def _counts(names: str) -> tuple[int, ...]:
    counts = [0] * 34
    for name in names.split():
        counts[k(name)] += 1
    return tuple(counts)


OBS = SeatObservation(
    profile="duel",
    seat=1,
    phase="turn",
    to_move=1,
    hand_number=3,
    dealer=0,
    round_wind=0,
    progressive=4,
    wall_remaining=50,
    pool_remaining=20,
    bonus_tiles=(k("5m"), k("5m")),
    task=None,
    last_discard=k("9p"),
    hand=_counts("1m 1m 2m 3m 4p 5p 6p 7s 8s 9s 1z"),
    drawn=k("1z"),
    hand_sizes=(10, 11),
    melds=((Meld("concealed_kong", HIDDEN_KONG),), (Meld("chi", k("1s")),)),
    rivers=((k("9p"), k("2z")), (k("3z"),)),
    river_flags=((DISCARD_DRAWN, 0), (DISCARD_CLAIMED,)),
    flowers=((), (34,)),
    ready=(True, False),
    doubling=(None, None),
    win_doublings=(0, 0),
    items=(("swap_item", 2),),
    offer="",
    offer_tile=-1,
    legal=(),
)


def row(out: np.ndarray, name: str) -> dict[str, float]:
    from duelmahjong.rules.tiles import tile_name

    return {tile_name(t): float(v) for t, v in enumerate(out[CHANNEL[name]]) if v}


def test_each_channel_reads_its_part_of_the_observation() -> None:
    choice = Choice()
    choice.kind, choice.tiles = "shuffle_item", [k("4p")]
    out = planes(OBS, choice)
    assert out.shape == SHAPE == (len(CHANNELS), 34) and out.dtype == np.float32
    assert row(out, "hand")["1m"] == 0.5 and row(out, "drawn") == {"1z": 1.0}
    assert row(out, "own_melds") == {"1s": 0.25, "2s": 0.25, "3s": 0.25}
    assert row(out, "opponent_melds") == {} and out[CHANNEL["opponent_hidden_kongs"]].min() == 0.25
    assert row(out, "opponent_river") == {"9p": 0.25, "2z": 0.25}
    assert row(out, "opponent_drawn_discards") == {"9p": 0.25}
    assert row(out, "own_claimed") == {"3z": 0.25}
    assert row(out, "opponent_recent_0") == {"2z": 1.0} and row(out, "opponent_recent_1") == {"9p": 1.0}
    assert row(out, "bonus") == {"5m": 0.5} and row(out, "last_discard") == {"9p": 1.0}
    assert row(out, "own_wind") == {"3z": 1.0}  # the non-dealer sits West
    assert row(out, "selected") == {"4p": 0.25} and out[CHANNEL["choosing_shuffle_item"]].min() == 1.0
    seen = row(out, "seen")
    assert seen["1s"] == 0.25 and seen["1m"] == 0.5 and seen["9p"] == 0.25  # chow, hand, river
    assert "3z" not in row(out, "seen")  # a claimed discard lies in the claimer's (hidden) meld
    assert out[CHANNEL["opponent_ready"]].min() == 1.0 and out[CHANNEL["own_ready"]].max() == 0.0
    assert out[CHANNEL["progressive"]].min() == 0.25 and out[CHANNEL["swap_items"]].min() == 0.5
    assert out[CHANNEL["phase_turn"]].min() == 1.0 and out[CHANNEL["own_move"]].min() == 1.0
    assert 0.0 <= out.min() and out.max() <= 1.0


def test_docs_env_md_lists_every_channel_in_order() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "env.md").read_text("utf-8")
    for index, (name, meaning) in enumerate(CHANNELS):
        assert f"| {index} | `{name}` | {meaning} |" in text, f"docs/env.md lacks channel {index} {name}"
