// The end of the hand (the winning hand, its patterns and the settlement) and the fairness check.
"use strict";

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
