// Every step in words: a decision (who chose what, and whether the server played it) or an event,
// with the tiles in it drawn small.
"use strict";

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
