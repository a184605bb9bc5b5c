"""Writes glyphs.json beside this file: the outlines of the characters the tile faces draw (numerals,
萬, the honours, the flowers) as SVG paths, so the replay page shows the same tiles whatever fonts the
viewer has.

A one-off step for whoever changes the set of characters, not part of the build: it needs fontTools
(``pip install fonttools``) and Noto Serif CJK (Debian ``fonts-noto-cjk``, SIL Open Font License,
which allows embedding the outlines in documents).

    python libs/duelmahjong/replay/page/make_glyphs.py [FONT.ttc]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

CHARACTERS = "一二三四五六七八九萬東南西北發中春夏秋冬梅蘭竹菊"
DEFAULT_FONT = "/usr/share/fonts/opentype/noto/NotoSerifCJK-Bold.ttc"
FAMILY = "Noto Serif CJK TC"
# The paths live in a 1000-unit em box, y downwards, the baseline at 880 (the font's ascender).
BASELINE = 880


def outlines(font_path: str) -> dict[str, str]:
    # Imported here: fontTools is no dependency of the project (the test run imports this module).
    from fontTools.pens.svgPathPen import SVGPathPen  # type: ignore[import-untyped, import-not-found, unused-ignore]
    from fontTools.pens.transformPen import TransformPen  # type: ignore[import-untyped, import-not-found, unused-ignore]
    from fontTools.ttLib import TTCollection  # type: ignore[import-untyped, import-not-found, unused-ignore]

    collection = TTCollection(font_path)
    font = next(f for f in collection.fonts if f["name"].getDebugName(1) == FAMILY)
    if font["head"].unitsPerEm != 1000:
        raise SystemExit(f"{FAMILY}: expected a 1000-unit em")
    cmap = font.getBestCmap()
    glyph_set = font.getGlyphSet()
    paths: dict[str, str] = {}
    for ch in CHARACTERS:
        pen = SVGPathPen(glyph_set, ntos=lambda v: str(round(v)))
        glyph_set[cmap[ord(ch)]].draw(TransformPen(pen, (1, 0, 0, -1, 0, BASELINE)))
        paths[ch] = pen.getCommands()
    return paths


def main() -> None:
    font_path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_FONT
    target = Path(__file__).with_name("glyphs.json")
    target.write_text(json.dumps(outlines(font_path), ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"{target}: {len(CHARACTERS)} glyphs, {target.stat().st_size} bytes")


if __name__ == "__main__":
    main()
