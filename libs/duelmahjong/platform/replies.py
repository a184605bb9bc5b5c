"""Replies to many requests on one connection, on one wildcard inbox subscription.

A request that waits for its own replies on an inbox of its own costs a subscription and its removal
(two more protocol writes) on top of the request. :class:`ReplyInbox` subscribes ``<inbox>.*`` once,
at its first use, gives each request a reply subject ``<inbox>.<n>`` from a counter (no random token)
and hands each reply to the handler of its request until that request is released.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

from nats.aio.client import Client
from nats.aio.msg import Msg

ReplyHandler = Callable[[Msg], None]


class ReplyInbox:
    """One wildcard reply subscription, routing replies by their subject's last token."""

    __slots__ = ("_client", "_handlers", "_numbers", "_prefix", "_starting")

    def __init__(self, client: Client) -> None:
        self._client = client
        self._prefix = ""
        self._numbers = itertools.count()
        self._handlers: dict[str, ReplyHandler] = {}
        self._starting: asyncio.Lock | None = None

    async def reply_subject(self, handler: ReplyHandler) -> tuple[str, str]:
        """A reply subject for one request whose replies go to ``handler``, and its token for
        :meth:`release`."""
        if not self._prefix:
            await self._start()
        token = str(next(self._numbers))
        self._handlers[token] = handler
        return f"{self._prefix}.{token}", token

    def release(self, token: str) -> None:
        """The request is over: later replies to it are dropped."""
        self._handlers.pop(token, None)

    async def _start(self) -> None:
        self._starting = self._starting or asyncio.Lock()
        async with self._starting:
            if not self._prefix:
                prefix = self._client.new_inbox()
                await self._client.subscribe(f"{prefix}.*", cb=self._arrived)
                self._prefix = prefix

    async def _arrived(self, message: Msg) -> None:
        handler = self._handlers.get(message.subject.rpartition(".")[2])
        if handler is not None:
            handler(message)
