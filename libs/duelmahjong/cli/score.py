"""``duel score``: hand descriptions as JSON lines on stdin, one evaluation per line on stdout.

Each input line is a hand description (docs/decisions.md §7); each output line is its evaluation
(``patterns``, ``total_fan``, ``capped``, ``limit``, ``meets_minimum``) or ``{"error": "…"}`` when the
line is not a valid winning hand, after which the next line is read. Blank lines are skipped. The exit
status is 0 unless stdin itself cannot be read.

    $ echo '{"profile": "duel", "concealed": "1112345678999m", "win_tile": "5m"}' | duel score
    {"patterns": [{"id": "nine_gates", "name_zh": "九莲宝灯", "fan": 64}], "total_fan": 64, ...}
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, BinaryIO, TextIO

from duelmahjong.rules.description import HandDescription
from duelmahjong.rules.errors import RulesError
from duelmahjong.rules.evaluate import evaluate

EXIT_UNREADABLE = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ascii", action="store_true", help="escape non-ASCII characters (Chinese names) in the output"
    )


def score_line(line: bytes | str) -> dict[str, Any]:
    """The output object for one input line."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as error:
            return {"error": f"not UTF-8: {error}"}
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        return {"error": f"not JSON: {error}"}
    except RecursionError:  # the json module recurses per nesting level: "[[[[…" deep enough crashes it
        return {"error": "not JSON we can read: nested too deeply"}
    try:
        return evaluate(HandDescription.from_json(data)).to_json()
    except RulesError as error:
        return {"error": str(error)}


def score_stream(source: BinaryIO, sink: TextIO, *, ensure_ascii: bool = False) -> int:
    """Score every line of ``source`` into ``sink``; returns how many lines were scored.

    Lines are read as bytes and decoded one by one, so a line that is not UTF-8 is one error line
    rather than the end of the stream.
    """
    scored = 0
    for line in source:
        if not line.strip():
            continue
        sink.write(json.dumps(score_line(line), ensure_ascii=ensure_ascii) + "\n")
        sink.flush()  # one answer per question, so the command can be driven line by line
        scored += 1
    return scored


def run(args: argparse.Namespace) -> int:
    try:
        score_stream(sys.stdin.buffer, sys.stdout, ensure_ascii=args.ascii)
    except OSError as error:
        print(f"duel score: cannot read stdin: {error}", file=sys.stderr)
        return EXIT_UNREADABLE
    return 0
