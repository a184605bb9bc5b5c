"""Bring your own bot: a policy written for the training env plays on the live server.

An env policy (``duelmahjong.env.policy``) is ``policy(observation) -> int`` over the env's
observation, asked again for each step of a choice of several tiles. :class:`EnvPolicy` is a client
:class:`~duelmahjong.client.policy.Policy` around one: at each decision it builds the seat's
observation from its view (:func:`~duelmahjong.client.env_observation.seat_observation_from_view`),
asks the policy through the sub-decisions against the mask the stream implies
(:func:`~duelmahjong.client.env_observation.legal_mask`), and sends the engine action they name in
the contract's form. ``duel bot --policy module:callable`` loads the policy with
:func:`~duelmahjong.env.policy.load_policy`.

Needs the ``env`` extra (numpy, gymnasium, pettingzoo): nothing else in the client library imports this.
"""

from __future__ import annotations

from collections.abc import Callable

from duelmahjong.client.env_observation import legal_mask, seat_observation_from_view
from duelmahjong.engine import actions as A
from duelmahjong.env.observation import NO_TILE, SeatObservation
from duelmahjong.env.policy import (
    Decided,
    EnvObservation,
    EnvPolicyFn,
    PolicyError,
    ask,
    load_policy,
)
from duelmahjong.v1 import play_pb2
from duelmahjong.views.codec import encode_action

__all__ = ["Decided", "EnvObservation", "EnvPolicy", "EnvPolicyFn", "PolicyError", "load_policy"]


class EnvPolicy:
    """A client policy that asks an env policy. ``allow_leave``: whether LEAVE (escape, T10) is in the
    mask (the env's ``EnvOptions.allow_leave``; off by default: a live bot escaping pays for it).
    ``watch`` hears of every decision made (tests compare them with the env's)."""

    def __init__(
        self,
        policy: EnvPolicyFn,
        *,
        allow_leave: bool = False,
        watch: Callable[[play_pb2.SeatView, Decided], None] | None = None,
    ) -> None:
        self.policy = policy
        self.allow_leave = allow_leave
        self.watch = watch
        self.last: Decided | None = None  # the last decision made
        # The tile the seat drew and won on (the env shows it as drawn through 猜大小), by hand.
        self._won_with: tuple[int, int] = (0, NO_TILE)

    def decide(self, view: play_pb2.SeatView, legal: play_pb2.LegalActions) -> play_pb2.Action:
        hand = view.table.hand_number
        won_with = self._won_with[1] if self._won_with[0] == hand else NO_TILE
        decided = self.choose(seat_observation_from_view(view, legal, won_with=won_with), legal)
        action = decided.action
        self.last = decided
        if action.kind == A.SELF_DRAW_WIN:
            self._won_with = (hand, decided.observation.drawn)
        if self.watch is not None:
            self.watch(view, decided)
        return encode_action(action)

    def choose(self, obs: SeatObservation, legal: play_pb2.LegalActions) -> Decided:
        """Ask the policy, step by step, for the engine action of this decision."""
        return ask(
            self.policy, obs, lambda choice: legal_mask(obs, choice, legal, allow_leave=self.allow_leave)
        )
