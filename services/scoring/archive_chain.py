"""A hand's log records rebuilt from what the archive keeps of its table (pure: no I/O).

The archive keeps a table's opening once and each hand's own slice of the log (``archive_facts``).
A replay folds every engine event of the table before the hand (the dealer, the round wind, the
progressive multiplier and the items of earlier hands), so the records it is built from are the
opening and the slices of the table's hands up to the hand's end, joined by sequence. Neighbouring
slices may share a few records (the previous hand's reveal after its ``hand_ended``): the log is
immutable, so either copy will do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class ChainIncomplete(ValueError):
    """The archive does not (yet) hold every record before the hand's end; ``str()`` says which."""


@dataclass(frozen=True, slots=True)
class Slice:
    """One archived hand's slice of its table's log: ``records`` at ``first_sequence`` onwards."""

    hand_number: int
    first_sequence: int
    records: Sequence[bytes]


def hand_records(
    table_id: str, opening: Sequence[bytes], slices: Sequence[Slice], hand_number: int, last_sequence: int
) -> list[bytes]:
    """The table's records 1..``last_sequence`` (the end of hand ``hand_number``) from its opening
    (sequences 1…) and its hands' ``slices``; :class:`ChainIncomplete` when one is missing."""
    by_sequence = dict(enumerate(opening, start=1))
    for part in slices:
        for offset, raw in enumerate(part.records):
            sequence = part.first_sequence + offset
            if sequence > last_sequence:
                break
            by_sequence.setdefault(sequence, raw)
    missing = [s for s in range(1, last_sequence + 1) if s not in by_sequence]
    if not missing:
        return [by_sequence[s] for s in range(1, last_sequence + 1)]
    if not opening and missing[0] == 1 and all(part.first_sequence > 1 for part in slices):
        raise ChainIncomplete(f"the opening of table {table_id} is not archived")
    absent = sorted(set(range(1, hand_number)) - {part.hand_number for part in slices})
    if absent:
        raise ChainIncomplete(
            f"hand {hand_number} of table {table_id} is replayed from the table's earlier hands, and "
            f"hand{'s' if len(absent) > 1 else ''} {', '.join(map(str, absent))} "
            f"{'are' if len(absent) > 1 else 'is'} not archived (yet)"
        )
    raise ChainIncomplete(
        f"the archive of table {table_id} lacks its log records {missing[0]}..{_run_end(missing)} "
        f"before the end of hand {hand_number}"
    )


def _run_end(missing: list[int]) -> int:
    """The last sequence of the run of consecutive sequences ``missing`` starts with."""
    end = missing[0]
    for sequence in missing[1:]:
        if sequence != end + 1:
            break
        end = sequence
    return end
