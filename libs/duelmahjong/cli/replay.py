"""``duel replay``: a finished hand turn by turn, from the archive or from a saved replay.

``duel replay HAND_ID`` asks the scoring service's archive (``ArchiveService.GetReplay``) of a running
stack: the address comes from ``--scoring HOST:PORT``, else ``SCORING_ADDRESS``, else ``make run``'s
state file, as ``duel status`` finds it; the call is made with ``--token`` (or ``DUEL_TOKEN``), else as
a fresh guest of the stack's wallet (which may open any hand of a public room). ``duel replay --file
F`` reads a ``Replay`` saved as binary or as protobuf JSON instead, without a stack. ``--save F``
writes the replay fetched (JSON when F ends in ``.json``), for ``--file`` and ``duel verify --file``.
``--html FILE`` writes the hand as one self-contained page instead of printing it (docs/replays.md),
with duel verify's result on it.

It prints the hand as dealt (both hands, the wall and the pool), then every step, decisions and events,
each with its tiles, then how the hand ended and its score.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import grpc
from google.protobuf import json_format, text_format
from google.protobuf.message import DecodeError

from duelmahjong.cli.client_args import add_tls_arguments, tls_of
from duelmahjong.platform import eventloop
from duelmahjong.platform.auth import bearer_metadata
from duelmahjong.platform.stackfile import service_addresses
from duelmahjong.platform.tls import ClientTls, TlsError
from duelmahjong.v1 import archive_pb2, archive_pb2_grpc, play_pb2, rules_pb2, wallet_pb2, wallet_pb2_grpc

TOKEN_VARIABLE = "DUEL_TOKEN"
SEATS = {rules_pb2.SEAT_FIRST: "first seat", rules_pb2.SEAT_SECOND: "second seat"}


class ReplayUnavailable(Exception):
    """The replay could not be read or fetched (the message says why)."""


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """Where a replay comes from: the archive of a stack (HAND_ID) or a file (``--file``)."""
    parser.add_argument(
        "hand_id", nargs="?", metavar="HAND_ID", help="the hand, as duel demo --json names it"
    )
    parser.add_argument(
        "--file", type=Path, help="a Replay saved as binary or protobuf JSON (no stack needed)"
    )
    parser.add_argument(
        "--scoring", metavar="HOST:PORT", help="gRPC address of the scoring service (archive)"
    )
    parser.add_argument("--wallet", metavar="HOST:PORT", help="gRPC address of the wallet (guest login)")
    parser.add_argument("--token", help=f"a player's session token (default ${TOKEN_VARIABLE}, else a guest)")
    add_tls_arguments(parser)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each answer")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--save", type=Path, help="also write the replay to this file (.json: JSON)")
    parser.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="write the hand as one self-contained page",
    )


def load_replay(args: argparse.Namespace) -> archive_pb2.Replay:
    """The replay ``args`` name: read from ``--file`` or fetched from the archive."""
    if args.file is not None:
        if args.hand_id:
            raise ReplayUnavailable("give a HAND_ID or --file, not both")
        return read_replay(args.file)
    if not args.hand_id:
        raise ReplayUnavailable("give a HAND_ID (from duel demo --json) or --file F")
    return eventloop.run(_fetch(args))


def read_replay(path: Path) -> archive_pb2.Replay:
    """A replay saved as protobuf JSON or binary."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ReplayUnavailable(f"cannot read {path}: {err.strerror}") from None
    replay = archive_pb2.Replay()
    try:
        if data.lstrip().startswith(b"{"):
            json_format.Parse(data.decode("utf-8"), replay)
        else:
            replay.ParseFromString(data)
    except (json_format.ParseError, DecodeError, UnicodeDecodeError) as err:
        raise ReplayUnavailable(f"{path} is not a saved Replay: {err}") from None
    if not replay.hand_id:
        raise ReplayUnavailable(f"{path} holds no hand (an empty Replay)")
    return replay


def write_replay(replay: archive_pb2.Replay, path: Path) -> None:
    if path.suffix == ".json":
        path.write_text(json_format.MessageToJson(replay, ensure_ascii=False) + "\n", encoding="utf-8")
    else:
        path.write_bytes(replay.SerializeToString())


async def _fetch(args: argparse.Namespace) -> archive_pb2.Replay:
    addresses = service_addresses(args.state_file, overrides={"scoring": args.scoring, "wallet": args.wallet})
    scoring = addresses.get("scoring")
    if not scoring:
        raise ReplayUnavailable(
            f"no scoring address: start a stack with `make run` (it writes {args.state_file}), "
            "or give --scoring HOST:PORT, or read a saved replay with --file"
        )
    tls = tls_of(args)
    try:
        token = (
            args.token
            or os.environ.get(TOKEN_VARIABLE)
            or await _guest_token(addresses.get("wallet"), tls, args.timeout)
        )
        async with tls.channel(scoring) as channel:
            reply = await archive_pb2_grpc.ArchiveServiceStub(channel).GetReplay(
                archive_pb2.GetReplayRequest(hand_id=args.hand_id),
                metadata=bearer_metadata(token),
                timeout=args.timeout,
            )
    except grpc.aio.AioRpcError as err:
        raise ReplayUnavailable(f"the archive answered {err.code().name}: {err.details()}") from None
    except TlsError as err:
        raise ReplayUnavailable(f"TLS: {err}") from None
    return reply.replay


async def _guest_token(wallet: str | None, tls: ClientTls, seconds: float) -> str:
    if not wallet:
        raise ReplayUnavailable(
            f"no token (--token or ${TOKEN_VARIABLE}) and no wallet address to log in as a guest"
        )
    async with tls.channel(wallet) as channel:
        reply = await wallet_pb2_grpc.WalletServiceStub(channel).GuestLogin(
            wallet_pb2.GuestLoginRequest(display_name="replay viewer"), timeout=seconds
        )
    return str(reply.session.token)


def loaded(args: argparse.Namespace, command: str) -> archive_pb2.Replay | None:
    """The replay ``args`` name, or None once the reason it is not there is printed."""
    try:
        return load_replay(args)
    except ReplayUnavailable as err:
        print(f"duel {command}: {err}", file=sys.stderr)
        return None


def run(args: argparse.Namespace) -> int:
    replay = loaded(args, "replay")
    if replay is None:
        return 1
    if args.save is not None:
        write_replay(replay, args.save)
    if args.html is not None:
        return _write_page(replay, args.html)
    for line in replay_lines(replay):
        print(line)
    return 0


def _write_page(replay: archive_pb2.Replay, path: Path) -> int:
    """The replay page, with the full verification's result on it (the page shows a failed one too)."""
    from duelmahjong.replay.html import render_html
    from duelmahjong.replay.verify import verify_replay

    verification = verify_replay(replay)
    try:
        path.write_text(render_html(replay, verification), encoding="utf-8")
    except OSError as err:
        print(f"duel replay: cannot write {path}: {err.strerror}", file=sys.stderr)
        return 1
    verdict = "verified" if verification.ok else f"NOT verified: {verification.problem}"
    print(f"{path}: hand {replay.hand_id}, {len(replay.steps)} steps, {verdict}")
    return 0


# --- the hand as text ------------------------------------------------------------------------------------
def replay_lines(replay: archive_pb2.Replay) -> list[str]:
    names = {player.seat: player.display_name or player.player_id for player in replay.players}

    def who(seat: rules_pb2.Seat.ValueType) -> str:
        return f"{SEATS.get(seat, 'no seat')} ({names.get(seat, '?')})"

    multipliers = replay.multipliers
    wind = rules_pb2.Wind.Name(replay.round_wind).removeprefix("WIND_").lower()
    lines = [
        f"hand {replay.hand_id}: hand {replay.hand_number} of table {replay.table_id}, room {replay.room_id}",
        f"dealer {who(replay.dealer)}, round wind {wind}, ×{multipliers.negotiated} negotiated"
        f" ×{multipliers.progressive} progressive, 1番 = {multipliers.fan_rate}",
        f"commitment {replay.fairness.commitment.hex() or '(none)'}",
        f"seed {replay.fairness.seed.hex()}  salt {replay.fairness.salt.hex() or '(none)'}",
    ]
    for hand in replay.deal.dealt:
        lines.append(f"dealt to {who(hand.seat)}: {hand.concealed}")
    lines.append(f"wall ({len(replay.deal.wall)}): {''.join(replay.deal.wall)}")
    if replay.deal.unused_pool:
        lines.append(f"unused pool ({len(replay.deal.unused_pool)}): {''.join(replay.deal.unused_pool)}")
    if replay.deal.revealed_bonus_tiles:
        lines.append(f"bonus tiles: {replay.deal.revealed_bonus_tiles}")
    for seat in replay.initial.seats:
        lines.append(f"as dealt, {who(seat.seat)}: {_hand(seat)}")
    for step in replay.steps:
        if step.HasField("decision"):
            decision = step.decision
            origin = archive_pb2.DecisionOrigin.Name(decision.origin).removeprefix("DECISION_ORIGIN_").lower()
            lines.append(
                f"{step.index:>4}  {who(decision.seat)} decides: {action_text(decision.action)} [{origin}]"
            )
        else:
            lines.append(f"{step.index:>4}  {step.event.summary}")
    lines.extend(_end(replay))
    return lines


def action_text(action: play_pb2.Action) -> str:
    """A decision in words: its kind and its fields, e.g. ``discard tile: "5m"``."""
    kind = action.WhichOneof("kind")
    if kind is None:
        return "(no action)"
    fields = text_format.MessageToString(getattr(action, kind), as_one_line=True)
    return f"{kind.replace('_', ' ')} {fields}".strip()


def _hand(seat: archive_pb2.ReplaySeat) -> str:
    text = seat.concealed + (f" + {seat.drawn_tile}" if seat.drawn_tile else "")
    if seat.flowers:
        text += f"  flowers {seat.flowers}"
    return text


def _end(replay: archive_pb2.Replay) -> list[str]:
    lines = []
    last = replay.steps[-1].state if replay.steps else replay.initial
    for seat in last.seats:
        melds = " ".join(f"[{m.tiles or 'concealed kong'}]" for m in seat.melds)
        lines.append(f"at the end, {SEATS.get(seat.seat)}: {_hand(seat)} {melds}".rstrip())
    result = replay.result
    outcome = archive_pb2.ArchivedOutcome.Name(result.outcome).removeprefix("ARCHIVED_OUTCOME_").lower()
    if result.outcome == archive_pb2.ARCHIVED_OUTCOME_WIN:
        outcome += f" by {SEATS.get(result.winner)}"
    elif result.outcome == archive_pb2.ARCHIVED_OUTCOME_ESCAPE:
        outcome += f" by {SEATS.get(result.escaper)}"
    lines.append(f"result: {outcome}")
    if result.HasField("evaluation"):
        for pattern in result.evaluation.patterns:
            name = rules_pb2.PatternId.Name(pattern.id).removeprefix("PATTERN_ID_").lower()
            lines.append(f"  {pattern.name_zh or name}: {pattern.fan} fan")
        lines.append(
            f"  total {result.evaluation.total_fan} fan" + (" (capped)" if result.evaluation.capped else "")
        )
    if result.HasField("settlement"):
        settlement = result.settlement
        transfer = settlement.transfer
        moved_from, moved_to = transfer.from_player_id or "-", transfer.to_player_id or "-"
        lines.append(
            f"  settlement: {settlement.fan_amount} scored, {transfer.amount} moved {moved_from} → {moved_to}"
        )
    for moved in result.moved:
        lines.append(f"  {SEATS.get(moved.seat)} {moved.player_id}: {moved.amount:+d}")
    return lines
