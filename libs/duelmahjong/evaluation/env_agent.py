"""An env policy in an evaluation seat: ``duel evaluate mypkg.mybot:policy house``.

The policy (``duelmahjong.env.policy``: the env's observation → an index of its action mask, asked
again for each step of a choice of several tiles) is the same object that plays in the env and on the
live server (``duel bot --policy``). Here it reads the env's observation of the table the game is
played on — ``observe`` and ``fill_mask``, which hold only what the seat may know (the env's no-leak
guarantee, tested in tests/unit/env) — not the blanked state other agents get. Leaving (escape) is
masked out, as ``duel bot`` masks it. Needs the ``env`` extra (numpy).
"""

from __future__ import annotations

import numpy as np

from duelmahjong.engine.actions import Action
from duelmahjong.engine.state import TableState
from duelmahjong.engine.table import Table
from duelmahjong.env.layout import ACTION_COUNT
from duelmahjong.env.observe import observe
from duelmahjong.env.policy import EnvPolicyFn, ask
from duelmahjong.env.selection import Choice, Mask, fill_mask


class EnvAgent:
    """An :class:`~duelmahjong.evaluation.agents.Agent` that asks an env policy."""

    def __init__(self, name: str, policy: EnvPolicyFn) -> None:
        self.name = name
        self.policy = policy
        self._table: Table | None = None
        self._mask: Mask = np.zeros(ACTION_COUNT, np.int8)

    def bind(self, table: Table) -> None:
        """The table of the game about to be played (``play_game`` binds every agent that asks)."""
        self._table = table

    def decide(self, state: TableState, seat: int, legal: list[Action]) -> Action:
        table = self._table
        if table is None:
            raise RuntimeError(f"agent {self.name!r} decides before a table is bound to it")

        def mask_of(choice: Choice) -> Mask:
            return fill_mask(table, seat, choice, self._mask, allow_leave=False)

        return ask(self.policy, observe(table, seat), mask_of).action
