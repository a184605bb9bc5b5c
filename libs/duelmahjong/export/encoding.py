"""The seam between a hand and a training record: a :data:`DecisionEncoder`.

An encoder is given the engine :class:`~duelmahjong.engine.table.Table` as it stood *before* a decision,
the deciding seat and the engine action the seat took, and returns the record's JSON-able fields that
describe the decision (the observation, the legal actions, the action). Everything else of a record
(hand, seat, decision number, reward…) is the exporter's (:mod:`duelmahjong.export.records`), so an
encoder must not return those keys.

The table holds the whole truth of the hand (both hands, the wall): an encoder must show only what the
seat could know. :func:`view_encoder` does so by building on the engine's seat view
(:func:`duelmahjong.engine.view.seat_view`), which never holds the opponent's concealed tiles, the wall,
the pool or the seed. :func:`env_encoder` writes the decision in the training environment's terms
(``duelmahjong.env.records``: the seat's observation and the env steps the decision took, which
``duelmahjong.env.records.samples`` turns back into planes, masks and indices); ``combined`` writes
several encoders' fields side by side. :data:`FORMATS` names them for ``duel export --format``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from duelmahjong.engine.actions import Action
from duelmahjong.engine.table import Table
from duelmahjong.engine.view import seat_view

DecisionEncoder = Callable[[Table, int, Action], dict[str, Any]]

# What the exporter writes itself: an encoder's fields never replace these.
RESERVED = frozenset({"hand", "profile", "seat", "decision", "step", "origin", "reward"})


def view_encoder(table: Table, seat: int, action: Action) -> dict[str, Any]:
    """The seat's engine view, its legal actions and its action, as text.

    ``view`` is :func:`~duelmahjong.engine.view.seat_view` without its ``legal_actions`` (those are
    ``legal``); ``legal`` and ``action`` are engine actions in their text form (``"0 discard 5m"``),
    which :meth:`Action.parse <duelmahjong.engine.actions.Action.parse>` reads back. ``legal`` is the
    engine's list: for a choice of several tiles (an exchange, a triplet offer's tiles, 偷天换日's
    target, 乾坤大挪移's tiles) it carries representatives of the kind (docs/engine.md), so the action
    taken is one of ``legal`` or another choice of a kind listed there.
    """
    legal = table.legal_actions(seat)
    view = seat_view(table.state, seat, legal)
    del view["legal_actions"]
    return {"view": view, "legal": [str(option) for option in legal], "action": str(action)}


def combined(*encoders: DecisionEncoder) -> DecisionEncoder:
    """One encoder writing the fields of all of ``encoders`` (e.g. the seat view beside the training
    environment's ``observation`` and ``action_indices``); a field two of them write is a bug, refused
    (ValueError) rather than one silently replacing the other."""

    def encode(table: Table, seat: int, action: Action) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        for encoder in encoders:
            more = encoder(table, seat, action)
            twice = fields.keys() & more.keys()
            if twice:
                raise ValueError(f"two encoders write the fields {sorted(twice)}")
            fields.update(more)
        return fields

    return encode


def env_encoder(table: Table, seat: int, action: Action) -> dict[str, Any]:
    """The env's record of the decision: ``observation`` and ``steps`` (``duelmahjong.env.records``).
    Needs the ``env`` extra (numpy): :func:`encoder_for` says so when it is missing."""
    records = importlib.import_module("duelmahjong.env.records")
    fields: dict[str, Any] = records.env_fields(table, seat, action)
    return fields


FORMATS = {"env": (env_encoder,), "view": (view_encoder,), "both": (env_encoder, view_encoder)}


def encoder_for(format_name: str) -> DecisionEncoder:
    """The encoder of a ``--format``; ``env`` and ``both`` need ``duelmahjong.env`` (ImportError saying
    which extra brings it)."""
    encoders = FORMATS[format_name]
    if env_encoder in encoders:
        importlib.import_module("duelmahjong.env")  # its ImportError names the extra to install
    return encoders[0] if len(encoders) == 1 else combined(*encoders)
