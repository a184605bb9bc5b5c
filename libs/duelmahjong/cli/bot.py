"""``duel bot --room R``: play as a bot client over gRPC, exactly as a game client would.

Logs in as a guest at the wallet, queues in the room at matchmaking (negotiating T7 with
``--multiplier``), plays the table with the baseline bot policy for ``--hands`` hands and leaves.
``--policy module:callable`` plays with your own policy written for the training env instead (the
same object plays in ``duelmahjong.env`` and here; docs/protocol.md "Bring your own bot"): it needs
the ``env`` extra, and is loaded before anything connects, so a policy that cannot be imported or is
not callable is said at once.
Addresses: ``--wallet`` / ``--matchmaking``, else ``WALLET_ADDRESS`` / ``MATCHMAKING_ADDRESS``, else
the state file of ``make run``. ``--verbose`` prints the play as it happens. A queue stream that breaks
(a matchmaking replica lost) is followed again on another (``DuelClient.find_table``: ``--matchmaking``
may name several, ``ipv4:HOST:PORT,HOST:PORT``), and a table that moves to another table server is
followed too (``DuelClient.play``), both by the client library.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

from duelmahjong.cli.client_args import add_client_arguments, run_client
from duelmahjong.client.narrate import Narrator
from duelmahjong.client.play import MatchPlan, TableLost
from duelmahjong.client.policy import BaselineBot, Policy
from duelmahjong.client.session import DuelClient, QueueEnded, QueueLost
from duelmahjong.platform.tls import ClientTls


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--room", required=True, help="room id (see ListRooms)")
    parser.add_argument("--name", default="bot", help="display name (default bot)")
    parser.add_argument(
        "--carry", type=int, default=0, help="carry (default: the room's maximum you can afford)"
    )
    parser.add_argument("--hands", type=int, default=1, help="hands to play before leaving (default 1)")
    parser.add_argument(
        "--multiplier", type=int, choices=(1, 2, 5, 10), default=1, help="T7 proposal if first"
    )
    parser.add_argument("--verbose", action="store_true", help="print the play as it happens")
    parser.add_argument(
        "--policy",
        metavar="MODULE:CALLABLE",
        help="play with an env policy (observation -> action index): module:name, a class "
        "(instantiated) or module:factory() (called); needs the env extra. Default: the baseline bot",
    )
    add_client_arguments(parser)


def run(args: argparse.Namespace) -> int:
    policy = policy_of(args.policy)
    if policy is None:
        return 2
    failures: dict[type[Exception], str] = {
        QueueLost: "matchmaking was lost",
        QueueEnded: "no table",
        TableLost: "the table was lost",
    }
    if args.policy:
        from duelmahjong.client.env_policy import PolicyError  # importable: policy_of loaded it

        failures[PolicyError] = "the policy failed"  # it chose an index its mask did not offer
    return run_client(args, functools.partial(_play, policy=policy), failures)


def policy_of(spec: str | None) -> Policy | None:
    """The client policy to play with: the baseline bot, or the env policy ``spec`` names (None, said
    why on stderr, when it cannot be had). The env is imported only here, only for ``--policy``."""
    if not spec:
        return BaselineBot()
    try:
        from duelmahjong.client.env_policy import EnvPolicy, PolicyError, load_policy
    except ImportError as err:  # the env extra is optional: its import says what to install
        print(f"--policy needs the training env: {err}", file=sys.stderr)
        return None
    if os.getcwd() not in sys.path:  # a policy beside you imports as it would with ``python -m``
        sys.path.insert(0, os.getcwd())
    try:
        return EnvPolicy(load_policy(spec))
    except PolicyError as err:
        print(err, file=sys.stderr)
        return None


async def _play(
    args: argparse.Namespace, wallet: str, matchmaking: str, tls: ClientTls, *, policy: Policy
) -> int:
    async with DuelClient(wallet=wallet, matchmaking=matchmaking, tls=tls) as client:
        player = await client.login(args.name)
        rooms = {room.room_id: room for room in await client.rooms()}
        if args.room not in rooms:
            print(f"no room {args.room!r}; rooms: {', '.join(sorted(rooms))}", file=sys.stderr)
            return 2
        rules = rooms[args.room].rules
        available = (await client.balance()).available
        carry = args.carry or max(rules.carry_min, min(rules.carry_max, available - rules.fee))
        print(f"{args.name} ({player}) queues in {args.room} with carry {carry}", flush=True)
        ready = await client.find_table(args.room, carry, multiplier=args.multiplier, on_break=_queue_broke)
        followed = client.queue_stats.resumes
        again = f" (the queue followed again {followed} time(s))" if followed else ""
        print(f"table {ready.table_id} at {ready.address}{again}", flush=True)
        watch = Narrator({0: "first", 1: "second"}) if args.verbose else None
        outcome = await client.play(ready, policy, MatchPlan(hands=args.hands), watch=watch)
        balance = (await client.balance()).balance
        moved = f"; reconnected {outcome.reconnects} time(s)" if outcome.reconnects else ""
        print(
            f"played {outcome.hands_settled} hand(s); table ended: {outcome.ended_reason}{moved}; "
            f"balance {balance}"
        )
        return 0


def _queue_broke(why: str) -> None:
    print(f"the queue stream broke ({why}): following it again", flush=True)
