"""The strong bot's decisions (docs/evaluation.md): lone tiles exchanged, concealed hands kept unless a
claim makes them ready, folding against a declared-ready opponent, 胡加倍 by expected value."""

from __future__ import annotations

from duelmahjong.engine import bot
from duelmahjong.engine.bots import strong
from duelmahjong.engine.bots.doubling import race
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.evaluation.agents import resolve_agent
from duelmahjong.evaluation.duplicate import play_game
from duelmahjong.evaluation.visibility import seat_state
from duelmahjong.rules.tiles import parse_tiles

OTHER = "1111s555s9999s1z2z"


def _choice(script, seat: int, chooser=strong.choose) -> str:  # type: ignore[no-untyped-def]
    return str(chooser(seat_state(script.state, seat), seat, script.table.legal_actions(seat)))


def test_strong_exchanges_lone_tiles_but_keeps_bonus_tiles(script_of) -> None:  # type: ignore[no-untyped-def]
    duel = script_of("duel")
    duel.deal(dealer_hand="1239m456p78s11225z", other_hand=OTHER, bonus="7z2z", exchange=False)
    assert _choice(duel, 0) == "0 exchange [9m,5z]"
    kept = script_of("duel")
    kept.deal(dealer_hand="1239m456p78s11225z", other_hand=OTHER, bonus="9m2z", exchange=False)
    assert _choice(kept, 0) == "0 exchange [5z]"


def test_strong_gives_back_erren_honours_for_a_flush_and_pays_only_cheap_exchanges(script_of) -> None:  # type: ignore[no-untyped-def]
    hand, other = "1234567m1123m1z5z7z", "4445566778889m"
    erren = script_of("erren")
    erren.deal(dealer_hand=hand, other_hand=other, exchange=False)
    assert _choice(erren, 0) == "0 exchange [1z,5z,7z]"  # every honour: 清一色 stays possible
    dear = script_of("erren", exchange_fee=20)
    dear.deal(dealer_hand=hand, other_hand=other, exchange=False)
    assert _choice(dear, 0) == "0 exchange [1z]"  # only the free exchange


def test_strong_claims_from_a_concealed_hand_only_to_get_ready(script_of) -> None:  # type: ignore[no-untyped-def]
    ready = script_of("duel")
    ready.deal(dealer_hand="3m" + "456p789s1z2z3z4z5z6z7z", other_hand="33m123p456p789p5z6z")
    ready.do("0 discard 3m")
    assert _choice(ready, 1) == "1 pong 3m"
    far = script_of("duel")
    far.deal(dealer_hand="3m" + "456p789s1z2z3z4z5z6z7z", other_hand="33m1p4p7p123s456s7z")
    far.do("0 discard 3m")
    assert _choice(far, 1, bot.choose) == "1 pong 3m"  # the baseline claims: it lowers shanten
    assert _choice(far, 1) == "1 pass"


def test_strong_folds_against_a_declared_ready_opponent_when_far(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="1m5m9m1p5p9p1s5s9s1z2z3z4z5z", other_hand="2222m3333m444m6z")
    legal = duel.table.legal_actions(0)
    view = seat_state(duel.state, 0)
    pushing = str(strong.choose(view, 0, legal))
    assert pushing in {"0 discard 5m", "0 discard 5p", "0 discard 5s"}  # the tiles 国士 does not need
    view.ready = [False, True]
    view.visible = list(view.visible)
    view.visible[parse_tiles("5z")[0]] = 3  # every other 5z seen: the opponent cannot wait on it
    assert str(strong.choose(view, 0, legal)) == "0 discard 5z"


def test_the_race_favours_more_waits_and_a_longer_wall() -> None:
    q_few, _ = race(2, 5, 40, 10, opponent_ready=False)
    q_many, o_many = race(8, 5, 40, 10, opponent_ready=False)
    assert 0 < q_few < q_many < 1 and 0 < o_many < 1 - q_many
    assert race(8, 5, 40, 10, opponent_ready=True)[0] < q_many
    assert race(8, 5, 40, 2, opponent_ready=False)[0] < q_many
    assert race(8, 5, 0, 10, opponent_ready=False) == (0.0, 0.0)


def test_strong_declines_some_erren_wins_for_doubling() -> None:
    agents = (resolve_agent("strong"), resolve_agent("house"))
    doubled = [
        game.outcome
        for seed in range(40)
        for game in [play_game(RoomSettings(profile="erren"), seed, agents)]
        if game.outcome.winner == 0 and game.outcome.erren and game.outcome.erren.win_doublings
    ]
    assert doubled  # 胡加倍 is taken when the race favours it
