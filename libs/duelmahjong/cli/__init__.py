"""The project's single command line, ``duel``.

Each subcommand lives in its own module of this package and is listed in ``SUBCOMMANDS``; a module
provides ``add_arguments(parser)`` and ``run(args) -> int``. Modules are imported only when their
subcommand runs, so ``duel score`` does not pay for gRPC or NATS imports.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# The platform first: it turns gRPC's fork support off before a subcommand imports grpc
# (duelmahjong/platform/__init__.py says why; demo and bench start processes).
import duelmahjong.platform  # noqa: F401

# name -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {}


def _register(name: str, module: str, help_text: str) -> None:
    SUBCOMMANDS[name] = (module, help_text)


_register("score", "duelmahjong.cli.score", "score hand descriptions read as JSON lines on stdin")
_register("bench", "duelmahjong.cli.bench", "run benchmarks against reference libraries")
_register("status", "duelmahjong.cli.status", "health of every service of a running stack")
_register("simulate", "duelmahjong.cli.simulate", "bot-vs-bot hands through the engine")
_register("evaluate", "duelmahjong.cli.evaluate", "duplicate evaluation of one agent against another")
_register("bot", "duelmahjong.cli.bot", "play as a bot client over gRPC")
_register("demo", "duelmahjong.cli.demo", "a visible match between two bots on the whole stack")
_register("replay", "duelmahjong.cli.replay", "a finished hand turn by turn (archive or saved file)")
_register("verify", "duelmahjong.cli.verify", "check a finished hand's wall and steps against its seed")
_register("watch", "duelmahjong.cli.watch", "watch a live table as a spectator, delayed")
_register("play", "duelmahjong.cli.play", "play whole hands yourself in the terminal")
_register("export", "duelmahjong.cli.export", "archived hands of players who share them, as training data")
_register(
    "consent", "duelmahjong.cli.consent", "show, give or withdraw consent to share your hands for research"
)


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="duel", description="Duel Mahjong backend command line")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = argv[0] if argv else None
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        if name == wanted:
            module = importlib.import_module(module_name)
            module.add_arguments(sub_parser)
            sub_parser.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(args_list)
    args = parser.parse_args(args_list)
    module = getattr(args, "_module", None)
    if module is None:  # pragma: no cover - argparse exits first for unknown commands
        parser.error(f"unknown command {args.command!r}")
    return int(module.run(args))


if __name__ == "__main__":
    sys.exit(main())
