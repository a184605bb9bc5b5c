// The replay page's data: the embedded Replay (proto JSON, field names as in archive.proto) and the
// verification, the names the page shows for the proto's enums, and small DOM helpers.
"use strict";

const DATA = JSON.parse(document.getElementById("replay-data").textContent);
const REPLAY = DATA.replay;
const VERIFICATION = DATA.verification;
const STEPS = REPLAY.steps || [];
const SEATS = ["SEAT_FIRST", "SEAT_SECOND"];
const WINDS = { WIND_EAST: "東", WIND_SOUTH: "南", WIND_WEST: "西", WIND_NORTH: "北" };
const PROFILES = { PROFILE_DUEL: "决斗麻将 duel", PROFILE_ERREN: "二人麻将 erren" };
const MELD_NAMES = {
  MELD_KIND_CHI: "吃 chi",
  MELD_KIND_PONG: "碰 pong",
  MELD_KIND_EXPOSED_KONG: "明杠 kong",
  MELD_KIND_CONCEALED_KONG: "暗杠 concealed kong",
  MELD_KIND_ADDED_KONG: "加杠 added kong",
};
const ORIGINS = {
  DECISION_ORIGIN_TIMEOUT: "timed out: the server played the default",
  DECISION_ORIGIN_AUTOPLAY: "托管: the server's bot played",
  DECISION_ORIGIN_LOCKED_HAND: "报听: the server played the locked hand",
};
const PHASES = {
  HAND_PHASE_DOUBLING: "开始加倍",
  HAND_PHASE_EXCHANGE: "换牌 exchange",
  HAND_PHASE_PLAY: "play",
  HAND_PHASE_EXTRA_DRAW: "extra draws",
  HAND_PHASE_GUESS: "猜大小",
  HAND_PHASE_ENDED: "ended",
  HAND_PHASE_BETWEEN_HANDS: "between hands",
};
const POSTING_REASONS = {
  POSTING_REASON_HAND_TRANSFER: "hand transfer",
  POSTING_REASON_FEE: "room fee",
  POSTING_REASON_ESCAPE_PENALTY: "escape penalty",
  POSTING_REASON_EXCHANGE: "换牌 fee",
  POSTING_REASON_ITEM: "item",
  POSTING_REASON_GUESS: "猜大小",
  POSTING_REASON_GRANT: "grant",
};

const $ = (sel, root) => (root || document).querySelector(sel);
const players = {};
for (const p of REPLAY.players || []) players[p.seat] = p;
const nameOf = (seat) => {
  const p = players[seat] || {};
  return p.display_name || p.player_id || (seat === "SEAT_FIRST" ? "first seat" : "second seat");
};
const playerSeat = (playerId) => SEATS.find((s) => players[s] && players[s].player_id === playerId);

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function tileRow(tiles, cls) {
  const row = el("span", "tiles");
  for (const t of tiles) row.appendChild(tileEl(t, cls));
  return row;
}
