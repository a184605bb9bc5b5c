"""The env's PettingZoo APIs for both profiles, and the package's purity and install extra."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest
from pettingzoo.test import api_test, parallel_api_test

from duelmahjong.env import aec_env, parallel_env
from tests.unit.env.play import DUEL_EVERYTHING, ITEMS


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_the_aec_env_passes_pettingzoos_api_test(profile: str) -> None:
    with warnings.catch_warnings():  # PettingZoo advises Box spaces; masked envs use a Dict, as its chess
        warnings.simplefilter("ignore", UserWarning)
        api_test(aec_env(profile), num_cycles=200)


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_the_parallel_env_passes_pettingzoos_parallel_api_test(profile: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        parallel_api_test(parallel_env(profile), num_cycles=200)


def test_a_room_with_every_option_passes_both_api_tests() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        api_test(aec_env("duel", DUEL_EVERYTHING, items=ITEMS, hands=3), num_cycles=200)
        parallel_api_test(parallel_env("duel", DUEL_EVERYTHING, items=ITEMS, hands=3), num_cycles=200)


def test_settings_of_another_profile_are_refused() -> None:
    with pytest.raises(ValueError, match="profile"):
        aec_env("erren", DUEL_EVERYTHING)


PURE = """
import json, sys
import duelmahjong.env
loaded = sorted(
    name for name in sys.modules
    if name.split(".")[0] in ("grpc", "nats", "asyncpg")
    or name.startswith(("google.protobuf", "duelmahjong.v1", "duelmahjong.platform"))
)
print(json.dumps(loaded))
"""

WITHOUT_EXTRA = """
import sys
sys.modules["pettingzoo"] = None  # as if the env extra were not installed
try:
    import duelmahjong.env
except ImportError as err:
    print(err)
"""


def _child(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip().splitlines()[-1]


def test_the_env_imports_no_grpc_nats_protobuf_or_asyncpg() -> None:
    assert json.loads(_child(PURE)) == []


def test_without_the_extra_the_import_error_names_it() -> None:
    assert "pip install 'duelmahjong[env]'" in _child(WITHOUT_EXTRA)


def test_in_the_parallel_form_both_seats_choose_doubling_in_one_step_and_then_exchange() -> None:
    from duelmahjong.env.layout import CONFIRM, DOUBLE, NO_DOUBLE, NOOP

    env = parallel_env("erren")
    observations, _ = env.reset(seed=3)
    assert all(obs["action_mask"][DOUBLE] and obs["action_mask"][NO_DOUBLE] for obs in observations.values())
    observations, *_ = env.step({"seat_0": DOUBLE, "seat_1": NO_DOUBLE})
    assert env.game.table.state.doubling == [True, False]
    assert all(obs["action_mask"][CONFIRM] for obs in observations.values())  # both exchange at once
    observations, *_ = env.step({"seat_0": CONFIRM, "seat_1": CONFIRM})
    masks = [observations[agent]["action_mask"] for agent in ("seat_0", "seat_1")]
    assert sorted(int(mask[NOOP]) for mask in masks) == [0, 1]  # play: one seat decides, the other waits
