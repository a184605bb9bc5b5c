"""A client policy as an evaluation agent, over the contract: the seat's ``SeatView`` and
``LegalActions`` as the table service builds them, the policy's contract ``Action`` decoded as the
table service decodes it. ``strong@contract`` measures the house bot exactly as room bots play it.
"""

from __future__ import annotations

from duelmahjong.client.policy import POLICIES, BaselineBot
from duelmahjong.engine.actions import Action
from duelmahjong.engine.state import TableState
from duelmahjong.engine.table import Table
from duelmahjong.v1 import play_pb2, rules_pb2
from duelmahjong.views import codec
from duelmahjong.views.seat_views import TableFacts, seat_view

SUFFIX = "@contract"
_PLAYERS = (
    rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_FIRST, player_id="a"),
    rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_SECOND, player_id="b"),
)


class ContractAgent:
    """Plays a :data:`~duelmahjong.client.policy.POLICIES` policy through the seat's contract view.

    It needs the table, not a state: the agent is bound to the live table by the evaluation loop
    (:meth:`bind`), and reads only the seat's view built from it."""

    def __init__(self, policy: BaselineBot) -> None:
        self.name = policy.name + SUFFIX
        self._policy = policy
        self._table: Table | None = None

    def bind(self, table: Table) -> None:
        self._table = table

    def decide(self, state: TableState, seat: int, legal: list[Action]) -> Action:
        table = self._table
        if table is None:
            raise RuntimeError("a contract agent plays a bound table")
        facts = TableFacts("t", "h", _PLAYERS, (True, True), fan_rate=1, sequence=len(table.events))
        actions, default = (
            codec.encode_legal(legal, table.settings.effective_exchange_limit, table.state.hand_size(seat)),
            codec.encode_action(table.default_action(seat) or legal[0]),
        )
        message = play_pb2.LegalActions(sequence=facts.sequence, actions=actions, default_action=default)
        view = seat_view(table, seat, facts, message)
        view.legal_actions.CopyFrom(message)
        answer = self._policy.decide(view, message)
        if not isinstance(answer, play_pb2.Action):
            raise TypeError("a contract agent's policy must answer at once")
        return codec.decode_action(answer, seat, legal)


def contract_agent(name: str) -> ContractAgent | None:
    """The agent ``POLICY@contract`` names, or None for another name."""
    if not name.endswith(SUFFIX) or name[: -len(SUFFIX)] not in POLICIES:
        return None
    return ContractAgent(POLICIES[name[: -len(SUFFIX)]]())
