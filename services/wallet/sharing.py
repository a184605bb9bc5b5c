"""Who may read and change a player's consent to share their hands for research (issue 30).

Consent is the player's own: only their own session token changes it, never an admin or a service on
their behalf. A player reads their own; the servers (admin, service) read anyone's and list who shares,
which is what the hand exporter (``duel export``) asks before writing a hand. Knows nothing of gRPC.
"""

from __future__ import annotations

from duelmahjong.platform.auth import Principal, Role
from duelmahjong.platform.errors import InvalidArgument, PermissionDenied
from services.wallet.commands import check_ids
from services.wallet.core import SERVER_ROLES, owner
from services.wallet.sharing_store import Consent, SharingStore

MAX_ASKED = 1000
DEFAULT_PAGE = 100


class DataSharing:
    def __init__(self, store: SharingStore) -> None:
        self.store = store

    async def set(self, principal: Principal, player_id: str, share_hands: bool) -> Consent:
        """The caller's own choice, recorded with its time when it changes the setting."""
        if principal.role is not Role.PLAYER:
            raise PermissionDenied("sharing hands is the player's own choice: only their session sets it")
        if player_id and player_id != principal.player_id:
            raise PermissionDenied("a player may only set their own data sharing")
        check_ids(principal.player_id)
        return await self.store.set(principal.player_id, share_hands, changed_by=principal.player_id)

    async def get(self, principal: Principal, player_id: str) -> Consent:
        return await self.store.of(owner(principal, player_id))

    async def sharing(
        self, principal: Principal, player_ids: list[str], page_size: int, page_token: str
    ) -> tuple[list[Consent], str]:
        """Those of ``player_ids`` who share, or (none given) a page of everyone who shares and the
        next page's token ("" at the end)."""
        if principal.role not in SERVER_ROLES:
            raise PermissionDenied("who shares their hands is for the exporter (admin or service tokens)")
        if player_ids:
            if len(player_ids) > MAX_ASKED:
                raise InvalidArgument(f"ask about at most {MAX_ASKED} players at once, got {len(player_ids)}")
            if page_size or page_token:
                raise InvalidArgument(
                    "page_size and page_token page the list of everyone: give no player_ids"
                )
            check_ids(*player_ids)
            return await self.store.sharing_among(sorted(set(player_ids))), ""
        size = page_size or DEFAULT_PAGE
        if not 1 <= size <= MAX_ASKED:
            raise InvalidArgument(f"page_size must be 1-{MAX_ASKED} (0 = {DEFAULT_PAGE}), got {page_size}")
        if page_token:
            check_ids(page_token)  # the last player id of the previous page
        found = await self.store.sharing_after(page_token, size + 1)
        page = found[:size]
        return page, (page[-1].player_id if len(found) > size else "")
