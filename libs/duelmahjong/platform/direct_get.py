"""Reading the stored messages of one subject with JetStream's batched direct get.

A consumer made to read a subject once costs the server a consumer's creation, its state and its
deletion, and the reader four or five round trips; a batched direct get (``$JS.API.DIRECT.GET.<stream>``
with ``next_by_subj`` and ``batch``, nats-server 2.11+, on a stream with ``allow_direct``) is one
request whose answers are the messages themselves, streamed to the reader's inbox and closed by an
end-of-batch status (``204``). nats-py has no call for it, so this module speaks it.

Any replica of a stream answers a direct get, so a replica that has not yet stored the newest
messages can answer with fewer: callers that must see everything up to a point check the answer
against the stream leader (:func:`last_sequence`).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import api

from duelmahjong.platform.replies import ReplyInbox

SEQUENCE_HEADER = "Nats-Sequence"
PENDING_HEADER = "Nats-Num-Pending"
END_OF_BATCH = "204"
NOT_FOUND = "404"
NO_RESPONDERS = "503"


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """One stored message: its stream sequence and payload."""

    sequence: int
    data: bytes


@dataclass(frozen=True, slots=True)
class Batch:
    """One batch's messages in stream order, and whether the subject has more after them."""

    messages: list[StoredMessage]
    more: bool


class DirectGetError(Exception):
    """The stream answered the direct get with an error status (a request it cannot serve). A
    stream that does not exist or allows no direct gets has nobody answering: NoStreamResponseError."""


class _Answer:
    """Collects one request's answers on its inbox until the end-of-batch status."""

    __slots__ = ("done", "messages", "more")

    def __init__(self) -> None:
        self.messages: list[StoredMessage] = []
        self.more = False
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def arrived(self, message: Msg) -> None:
        if self.done.done():
            return
        headers = message.headers or {}
        status = headers.get(api.Header.STATUS)
        if status is None:
            self.messages.append(StoredMessage(int(headers[SEQUENCE_HEADER]), message.data))
        elif status == END_OF_BATCH:
            self.more = int(headers.get(PENDING_HEADER, "0") or 0) > 0
            self.done.set_result(None)
        elif status == NOT_FOUND:  # nothing (more) on the subject from there
            self.done.set_result(None)
        elif status == NO_RESPONDERS:
            self.done.set_exception(nats.js.errors.NoStreamResponseError())
        else:
            reason = headers.get(api.Header.DESCRIPTION, "")
            self.done.set_exception(DirectGetError(f"direct get refused: {status} {reason}".strip()))


class DirectGets:
    """Batched direct gets over one connection, their answers on one :class:`ReplyInbox`, so a
    request costs one publish and no subscription of its own."""

    __slots__ = ("_client", "_replies")

    def __init__(self, client: Client) -> None:
        self._client = client
        self._replies = ReplyInbox(client)

    async def read_batch(
        self, stream: str, subject: str, *, start: int, batch: int, answer_seconds: float
    ) -> Batch:
        """The first ``batch`` messages on ``subject`` at stream sequences ≥ ``start``; raises
        ``nats.errors.TimeoutError`` when the end of the batch has not come within ``answer_seconds``."""
        answer = _Answer()
        reply, token = await self._replies.reply_subject(answer.arrived)
        try:
            request = json.dumps({"seq": max(start, 1), "next_by_subj": subject, "batch": batch}).encode()
            await self._client.publish(f"{api.DEFAULT_PREFIX}.DIRECT.GET.{stream}", request, reply=reply)
            try:
                await asyncio.wait_for(answer.done, answer_seconds)
            except TimeoutError:
                raise nats.errors.TimeoutError from None
        finally:
            self._replies.release(token)
        return Batch(answer.messages, answer.more)


async def last_sequence(js: nats.js.JetStreamContext, stream: str, subject: str) -> int:
    """The stream sequence of the last message on ``subject``, as the stream's leader has it
    (0: none)."""
    try:
        return (await js.get_last_msg(stream, subject)).seq or 0
    except nats.js.errors.NotFoundError:
        return 0
