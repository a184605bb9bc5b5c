"""The remembered guest: who ``duel play`` logs in as, kept between runs.

A guest is a player the wallet made at ``GuestLogin``; to come back as the same player the client
keeps the session's refresh token and swaps it at ``RefreshToken`` (which rotates it: the new one is
written back at once). The file (JSON, mode 0600) is ``$DUEL_PLAY_CONFIG``, else
``$XDG_CONFIG_HOME/duelmahjong/guest.json``, else ``~/.config/duelmahjong/guest.json``; it keeps one
guest per wallet address, since a refresh token means something only to the wallet that issued it.
A refresh the wallet refuses (the token expired, or the stack was started afresh) logs in a new guest
under the remembered name. The file also keeps the guest's seat while a table is open (its
``TableReady``): a client stopped in the middle of a hand sits down there again when it starts.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import grpc
import grpc.aio
from google.protobuf.message import DecodeError

from duelmahjong.client.session import DuelClient
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import wallet_pb2

CONFIG_VARIABLE = "DUEL_PLAY_CONFIG"


def default_path(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get(CONFIG_VARIABLE):
        return Path(env[CONFIG_VARIABLE])
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else Path.home() / ".config"
    return base / "duelmahjong" / "guest.json"


@dataclass(frozen=True)
class Guest:
    player_id: str
    display_name: str
    refresh_token: str
    # The seat at a table not yet closed (a TableReady, base64): a client that quit or crashed in
    # the middle of a hand sits down there again when it starts.
    table: str = ""

    def seat(self) -> mm.TableReady | None:
        if not self.table:
            return None
        try:
            return mm.TableReady.FromString(base64.b64decode(self.table))
        except (ValueError, DecodeError):
            return None

    def at(self, ready: mm.TableReady | None) -> Guest:
        """This guest seated at ``ready`` (None: at no table)."""
        table = base64.b64encode(ready.SerializeToString()).decode() if ready is not None else ""
        return replace(self, table=table)


class GuestStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    def _all(self) -> dict[str, dict[str, str]]:
        try:
            raw = json.loads(self.path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}
        guests = raw.get("guests", {}) if isinstance(raw, dict) else {}
        return guests if isinstance(guests, dict) else {}

    def get(self, wallet: str) -> Guest | None:
        entry = self._all().get(wallet)
        try:
            return Guest(**entry) if entry else None
        except TypeError:
            return None  # a file of another shape: log in afresh

    def remembered_name(self) -> str:
        """The name of any remembered guest (the last written), for a new login elsewhere."""
        names = [entry.get("display_name", "") for entry in self._all().values()]
        return next((name for name in reversed(names) if name), "")

    def put(self, wallet: str, guest: Guest) -> None:
        guests = self._all()
        guests.pop(wallet, None)
        guests[wallet] = asdict(guest)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".tmp")
        partial.write_text(json.dumps({"guests": guests}, indent=2, ensure_ascii=False))
        partial.chmod(0o600)  # it holds a credential
        partial.replace(self.path)


async def renew(client: DuelClient, store: GuestStore, wallet: str) -> Guest | None:
    """A fresh session for the guest remembered for ``wallet`` (a session token lives an hour:
    ``WALLET_SESSION_TTL_SECONDS``); None when the wallet no longer knows the refresh token."""
    known = store.get(wallet)
    if known is None:
        return None
    try:
        reply = await client.wallet.RefreshToken(
            wallet_pb2.RefreshTokenRequest(refresh_token=known.refresh_token)
        )
    except grpc.aio.AioRpcError as err:
        if err.code() not in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.NOT_FOUND):
            raise
        return None
    client.use_session(reply.player_id, reply.session.token, known.display_name)
    guest = replace(known, player_id=reply.player_id, refresh_token=reply.session.refresh_token)
    store.put(wallet, guest)
    return guest


async def log_in(client: DuelClient, store: GuestStore, wallet: str, name: str) -> tuple[Guest, bool]:
    """Log ``client`` in as the guest remembered for ``wallet`` (True), else as a new guest named
    ``name`` (False); the guest to come back as next time is stored either way."""
    known = await renew(client, store, wallet)
    if known is not None:
        return known, True
    reply = await client.wallet.GuestLogin(wallet_pb2.GuestLoginRequest(display_name=name))
    client.use_session(reply.player_id, reply.session.token, name)
    guest = Guest(reply.player_id, name, reply.session.refresh_token)
    store.put(wallet, guest)
    return guest, False
