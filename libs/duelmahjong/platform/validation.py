"""The edge's check of every request's text: what no RPC of any service takes in a string field.

Every string field of every request — nested messages, repeated fields and map entries included — is
walked before the handler runs (the interceptor does it, for unary requests and for each message of a
stream). A field is refused, naming it, when it

- holds a control character (Unicode category ``Cc``: NUL, the other C0 controls including tab and
  newline, DEL, the C1 controls). No field of the contract takes one: ids, names, tile strings, tokens
  and reasons are single-line text, and Postgres refuses NUL outright; or
- is longer than ``MAX_TEXT_CHARS`` characters. The longest legitimate values (a session or table
  ticket, a tile string of a whole hand) are a few hundred characters at most.

A handler may check its fields more strictly (a display name's own limit, an id's alphabet); this is the
floor every service shares, so none of them meets such text in its core, its logs or its database.

>>> from duelmahjong.v1 import wallet_pb2
>>> refused_text(wallet_pb2.AdminGrantRequest(player_id="p-1", reason="bonus", request_id="g-1")) is None
True
>>> refused_text(wallet_pb2.AdminGrantRequest(reason="a\\x00b"))
'the field reason holds a control character (U+0000); text fields take printable text only'
>>> refused_text(wallet_pb2.GuestLoginRequest(display_name="x" * 5000))
'the field display_name is 5000 characters long; at most 1024 are accepted'
"""

from __future__ import annotations

import re
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

MAX_TEXT_CHARS = 1024
# Unicode category Cc, exactly: U+0000–U+001F and U+007F–U+009F.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def refused_text(message: Message) -> str | None:
    """Why ``message`` is refused for its text (naming the field), or None when all of it is fine."""
    return _walk(message, "")


def _walk(message: Message, prefix: str) -> str | None:
    for field, value in message.ListFields():
        path = prefix + field.name
        if field.type == FieldDescriptor.TYPE_STRING:
            problem = _each_text(value, path, repeated=_is_repeated(field))
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            problem = _each_message(field, value, path)
        else:
            continue
        if problem:
            return problem
    return None


def _is_repeated(field: FieldDescriptor) -> bool:
    return bool(field.is_repeated)


def _each_text(value: Any, path: str, *, repeated: bool) -> str | None:
    if not repeated:
        return _text_problem(value, path)
    for index, each in enumerate(value):
        problem = _text_problem(each, f"{path}[{index}]")
        if problem:
            return problem
    return None


def _each_message(field: FieldDescriptor, value: Any, path: str) -> str | None:
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        for key, each in value.items():
            where = f"{path}[{key!r}]"
            problem = _text_problem(key, f"{path} key") if isinstance(key, str) else None
            if problem is None and isinstance(each, str):
                problem = _text_problem(each, where)
            elif problem is None and isinstance(each, Message):
                problem = _walk(each, where + ".")
            if problem:
                return problem
        return None
    if not _is_repeated(field):
        return _walk(value, path + ".")
    for index, each in enumerate(value):
        problem = _walk(each, f"{path}[{index}].")
        if problem:
            return problem
    return None


def _text_problem(text: str, path: str) -> str | None:
    if len(text) > MAX_TEXT_CHARS:
        return f"the field {path} is {len(text)} characters long; at most {MAX_TEXT_CHARS} are accepted"
    control = _CONTROL.search(text)
    if control:
        code = f"U+{ord(control.group()):04X}"
        return f"the field {path} holds a control character ({code}); text fields take printable text only"
    return None
