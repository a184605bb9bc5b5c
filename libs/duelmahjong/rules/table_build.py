"""Building the per-suit tables from scratch: the win check, shanten and decompositions as lookups.

What is tabled, per suit key (:mod:`duelmahjong.rules.keys`; ``bytes`` indexed by the key, so a lookup
is one C-level index):

* ``suit_win`` / ``honor_win``: 0 = not sets (+ one pair), 1 = sets only, 2 = sets + exactly one pair.
  A whole hand is a standard win iff the product of its four codes is 2.
* ``pairs``: Σ count // 2 (seven pairs, four of a kind = two pairs — E6).
* ``orphans``: kinds of terminals/honours held + 16 if one of them is held twice (国士无双).
* ``green``: tiles of the key that are 绿一色 tiles (2s 3s 4s 6s 8s / 6z; D12).
* ``suit_class`` / ``honor_class``: the *distance class* of the key. For m sets and p (0/1) pairs,
  the distance is the fewest tiles that must be added to the key's tiles to contain m sets + p pairs
  of that suit with no kind over four copies. Keys share one of ~180 distance vectors (10 values);
  ``merge`` gives the class of two suits combined (min over splitting the sets and the pair), and
  ``final`` the hand's distance to K sets + a pair: shanten = distance - 1 (exact, not a heuristic).
* ``suit_waits`` / ``honor_waits``: bit r set if one more tile of rank r makes the key complete
  (bit 9: and the completed key holds the pair).
* ``suit_readings`` / ``honor_readings``: for complete keys, every set of blocks (+ pair) it splits into.

Building takes a few seconds in plain Python (two passes over the 405,350 suit keys: which keys are
part of a complete suit shape, then distances as bit-OR of "distance ≤ d" masks), so it happens once
per version of this module and :mod:`duelmahjong.rules.keys`: :func:`duelmahjong.rules.tables.get_tables`
keeps the result on disk.
"""

from __future__ import annotations

import itertools
from array import array
from dataclasses import dataclass
from typing import Final

from duelmahjong.rules.keys import HONOR_RANKS, HONOR_SPACE, MAX_TILES, SUIT_RANKS, SUIT_SPACE, SuitReading

_FIELDS: Final = 10  # distance vector entries: index = sets * 2 + pairs, sets 0..4, pairs 0..1
_THERMO: Final = 15  # bits per field: bit d set <=> distance <= d (d = 0..14)


@dataclass(frozen=True, slots=True)
class RuleTables:
    """Every precomputed table (see the module docstring). Read-only."""

    suit_win: bytes
    honor_win: bytes
    suit_pairs: bytes
    honor_pairs: bytes
    suit_orphans: bytes
    honor_orphans: bytes
    sou_green: bytes  # 绿一色 tiles in an s key (m and p keys have none)
    honor_green: bytes
    suit_class: bytes
    honor_class: bytes
    suit_waits: array[int]  # uint16 per key, see _waits
    honor_waits: array[int]
    merge: bytes  # class of (a, b) combined, index a * 256 + b
    final: bytes  # distance to K sets + one pair, index (a * 256 + b) * 5 + K
    suit_readings: dict[int, tuple[SuitReading, ...]]
    honor_readings: dict[int, tuple[SuitReading, ...]]


def _keys(ranks: int) -> list[tuple[int, tuple[int, ...]]]:
    """Every (key, digits) with digits 0..4 summing to at most MAX_TILES, in increasing key order."""
    found: list[tuple[int, tuple[int, ...]]] = []

    def extend(key: int, digits: tuple[int, ...], left: int) -> None:
        if len(digits) == ranks:
            found.append((key, digits))
            return
        for count in range(min(4, left) + 1):
            extend(key * 5 + count, (*digits, count), left - count)

    extend(0, (), MAX_TILES)
    return found


def _complete_shapes(ranks: int, chows: bool) -> dict[int, list[SuitReading]]:
    """Every key made of m ≤ 4 sets and at most one pair, with each of its readings."""
    blocks = [(False, r) for r in range(ranks)] + ([(True, r) for r in range(ranks - 2)] if chows else [])
    shapes: dict[int, list[SuitReading]] = {}
    for sets in range(5):
        for combo in itertools.combinations_with_replacement(blocks, sets):
            counts = [0] * ranks
            for is_chow, rank in combo:
                if is_chow:
                    counts[rank] += 1
                    counts[rank + 1] += 1
                    counts[rank + 2] += 1
                else:
                    counts[rank] += 3
            if max(counts, default=0) > 4:
                continue
            ordered = tuple(sorted(combo, key=lambda block: (block[1], block[0])))
            for pair in range(-1, ranks):
                if pair >= 0 and counts[pair] > 2:
                    continue
                key = 0
                for rank, count in enumerate(counts):
                    key = key * 5 + count + (2 if rank == pair else 0)
                shapes.setdefault(key, []).append((pair, ordered))
    return shapes


def _distance_vectors(
    keys: list[tuple[int, tuple[int, ...]]], shapes: dict[int, list[SuitReading]]
) -> dict[int, tuple[int, ...]]:
    """Distance vector of every key (see the module docstring)."""
    ranks = len(keys[0][1])
    place = [5 ** (ranks - 1 - r) for r in range(ranks)]
    target_bits: dict[int, int] = {}
    for key, readings in shapes.items():
        for pair, blocks in readings:
            target_bits[key] = target_bits.get(key, 0) | 1 << (len(blocks) * 2 + (pair >= 0))
    # Pass 1, largest keys first: the fields (sets, pairs) for which the key is part of a complete shape.
    # A key is, iff it is complete itself or one more tile makes it part of one (with room for it).
    needs_more = [
        sum(1 << f for f in range(_FIELDS) if 3 * (f // 2) + 2 * (f % 2) > size) for size in range(15)
    ]
    part_of: dict[int, int] = {}
    for key, digits in reversed(keys):
        size = sum(digits)
        bits = target_bits.get(key, 0)
        if size < MAX_TILES:
            more = 0
            for r in range(ranks):
                if digits[r] < 4:
                    more |= part_of[key + place[r]]
            bits |= more & needs_more[size]
        part_of[key] = bits
    # Pass 2, smallest first: distance = min(own distance if part of a shape, min over one tile fewer).
    # Distances are kept as "≤ d" bit masks (15 bits per field), so the min is a bit-OR.
    full = (1 << _THERMO) - 1
    own_cache: dict[tuple[int, int], int] = {}
    thermo: dict[int, int] = {}
    for key, digits in keys:
        mask = 0
        for r in range(ranks):
            if digits[r]:
                mask |= thermo[key - place[r]]
        bits = part_of[key]
        if bits:
            size = sum(digits)
            own = own_cache.get((bits, size))
            if own is None:
                own = 0
                for f in range(_FIELDS):
                    if bits >> f & 1:
                        distance = _tiles_of_field(f) - size
                        own |= (full >> distance << distance) << (f * _THERMO)
                own_cache[bits, size] = own
            mask |= own
        thermo[key] = mask
    decoded: dict[int, tuple[int, ...]] = {}
    vectors: dict[int, tuple[int, ...]] = {}
    for key, mask in thermo.items():
        vector = decoded.get(mask)
        if vector is None:
            vector = tuple(_THERMO - (mask >> (f * _THERMO) & full).bit_count() for f in range(_FIELDS))
            decoded[mask] = vector
        vectors[key] = vector
    return vectors


def _tiles_of_field(field: int) -> int:
    """Tiles of the target of a distance field: 3 per set, 2 for the pair."""
    return 3 * (field // 2) + 2 * (field % 2)


def _waits(ranks: int, shapes: dict[int, list[SuitReading]]) -> array[int]:
    """Per key: bit r set if one more tile of rank r completes the key; bit 9 set if that makes a pair."""
    place = [5 ** (ranks - 1 - r) for r in range(ranks)]
    table = array("H", bytes(2 * 5**ranks))
    for key, readings in shapes.items():
        code = 1 << 9 if readings[0][0] >= 0 else 0
        remaining = key
        for r in range(ranks):
            digit, remaining = divmod(remaining, place[r])
            if digit:
                table[key - place[r]] |= 1 << r | code
    return table


def _merge(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    merged = [99] * _FIELDS
    for sets_a in range(5):
        for pair_a in (0, 1):
            left = a[sets_a * 2 + pair_a]
            for sets_b in range(5 - sets_a):
                for pair_b in range(2 - pair_a):
                    field = (sets_a + sets_b) * 2 + pair_a + pair_b
                    total = left + b[sets_b * 2 + pair_b]
                    if total < merged[field]:
                        merged[field] = total
    return tuple(merged)


def _table(space: int, values: dict[int, int]) -> bytes:
    table = bytearray(space)
    for key, value in values.items():
        table[key] = value
    return bytes(table)


def _digit_sums(keys: list[tuple[int, tuple[int, ...]]], kind: str) -> dict[int, int]:
    """Per-key values computed from the digits: "pairs", "orphans", "green_s" or "green_z"."""
    ranks = len(keys[0][1])
    terminals = (0, ranks - 1) if ranks == SUIT_RANKS else tuple(range(ranks))
    green = {"green_s": (1, 2, 3, 5, 7), "green_z": (5,)}.get(kind, ())
    values: dict[int, int] = {}
    for key, digits in keys:
        if kind == "pairs":
            values[key] = sum(count // 2 for count in digits)
        elif kind == "orphans":
            held = [digits[r] for r in terminals]
            values[key] = sum(1 for count in held if count) + (16 if max(held) >= 2 else 0)
        else:
            values[key] = sum(digits[r] for r in green)
    return values


def build_tables() -> RuleTables:
    """Build every table from scratch (a few seconds); :func:`get_tables` caches the result."""
    suit_keys_all, honor_keys_all = _keys(SUIT_RANKS), _keys(HONOR_RANKS)
    suit_shapes = _complete_shapes(SUIT_RANKS, chows=True)
    honor_shapes = _complete_shapes(HONOR_RANKS, chows=False)
    suit_vectors = _distance_vectors(suit_keys_all, suit_shapes)
    honor_vectors = _distance_vectors(honor_keys_all, honor_shapes)

    # One class space for every vector seen, closed under merging with a suit (m + p, then + s).
    classes: dict[tuple[int, ...], int] = {}

    def class_of(vector: tuple[int, ...]) -> int:
        return classes.setdefault(vector, len(classes))

    suit_class = {key: class_of(vector) for key, vector in suit_vectors.items()}
    honor_class = {key: class_of(vector) for key, vector in honor_vectors.items()}
    suit_set = sorted(set(suit_vectors.values()), key=classes.__getitem__)
    honor_set = sorted(set(honor_vectors.values()), key=classes.__getitem__)
    merge = bytearray(256 * 256)
    pending = list(suit_set)
    done: set[tuple[int, ...]] = set()
    while pending:
        vector = pending.pop()
        if vector in done:
            continue
        done.add(vector)
        for other in suit_set:
            merged = _merge(vector, other)
            if merged not in done:
                pending.append(merged)
            if max(class_of(vector), class_of(other), class_of(merged)) > 255:
                raise RuntimeError("more than 256 distance classes: they no longer fit the byte tables")
            merge[class_of(vector) * 256 + class_of(other)] = class_of(merged)
    final = bytearray(256 * 256 * 5)
    for vector in done:
        for honor in honor_set:
            merged = _merge(vector, honor)
            base = (classes[vector] * 256 + classes[honor]) * 5
            for sets in range(5):
                final[base + sets] = merged[sets * 2 + 1]

    def readings(shapes: dict[int, list[SuitReading]]) -> dict[int, tuple[SuitReading, ...]]:
        return {key: tuple(sorted(found)) for key, found in shapes.items()}

    return RuleTables(
        suit_win=_table(SUIT_SPACE, {key: _win_code(found) for key, found in suit_shapes.items()}),
        honor_win=_table(HONOR_SPACE, {key: _win_code(found) for key, found in honor_shapes.items()}),
        suit_pairs=_table(SUIT_SPACE, _digit_sums(suit_keys_all, "pairs")),
        honor_pairs=_table(HONOR_SPACE, _digit_sums(honor_keys_all, "pairs")),
        suit_orphans=_table(SUIT_SPACE, _digit_sums(suit_keys_all, "orphans")),
        honor_orphans=_table(HONOR_SPACE, _digit_sums(honor_keys_all, "orphans")),
        sou_green=_table(SUIT_SPACE, _digit_sums(suit_keys_all, "green_s")),
        honor_green=_table(HONOR_SPACE, _digit_sums(honor_keys_all, "green_z")),
        suit_class=_table(SUIT_SPACE, suit_class),
        honor_class=_table(HONOR_SPACE, honor_class),
        suit_waits=_waits(SUIT_RANKS, suit_shapes),
        honor_waits=_waits(HONOR_RANKS, honor_shapes),
        merge=bytes(merge),
        final=bytes(final),
        suit_readings=readings(suit_shapes),
        honor_readings=readings(honor_shapes),
    )


def _win_code(readings: list[SuitReading]) -> int:
    """1 = sets only, 2 = sets + one pair (a key's tile count fixes which, so readings agree)."""
    return 2 if readings[0][0] >= 0 else 1
