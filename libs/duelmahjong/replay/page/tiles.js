// Tile faces drawn as SVG: pips for 筒, bamboo for 条, numeral and 萬 for 万, the honour and flower
// characters. Characters come from the outlines in GLYPHS (replay/glyphs.json, embedded by the page)
// so a tile reads the same whatever fonts the viewer has; a missing outline falls back to text.
"use strict";

const TILE_W = 60;
const TILE_H = 80;
const NUMERALS = "一二三四五六七八九";
const HONOURS = "東南西北白發中";
const FLOWERS = "春夏秋冬梅蘭竹菊";
const SUIT_NAMES = { m: "万", p: "筒", s: "条", z: "", f: "" };
const INK = { navy: "#1d2f6f", red: "#c0262d", green: "#12794a", blue: "#1f63b5", black: "#1c1c1c" };

// Splits notation ("123m55z") into single tiles (["1m", "2m", "3m", "5z", "5z"]).
function parseTiles(text) {
  const tiles = [];
  let digits = [];
  for (const ch of text || "") {
    if (ch >= "0" && ch <= "9") {
      digits.push(ch);
    } else {
      for (const d of digits) tiles.push(d + ch);
      digits = [];
    }
  }
  return tiles;
}

// A tile's name in words, e.g. "5万", "東", "梅".
function tileName(tile) {
  const rank = Number(tile[0]);
  const suit = tile[1];
  if (suit === "z") return HONOURS[rank - 1];
  if (suit === "f") return FLOWERS[rank - 1];
  return rank + SUIT_NAMES[suit];
}

function glyph(ch, x, y, size, colour) {
  // An outline is drawn in a 1000-unit em box with its baseline at 880 (see make_glyphs.py).
  const path = (typeof GLYPHS !== "undefined" && GLYPHS[ch]) || null;
  if (path) {
    const k = size / 1000;
    return `<path transform="translate(${x - size / 2} ${y - size / 2}) scale(${k})" d="${path}" fill="${colour}"/>`;
  }
  return `<text x="${x}" y="${y + size * 0.36}" font-size="${size}" text-anchor="middle" fill="${colour}"
    font-family="'Noto Serif CJK TC','Noto Serif CJK SC','Source Han Serif',KaiTi,STKaiti,serif"
    font-weight="700">${ch}</text>`;
}

// 筒: pip positions and colours of 1..9 in the 60×80 face.
const PIN_LAYOUT = {
  2: [[30, 23, "g"], [30, 57, "b"]],
  3: [[15, 19, "b"], [30, 40, "r"], [45, 61, "g"]],
  4: [[18, 23, "b"], [42, 23, "g"], [18, 57, "g"], [42, 57, "b"]],
  5: [[17, 20, "b"], [43, 20, "g"], [30, 40, "r"], [17, 60, "g"], [43, 60, "b"]],
  6: [[19, 16, "g"], [41, 16, "g"], [19, 42, "r"], [41, 42, "r"], [19, 64, "r"], [41, 64, "r"]],
  7: [[14, 13, "g"], [30, 21, "g"], [46, 29, "g"], [19, 47, "r"], [41, 47, "r"], [19, 66, "r"], [41, 66, "r"]],
  8: [[19, 12, "b"], [41, 12, "b"], [19, 31, "b"], [41, 31, "b"], [19, 50, "b"], [41, 50, "b"], [19, 69, "b"], [41, 69, "b"]],
  9: [[15, 16, "b"], [30, 16, "b"], [45, 16, "b"], [15, 40, "r"], [30, 40, "r"], [45, 40, "r"], [15, 64, "g"], [30, 64, "g"], [45, 64, "g"]],
};
const PIN_R = { 2: 11, 3: 8.5, 4: 9.5, 5: 8.5, 6: 8.5, 7: 7.2, 8: 7.6, 9: 7.2 };
const PIP_INK = { r: INK.red, g: INK.green, b: INK.blue };

function pip(x, y, r, colour) {
  return `<circle cx="${x}" cy="${y}" r="${r}" fill="${colour}"/>
    <circle cx="${x}" cy="${y}" r="${r * 0.72}" fill="#fdfaf0"/>
    <circle cx="${x}" cy="${y}" r="${r * 0.5}" fill="${colour}"/>
    <circle cx="${x}" cy="${y}" r="${r * 0.2}" fill="#fdfaf0"/>`;
}

function pinFace(rank) {
  if (rank === 1) {
    let out = `<circle cx="30" cy="40" r="22" fill="${INK.green}"/>
      <circle cx="30" cy="40" r="18.5" fill="#fdfaf0"/>
      <circle cx="30" cy="40" r="15" fill="${INK.blue}"/>
      <circle cx="30" cy="40" r="11" fill="#fdfaf0"/>
      <circle cx="30" cy="40" r="8" fill="${INK.red}"/>
      <circle cx="30" cy="40" r="3" fill="#fdfaf0"/>`;
    for (let i = 0; i < 12; i++) {
      const a = (i * Math.PI) / 6;
      out += `<circle cx="${30 + 13 * Math.cos(a)}" cy="${40 + 13 * Math.sin(a)}" r="1.3" fill="#fdfaf0"/>`;
    }
    return out;
  }
  return PIN_LAYOUT[rank].map(([x, y, c]) => pip(x, y, PIN_R[rank], PIP_INK[c])).join("");
}

// 条: stick centres (x, y), colour, and the stick length.
const SOU_LAYOUT = {
  2: [[30, 22, "g"], [30, 58, "g"]],
  3: [[30, 22, "g"], [19, 58, "g"], [41, 58, "g"]],
  4: [[19, 22, "g"], [41, 22, "g"], [19, 58, "g"], [41, 58, "g"]],
  5: [[16, 22, "g"], [44, 22, "g"], [30, 40, "r"], [16, 58, "g"], [44, 58, "g"]],
  6: [[15, 22, "g"], [30, 22, "g"], [45, 22, "g"], [15, 58, "g"], [30, 58, "g"], [45, 58, "g"]],
  7: [[30, 14, "r"], [15, 40, "g"], [30, 40, "g"], [45, 40, "g"], [15, 66, "g"], [30, 66, "g"], [45, 66, "g"]],
  8: [[13, 22, "g"], [24, 22, "g"], [36, 22, "g"], [47, 22, "g"], [13, 58, "g"], [24, 58, "g"], [36, 58, "g"], [47, 58, "g"]],
  9: [[15, 14, "g"], [30, 14, "r"], [45, 14, "g"], [15, 40, "g"], [30, 40, "r"], [45, 40, "g"], [15, 66, "g"], [30, 66, "r"], [45, 66, "g"]],
};

function stick(x, y, len, colour) {
  const w = 6.4;
  const top = y - len / 2;
  return `<rect x="${x - w / 2}" y="${top}" width="${w}" height="${len}" rx="3" fill="${colour}"/>
    <rect x="${x - w / 2 - 0.8}" y="${y - 1.2}" width="${w + 1.6}" height="2.4" rx="1" fill="${colour}"/>
    <line x1="${x}" y1="${top + 2.5}" x2="${x}" y2="${top + len - 2.5}" stroke="#fdfaf0" stroke-width="1.1" opacity="0.8"/>`;
}

function souFace(rank) {
  if (rank === 1) {
    // The 1条 bird, drawn as a simple peacock: body, head, crest and a fanned tail.
    return `<path d="M30 68 C 10 60, 8 36, 22 24 C 18 40, 24 52, 30 56 C 36 52, 42 40, 38 24 C 52 36, 50 60, 30 68 Z" fill="${INK.green}"/>
      <ellipse cx="30" cy="44" rx="7.5" ry="12" fill="${INK.blue}"/>
      <circle cx="30" cy="27" r="6" fill="${INK.red}"/>
      <circle cx="31.5" cy="25.8" r="1.5" fill="#fdfaf0"/>
      <path d="M30 21 L 26 11 M30 21 L 30 9 M30 21 L 34 11" stroke="${INK.red}" stroke-width="1.8" stroke-linecap="round"/>
      <path d="M36 28 L 43 30 L 36 31 Z" fill="#c98a12"/>
      <circle cx="19" cy="56" r="2.2" fill="${INK.red}"/><circle cx="41" cy="56" r="2.2" fill="${INK.red}"/>`;
  }
  const len = rank === 7 || rank === 9 ? 20 : 26;
  return SOU_LAYOUT[rank].map(([x, y, c]) => stick(x, y, len, c === "r" ? INK.red : INK.green)).join("");
}

function manFace(rank) {
  return glyph(NUMERALS[rank - 1], 30, 24, 30, INK.navy) + glyph("萬", 30, 57, 34, INK.red);
}

function honourFace(rank) {
  if (rank === 5) {
    // 白: the empty frame of the white dragon.
    return `<rect x="11" y="12" width="38" height="56" rx="3" fill="none" stroke="${INK.blue}" stroke-width="3.2"/>
      <rect x="16" y="17" width="28" height="46" rx="2" fill="none" stroke="${INK.blue}" stroke-width="1.4"/>`;
  }
  const colour = rank === 6 ? INK.green : rank === 7 ? INK.red : INK.navy;
  return glyph(HONOURS[rank - 1], 30, 40, 46, colour);
}

function flowerFace(rank) {
  const colour = rank <= 4 ? INK.green : INK.blue;
  return `<text x="8" y="16" font-size="12" font-family="Georgia,serif" font-weight="700" fill="${INK.red}">${((rank - 1) % 4) + 1}</text>
    <circle cx="47" cy="13" r="4" fill="${INK.red}" opacity="0.85"/>
    <circle cx="47" cy="13" r="1.6" fill="#f4c430"/>` + glyph(FLOWERS[rank - 1], 30, 45, 38, colour);
}

function faceOf(tile) {
  const rank = Number(tile[0]);
  switch (tile[1]) {
    case "m": return manFace(rank);
    case "p": return pinFace(rank);
    case "s": return souFace(rank);
    case "z": return honourFace(rank);
    case "f": return flowerFace(rank);
    default: return "";
  }
}

const faceCache = new Map();

// The SVG of one tile: an ivory face on a green back, the face drawn for the tile.
function tileSvg(tile) {
  if (!faceCache.has(tile)) {
    faceCache.set(tile, `<svg viewBox="-3 -3 ${TILE_W + 6} ${TILE_H + 12}" aria-hidden="true">
      <rect x="-1.5" y="3.5" width="${TILE_W + 3}" height="${TILE_H + 5}" rx="8" fill="#000" opacity="0.28"/>
      <rect x="-2" y="1" width="${TILE_W + 4}" height="${TILE_H + 6}" rx="8" fill="#0d5e3b"/>
      <rect x="-2" y="-2" width="${TILE_W + 4}" height="${TILE_H + 4}" rx="8" fill="#e9e0c6"/>
      <rect x="0" y="0" width="${TILE_W}" height="${TILE_H}" rx="6.5" fill="#fdfaf0"/>
      ${faceOf(tile)}</svg>`);
  }
  return faceCache.get(tile);
}

const tileProtos = new Map();

// A tile element with its notation in data-tile (what tests and scripts read back). Each tile's SVG
// is parsed once and cloned after: a step redraws every tile on the table.
function tileEl(tile, extraClass) {
  if (!tileProtos.has(tile)) {
    const proto = document.createElement("span");
    proto.dataset.tile = tile;
    proto.title = tileName(tile);
    proto.innerHTML = tileSvg(tile);
    tileProtos.set(tile, proto);
  }
  const el = tileProtos.get(tile).cloneNode(true);
  el.className = "tile" + (extraClass ? " " + extraClass : "");
  return el;
}
