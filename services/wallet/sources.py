"""The events that move prestige: where each arrives, how it decodes, and the wallet command it becomes.

Each command's idempotency key comes from the event's documented key (``hand:<hand_id>``,
``fee:<hand_id>:<player>``…), so every redelivery or duplicate of an event maps to the same key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message

from duelmahjong.platform import subjects
from duelmahjong.platform.streams import ConsumerSpec, StreamSpec
from duelmahjong.v1 import events_pb2
from services.wallet import codec
from services.wallet.commands import (
    Charge,
    Command,
    EscapePenalty,
    Guess,
    GuessSettlement,
    HandSettlement,
    ItemUse,
    ReleaseHolds,
    TableOpening,
)


def _hand_scored(event: events_pb2.HandScored) -> Command:
    settlement = event.settlement
    payer = payee = ""
    stake = 0
    if settlement.HasField("transfer"):
        payer, payee = settlement.transfer.from_player_id, settlement.transfer.to_player_id
        # Scored uncapped: the wallet alone caps (H1), with the carries its holds have now.
        stake = settlement.fan_amount or settlement.transfer.amount
    guess = None
    if event.HasField("guess"):
        guess = Guess(won=event.guess.won, multiplier=event.guess.payout_multiplier)
    return HandSettlement(
        f"hand:{event.hand_id}",
        table_id=event.table_id,
        hand_id=event.hand_id,
        payer=payer,
        payee=payee,
        stake=stake,
        seated=tuple(event.player_ids),
        fee=settlement.fee if event.player_ids else 0,
        profile=codec.profile_name(event.profile),
        guess=guess,
    )


def _escape(event: events_pb2.EscapePenalty) -> Command:
    return EscapePenalty(
        f"escape:{event.hand_id}",
        table_id=event.table_id,
        hand_id=event.hand_id,
        escaper=event.escaper_player_id,
        opponent=event.opponent_player_id,
        penalty=event.amount,
        seated=tuple(event.player_ids),
        profile=codec.profile_name(event.profile),
    )


def _charge(key: str, event: events_pb2.FeeCharged | events_pb2.ExchangeCharged, purpose: str) -> Command:
    return Charge(
        key,
        table_id=event.table_id,
        hand_id=event.hand_id,
        player=event.player_id,
        amount=event.amount,
        purpose=purpose,
    )


def _fee(event: events_pb2.FeeCharged) -> Command:
    return _charge(f"fee:{event.hand_id}:{event.player_id}", event, "fee")


def _exchange(event: events_pb2.ExchangeCharged) -> Command:
    return _charge(f"exchange:{event.table_id}:{event.sequence}", event, "exchange")


def _item(event: events_pb2.ItemUsed) -> Command:
    return ItemUse(
        f"item:{event.table_id}:{event.sequence}",
        table_id=event.table_id,
        hand_id=event.hand_id,
        player=event.player_id,
        item=codec.item_name(event.item),
    )


def _guess(event: events_pb2.GuessResolved) -> Command:
    return GuessSettlement(
        f"guess:{event.hand_id}",
        table_id=event.table_id,
        hand_id=event.hand_id,
        player=event.player_id,
        stake=event.stake,
        won=event.won,
        multiplier=event.payout_multiplier,
    )


def _opened(event: events_pb2.TableOpened) -> Command:
    return TableOpening(f"open:{event.table_id}", table_id=event.table_id, pairing_id=event.pairing_id)


def _closed(event: events_pb2.TableClosed) -> Command:
    return ReleaseHolds(f"close:{event.table_id}", pairing_id=event.pairing_id, table_id=event.table_id)


@dataclass(frozen=True)
class Namespace:
    """Where the wallet's events travel: the platform's subjects and streams, or — for tests that
    share one NATS — a private copy (``duel.`` → ``<name>.``, stream ``DUEL_X`` → ``DUEL_X_<NAME>``)."""

    name: str = ""

    def subject(self, subject: str) -> str:
        return subject if not self.name else self.name + subject.removeprefix("duel")

    def stream(self, spec: StreamSpec) -> StreamSpec:
        if not self.name:
            return spec
        return dataclasses.replace(
            spec,
            name=f"{spec.name}_{self.name.upper()}",
            subjects=tuple(self.subject(s) for s in spec.subjects),
        )


PLATFORM_NAMESPACE = Namespace()


@dataclass(frozen=True)
class Source:
    """One consumed event type: where it arrives, how it decodes, what command it becomes."""

    subject: str
    stream: StreamSpec
    message: type[Message]
    to_command: Callable[[Any], Command]
    hot: bool = False  # hot sources get the configured number of workers, the others one

    @property
    def durable(self) -> str:
        return "wallet-" + self.subject.rsplit(".", 1)[1].replace("_", "-")

    def consumer(
        self, namespace: Namespace = PLATFORM_NAMESPACE, *, ack_wait_seconds: float = 30.0
    ) -> ConsumerSpec:
        """The wallet's durable consumer of this source."""
        return ConsumerSpec(
            namespace.stream(self.stream).name,
            self.durable,
            namespace.subject(self.subject),
            ack_wait_seconds=ack_wait_seconds,
            # Prestige is never dropped: an event the wallet cannot apply yet (database down) is
            # redelivered until it can; one it refuses is recorded and acked, not retried.
            max_deliver=-1,
        )

    @property
    def kind(self) -> str:
        """The metric label: ``hand-scored``, ``fee-charged``…"""
        return self.durable.removeprefix("wallet-")


SOURCES: tuple[Source, ...] = (
    Source(subjects.HAND_SCORED, subjects.SCORING_STREAM, events_pb2.HandScored, _hand_scored, hot=True),
    Source(subjects.FEE_CHARGED, subjects.TABLE_STREAM, events_pb2.FeeCharged, _fee, hot=True),
    Source(subjects.ESCAPE_PENALTY, subjects.SCORING_STREAM, events_pb2.EscapePenalty, _escape),
    Source(subjects.EXCHANGE_CHARGED, subjects.TABLE_STREAM, events_pb2.ExchangeCharged, _exchange),
    Source(subjects.ITEM_USED, subjects.TABLE_STREAM, events_pb2.ItemUsed, _item),
    Source(subjects.GUESS_RESOLVED, subjects.TABLE_STREAM, events_pb2.GuessResolved, _guess),
    Source(subjects.TABLE_OPENED, subjects.TABLE_STREAM, events_pb2.TableOpened, _opened),
    Source(subjects.TABLE_CLOSED, subjects.TABLE_STREAM, events_pb2.TableClosed, _closed),
)
