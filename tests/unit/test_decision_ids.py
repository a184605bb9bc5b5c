"""Every rule decision cited anywhere is stated in docs/decisions.md.

Code comments, docstrings, tests, test data and docs cite decisions by id — E1–E17, D1–D13, T1–T12,
H1–H3, the sections §1–§7 — or by anchor (``decisions.md#t3``). docs/decisions.md states each decision
under a heading ``### T3 …`` with an anchor ``<a id="t3"></a>`` (sections: ``<a id="s5"></a>``), and
docs/rules.md sends its readers there. A cited id the page does not state is a dangling reference.

In Python only comments and strings are read (a variable named like an id is no citation).
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DECISIONS = ROOT / "docs" / "decisions.md"
TREES = ("libs", "services", "tests", "bench", "docs", "proto")
SUFFIXES = frozenset({".py", ".md", ".jsonl", ".proto", ".sql", ".js", ".mjs"})
SKIPPED = frozenset({"node_modules", "__pycache__", "v1"})  # installed packages, caches, generated code

_ID = re.compile(r"(?<![\w-])([EDTH][1-9]\d?)(?!\w)")
_SECTION = re.compile(r"§(\d+)(?![.\d])")  # "§3.2" is another document's section (an RFC's)
_ANCHOR = re.compile(r"decisions\.md#([a-z0-9]+)")


def stated(text: str) -> tuple[set[str], set[str]]:
    """The decision ids docs/decisions.md states (a heading and its anchor each), and its anchors."""
    anchors = set(re.findall(r'<a id="([a-z0-9]+)"></a>', text))
    headings = set(re.findall(r"^### ([EDTH]\d+) ", text, flags=re.MULTILINE))
    return {name for name in headings if name.lower() in anchors}, anchors


def readable_text(path: Path) -> str:
    """What of a file may cite a decision: all of it, or a Python module's comments and strings."""
    text = path.read_text("utf-8", errors="replace")
    if path.suffix != ".py":
        return text
    kept = (tokenize.COMMENT, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING))
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return "\n".join(token.string for token in tokens if token.type in kept)


def citations(text: str) -> set[str]:
    """Ids (``T3``), sections (``§5``) and anchors (``#t3``) cited in ``text``."""
    return (
        set(_ID.findall(text))
        | {f"§{number}" for number in _SECTION.findall(text)}
        | {f"#{anchor}" for anchor in _ANCHOR.findall(text)}
    )


def dangling(cited: set[str], ids: set[str], anchors: set[str]) -> set[str]:
    return {
        name
        for name in cited
        if not (
            name in ids
            or (name.startswith("§") and f"s{name[1:]}" in anchors)
            or (name.startswith("#") and name[1:] in anchors)
        )
    }


def files() -> list[Path]:
    return [
        path
        for tree in TREES
        for path in sorted((ROOT / tree).rglob("*"))
        if path.suffix in SUFFIXES and path.is_file() and not SKIPPED & set(path.relative_to(ROOT).parts)
    ]


def test_every_cited_decision_is_stated_in_decisions_md() -> None:
    ids, anchors = stated(DECISIONS.read_text("utf-8"))
    assert {"E17", "D13", "T12", "H3"} <= ids and {"s1", "s7"} <= anchors  # the page was read
    found = {}
    for path in [*files(), ROOT / "README.md"]:
        for name in dangling(citations(readable_text(path)), ids, anchors):
            found.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert found == {}, f"decisions cited but not in docs/decisions.md: {found}"


def test_the_rules_page_sends_readers_to_the_decisions() -> None:
    text = (ROOT / "docs" / "rules.md").read_text("utf-8")
    assert "[`decisions.md`](decisions.md)" in text.split("\n\n", 2)[1]  # in its opening paragraph


def test_citations_are_read_from_python_comments_and_strings_only(tmp_path: Path) -> None:
    # Ids no decision has, put together here so that this file cites none of them itself.
    h4, s8, t10, e99 = "H" + "4", "§" + "8", "#" + "t10", "E" + "99"
    module = tmp_path / "m.py"
    module.write_text(f'{e99} = 1  # the T9 extra draws\nX = "see {h4} and {s8}, not RFC §3.2"\n', "utf-8")
    assert citations(readable_text(module)) == {"T9", h4, s8}
    ids, anchors = stated(f'<a id="t9"></a>\n### T9 Extra draws\n<a id="{s8.replace("§", "s")}"></a>\n')
    assert dangling({"T9", h4, s8, "#t9", t10}, ids, anchors) == {h4, t10}
