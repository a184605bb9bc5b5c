"""``duel demo``: two bots play a visible match on the whole stack, through all four services.

Uses the running stack (``make run``'s state file, or ``*_ADDRESS`` variables) when all four services
are SERVING; otherwise starts one for the demo (embedded NATS and Postgres, as ``make run`` does) and
stops it afterwards. Two guest bots log in at the wallet, queue in a room of the chosen profile,
negotiate (T7), play ``--hands`` hands with the baseline bot policy and leave between hands. Each
hand prints as it happens (draws hidden), then the final balances; ``--json`` prints one summary
object instead: ``hands`` (each with its ``hand_id``, for ``duel replay`` and ``duel verify``),
``accounts`` (every ledger account, players and house), ``ratings`` (each player's skill rating in
the profile after the match, from GetRating) and the ledger's total before the first hand and after
the last (the double-entry ledger sums to the same total).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg

from duelmahjong.cli.status import check_health
from duelmahjong.client.narrate import Narrator, hand_summary
from duelmahjong.client.play import MatchPlan
from duelmahjong.client.policy import BaselineBot
from duelmahjong.client.session import DuelClient
from duelmahjong.platform import eventloop
from duelmahjong.platform.db import with_database
from duelmahjong.platform.stack import Stack, available_services
from duelmahjong.platform.stackfile import (
    DEFAULT_STATE_FILE,
    SERVICE_NAMES,
    StackState,
    client_tls,
    service_addresses,
)
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import rules_pb2

PROFILES = {"duel": rules_pb2.PROFILE_DUEL, "erren": rules_pb2.PROFILE_ERREN}
BOT_NAMES = ("东风 bot", "西风 bot")
SETTLE_SECONDS = 15.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hands", type=int, default=3, help="hands to play (default 3)")
    parser.add_argument(
        "--profile", choices=sorted(PROFILES), default="duel", help="rule profile (default duel)"
    )
    parser.add_argument("--multiplier", type=int, choices=(1, 2, 5, 10), default=1, help="T7 proposal")
    parser.add_argument(
        "--json", action="store_true", help="print one JSON summary instead of the play-by-play"
    )
    parser.add_argument(
        "--state-file", type=Path, default=DEFAULT_STATE_FILE, help="state file of `make run`"
    )


def run(args: argparse.Namespace) -> int:
    if args.hands < 1:
        print("--hands must be at least 1", file=sys.stderr)
        return 2
    try:
        summary = eventloop.run(_demo(args))
    except DemoError as err:
        print(f"demo failed: {err}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=2))
    return 0


class DemoError(RuntimeError):
    """The demo could not play its match."""


@contextlib.asynccontextmanager
async def _stack(state_file: Path, quiet: bool) -> AsyncIterator[tuple[dict[str, str], str, ClientTls]]:
    """The addresses of a SERVING stack, its Postgres admin URL ("" if unknown) and how its clients
    secure their channels."""
    addresses = service_addresses(state_file)
    tls = client_tls(state_file)
    if all(addresses.values()) and all(
        check_health(str(a), 3.0, tls) == "SERVING" for a in addresses.values()
    ):
        state = StackState.read(state_file)
        yield {k: str(v) for k, v in addresses.items()}, state.database_url if state else "", tls
        return
    data_dir = Path(tempfile.mkdtemp(prefix="duel-demo-"))
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_ADDRESS")}
    stack = Stack(data_dir, available_services(SERVICE_NAMES), environ)
    out = sys.stderr if quiet else sys.stdout
    try:
        with contextlib.redirect_stdout(out):
            print("[demo] no running stack: starting one for this demo", flush=True)
            state = await stack.up()
        yield {name: state.target(name) for name in state.services}, state.database_url, stack.client_tls
    finally:
        with contextlib.redirect_stdout(out):
            stack.down()
        shutil.rmtree(data_dir, ignore_errors=True)


async def ledger_balances(admin_url: str) -> dict[str, int] | None:
    """Every wallet account's balance, read from the wallet's database (operator's view)."""
    if not admin_url:
        return None
    conn = await asyncpg.connect(with_database(admin_url, "wallet"))
    try:
        rows = await conn.fetch(
            "SELECT CASE WHEN player_id IS NULL THEN 'house:' || house ELSE 'player:' || player_id END"
            " AS account, balance FROM wallet.accounts ORDER BY id"
        )
    finally:
        await conn.close()
    return {row["account"]: int(row["balance"]) for row in rows}


async def _demo(args: argparse.Namespace) -> dict[str, Any]:
    say = (lambda line: None) if args.json else (lambda line: print(line, flush=True))
    async with _stack(args.state_file, args.json) as (addresses, admin_url, tls):
        bots = [
            DuelClient(wallet=addresses["wallet"], matchmaking=addresses["matchmaking"], tls=tls)
            for _ in BOT_NAMES
        ]
        try:
            return await _match(args, bots, admin_url, say)
        finally:
            for bot in bots:
                await bot.close()


async def _match(
    args: argparse.Namespace, bots: list[DuelClient], admin_url: str, say: Any
) -> dict[str, Any]:
    for bot, name in zip(bots, BOT_NAMES, strict=True):
        await bot.login(name)
    rooms = await bots[0].rooms(PROFILES[args.profile])
    if not rooms:
        raise DemoError(f"matchmaking has no {args.profile} room")
    room = rooms[0]
    say(f"[demo] room {room.room_id} ({room.name}): 1番 = {room.rules.fan_rate} 威望, fee {room.rules.fee}")
    before = await ledger_balances(admin_url)
    carries = []
    for bot in bots:
        available = (await bot.balance()).available
        carries.append(max(room.rules.carry_min, min(room.rules.carry_max, available - room.rules.fee)))
    readies = await asyncio.gather(
        *(
            bot.find_table(room.room_id, carry, multiplier=args.multiplier)
            for bot, carry in zip(bots, carries, strict=True)
        )
    )
    seats = {0 if r.seat == rules_pb2.SEAT_FIRST else 1: bot for r, bot in zip(readies, bots, strict=True)}
    names = {seat: bot.display_name for seat, bot in seats.items()}
    say(f"[demo] table {readies[0].table_id} at {readies[0].address}: {names[0]} (first) vs {names[1]}")
    plan = MatchPlan(hands=args.hands)
    outcomes = await asyncio.gather(
        bots[0].play(readies[0], BaselineBot(), plan, watch=Narrator(names, say)),
        bots[1].play(readies[1], BaselineBot(), plan),
    )
    watched = outcomes[0]
    if watched.hands_settled == 0:
        raise DemoError(f"no hand was settled at table {watched.table_id}: {watched.ended_reason}")
    players = {seat: bot.player_id for seat, bot in seats.items()}
    hand_ids = dict(enumerate(watched.hand_ids, 1))
    hands = [
        {
            "hand_number": number,
            "hand_id": hand_ids.get(number, ""),  # what duel replay / duel verify take
            **hand_summary(revealed, settled, players, watched.wins.get(number)),
        }
        for number, (revealed, settled) in enumerate(
            zip(watched.reveals, watched.settlements, strict=False), 1
        )
    ]
    after = await _settled_ledger(admin_url, bots)
    balances = {bot.display_name: (await bot.balance()).balance for bot in bots}
    say("[demo] final balances: " + ", ".join(f"{name} {value}" for name, value in balances.items()))
    ratings = {bot.player_id: await _rating(bot, args.profile) for bot in bots}
    shown = [(bot.display_name, ratings[bot.player_id]) for bot in bots]
    say(
        f"[demo] {args.profile} ratings: "
        + ", ".join(f"{name} {r['rating']:.0f} ± {r['deviation']:.0f}" for name, r in shown)
    )
    if after is not None and before is not None:
        say(f"[demo] ledger total before {sum(before.values())}, after {sum(after.values())}")
    return {
        "room": room.room_id,
        "profile": args.profile,
        "players": {bot.player_id: bot.display_name for bot in bots},
        "hands": hands,
        "accounts": after,
        "ratings": ratings,
        "ledger_total_before": sum(before.values()) if before is not None else None,
        "ledger_total_after": sum(after.values()) if after is not None else None,
    }


async def _rating(bot: DuelClient, profile: str) -> dict[str, float]:
    """The player's skill rating in ``profile`` after the match (GetRating)."""
    skill = next(r for r in (await bot.ratings()).ratings if r.profile == PROFILES[profile])
    return {
        "rating": skill.rating,
        "deviation": skill.deviation,
        "hands_rated": skill.hands_rated,
        "conservative": skill.conservative,
    }


async def _settled_ledger(admin_url: str, bots: list[DuelClient]) -> dict[str, int] | None:
    """The ledger once the wallet has applied everything of the match (both holds released)."""
    for _ in range(int(SETTLE_SECONDS / 0.1)):  # the wallet is another process: poll it
        if not any([(await bot.balance()).held for bot in bots]):
            break
        await asyncio.sleep(0.1)
    else:
        raise DemoError("the wallet did not release the holds after the table closed")
    return await ledger_balances(admin_url)
