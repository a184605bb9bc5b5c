"""The way of ``duel play`` from login to a table and back: log in as the remembered guest, choose a
room (or a private code), the carry, queue and negotiate (T7), play the table, see how it ended.

Private tables (``OpenPrivateTable`` / ``JoinPrivateTable``): a server that does not offer them
answers ``UNIMPLEMENTED``, and the person is told so and goes back to the rooms; a wrong or expired
code (``NOT_FOUND``) and one's own code (``FAILED_PRECONDITION``) show the server's message.

The queue's updates come from the client library (``DuelClient.queue`` and the private-table ones),
which follows the entry again should its stream break (a matchmaking replica lost): the queue screen
says "reconnecting to matchmaking…" meanwhile, and the T7 answers go through the library too
(``propose_multiplier`` / ``respond_multiplier``: an answer whose reply was lost is sent again).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio

from duelmahjong.client.play import MatchPlan, PlayOutcome, TableLost
from duelmahjong.client.session import DuelClient, QueueEnded, QueueLost, QueueUpdates
from duelmahjong.tui.app import PlayUi, Quit, TableScreen
from duelmahjong.tui.guest import GuestStore, log_in, renew
from duelmahjong.tui.screens import PROFILE_NAMES, MessageScreen, QueueScreen, RoomsScreen, TextPrompt
from duelmahjong.tui.seat import PersonSeat
from duelmahjong.tui.tiles import TileStyle
from duelmahjong.v1 import matchmaking_pb2 as mm

# A person's Play stream lives as long as the table (a gRPC deadline would end it mid-hand).
STREAM_SECONDS = 24 * 3600.0
HOLD_WAIT_SECONDS = 15.0
# Renew the session this long after the last renewal (the wallet's tokens live an hour by default).
RENEW_AFTER_SECONDS = 30 * 60.0


@dataclass(frozen=True)
class PlayOptions:
    wallet: str
    name: str
    store: GuestStore
    style: TileStyle
    # Drop the Play stream once after this many own actions (to see the reconnect); 0 = never.
    drop_after_actions: int = 0


async def run_flow(ui: PlayUi, client: DuelClient, options: PlayOptions) -> None:
    name = options.name or options.store.remembered_name()
    if options.store.get(options.wallet) is None and not name:
        name = await ui.ask(TextPrompt("welcome", "Your name at the table:", hint="it is remembered"))
        if name is None:
            return
    guest, known = await log_in(client, options.store, options.wallet, name or "guest")
    ui.footer = f"{guest.display_name} ({'welcome back' if known else 'new guest'})"
    renewed = asyncio.get_running_loop().time()
    seated = guest.seat()
    if seated is not None and await _still_open(client, seated):
        if await _table(ui, client, seated, "your table", options) == "quit":
            return
    while True:
        if asyncio.get_running_loop().time() - renewed > RENEW_AFTER_SECONDS:
            await renew(client, options.store, options.wallet)
            renewed = asyncio.get_running_loop().time()
        rooms = await client.rooms()
        balance = await client.balance()
        money = f"威望 {balance.balance} (available {balance.available}) · {balance.level_name or ''}"
        about = f"player {guest.player_id}{await _ratings(client)}"
        screen = RoomsScreen(rooms, guest.display_name, money, about, await _sharing(client))
        what, room = await ui.ask(screen)
        if what == "quit":
            return
        if what == "join":
            code = await ui.ask(TextPrompt("private table", "Your friend's code:", hint="6 characters"))
            if code is None:
                continue
            ready: mm.TableReady | grpc.StatusCode | None = await _join(
                ui, client, code, rooms, balance.available
            )
            title = f"private table {code.upper()}"
        else:
            carry = await _ask_carry(ui, room, rooms, balance.available)
            if carry is None:
                continue
            if what == "open":
                updates = client.open_private(room.room_id, carry)
            else:
                updates = client.queue(room.room_id, carry)
            title = room.name or room.room_id
            bot_fill = room.times.bot_fill_millis if what == "queue" else 0
            ready = await _queue(ui, client, updates, title, carry, bot_fill)
        if not isinstance(ready, mm.TableReady):
            continue
        if await _table(ui, client, ready, title, options) == "quit":
            return


# Refusals of a join that are about the carry (out of the room's range, more than the player has
# available with the fee): the person is asked for another carry, the code kept.
CARRY_REFUSALS = frozenset({grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION})


async def _join(
    ui: PlayUi, client: DuelClient, code: str, rooms: list[mm.Room], available: int
) -> mm.TableReady | grpc.StatusCode | None:
    """Join a friend's private table: the carry, then the queue; a refusal about the carry asks for
    the carry again with the code kept (Esc there goes back to the rooms)."""
    title, note = f"private table {code.upper()}", ""
    while True:
        carry = await _ask_carry(ui, None, rooms, available, code=code.upper(), note=note)
        if carry is None:
            return None
        updates = client.join_private(code, carry)
        ready = await _queue(ui, client, updates, title, carry, 0, CARRY_REFUSALS)
        if not isinstance(ready, grpc.StatusCode) or ready not in CARRY_REFUSALS:
            return ready
        note = f"carry {carry} refused · "


async def _ratings(client: DuelClient) -> str:
    """`` · rating duel 1512 ± 290 · erren 1500 ± 350`` ("" if the wallet does not tell)."""
    try:
        reply = await client.ratings()
    except grpc.aio.AioRpcError:
        return ""
    shown = [f"{PROFILE_NAMES.get(r.profile, '?')} {r.rating:.0f} ± {r.deviation:.0f}" for r in reply.ratings]
    return " · rating " + " · ".join(shown) if shown else ""


async def _sharing(client: DuelClient) -> str:
    """Whether the player's hands are shared for research, and how to change it (`duel consent`), seen
    where they see their balance ("" if the wallet does not tell)."""
    try:
        sharing = await client.data_sharing()
    except grpc.aio.AioRpcError:
        return ""
    if sharing.share_hands:
        return "your hands are shared for research (duel consent off stops it)"
    return "your hands are not shared for research (duel consent on shares them)"


async def _ask_carry(
    ui: PlayUi, room: mm.Room | None, rooms: list[mm.Room], available: int, *, code: str = "", note: str = ""
) -> int | None:
    """The carry (携带威望) within the room's range; for a code the room is not known yet, so the
    default is one every room could seat: at most the smallest room maximum, and what is available
    once the largest room fee is paid (a carry plus its fee must be available)."""
    if room is not None:
        low, high, fee = room.rules.carry_min, room.rules.carry_max, room.rules.fee
        default = max(low, min(high, available - fee))
        hint = f"between {low} and {high}; you have {available} available, the fee is {fee}"
    else:
        fee = max((r.rules.fee for r in rooms), default=0)
        default = min((r.rules.carry_max for r in rooms), default=100)
        default = max(0, min(default, available - fee))
        hint = f"{note}{available} available; a room fee up to {fee} comes on top"
    while True:
        title = f"private table {code}" if code else "carry"
        text = await ui.ask(TextPrompt(title, "Carry (携带威望):", str(default), hint, "0123456789"))
        if text is None:
            return None
        carry = int(text)
        if room is None or room.rules.carry_min <= carry <= room.rules.carry_max:
            return carry
        default = max(room.rules.carry_min, min(room.rules.carry_max, carry))


async def _queue(
    ui: PlayUi,
    client: DuelClient,
    updates: QueueUpdates,
    title: str,
    carry: int,
    bot_fill: int,
    carry_refusals: frozenset[grpc.StatusCode] = frozenset(),
) -> mm.TableReady | grpc.StatusCode | None:
    """Follow a queue stream to its table; else, once the person was told why, the status matchmaking
    refused the stream with, or None (the person left, the queue expired or ended). A refusal in
    ``carry_refusals`` tells the person they go back to the carry, not to the rooms."""

    sent: set[asyncio.Future[None]] = set()

    def negotiate(pairing_id: str, multiplier: int, accept: bool) -> None:
        after_break = updates.breaks > 0  # the step may be one shown again: answered already
        call = asyncio.ensure_future(_negotiate(client, screen, pairing_id, multiplier, accept, after_break))
        sent.add(call)
        call.add_done_callback(sent.discard)

    def broke(why: str) -> None:
        screen.broke(why)
        ui.invalidate()

    screen = QueueScreen(title, carry, bot_fill, negotiate)
    updates.on_break = broke
    ui.show(screen)
    follow = asyncio.ensure_future(_follow(screen, updates, ui))
    try:
        done, _ = await asyncio.wait(
            {follow, screen.cancelled, ui.quitting}, return_when=asyncio.FIRST_COMPLETED
        )
        if ui.quitting in done:
            raise Quit
        if follow not in done:
            return None  # the person left the queue: closing the stream cancels the ticket
        return await _queue_end(ui, screen, follow, carry_refusals)
    finally:
        follow.cancel()
        with contextlib.suppress(BaseException):
            await follow
        await updates.aclose()


async def _queue_end(
    ui: PlayUi,
    screen: QueueScreen,
    follow: asyncio.Future[mm.TableReady | str],
    carry_refusals: frozenset[grpc.StatusCode],
) -> mm.TableReady | grpc.StatusCode | None:
    refused = None
    try:
        result = follow.result()
    except grpc.aio.AioRpcError as err:
        result, refused = _refusal(err), err.code()
    except QueueLost as err:
        result = f"matchmaking could not be reached again: {err}"
    except QueueEnded as err:
        result = f"no table: {err}"
    if isinstance(result, mm.TableReady):
        return result
    back_to = "the carry" if refused in carry_refusals else "the rooms"
    if await ui.ask(MessageScreen(screen.title, [*screen.status[-4:], "", result], back_to)) == "quit":
        raise Quit
    return refused


def _refusal(err: grpc.aio.AioRpcError) -> str:
    if err.code() == grpc.StatusCode.UNIMPLEMENTED:
        return "this server does not offer private tables (UNIMPLEMENTED): play in a room instead"
    return f"matchmaking refused: {err.details()} ({err.code().name})"


async def _follow(screen: QueueScreen, updates: QueueUpdates, ui: PlayUi) -> mm.TableReady | str:
    async for update in updates:
        screen.update(update)
        ui.invalidate()
        kind = update.WhichOneof("kind")
        if kind == "table_ready":
            return update.table_ready
        if kind == "expired":
            return f"no table: {update.expired.reason}"
    return "the queue ended without a table"


async def _negotiate(
    client: DuelClient, screen: QueueScreen, pairing_id: str, multiplier: int, accept: bool, after_break: bool
) -> None:
    try:
        if multiplier:
            await client.propose_multiplier(pairing_id, multiplier, after_break=after_break)
        else:
            await client.respond_multiplier(pairing_id, accept, after_break=after_break)
    except grpc.aio.AioRpcError as err:
        screen.refused(pairing_id, multiplier, f"refused: {err.details()}")


async def _still_open(client: DuelClient, ready: mm.TableReady) -> bool:
    """The table this guest sat at when the client last stopped is still open (LocateTable)."""
    try:
        return bool((await client.locate_table(ready.table_id)).open)
    except grpc.aio.AioRpcError:
        return False  # unknown to matchmaking (a restarted stack): nothing to go back to


def _remember_seat(options: PlayOptions, ready: mm.TableReady | None) -> None:
    guest = options.store.get(options.wallet)
    if guest is not None:
        options.store.put(options.wallet, guest.at(ready))


async def _table(
    ui: PlayUi, client: DuelClient, ready: mm.TableReady, title: str, options: PlayOptions
) -> str:
    _remember_seat(options, ready)  # a client stopped mid-hand comes back here when it starts again
    seat = PersonSeat(client.player_id, ui.invalidate)
    ui.show(TableScreen(seat, options.style, title))
    plan = MatchPlan(ask_between_hands=True, drop_after_actions=options.drop_after_actions)
    playing = asyncio.ensure_future(_play(client, ready, seat, plan, options))
    waits: set[asyncio.Future[Any]] = {playing, ui.quitting}
    done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    if playing not in done:
        playing.cancel()
        raise Quit
    _remember_seat(options, None)
    try:
        outcome = playing.result()
        lines = [
            f"table closed: {outcome.ended_reason or seat.ended}",
            f"hands played: {outcome.hands_settled}",
        ]
        if outcome.reconnects:
            lines.append(f"reconnected {outcome.reconnects} time(s)")
    except TableLost as err:
        lines = [f"the table was lost: {err}"]
    except grpc.aio.AioRpcError as err:
        lines = [f"the table refused: {err.details()} ({err.code().name})"]
    lines.append(await _settled_balance(client))
    return str(await ui.ask(MessageScreen("table closed", lines)))


async def _play(
    client: DuelClient, ready: mm.TableReady, seat: PersonSeat, plan: MatchPlan, options: PlayOptions
) -> PlayOutcome:
    """Play the table; a reconnect refused for an expired session renews it and plays on (the
    table resends what the seat missed)."""
    while True:
        try:
            return await client.play(
                ready, seat, plan, watch=seat, on_break=seat.on_break, stream_seconds=STREAM_SECONDS
            )
        except grpc.aio.AioRpcError as err:
            if (
                err.code() != grpc.StatusCode.UNAUTHENTICATED
                or await renew(client, options.store, options.wallet) is None
            ):
                raise
            seat.on_break("the session expired: renewed")


async def _settled_balance(client: DuelClient) -> str:
    """The balance once the wallet released the table's hold (the next queue needs it free)."""
    for _ in range(int(HOLD_WAIT_SECONDS / 0.2)):
        balance = await client.balance()
        if not balance.held:
            return f"balance {balance.balance} 威望"
        await asyncio.sleep(0.2)
    return f"balance {balance.balance} 威望 ({balance.held} still held by the table)"
