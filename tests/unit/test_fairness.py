"""Provably fair walls (docs/protocol.md "Provably fair walls"): both seats' ``HandStarted`` carries
the commitment to the hand's seed and salt before any tile is dealt, the log holds the salt with the
seed, and neither reaches a seat during play."""

from __future__ import annotations

import hashlib

import pytest

from duelmahjong.engine import fairness
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table
from tests.unit.table_logs import played


def test_the_commitment_is_sha256_over_label_seed_and_salt() -> None:
    salt = bytes(range(16))
    expected = hashlib.sha256(b"duelmahjong-wall-v1" + (7).to_bytes(8, "big") + salt).digest()
    assert fairness.commitment(7, salt) == expected and len(expected) == fairness.COMMITMENT_BYTES
    assert fairness.commitment(8, salt) != expected and fairness.commitment(7, bytes(16)) != expected
    assert len(fairness.secure_salt()) == fairness.SALT_BYTES == 16


def test_a_hand_dealt_without_a_salt_shows_no_commitment_and_deals_the_same_tiles() -> None:
    plain, salted = Table(RoomSettings()), Table(RoomSettings())
    without = plain.start_hand(5)
    with_salt = salted.start_hand(5, salt=bytes(16))
    assert without[0].commitment is None and without[0].salt is None
    assert with_salt[0].commitment == fairness.commitment(5, bytes(16)).hex()
    assert [e.canonical() for e in without[1:]] == [e.canonical() for e in with_salt[1:]]


@pytest.mark.parametrize(("profile", "seed"), [("duel", 12), ("erren", 12), ("duel", 5)])
def test_every_seat_is_committed_to_the_logged_seed_and_salt_before_the_deal(profile: str, seed: int) -> None:
    match = played(profile, seed)
    hands = {}
    for record in match.records():
        if record.HasField("hand_begun"):
            hidden = record.hand_begun.hidden
            assert len(hidden.salt) == fairness.SALT_BYTES
            hands[hidden.hand_id] = (hidden.seed, hidden.salt)
    assert hands
    committed = {
        hand_id: fairness.commitment(int.from_bytes(seed_bytes, "big"), salt)
        for hand_id, (seed_bytes, salt) in hands.items()
    }
    for seat in (0, 1):
        started: set[str] = set()
        for session in match.sent(seat):
            dealing = ""
            for response in session:
                text, wire = str(response), response.SerializeToString()
                assert "seed" not in text and "salt" not in text
                for seed_bytes, salt in hands.values():
                    assert salt not in wire and seed_bytes not in wire
                kind = response.event.WhichOneof("kind") if response.HasField("event") else None
                if kind == "hand_started":
                    hand = response.event.hand_started
                    assert hand.wall_commitment == committed[hand.hand_id]
                    assert len(hand.wall_commitment) == fairness.COMMITMENT_BYTES
                    started.add(hand.hand_id)
                    dealing = hand.hand_id
                elif kind == "tiles_dealt":
                    assert dealing, "tiles dealt before the hand's commitment"
        assert started == set(hands), f"seat {seat} was not shown every hand's commitment"
