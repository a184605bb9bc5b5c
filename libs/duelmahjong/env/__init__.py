"""``duelmahjong.env``: a training environment for both profiles (docs/env.md).

PettingZoo's AEC and parallel APIs over the engine, one seat's observation as feature planes and an
action mask over a fixed action space, the hand's settlement as the reward, and batched stepping of
many tables. Needs the ``env`` extra: ``pip install 'duelmahjong[env]'``.
"""

from __future__ import annotations

try:
    import gymnasium  # noqa: F401
    import numpy  # noqa: F401
    import pettingzoo  # noqa: F401
except ImportError as missing:  # the core install has none of them: say which extra brings them
    raise ImportError(
        f"duelmahjong.env needs numpy, gymnasium and pettingzoo ({missing.name} is missing): "
        "pip install 'duelmahjong[env]'"
    ) from missing

from duelmahjong.env.aec import DuelMahjongAEC, aec_env
from duelmahjong.env.batch import BatchTables
from duelmahjong.env.game import EnvOptions
from duelmahjong.env.layout import ACTION_COUNT, NOOP
from duelmahjong.env.observation import SeatObservation
from duelmahjong.env.observe import observe
from duelmahjong.env.parallel import DuelMahjongParallel, parallel_env
from duelmahjong.env.planes import CHANNELS, planes

__all__ = [
    "ACTION_COUNT",
    "CHANNELS",
    "NOOP",
    "BatchTables",
    "DuelMahjongAEC",
    "DuelMahjongParallel",
    "EnvOptions",
    "SeatObservation",
    "aec_env",
    "observe",
    "parallel_env",
    "planes",
]
