"""Structured logs: one JSON object per line, carrying the service, request and table ids.

The ids live in context variables, so every log line written while a request (or a table's task) runs
carries them without passing them around; the gRPC interceptor binds the request id, table code binds
the table id with :func:`log_context`. Extra fields go in ``extra={"fields": {...}}``.

>>> import io
>>> out = io.StringIO()
>>> log = configure_logging("table", "INFO", stream=out)
>>> with log_context(request_id="r1", table_id="t9"):
...     log.info("dealt", extra={"fields": {"hand": 3}})
>>> line = json.loads(out.getvalue())
>>> (line["service"], line["msg"], line["request_id"], line["table_id"], line["hand"])
('table', 'dealt', 'r1', 't9', 3)
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
table_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("table_id", default=None)
player_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("player_id", default=None)

_CONTEXT_VARS = {"request_id": request_id_var, "table_id": table_id_var, "player_id": player_id_var}
ROOT_LOGGER = "duel"


class JsonLineFormatter(logging.Formatter):
    """Formats a record as one JSON line: time, level, service, logger, message, context ids, fields."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "service": self.service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, var in _CONTEXT_VARS.items():
            value = var.get()
            if value is not None:
                line[key] = value
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def configure_logging(service: str, level: str = "INFO", *, stream: TextIO | None = None) -> logging.Logger:
    """Send every ``duel.*`` logger (and warnings of libraries) as JSON lines to ``stream`` (stderr)."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonLineFormatter(service))
    root = logging.getLogger(ROOT_LOGGER)
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    # Our lines must not be printed a second time by a root handler someone else installed.
    root.propagate = False
    return root


def get_logger(name: str) -> logging.Logger:
    """A logger under the ``duel`` root, e.g. ``get_logger("table.core")``."""
    return logging.getLogger(f"{ROOT_LOGGER}.{name}")


@contextmanager
def log_context(
    *, request_id: str | None = None, table_id: str | None = None, player_id: str | None = None
) -> Iterator[None]:
    """Bind ids for every log line written inside the block (and tasks it starts)."""
    wanted = {"request_id": request_id, "table_id": table_id, "player_id": player_id}
    tokens = [(_CONTEXT_VARS[key], _CONTEXT_VARS[key].set(value)) for key, value in wanted.items() if value]
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)
