"""``duel export``: the archived hands of players who share them, as training data (JSON lines).

For operators: each line is one decision of a seat whose player consented (``duel consent on``; off
by default), with what that seat saw, its legal actions, the action it took and the hand's final
reward of the seat in 1番 (docs/operations.md "Exporting hands for research";
:mod:`duelmahjong.export`). A seat whose player does not share contributes nothing, and no record
holds the opponent's hidden tiles. Hands of private tables are never exported.

Reads the wallet (who shares) and scoring's archive (their hands), at ``--wallet`` / ``--scoring``, else
``WALLET_ADDRESS`` / ``SCORING_ADDRESS``, else ``make run``'s state file, with an admin token:
``--token`` or ``$DUEL_TOKEN``, else one minted for ten minutes from ``$TOKEN_SECRET`` (an operator
holding the key; ``make run`` uses ``TOKEN_SECRET`` when it is set). The summary goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TextIO

import grpc

from duelmahjong.cli.client_args import add_tls_arguments, tls_of
from duelmahjong.export.archive import ExportSource
from duelmahjong.export.encoding import FORMATS, encoder_for
from duelmahjong.export.exporter import ExportOptions, ExportSummary, export
from duelmahjong.platform import eventloop
from duelmahjong.platform.auth import Role, issue_token
from duelmahjong.platform.stackfile import service_addresses
from duelmahjong.platform.tls import TlsError

TOKEN_VARIABLE = "DUEL_TOKEN"
SECRET_VARIABLE = "TOKEN_SECRET"
MINTED_TTL = timedelta(minutes=10)


class ExportFailed(Exception):
    """The export could not run (the message says why)."""


def since(text: str) -> datetime:
    """An ISO date or time; without a zone, UTC."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO date or time: {text!r} (e.g. 2026-12-01)") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--since", type=since, help="only hands that ended at or after this (ISO; UTC)")
    parser.add_argument("--profile", choices=("duel", "erren"), help="only hands of this profile")
    parser.add_argument("--out", type=Path, help="write the lines to this file (default: stdout)")
    parser.add_argument("--limit", type=positive, help="at most this many hands, oldest first")
    parser.add_argument(
        "--format",
        choices=sorted(FORMATS),
        default="env",
        help="env: the training env's observation and steps (default; needs the env extra); "
        "view: the seat's engine view and actions as text; both",
    )
    parser.add_argument("--wallet", metavar="HOST:PORT", help="gRPC address of the wallet")
    parser.add_argument("--scoring", metavar="HOST:PORT", help="gRPC address of the scoring service")
    parser.add_argument(
        "--token", help=f"an admin token (default ${TOKEN_VARIABLE}, else one minted from ${SECRET_VARIABLE})"
    )
    add_tls_arguments(parser)


def admin_token(args: argparse.Namespace) -> str:
    token = args.token or os.environ.get(TOKEN_VARIABLE)
    if token:
        return str(token)
    secret = os.environ.get(SECRET_VARIABLE)
    if not secret:
        raise ExportFailed(
            f"no admin token: give --token (or ${TOKEN_VARIABLE}), "
            f"or set ${SECRET_VARIABLE} to the stack's token key"
        )
    return issue_token(secret, player_id="duel-export", role=Role.ADMIN, ttl=MINTED_TTL)


async def _export(args: argparse.Namespace, sink: TextIO) -> ExportSummary:
    addresses = service_addresses(args.state_file, overrides={"wallet": args.wallet, "scoring": args.scoring})
    wallet, scoring = addresses.get("wallet"), addresses.get("scoring")
    if not wallet or not scoring:
        raise ExportFailed(
            "no wallet/scoring address: start a stack with `make run` or give --wallet/--scoring"
        )
    options = ExportOptions(since=args.since, profile=args.profile, limit=args.limit)
    try:
        encoder = encoder_for(args.format)
    except ImportError as missing:
        raise ExportFailed(str(missing)) from None
    async with ExportSource(
        wallet=wallet, scoring=scoring, token=admin_token(args), tls=tls_of(args)
    ) as source:
        return await export(source, sink, options, encoder)


def run(args: argparse.Namespace) -> int:
    # A file is written beside its name and renamed once whole: a failed run leaves no half file.
    partial = args.out.with_name(args.out.name + ".partial") if args.out is not None else None
    try:
        if partial is None:
            summary = eventloop.run(_export(args, sys.stdout))
        else:
            with partial.open("w", encoding="utf-8") as sink:
                summary = eventloop.run(_export(args, sink))
            partial.replace(args.out)
    except (ExportFailed, TlsError, OSError, grpc.RpcError) as err:
        if partial is not None:
            partial.unlink(missing_ok=True)
        if isinstance(err, grpc.RpcError):
            print(f"duel export: the backend refused: {err.code().name} {err.details()}", file=sys.stderr)
        else:
            print(f"duel export: {err}", file=sys.stderr)
        return 1
    for problem in summary.problems:
        print(f"duel export: left out: {problem}", file=sys.stderr)
    print(f"duel export: {summary.text()}", file=sys.stderr)
    return 0
