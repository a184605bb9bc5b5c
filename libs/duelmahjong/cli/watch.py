"""``duel watch [ROOM | TABLE_ID]``: watch a live table as a spectator, its public events printed as
they arrive — the room's spectate delay after they happened, and nothing a seat hides.

A room id watches the newest live table of that room; a table id (``t-…``) that table, wherever the
watchable rooms list it; nothing, the newest table of any watchable room. Logs in as a guest
(``--name``). Addresses: ``--wallet`` / ``--matchmaking``, else ``WALLET_ADDRESS`` /
``MATCHMAKING_ADDRESS``, else the state file of ``make run``. The client library follows the table
should it move to another table server (``DuelClient.watch``).
"""

from __future__ import annotations

import argparse
import sys

from duelmahjong.cli.client_args import add_client_arguments, run_client
from duelmahjong.client.narrate import Narrator, seat_index
from duelmahjong.client.session import DuelClient
from duelmahjong.client.spectate import TableGone
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import play_pb2, table_pb2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target", nargs="?", default="", help="a room id or a table id (default: the newest watchable table)"
    )
    parser.add_argument("--name", default="spectator", help="display name to log in with (default spectator)")
    add_client_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return run_client(args, _watch, {TableGone: "the table could not be followed"})


async def _find(client: DuelClient, target: str) -> mm.LiveTableSummary | None:
    rooms = [room for room in await client.rooms() if room.rules.watchable]
    if target and any(room.room_id == target for room in rooms):
        tables = await client.live_tables(target)
        return tables[0] if tables else None
    listed = [table for room in rooms for table in await client.live_tables(room.room_id)]
    listed.sort(key=lambda table: table.opened_at.ToNanoseconds(), reverse=True)
    return next((table for table in listed if not target or table.table_id == target), None)


def state_line(state: play_pb2.PublicTableState) -> str:
    """The delayed table a watch begins with, in one line."""
    seats = "; ".join(
        f"{seat.display_name}: {seat.concealed_count} tiles, {len(seat.discards)} discards, "
        f"{len(seat.melds)} melds" + (", ready" if seat.declared_ready else "")
        for seat in state.seats
    )
    hand = (
        f"hand {state.hand_number}, wall {state.wall_remaining}" if state.hand_number else "before the deal"
    )
    return f"── the table as of the delay: {hand} (sequence {state.sequence}); {seats}"


async def _watch(args: argparse.Namespace, wallet: str, matchmaking: str, tls: ClientTls) -> int:
    async with DuelClient(wallet=wallet, matchmaking=matchmaking, tls=tls) as client:
        await client.login(args.name)
        table = await _find(client, args.target)
        if table is None:
            where = f" for {args.target!r}" if args.target else ""
            print(f"no live table to watch{where} (only watchable rooms' tables are listed)", file=sys.stderr)
            return 1
        names = {seat_index(player.seat): player.display_name for player in table.players}
        print(
            f"watching table {table.table_id} in {table.room_id} at {table.address}: "
            f"{' vs '.join(names.values())}, {table.spectate_delay_seconds} s behind play",
            flush=True,
        )
        narrate = Narrator(names, say=lambda line: print(line, flush=True))
        async for response in client.watch(table):
            if response.HasField("state"):
                print(state_line(response.state), flush=True)
            else:
                narrate(table_pb2.PlayResponse(event=response.event))
        return 0
