// The replay page: reads the embedded Replay (proto JSON, field names as in archive.proto) and shows
// the table after each step. Step 0 is the deal (Replay.initial); step i is Replay.steps[i - 1].
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

// ---- step narrative ----------------------------------------------------------------------------

// A sentence as parts: text, or {tiles: notation} drawn as small tiles.
function sentence(parts) {
  const p = el("span", "sentence");
  for (const part of parts) {
    if (typeof part === "string") p.appendChild(document.createTextNode(part));
    else if (part && part.tiles) p.appendChild(tileRow(parseTiles(part.tiles), "mini"));
  }
  return p;
}

function eventKind(seatEvent) {
  if (!seatEvent) return null;
  const kind = Object.keys(seatEvent).find((k) => !["sequence", "occurred_at", "detail_json"].includes(k));
  return kind ? [kind, seatEvent[kind]] : null;
}

// The event with every tile in it: the copy of the seat it is about (a draw's tile is only there).
function mergedEvent(event) {
  const first = eventKind(event.first_seat);
  const second = eventKind(event.second_seat);
  if (!first) return second;
  if (!second) return first;
  return first[1].seat === "SEAT_SECOND" ? second : first;
}

function describeAction(seat, action, origin) {
  const who = nameOf(seat);
  const [kind, a] = Object.entries(action || {})[0] || ["", {}];
  const parts = (() => {
    switch (kind) {
      case "discard": return [`${who} discards `, { tiles: a.tile }];
      case "declare_ready": return [`${who} declares 报听 and discards `, { tiles: a.discard }];
      case "chi": return [`${who} calls 吃 `, { tiles: a.tiles }];
      case "pong": return [`${who} calls 碰`];
      case "kong": return [`${who} declares ${MELD_NAMES[a.kind] || "a kong"} of `, { tiles: a.tile }];
      case "win": return [`${who} declares 胡`];
      case "pass": return [`${who} passes`];
      case "draw": return [`${who} draws`];
      case "exchange": return a.tiles ? [`${who} gives back for 换牌 `, { tiles: a.tiles }] : [`${who} keeps the hand (no 换牌)`];
      case "respond_offer":
        if (!a.accept) return [`${who} declines the offer`];
        return a.pick ? [`${who} picks `, { tiles: a.pick }] : [`${who} accepts the triplet, giving back `, { tiles: a.give_back }];
      case "use_item": return [`${who} uses an item on `, { tiles: a.tiles }, a.target ? " → " : "", a.target ? { tiles: a.target } : ""];
      case "choose_doubling": return [`${who} chooses ${a.start_doubled ? "开始加倍" : "not to double"}`];
      case "decline_win": return [`${who} declines the win to double (胡加倍)`];
      case "guess": return a.skip ? [`${who} skips 猜大小`] : [`${who} guesses ${a.guess === "GUESS_BIG" ? "big" : "small"}`];
      case "leave": return [`${who} leaves the table`];
      case "continue_playing": return [`${who} continues`];
      default: return [`${who}: ${kind}`];
    }
  })();
  if (ORIGINS[origin]) parts.push(` (${ORIGINS[origin]})`);
  return parts;
}

function describeEvent(kind, e) {
  const who = nameOf(e.seat);
  const source = {
    DRAW_SOURCE_REPLACEMENT: " as a replacement from the end of the wall",
    DRAW_SOURCE_UNUSED_POOL: " from the unused pool (extra draw)",
    DRAW_SOURCE_OFFER: " from the 搓牌 offer",
  };
  switch (kind) {
    case "hand_started": return [`Hand ${e.hand_number || 1} begins; ${nameOf(e.dealer)} deals (庄)`];
    case "tiles_dealt": return [`${who} is dealt ${e.count || 0} tiles `, { tiles: e.tiles || "" }, e.flowers ? " and sets aside " : "", e.flowers ? { tiles: e.flowers } : ""];
    case "tile_drawn": return [`${who} draws `, { tiles: e.tile || "" }, source[e.source] || ""];
    case "tile_discarded":
      return [`${who} ${e.declared_ready ? (e.first_turn ? "declares 天听 and discards " : "declares 报听 and discards ") : "discards "}`, { tiles: e.tile }, e.drawn_tile ? " (the tile just drawn)" : ""];
    case "meld_made": return [`${who} melds ${MELD_NAMES[e.meld.kind] || ""} `, { tiles: e.meld.tiles || "" }];
    case "flower_replaced": return [`${who} sets aside the flower `, { tiles: e.flower }, " (补花)"];
    case "tiles_exchanged":
      if (!e.count) return [`${who} keeps the hand (no 换牌)`];
      return [`${who} exchanges ${e.count}: gives `, { tiles: e.given || "" }, ", receives ", { tiles: e.received || "" }];
    case "offer_made": return [`${who} is offered `, { tiles: (e.offer && e.offer.tiles) || "" }, e.offer && e.offer.kind === "KIND_PICK" ? " to pick from (搓牌)" : " (a triplet)"];
    case "offer_resolved": return [`${who} takes the offer: gives `, { tiles: e.given || "" }, ", receives ", { tiles: e.received || "" }];
    case "item_applied": return [`${who}'s item: gives `, { tiles: e.given || "" }, ", receives ", { tiles: e.received || "" }];
    case "win_declined": return [`${who} declines the win (胡加倍 ×${e.win_declines || 0})`];
    case "play_started": return [`换牌 is over: ${nameOf(e.dealer)} plays first`];
    case "exhausted": return ["The wall is empty", e.extra_draw_seat ? `: ${nameOf(e.extra_draw_seat)} draws ${e.extra_draws || 0} extra` : ""];
    case "thrown_away": return [`${who} throws away `, { tiles: e.tile }];
    case "won": return [`${who} wins 胡 ${e.self_drawn ? "on the own draw (自摸) " : "on the discard "}`, { tiles: e.win_tile }];
    case "escaped": return [`${who} left the table (逃跑)`];
    case "hand_revealed": return ["The hand is over: both hands face up"];
    case "hand_settled": return ["The wallet settled the hand"];
    case "guess_made": return e.skipped ? [`${who} keeps the winnings`] : [`${who} guessed: dice ${(e.dice || []).join("·")}, ${e.won ? "won" : "lost"}`];
    case "doubling_chosen": return [`${who} made the 开始加倍 choice`];
    case "doubling_revealed": return [`开始加倍: ${(e.start_doubled || []).map(nameOf).join(", ") || "nobody"}`];
    case "seat_connection": return [`${who} ${e.connected ? "reconnected" : e.auto_play ? "is played by the bot (托管)" : "disconnected"}`];
    default: return [kind.replace(/_/g, " ")];
  }
}

function describeStep(step) {
  if (step.decision) return { kind: "decision", parts: describeAction(step.decision.seat, step.decision.action, step.decision.origin), seat: step.decision.seat };
  const ev = step.event || {};
  const merged = mergedEvent(ev);
  if (!merged) return { kind: "event", parts: [ev.summary || "(an event shown to nobody)"], seat: null };
  return { kind: "event", parts: describeEvent(merged[0], merged[1]), seat: merged[1].seat || null, event: merged[0] };
}

// ---- the table ----------------------------------------------------------------------------------

function meldEl(meld) {
  const box = el("span", "meld");
  box.dataset.meldKind = meld.kind;
  box.dataset.tiles = meld.tiles || "";
  box.title = MELD_NAMES[meld.kind] || "";
  const tiles = parseTiles(meld.tiles);
  let claimedMarked = false;
  tiles.forEach((t, i) => {
    const concealedKong = meld.kind === "MELD_KIND_CONCEALED_KONG" && (i === 0 || i === 3);
    let cls = "meld-tile";
    if (!claimedMarked && meld.claimed_tile && t === meld.claimed_tile) {
      cls += " claimed-in";
      claimedMarked = true;
    }
    if (concealedKong) cls += " face-down";
    box.appendChild(tileEl(t, cls));
  });
  box.appendChild(el("span", "meld-label", (MELD_NAMES[meld.kind] || "").split(" ")[0]));
  return box;
}

// Replaces a zone's tiles only when what it shows changed: most steps change one or two zones, and
// drawing fewer tiles keeps stepping quick.
function fill(zone, key, make) {
  if (zone.dataset.key === key) return;
  zone.dataset.key = key;
  zone.replaceChildren(...make());
}

function riverTile(d, latest) {
  let cls = "river-tile";
  if (d.claimed) cls += " claimed";
  if (d.declared_ready) cls += " ready";
  if (latest) cls += " latest";
  const t = tileEl(d.tile, cls);
  t.dataset.claimed = d.claimed ? "true" : "false";
  t.dataset.declaredReady = d.declared_ready ? "true" : "false";
  if (d.claimed) t.title += " (claimed)";
  if (d.declared_ready) t.title += " (报听)";
  return t;
}

function renderSeat(seatState, ctx) {
  const seat = seatState.seat;
  const panel = $(`.seat[data-seat="${seat}"]`);
  panel.classList.toggle("turn", ctx.turn === seat && !ctx.ended);
  panel.classList.toggle("acting", ctx.actor === seat);
  panel.classList.toggle("winner", ctx.winner === seat && ctx.ended);
  $(".ready-badge", panel).hidden = !seatState.declared_ready;

  const concealed = seatState.concealed || "";
  fill($('[data-zone="concealed"]', panel), concealed, () => parseTiles(concealed).map((t) => tileEl(t, "hand-tile")));
  const drawn = seatState.drawn_tile || "";
  fill($('[data-zone="drawn"]', panel), drawn, () => (drawn ? [tileEl(drawn, "hand-tile drawn")] : []));
  const melds = seatState.melds || [];
  fill($('[data-zone="melds"]', panel), JSON.stringify(melds), () => melds.map(meldEl));
  const flowers = seatState.flowers || "";
  fill($('[data-zone="flowers"]', panel), flowers, () => parseTiles(flowers).map((t) => tileEl(t, "flower-tile")));
  $(".flowers-box", panel).hidden = !flowers;

  const discards = seatState.discards || [];
  const latest = ctx.lastDiscard === seat;
  fill($('[data-zone="discards"]', panel), JSON.stringify([discards, latest]), () =>
    discards.map((d, i) => riverTile(d, latest && i === discards.length - 1))
  );
}

function stateAt(i) {
  return i === 0 ? REPLAY.initial || {} : STEPS[i - 1].state || {};
}

let current = 0;

function show(i) {
  current = Math.max(0, Math.min(STEPS.length, i));
  const state = stateAt(current);
  const step = current === 0 ? null : STEPS[current - 1];
  const told = step ? describeStep(step) : { kind: "deal", parts: ["The deal: both hands as the seed made them"], seat: null };
  const ended = state.phase === "HAND_PHASE_ENDED" || current === STEPS.length;
  const ctx = {
    turn: state.turn,
    actor: told.seat,
    ended,
    winner: (REPLAY.result || {}).winner,
    // A decision's state is the table before its events: the discard is in the river once shown.
    lastDiscard: told.event === "tile_discarded" ? told.seat : null,
  };
  for (const s of state.seats || []) renderSeat(s, ctx);

  $("#wall-count").textContent = state.wall_remaining || 0;
  $("#pool-count").textContent = state.pool_remaining || 0;
  $("#phase").textContent = PHASES[state.phase] || "";
  $("#turn").textContent = ended ? "—" : nameOf(state.turn);

  const counter = $("#step-counter");
  counter.textContent = `${current} / ${STEPS.length}`;
  counter.dataset.step = String(current);
  const story = $("#story");
  story.dataset.kind = told.kind;
  story.replaceChildren(el("span", "story-kind", told.kind === "decision" ? "decision" : told.kind === "deal" ? "deal" : "event"), sentence(told.parts));
  $("#scrub").value = String(current);
  $("#prev").disabled = $("#start").disabled = current === 0;
  $("#next").disabled = $("#end").disabled = current === STEPS.length;
  $("#result").classList.toggle("shown", current === STEPS.length);
  markStep(current);
  document.body.dataset.step = String(current);
}

// ---- every step, as a list to jump from ---------------------------------------------------------

function buildStepList() {
  const list = $("#steps");
  const deal = el("li", "deal", "The deal");
  deal.dataset.step = "0";
  list.appendChild(deal);
  STEPS.forEach((step, i) => {
    const told = describeStep(step);
    const item = el("li", told.kind);
    item.dataset.step = String(i + 1);
    item.appendChild(sentence(told.parts));
    list.appendChild(item);
  });
  list.addEventListener("click", (e) => {
    const item = e.target.closest("li");
    if (item) show(Number(item.dataset.step));
  });
}

function markStep(i) {
  const list = $("#steps");
  const before = $("li.current", list);
  if (before) before.classList.remove("current");
  const item = list.children[i];
  if (!item) return;
  item.classList.add("current");
  if (!list.parentElement.open) return;
  // Scroll the list only, never the page.
  if (item.offsetTop < list.scrollTop || item.offsetTop > list.scrollTop + list.clientHeight - item.offsetHeight) {
    list.scrollTop = item.offsetTop - list.clientHeight / 2;
  }
}

let playing = null;

function togglePlay() {
  const button = $("#play");
  if (playing) {
    clearInterval(playing);
    playing = null;
  } else {
    if (current === STEPS.length) show(0);
    playing = setInterval(() => {
      if (current >= STEPS.length) return togglePlay();
      show(current + 1);
    }, 900);
  }
  button.classList.toggle("playing", Boolean(playing));
}

// ---- the result and the settlement ----------------------------------------------------------------

function wonEvent() {
  for (const step of STEPS) {
    if (!step.event) continue;
    const merged = mergedEvent(step.event);
    if (merged && merged[0] === "won") return merged[1];
  }
  return null;
}

function fmtAmount(v) {
  const n = Number(v || 0);
  return (n > 0 ? "+" : "") + n.toLocaleString("en-US");
}

function accountName(account) {
  if (account.startsWith("player:")) {
    const seat = playerSeat(account.slice(7));
    return seat ? nameOf(seat) : account.slice(7);
  }
  return account.replace("house:", "house · ");
}

function renderResult() {
  const result = REPLAY.result || {};
  const box = $("#result");
  const outcome = result.outcome || "ARCHIVED_OUTCOME_UNSPECIFIED";
  const won = wonEvent();
  const fan = (result.evaluation || (won && won.evaluation) || {}).total_fan;
  const how = won ? (won.self_drawn ? " 自摸, on the own draw" : ` on ${nameOf(result.winner === "SEAT_FIRST" ? "SEAT_SECOND" : "SEAT_FIRST")}'s discard`) : "";
  const headline = {
    ARCHIVED_OUTCOME_WIN: `${nameOf(result.winner)} wins${how}${fan ? ` · ${fan} 番` : ""}`,
    ARCHIVED_OUTCOME_DRAWN: "Drawn hand (荒庄)",
    ARCHIVED_OUTCOME_ESCAPE: `${nameOf(result.escaper)} escaped (逃跑)`,
    ARCHIVED_OUTCOME_VOID: "Void: the table closed during the hand",
  }[outcome] || "Result";
  $("#result-title").textContent = headline;
  box.dataset.outcome = outcome;

  const handBox = $("#winning-hand");
  handBox.replaceChildren();
  if (won) {
    const desc = won.description || {};
    const concealed = el("span", "win-concealed");
    concealed.dataset.zone = "winning-concealed";
    concealed.appendChild(tileRow(parseTiles(desc.concealed || ""), "hand-tile"));
    handBox.appendChild(concealed);
    for (const m of desc.melds || []) handBox.appendChild(meldEl(m));
    const win = el("span", "win-tile-box");
    win.appendChild(el("span", "win-label", won.self_drawn ? "自摸" : "和"));
    const wt = tileEl(won.win_tile, "hand-tile win-tile");
    wt.dataset.zone = "win-tile";
    win.appendChild(wt);
    handBox.appendChild(win);
  }
  handBox.hidden = !won;

  const evaluation = result.evaluation || (won && won.evaluation);
  const table = $("#patterns");
  table.replaceChildren();
  if (evaluation && (evaluation.patterns || []).length) {
    for (const p of evaluation.patterns) {
      const tr = el("tr");
      tr.dataset.pattern = p.id;
      tr.append(el("td", "pattern-name", p.name_zh), el("td", "pattern-id", (p.id || "").replace("PATTERN_ID_", "").toLowerCase().replace(/_/g, " ")), el("td", "fan", `${p.fan || 0} 番`));
      table.appendChild(tr);
    }
    const total = el("tr", "total");
    const note = [evaluation.capped ? "capped" : "", evaluation.limit ? "limit 役满" : ""].filter(Boolean).join(", ");
    total.append(el("td", "pattern-name", "合计"), el("td", "pattern-id", note || "total"), el("td", "fan", `${evaluation.total_fan || 0} 番`));
    table.appendChild(total);
  }
  $("#patterns-box").hidden = !table.children.length;

  const settlement = result.settlement;
  const money = $("#settlement");
  money.replaceChildren();
  if (settlement) {
    const m = settlement.multipliers || REPLAY.multipliers || {};
    const d = settlement.doubling;
    const terms = [[`${settlement.total_fan || 0} 番`, d ? "doubled fan F" : "fan"]];
    if (!d) terms.push(["×", ""], [m.negotiated || 1, "negotiated"], ["×", ""], [m.progressive || 1, "progressive"]);
    terms.push(["×", ""], [m.fan_rate || (REPLAY.rules || {}).fan_rate || 0, "威望 per 番"], ["=", ""], [Number(settlement.fan_amount || 0).toLocaleString("en-US"), "amount"]);
    const formula = el("div", "formula");
    formula.dataset.fanAmount = String(settlement.fan_amount || 0);
    for (const [value, label] of terms) {
      if (!label) {
        formula.appendChild(el("span", "op", value));
        continue;
      }
      const term = el("span", "term");
      term.append(el("span", "term-value", String(value)), el("span", "term-label", label));
      formula.appendChild(term);
    }
    money.appendChild(formula);
    if (d) money.appendChild(el("p", "fee", `H2: B ${d.base_fan || 0} · S ${d.s || 0} · H ${d.h || 0} · T ${d.t || 0} → F ${d.doubled_fan || 0}`));
    if (settlement.transfer) {
      const tr = settlement.transfer;
      const from = playerSeat(tr.from_player_id);
      const to = playerSeat(tr.to_player_id);
      const line = el("p", "transfer");
      line.dataset.amount = String(tr.amount || 0);
      line.textContent = `${from ? nameOf(from) : tr.from_player_id} → ${to ? nameOf(to) : tr.to_player_id}: ${Number(tr.amount || 0).toLocaleString("en-US")} 威望${settlement.capped_by_carry ? " (capped by the carry)" : ""}`;
      money.appendChild(line);
    }
    if (settlement.fee) money.appendChild(el("p", "fee", `Room fee: ${Number(settlement.fee).toLocaleString("en-US")} each`));
    if ((settlement.postings || []).length) {
      const postings = el("table", "postings");
      for (const p of settlement.postings) {
        const tr = el("tr");
        tr.append(el("td", "", accountName(p.account)), el("td", "", POSTING_REASONS[p.reason] || p.reason), el("td", Number(p.amount) < 0 ? "debit" : "credit", fmtAmount(p.amount)));
        postings.appendChild(tr);
      }
      money.appendChild(postings);
    }
  } else if (outcome !== "ARCHIVED_OUTCOME_VOID") {
    money.appendChild(el("p", "fee", "The wallet's settlement had not reached the archive."));
  }
  const moved = $("#moved");
  moved.replaceChildren();
  for (const mv of result.moved || []) {
    const chip = el("span", "moved-chip " + (Number(mv.amount) < 0 ? "debit" : "credit"));
    chip.dataset.seat = mv.seat;
    chip.dataset.amount = String(mv.amount || 0);
    chip.textContent = `${nameOf(mv.seat)} ${fmtAmount(mv.amount)}`;
    moved.appendChild(chip);
  }
}

// ---- the fairness check ------------------------------------------------------------------------

function bytesOf(b64) {
  const bin = atob(b64 || "");
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

async function checkFairness() {
  const f = REPLAY.fairness || {};
  const commitment = bytesOf(f.commitment);
  const seed = bytesOf(f.seed);
  const salt = bytesOf(f.salt);
  $("#commitment").textContent = hex(commitment);
  $("#seed").textContent = hex(seed);
  $("#salt").textContent = hex(salt);
  const line = $("#fairness-browser");
  const say = (status, text) => {
    line.dataset.status = status;
    line.textContent = text;
  };
  if (!window.crypto || !crypto.subtle) return say("unavailable", "This browser offers no WebCrypto here: the commitment was not recomputed.");
  if (commitment.length !== 32 || seed.length !== 8) return say("mismatch", "The replay carries no complete commitment, seed and salt.");
  const label = new TextEncoder().encode("duelmahjong-wall-v1");
  const message = new Uint8Array(label.length + seed.length + salt.length);
  message.set(label, 0);
  message.set(seed, label.length);
  message.set(salt, label.length + seed.length);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", message));
  line.dataset.computed = hex(digest);
  if (hex(digest) === hex(commitment)) say("verified", "✓ Verified in this browser: SHA-256(label ‖ seed ‖ salt) equals the commitment both seats received before the deal.");
  else say("mismatch", `✗ Mismatch: the seed and salt hash to ${hex(digest)}, not to the commitment the seats received.`);
}

const CHECK_NAMES = {
  commitment: "commitment",
  steps: "steps replayed",
  deal: "tiles of the deal",
  initial: "the dealt table",
  result: "the result",
};

function renderVerification() {
  const line = $("#fairness-server");
  if (!VERIFICATION) {
    line.dataset.status = "absent";
    line.textContent = "The full verification (every tile re-derived from the seed) was not run for this page: duel verify does it.";
    return;
  }
  line.dataset.status = VERIFICATION.ok ? "verified" : "failed";
  const head = VERIFICATION.ok
    ? "✓ Verified by duel verify: a fresh engine dealt the hand again from the seed and replayed every decision; every tile and every step matched."
    : `✗ duel verify found a difference: ${VERIFICATION.problem}`;
  line.replaceChildren(el("span", "", head));
  if (!VERIFICATION.ok && VERIFICATION.step) {
    const go = el("button", "go-step", `show step ${VERIFICATION.step}`);
    go.addEventListener("click", () => show(VERIFICATION.step));
    line.appendChild(go);
  }
  const checks = el("span", "checks");
  for (const c of VERIFICATION.checks || []) {
    const chip = el("span", "check-chip " + (c.ok ? "ok" : "bad"), `${c.ok ? "✓" : "✗"} ${CHECK_NAMES[c.name] || c.name}${c.ok ? ` (${c.count})` : ""}`);
    chip.dataset.check = c.name;
    checks.appendChild(chip);
  }
  line.appendChild(checks);
}

// ---- set-up ---------------------------------------------------------------------------------------

function setUp() {
  const rules = REPLAY.rules || {};
  document.title = `Replay ${REPLAY.hand_id}`;
  $("#hand-id").textContent = REPLAY.hand_id;
  $("#profile").textContent = PROFILES[rules.profile] || "";
  $("#round-wind").textContent = `${WINDS[REPLAY.round_wind] || ""}风圈`;
  const m = REPLAY.multipliers || {};
  $("#multipliers").textContent = `×${m.negotiated || 1} ×${m.progressive || 1} · 1番 = ${m.fan_rate || rules.fan_rate || 0}`;
  const bonus = (REPLAY.deal || {}).revealed_bonus_tiles;
  $("#bonus").replaceChildren(...(bonus ? [tileRow(parseTiles(bonus), "mini")] : []));
  $("#bonus-box").hidden = !bonus;
  $("#pool-box").hidden = rules.profile !== "PROFILE_DUEL";
  for (const seat of SEATS) {
    const panel = $(`.seat[data-seat="${seat}"]`);
    panel.appendChild($("#seat-template").content.cloneNode(true));
    $(".player-name", panel).textContent = nameOf(seat);
    $(".dealer-badge", panel).hidden = REPLAY.dealer !== seat;
  }
  const scrub = $("#scrub");
  scrub.max = String(STEPS.length);
  scrub.addEventListener("input", () => show(Number(scrub.value)));
  $("#start").addEventListener("click", () => show(0));
  $("#prev").addEventListener("click", () => show(current - 1));
  $("#next").addEventListener("click", () => show(current + 1));
  $("#end").addEventListener("click", () => show(STEPS.length));
  $("#play").addEventListener("click", togglePlay);
  document.addEventListener("keydown", (e) => {
    if (e.target && e.target.tagName === "INPUT" && e.target.type !== "range") return;
    // Space on a focused button presses that button.
    if (e.key === " " && !(e.target && e.target.tagName === "BUTTON")) {
      e.preventDefault();
      return togglePlay();
    }
    const moves = { ArrowRight: current + 1, ArrowLeft: current - 1, Home: 0, End: STEPS.length };
    if (e.key in moves) {
      e.preventDefault();
      show(moves[e.key]);
    }
  });
  buildStepList();
  renderResult();
  renderVerification();
  show(0);
  checkFairness().finally(() => (document.body.dataset.ready = "true"));
}

setUp();
