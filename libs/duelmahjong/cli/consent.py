"""``duel consent [on|off]``: whether your finished hands may be exported for research.

``duel consent`` shows your setting; ``on`` gives your consent, ``off`` withdraws it (docs/wallet.md
"Sharing hands for research"). Until you say ``on``, nothing of your hands is exported. With it, ``duel
export`` may write what your seat saw and did in your archived hands (never your opponent's hidden
tiles); withdrawing stops later exports, not files already written.

The setting is your own: the call is made as you, with ``--token`` (or ``$DUEL_TOKEN``), else as the
guest ``duel play`` remembers (``--config``, as for ``duel play``). Addresses as for ``duel bot``.
"""

from __future__ import annotations

import argparse
import os
from datetime import UTC
from pathlib import Path

from duelmahjong.cli.client_args import add_client_arguments, run_client
from duelmahjong.client.session import DuelClient
from duelmahjong.platform.tls import ClientTls
from duelmahjong.tui.guest import GuestStore, default_path, renew
from duelmahjong.v1 import wallet_pb2

TOKEN_VARIABLE = "DUEL_TOKEN"


class NoSession(Exception):
    """Neither a token nor a remembered guest to act as."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "choice", nargs="?", choices=("on", "off"), help="on: share your hands; off: stop (default: show)"
    )
    parser.add_argument(
        "--token", help=f"your session token (default ${TOKEN_VARIABLE}, else duel play's guest)"
    )
    parser.add_argument("--config", type=Path, help="the file of the guest duel play remembers")
    add_client_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return run_client(args, _consent, {NoSession: "no session"})


def describe(sharing: wallet_pb2.DataSharing) -> str:
    """The setting in words, e.g. ``sharing your hands for research: on (since 2026-12-07 21:30 UTC)``."""
    state = "on" if sharing.share_hands else "off"
    if not sharing.HasField("changed_at"):
        return f"sharing your hands for research: {state} (never chosen: your hands are not shared)"
    since = sharing.changed_at.ToDatetime(tzinfo=UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"sharing your hands for research: {state} (since {since})"


async def _consent(args: argparse.Namespace, wallet: str, matchmaking: str, tls: ClientTls) -> int:
    async with DuelClient(wallet=wallet, matchmaking=matchmaking, tls=tls) as client:
        token = args.token or os.environ.get(TOKEN_VARIABLE)
        if token:
            # Only the token is needed: the wallet reads whose setting it is from it ("" = the caller).
            client.token = token
        elif await renew(client, GuestStore(args.config or default_path()), wallet) is None:
            raise NoSession(
                f"give your session token (--token or ${TOKEN_VARIABLE}), or play once with duel play, "
                "whose guest this command then acts as"
            )
        if args.choice is None:
            sharing = await client.data_sharing()
        else:
            sharing = await client.set_data_sharing(args.choice == "on")
        print(describe(sharing))
    return 0
