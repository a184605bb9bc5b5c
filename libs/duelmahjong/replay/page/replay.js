// The replay page: the table after each step and the controls. Step 0 is the deal
// (Replay.initial); step i is Replay.steps[i - 1].
"use strict";

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
