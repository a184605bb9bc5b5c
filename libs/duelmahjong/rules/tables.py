"""The precomputed per-suit tables, built on first use and cached on disk.

The tables (:class:`~duelmahjong.rules.table_build.RuleTables`, indexed by the suit keys of
:mod:`duelmahjong.rules.keys`) take seconds to build. They are built on first use, never on import
(:class:`OnFirstUse`), and cached on disk inside the project: ``$DUELMAHJONG_CACHE_DIR``, else
``.local/cache/`` of the checkout the package is installed from (never the user's home). The file is
named by a hash of the modules that define and build them, so a change there rebuilds it, and is
written to a temporary file then renamed, so concurrent first users are safe.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any, Final

from duelmahjong.rules import keys, table_build
from duelmahjong.rules.keys import SUIT_SPACE
from duelmahjong.rules.table_build import RuleTables, build_tables

# The checkout holding libs/duelmahjong/rules/tables.py: the package is installed editable from it
# (`make install`, the Dockerfile), so its .local/ (ignored by git, removed by `make clean`) is the
# project's own scratch space.
PROJECT_DIR: Final = Path(__file__).resolve().parents[3]


def cache_dir() -> Path:
    """Where built tables are kept: ``$DUELMAHJONG_CACHE_DIR``, else the project's ``.local/cache``."""
    explicit = os.environ.get("DUELMAHJONG_CACHE_DIR")
    return Path(explicit) if explicit else PROJECT_DIR / ".local" / "cache"


# What the cached file's content depends on: the key layout and the builder.
_BUILDERS: Final = (keys, table_build)


def cache_path() -> Path:
    """The cache file of this version of the builder (a changed builder never reads an old file)."""
    source = b"".join(Path(module.__file__ or "").read_bytes() for module in _BUILDERS)
    digest = hashlib.sha256(source).hexdigest()[:16]
    return cache_dir() / f"rules-tables-{digest}-py{sys.version_info[0]}{sys.version_info[1]}.pickle"


def _load(path: Path) -> RuleTables | None:
    try:
        with path.open("rb") as file:
            tables = pickle.load(file)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError):
        return None
    if not isinstance(tables, RuleTables) or len(tables.suit_win) != SUIT_SPACE:
        return None
    return tables


def _save(path: Path, tables: RuleTables) -> None:
    """Write atomically: a temporary file in the same directory, then rename over the target."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as file:
                pickle.dump(tables, file, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError:
        pass  # a read-only cache directory only costs a rebuild next time


@cache
def get_tables() -> RuleTables:
    """The tables, from the disk cache or built (and cached) if missing or stale."""
    path = cache_path()
    tables = _load(path)
    if tables is None:
        tables = build_tables()
        _save(path, tables)
    return tables


class OnFirstUse:
    """One table of :func:`get_tables`, bound to a module global before the tables are loaded, so
    that importing the module loads and writes nothing.

    ``_SUIT_WIN = OnFirstUse("suit_win", globals())``: the first lookup through it (``[key]`` or
    ``.get``) loads the tables and rebinds every :class:`OnFirstUse` global of that module to its real
    table, so from then on the hot paths index plain ``bytes`` / ``dict`` values at no extra cost.
    """

    __slots__ = ("field", "namespace")

    def __init__(self, field: str, namespace: dict[str, Any]) -> None:
        self.field = field
        self.namespace = namespace

    def _load(self) -> Any:
        tables = get_tables()
        for name, value in list(self.namespace.items()):
            if isinstance(value, OnFirstUse):
                self.namespace[name] = getattr(tables, value.field)
        return getattr(tables, self.field)

    @staticmethod
    def load_all(namespace: dict[str, Any]) -> None:
        """Load the tables now and bind every :class:`OnFirstUse` global of ``namespace``."""
        for value in list(namespace.values()):
            if isinstance(value, OnFirstUse):
                value._load()
                return

    def __getitem__(self, key: int) -> int:
        value: int = self._load()[key]
        return value

    def get(self, key: int, default: Any = None) -> Any:
        return self._load().get(key, default)
