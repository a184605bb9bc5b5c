"""``duel play``: sit down at a table and play whole hands in the terminal.

Logs in as the remembered guest (``--config``, ``$DUEL_PLAY_CONFIG``, else
``$XDG_CONFIG_HOME/duelmahjong/guest.json``), lists the rooms, queues (or opens / joins a private
table), negotiates and plays; see :mod:`duelmahjong.tui`. Addresses: ``--wallet`` /
``--matchmaking``, else ``WALLET_ADDRESS`` / ``MATCHMAKING_ADDRESS``, else the state file of ``make
run``. Tiles are drawn as Unicode mahjong tiles unless ``--ascii`` is given or the terminal's
encoding cannot show them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path

import grpc

from duelmahjong.cli.client_args import add_tls_arguments, tls_of
from duelmahjong.client.session import DuelClient
from duelmahjong.platform import eventloop
from duelmahjong.platform.stackfile import service_addresses
from duelmahjong.platform.tls import ClientTls, TlsError
from duelmahjong.tui.app import PlayUi, Quit
from duelmahjong.tui.guest import GuestStore, default_path
from duelmahjong.tui.lobby import PlayOptions, run_flow
from duelmahjong.tui.tiles import TileStyle, can_show_unicode


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", default="", help="display name of a new guest (default: asked)")
    parser.add_argument("--ascii", action="store_true", help="draw tiles as letters (5m, Ea, Rd…)")
    parser.add_argument("--config", type=Path, help="the remembered guest's file")
    parser.add_argument("--wallet", metavar="HOST:PORT", help="wallet address")
    parser.add_argument(
        "--matchmaking",
        metavar="TARGET",
        help="matchmaking address (HOST:PORT; replicas: ipv4:HOST:PORT,HOST:PORT)",
    )
    add_tls_arguments(parser)
    parser.add_argument(
        "--drop-after-actions",
        type=int,
        default=0,
        metavar="N",
        help="drop the table stream once after N own actions and reconnect (to see it resume)",
    )


def run(args: argparse.Namespace) -> int:
    addresses = service_addresses(
        args.state_file, overrides={"wallet": args.wallet, "matchmaking": args.matchmaking}
    )
    wallet, matchmaking = addresses["wallet"], addresses["matchmaking"]
    if not wallet or not matchmaking:
        print("no wallet/matchmaking address: start a stack with `make run` or give --wallet/--matchmaking")
        return 2
    options = PlayOptions(
        wallet=wallet,
        name=args.name,
        store=GuestStore(args.config or default_path()),
        style=TileStyle(unicode=not args.ascii and can_show_unicode()),
        drop_after_actions=args.drop_after_actions,
    )
    try:
        return eventloop.run(_play(wallet, matchmaking, tls_of(args), options))
    except TlsError as err:
        print(f"TLS: {err}", file=sys.stderr)
        return 2
    except grpc.RpcError as err:
        print(f"the backend refused: {err.code().name} {err.details()}", file=sys.stderr)
        return 1


async def _play(wallet: str, matchmaking: str, tls: ClientTls, options: PlayOptions) -> int:
    ui = PlayUi()
    async with DuelClient(wallet=wallet, matchmaking=matchmaking, tls=tls) as client:
        screen = asyncio.ensure_future(ui.app.run_async())
        try:
            await run_flow(ui, client, options)
        except Quit:
            pass
        finally:
            if not screen.done():
                ui.app.exit()
            with contextlib.suppress(Exception):
                await screen
    return 0
