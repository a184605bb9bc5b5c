#!/usr/bin/env node
// A game client in another language, written against proto/ and docs/protocol.md only.
//
// It logs in as a guest, and in each room it is given it queues, negotiates the multiplier (T7) as
// its seat requires, plays whole hands at the table against the room's house bot and leaves; then it
// reads its balance and its ledger (ListHistory) and checks that what the Play stream showed of each
// settlement is what the ledger did. Before it plays, it opens a private table in its first room and
// checks the code, that a wrong code is NOT_FOUND and its own FAILED_PRECONDITION, and that
// cancelling gives the hold back. With --scoring it then reads its match history (ListMatches) and
// each table's last hand as a replay (GetReplay) and checks them against what it played and its
// ledger. The .proto files are loaded at run time (no generated code).
//
//   node tests/node/client.js --wallet HOST:PORT --matchmaking HOST:PORT --room ROOM[:CARRY] [--room …]
//        [--scoring HOST:PORT] [--hands 2] [--carry 500] [--multiplier 2] [--name NAME] [--timeout-seconds 75]
//        [--watch ROOM] [--follow-seconds 30] [--ca-file CA.pem | --state-file .local/stack.json | --plaintext]
//
// Every channel is TLS, the server verified against a CA: --ca-file, else the CA the state file of
// `make run` names (its ca_file; --state-file, default .local/stack.json when it exists), else the
// system's trust store. --plaintext (or a state file of a plaintext stack) dials without TLS, for a
// stack started with GRPC_PLAINTEXT=true only. The server's certificate must name the host dialed; an
// ipv4: list of replicas is checked against the one host its addresses share.
//
// Each --room is played in turn, with its own carry (携带威望) when it names one, else --carry.
// --watch ROOM: while it plays in ROOM (a watchable room), the client also finds its own table in
// ListLiveTables and watches it as a spectator (Watch; a player may watch its own table): the delayed
// table first, then typed events, each at least the room's delay after it happened and without a tile
// a seat hides, until the table's end.
//
// Policy: win when WIN is legal; between hands continue until --hands are played, then leave;
// otherwise the decision's default_action (T11: discard the drawn tile, pass, keep the hand). LEAVE is
// legal in every decision, but during a hand it is escape (H3): this client never sends it there.
//
// A queue stream (Enqueue) that breaks before table_ready or expired — the matchmaking replica serving
// it went away, the connection dropped, the stream ended early — is followed again with FollowQueue and
// the ticket of its first `queued` update (docs/protocol.md "When the queue stream breaks"), 0.1 s
// doubling to 2 s, for up to --follow-seconds (30); NOT_FOUND, PERMISSION_DENIED and the other answers
// of matchmaking are not retried. The followed stream starts with the entry's state now, so updates may
// repeat: each T7 step is answered once. --matchmaking may name several replicas
// (ipv4:HOST:PORT,HOST:PORT): the channel balances over them (round_robin) and skips one that is down.
// Required as a module, it runs nothing and exports loadContract and Session.
//
// Exit status: 0 when every check held; 1 with the list of mismatches; 2 on an error (a refused call,
// a rejected action, the timeout), with its reason.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const CALL_SECONDS = 10; // deadline of each unary call
// Following a queue entry whose stream broke: the backoff between tries (doubling up to the cap), and
// the status codes of a break (any other is matchmaking's answer, not retried).
const FOLLOW_FIRST_MILLIS = 100;
const FOLLOW_MAX_MILLIS = 2000;
const QUEUE_BROKEN = new Set([grpc.status.UNAVAILABLE, grpc.status.CANCELLED, grpc.status.INTERNAL, grpc.status.UNKNOWN]);
const ANSWER_RETRIED = new Set([...QUEUE_BROKEN, grpc.status.DEADLINE_EXCEEDED]);
// Every channel: over all the addresses of its target, skipping one that is down; reconnect quickly.
const CHANNEL_OPTIONS = {
  'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 1000,
};
const LEDGER_WAIT_SECONDS = 15; // how long the wallet may take to apply what a table sent it
const ARCHIVE_WAIT_SECONDS = 15; // how long scoring may take to archive a hand and its settlement

// --- TLS: the CA, and the name a server must prove -----------------------------------------------

// The channel credentials of args: plaintext, or TLS verified with a CA file or the system's roots.
function channelCredentials(args) {
  if (args.plaintext) return grpc.credentials.createInsecure();
  return grpc.credentials.createSsl(args.caFile ? fs.readFileSync(args.caFile) : null);
}

// An ipv4:/ipv6: list of addresses has no one host name of its own; its servers prove the host the
// addresses share (several hosts: no name to check, an error).
function serverNameOptions(target, args) {
  const match = /^(ipv4|ipv6):(.+)$/.exec(target);
  if (args.plaintext || !match) return {};
  const hosts = new Set(match[2].split(',').map((address) => address.slice(0, address.lastIndexOf(':')).replace(/^\[|\]$/g, '')));
  if (hosts.size !== 1) throw new ClientError(`${target}: its addresses have no one host name to verify`);
  const [host] = hosts;
  return { 'grpc.ssl_target_name_override': host, 'grpc.default_authority': host };
}

function channelOptions(target, args, options = {}) {
  return { ...options, ...serverNameOptions(target, args) };
}

// --ca-file, else the state file's CA (or its plaintext), else the system's roots.
function resolveTls(args) {
  if (args.plaintext || args.caFile) return;
  const stateFile = args.stateFile || path.resolve('.local', 'stack.json');
  if (!fs.existsSync(stateFile)) {
    if (args.stateFile) throw new ClientError(`no state file ${stateFile}`);
    return;
  }
  const state = JSON.parse(fs.readFileSync(stateFile, 'utf8'));
  if (state.plaintext) args.plaintext = true;
  else if (state.ca_file) args.caFile = state.ca_file;
}

// --- the contract, loaded from proto/ ---------------------------------------------------------

function loadContract(protoDir) {
  const definition = protoLoader.loadSync(
    [
      'duelmahjong/v1/wallet.proto',
      'duelmahjong/v1/matchmaking.proto',
      'duelmahjong/v1/table.proto',
      'duelmahjong/v1/archive.proto',
    ],
    {
      includeDirs: [protoDir],
      keepCase: true, // field names exactly as in the .proto files
      longs: String, // int64 as decimal strings: compared exactly as BigInt
      enums: String, // enum values by name ("SEAT_FIRST")
      defaults: true, // unset scalars read as their zero value, unset messages as null
      oneofs: true, // each oneof also names its set field ("kind": "discard")
    },
  );
  return grpc.loadPackageDefinition(definition).duelmahjong.v1;
}

// --- small helpers ----------------------------------------------------------------------------

class ClientError extends Error {
  constructor(message, code) {
    super(message);
    this.code = code; // the gRPC status of a refused call, if one was
  }
}

function big(value) {
  return BigInt(value ?? 0);
}

function callError(method, err) {
  const code = grpc.status[err.code] ?? String(err.code);
  return new ClientError(`${method} failed: ${code}: ${err.details || err.message}`, err.code);
}

function unary(client, method, request, metadata) {
  return new Promise((resolve, reject) => {
    const deadline = new Date(Date.now() + CALL_SECONDS * 1000);
    client[method](request, metadata ?? new grpc.Metadata(), { deadline }, (err, response) =>
      err ? reject(callError(method, err)) : resolve(response),
    );
  });
}

function sleep(millis) {
  return new Promise((resolve) => setTimeout(resolve, millis));
}

function seatName(seat) {
  return seat === 'SEAT_FIRST' ? 'first' : seat === 'SEAT_SECOND' ? 'second' : String(seat);
}

function short(enumValue, prefix) {
  return String(enumValue).replace(prefix, '').toLowerCase();
}

// A PlayBatch is read as if its responses had come one by one (docs/protocol.md "Batches").
function* flatten(response) {
  if (response.kind === 'batch') {
    for (const inner of response.batch.responses) yield* flatten(inner);
  } else {
    yield response;
  }
}

// --- the session: login, rooms, queue, negotiation ---------------------------------------------

class Session {
  constructor(contract, args) {
    this.contract = contract;
    this.args = args;
    const credentials = channelCredentials(args);
    this.wallet = new contract.WalletService(args.wallet, credentials, channelOptions(args.wallet, args, CHANNEL_OPTIONS));
    this.matchmaking = new contract.MatchmakingService(
      args.matchmaking,
      credentials,
      channelOptions(args.matchmaking, args, CHANNEL_OPTIONS),
    );
    this.archive = args.scoring
      ? new contract.ArchiveService(args.scoring, credentials, channelOptions(args.scoring, args))
      : null;
    this.playerId = '';
    this.metadata = new grpc.Metadata();
    this.followSeconds = args.followSeconds ?? 30;
    // Each time a broken queue stream was followed again: milliseconds from the break to the state shown.
    this.queueResumes = [];
  }

  get account() {
    return `player:${this.playerId}`;
  }

  async login(name) {
    const reply = await unary(this.wallet, 'GuestLogin', { display_name: name });
    this.playerId = reply.player_id;
    this.metadata.set('authorization', `Bearer ${reply.session.token}`);
  }

  async balance() {
    return unary(this.wallet, 'GetBalance', { player_id: this.playerId }, this.metadata);
  }

  async ratings() {
    return unary(this.wallet, 'GetRating', { player_id: '' }, this.metadata);
  }

  // A closed table's holds are released by the wallet a moment after the stream ends (TableClosed).
  async holdsReleased() {
    const until = Date.now() + LEDGER_WAIT_SECONDS * 1000;
    for (;;) {
      const balance = await this.balance();
      if (big(balance.held) === 0n) return balance;
      if (Date.now() > until) throw new ClientError(`the wallet still holds ${balance.held} after the table closed`);
      await sleep(100);
    }
  }

  async history() {
    const entries = [];
    let pageToken = '';
    do {
      const page = await unary(
        this.wallet,
        'ListHistory',
        { player_id: this.playerId, page_size: 100, page_token: pageToken },
        this.metadata,
      );
      entries.push(...page.entries);
      pageToken = page.next_page_token;
    } while (pageToken);
    return entries.reverse(); // ListHistory is newest first; oldest first reads as a statement
  }

  async rooms() {
    const reply = await unary(this.matchmaking, 'ListRooms', { profile: 'PROFILE_UNSPECIFIED' }, this.metadata);
    return new Map(reply.rooms.map((room) => [room.room_id, room]));
  }

  // Enqueue and follow the QueueUpdates until table_ready; negotiate when it is this seat's turn.
  async findTable(room, carry, log) {
    return this.followEntry(() => this.matchmaking.Enqueue({ room_id: room.room_id, carry: String(carry) }, this.metadata), log);
  }

  // Follows one queue entry from the stream `open()` makes to its table_ready, across breaks: a stream
  // that fails with a status of QUEUE_BROKEN, or ends without table_ready or expired, is followed again
  // with FollowQueue and the entry's ticket until one brings updates, for up to followSeconds.
  async followEntry(open, log) {
    let call = open();
    let method = 'Enqueue';
    let ticket = '';
    let brokeAt = 0; // when the break being followed happened (0: none)
    let giveUpAt = 0;
    let wait = FOLLOW_FIRST_MILLIS;
    let breaks = 0; // updates after the first break may repeat what was shown
    const answered = new Set(); // the T7 steps answered: a step shown again is not answered twice
    const matched = new Set();
    try {
      for (;;) {
        let broke = null;
        try {
          for await (const response of call) {
            const update = response.update;
            if (brokeAt) {
              this.queueResumes.push(Date.now() - brokeAt);
              log(`the queue entry is followed again: its state came ${Date.now() - brokeAt} ms after the break`);
              brokeAt = 0;
              wait = FOLLOW_FIRST_MILLIS;
            }
            switch (update.kind) {
              case 'queued':
                ticket = update.queued.queue_ticket_id;
                break;
              case 'matched':
                if (matched.has(update.matched.pairing_id)) break; // shown again after a break
                matched.add(update.matched.pairing_id);
                log(
                  `matched: seat ${seatName(update.matched.seat)} against ${update.matched.opponent_player_id}` +
                    (update.matched.opponent_is_bot ? ' (house bot)' : ''),
                );
                break;
              case 'negotiation':
                await this.negotiate(update.negotiation, log, answered, breaks > 0);
                break;
              case 'table_ready':
                return update.table_ready; // the server ends the stream after it
              case 'expired':
                throw new ClientError(`the queue entry expired: ${update.expired.reason}`);
              default:
                break; // position
            }
          }
        } catch (err) {
          if (err instanceof ClientError) throw err;
          if (!QUEUE_BROKEN.has(err.code)) throw callError(method, err);
          broke = err;
        }
        call.cancel();
        const why = broke ? `${grpc.status[broke.code]}: ${broke.details}` : 'the stream ended without table_ready or expired';
        if (!ticket) throw new ClientError(`${method}: ${why}`);
        if (!brokeAt) {
          brokeAt = Date.now();
          giveUpAt = brokeAt + this.followSeconds * 1000;
          breaks += 1;
        }
        if (Date.now() >= giveUpAt)
          throw new ClientError(`queue ticket ${ticket} could not be followed again within ${this.followSeconds} s: ${why}`);
        log(`the queue stream broke (${why}): FollowQueue in ${wait} ms`);
        await sleep(Math.min(wait, giveUpAt - Date.now()));
        wait = Math.min(FOLLOW_MAX_MILLIS, wait * 2);
        method = 'FollowQueue';
        call = this.matchmaking.FollowQueue({ queue_ticket_id: ticket }, this.metadata);
      }
    } finally {
      call.cancel();
    }
  }

  async negotiate(negotiation, log, answered, afterBreak) {
    if (!negotiation.your_turn) return;
    const pairing_id = negotiation.pairing_id;
    const step = `${pairing_id}|${negotiation.state}`;
    if (answered.has(step)) return; // shown again after a break: answered already
    if (negotiation.state === 'NEGOTIATION_STATE_AWAITING_PROPOSAL') {
      await this.answer('ProposeMultiplier', { pairing_id, multiplier: this.args.multiplier }, afterBreak);
      log(`negotiation: proposed ${this.args.multiplier}x`);
    } else if (negotiation.state === 'NEGOTIATION_STATE_PROPOSED') {
      await this.answer('RespondMultiplier', { pairing_id, accept: true }, afterBreak);
      log(`negotiation: accepted ${negotiation.multiplier}x`);
    }
    answered.add(step);
  }

  // One T7 answer. One that failed on its way may have been applied: it is sent again (the queue's
  // backoff, for up to followSeconds), and FAILED_PRECONDITION then — or for a step shown again after
  // the queue stream broke — means it was: the queue stream tells what follows.
  async answer(method, request, afterBreak) {
    const giveUpAt = Date.now() + this.followSeconds * 1000;
    let wait = FOLLOW_FIRST_MILLIS;
    for (let retried = false; ; retried = true) {
      try {
        return await unary(this.matchmaking, method, request, this.metadata);
      } catch (err) {
        if (err.code === grpc.status.FAILED_PRECONDITION && (retried || afterBreak)) return null;
        if (!ANSWER_RETRIED.has(err.code) || Date.now() >= giveUpAt) throw err;
      }
      await sleep(wait);
      wait = Math.min(FOLLOW_MAX_MILLIS, wait * 2);
    }
  }

  // Every pairing of this player in the archive (ListMatches, page after page), newest first.
  async matches() {
    const matches = [];
    let pageToken = '';
    do {
      const page = await unary(this.archive, 'ListMatches', { page_size: 100, page_token: pageToken }, this.metadata);
      matches.push(...page.matches);
      pageToken = page.next_page_token;
    } while (pageToken);
    return matches;
  }

  close() {
    this.wallet.close();
    this.matchmaking.close();
    if (this.archive) this.archive.close();
  }
}

// --- a private table: its code, and what a wrong or own code gets ------------------------------

const CODE = /^[23456789ABCDEFGHJKMNPQRSTVWXYZ]{6}$/; // docs/protocol.md "Private tables"

// The first status of a JoinPrivateTable stream (a refusal comes before any update).
async function joinRefusal(session, code, carry) {
  const call = session.matchmaking.JoinPrivateTable({ code, carry: String(carry) }, session.metadata);
  try {
    for await (const response of call) return `an update (${response.update.kind})`;
    return 'a stream that ended without a status';
  } catch (err) {
    return `${grpc.status[err.code] ?? err.code}: ${err.details}`;
  } finally {
    call.cancel();
  }
}

// Opens a private table in `room`, checks its code, tries a wrong code and its own, then cancels it
// and waits until the wallet gives the carry back. Returns the problems found.
async function checkPrivateTable(session, room, carry, log) {
  const problems = [];
  const opened = session.matchmaking.OpenPrivateTable({ room_id: room.room_id, carry: String(carry) }, session.metadata);
  const updates = opened[Symbol.asyncIterator]();
  try {
    const first = (await updates.next()).value.update;
    const queued = (await updates.next()).value.update;
    if (first.kind !== 'private_code' || queued.kind !== 'queued') {
      problems.push(`OpenPrivateTable sent ${first.kind}, ${queued.kind}: private_code, queued wanted`);
      return problems;
    }
    const code = first.private_code.code;
    if (!CODE.test(code)) problems.push(`the private code ${code} is not 6 of the alphabet`);
    if (big(first.private_code.expires_at?.seconds) * 1000n <= BigInt(Date.now())) problems.push('the code expires in the past');
    const held = await session.balance();
    if (big(held.held) !== big(carry) + big(room.rules.fee)) problems.push(`opening held ${held.held}, not carry + fee`);
    const wrong = code.split('').map((c) => (c === 'Z' ? 'Y' : 'Z')).join('');
    const refusals = [
      [wrong.toLowerCase(), 'NOT_FOUND: no private table has the code'],
      [`${code.slice(0, 3)} ${code.slice(3).toLowerCase()}`, 'FAILED_PRECONDITION:'],
    ];
    for (const [typed, wanted] of refusals) {
      const got = await joinRefusal(session, typed, carry);
      if (!got.startsWith(wanted)) problems.push(`JoinPrivateTable(${typed}): ${got}; ${wanted} wanted`);
      else log(`JoinPrivateTable(${typed}): ${got.slice(0, 90)}…`);
    }
    await unary(session.matchmaking, 'CancelQueue', { queue_ticket_id: queued.queued.queue_ticket_id }, session.metadata);
    const last = (await updates.next()).value?.update;
    if (last?.kind !== 'expired') problems.push(`a cancelled private table's stream sent ${last?.kind}`);
    await session.holdsReleased();
    log(`private table ${code} in ${room.room_id}: opened, refused a wrong and its own code, cancelled, hold released`);
  } catch (err) {
    problems.push(`the private table: ${err.details || err.message}`);
  } finally {
    opened.cancel();
  }
  return problems;
}

// --- the table: one Play stream --------------------------------------------------------------

// Plays at the table of `ready` until the table ends; returns the hands as the stream showed them.
function playTable(session, ready, room, log) {
  const contract = session.contract;
  const table = new contract.TableService(
    ready.address,
    channelCredentials(session.args),
    channelOptions(ready.address, session.args),
  );
  const stream = table.Play(session.metadata);
  const hands = [];
  const eventKinds = new Map();
  let current = null; // the hand being played
  let lastSeen = 0; // the last event sequence received
  let seat = ready.seat;
  let players = new Map(); // seat -> player id, from the views
  let answered = ''; // the last decision answered, so a repeated view is not answered twice
  let actionId = 0;
  let tableEnded = '';
  let failure = null;

  function send(action, legal) {
    actionId += 1;
    const sequence = Math.max(lastSeen, Number(legal.sequence));
    // Only the first request carries the table ticket; later ones carry the action and the sequence.
    stream.write({ action, last_seen_sequence: sequence, client_action_id: actionId });
  }

  function decide(legal) {
    if (!legal || legal.actions.length === 0) return;
    const key = `${legal.sequence}|${JSON.stringify(legal.deadline)}|${legal.actions.map((a) => a.kind).join(',')}`;
    if (key === answered) return;
    answered = key;
    const kinds = new Set(legal.actions.map((a) => a.kind));
    if (kinds.has('ACTION_KIND_CONTINUE')) {
      const more = hands.length < session.args.hands;
      send(more ? { continue_playing: {} } : { leave: {} }, legal);
      return;
    }
    if (kinds.has('ACTION_KIND_WIN')) {
      send({ win: {} }, legal);
      return;
    }
    const fallback = legal.default_action;
    if (!fallback || !fallback.kind) throw new ClientError(`a decision without a default_action: ${JSON.stringify(legal)}`);
    if (fallback.kind === 'leave') throw new ClientError('the default action during a hand is LEAVE (escape)');
    send({ [fallback.kind]: fallback[fallback.kind] }, legal);
  }

  function onEvent(event) {
    // One stream from the table's start: every event the seat learns of is numbered 1, 2, 3… without
    // gaps or repeats, and each is typed (the contract needs no side channel to play a hand).
    const sequence = Number(event.sequence);
    if (sequence !== lastSeen + 1) throw new ClientError(`event sequence ${sequence} after ${lastSeen}: not one more`);
    lastSeen = sequence;
    const kind = event.kind;
    if (!kind) throw new ClientError(`event ${sequence} has no typed kind: ${JSON.stringify(event)}`);
    eventKinds.set(kind, (eventKinds.get(kind) ?? 0) + 1);
    switch (kind) {
      case 'hand_started':
        current = {
          room: room.room_id,
          table_id: ready.table_id,
          profile: short(room.rules.profile, 'PROFILE_'),
          hand_id: event.hand_started.hand_id,
          number: event.hand_started.hand_number,
          multipliers: event.hand_started.multipliers,
          seat,
          players: new Map(players),
          revealed: null,
          settled: null,
        };
        hands.push(current);
        break;
      case 'hand_revealed':
        if (current) current.revealed = event.hand_revealed;
        break;
      case 'hand_settled':
        if (!current) throw new ClientError('hand_settled before any hand_started');
        if (current.settled) throw new ClientError(`a second hand_settled for hand ${current.hand_id}`);
        current.settled = event.hand_settled;
        current.players = new Map(players);
        break;
      case 'table_ended':
        tableEnded = event.table_ended.reason || '(no reason)';
        break;
      default:
        break;
    }
  }

  function onView(view) {
    seat = view.seat;
    if (view.table) for (const s of view.table.seats) if (s.player_id) players.set(s.seat, s.player_id);
    if (current) current.players = new Map(players);
    decide(view.legal_actions);
  }

  return new Promise((resolve, reject) => {
    let done = false;
    let closing = false;
    const finish = (err) => {
      if (done) return;
      done = true;
      table.close();
      if (err) return reject(err);
      log(`table ended: ${tableEnded}; events by kind: ${[...eventKinds].map(([k, n]) => `${k} ${n}`).join(', ')}`);
      resolve(hands);
    };
    const fail = (err) => {
      if (!failure) failure = err instanceof ClientError ? err : callError('Play', err);
      stream.cancel();
      finish(failure);
    };
    stream.on('data', (response) => {
      // --dump FILE: every PlayResponse as one JSON line, as this client decoded it.
      if (session.args.dump) fs.appendFileSync(session.args.dump, `${JSON.stringify(response)}\n`);
      try {
        for (const one of flatten(response)) {
          switch (one.kind) {
            case 'event':
              onEvent(one.event);
              break;
            case 'view':
              onView(one.view);
              break;
            case 'legal_actions':
              decide(one.legal_actions);
              break;
            case 'rejected':
              throw new ClientError(
                `action ${one.rejected.client_action_id} rejected: ${one.rejected.code}: ${one.rejected.reason}`,
              );
            default:
              throw new ClientError(`a PlayResponse of no known kind: ${JSON.stringify(one)}`);
          }
        }
        if (tableEnded && !closing) {
          closing = true;
          stream.end(); // nothing more to send: close this side too
        }
      } catch (err) {
        fail(err);
      }
    });
    stream.on('error', (err) => fail(err));
    stream.on('end', () => {
      if (failure) return finish(failure);
      if (!tableEnded) return finish(new ClientError('the Play stream ended without table_ended'));
      finish(null);
    });
    // The first request carries the table ticket (bound to this seat) and the last sequence seen.
    stream.write({ table_ticket: ready.table_ticket, last_seen_sequence: 0, accept_batches: true });
  });
}

// --- what was shown against what the ledger did --------------------------------------------

function shownAmounts(hand, account, playerId) {
  // What the stream showed this player of the hand's settlement, by posting reason.
  const amounts = new Map();
  const settlement = hand.settled.settlement;
  if (!settlement) return amounts;
  for (const posting of settlement.postings) {
    if (posting.account !== account) continue;
    amounts.set(posting.reason, (amounts.get(posting.reason) ?? 0n) + big(posting.amount));
  }
  if (!amounts.has('POSTING_REASON_HAND_TRANSFER') && settlement.transfer) {
    const transfer = settlement.transfer;
    const amount = big(transfer.amount);
    if (transfer.to_player_id === playerId) amounts.set('POSTING_REASON_HAND_TRANSFER', amount);
    if (transfer.from_player_id === playerId) amounts.set('POSTING_REASON_HAND_TRANSFER', -amount);
  }
  return amounts;
}

function ledgerAmounts(entries) {
  const amounts = new Map();
  for (const entry of entries) amounts.set(entry.reason, (amounts.get(entry.reason) ?? 0n) + big(entry.amount));
  return amounts;
}

function entriesOf(ledger, hand) {
  // A hand's ledger entries name the hand in their reference (the idempotency key, wallet.proto).
  return ledger.filter((entry) => entry.reference.includes(hand.hand_id));
}

// What the ledger must hold for a hand the stream showed, before it is compared (the wallet applies
// a table's events from its own consumers, a moment after the stream shows them).
function ledgerHasCaughtUp(ledger, hands, rooms, session) {
  return hands.every((hand) => {
    const entries = entriesOf(ledger, hand);
    const reasons = new Set(entries.map((e) => e.reason));
    const shown = hand.settled ? shownAmounts(hand, session.account, session.playerId) : new Map();
    for (const [reason, amount] of shown) if (amount !== 0n && !reasons.has(reason)) return false;
    return big(rooms.get(hand.room).rules.fee) === 0n || reasons.has('POSTING_REASON_FEE');
  });
}

function checkHand(hand, ledger, room, session) {
  const problems = [];
  const where = `${hand.room} hand ${hand.number} (${hand.hand_id})`;
  if (!hand.settled) return { problems: [`${where}: no hand_settled arrived`], line: `${where}: no settlement` };
  const settlement = hand.settled.settlement;
  const entries = entriesOf(ledger, hand);
  const shown = shownAmounts(hand, session.account, session.playerId);
  const moved = ledgerAmounts(entries);

  if (!settlement) problems.push(`${where}: hand_settled carries no settlement`);
  else {
    if (settlement.hand_id !== hand.hand_id)
      problems.push(`${where}: the settlement names hand ${settlement.hand_id}`);
    const sum = settlement.postings.reduce((total, p) => total + big(p.amount), 0n);
    if (sum !== 0n) problems.push(`${where}: the settlement's postings sum to ${sum}, not 0`);
    if (settlement.transfer && big(settlement.transfer.amount) > big(settlement.fan_amount))
      problems.push(`${where}: transfer ${settlement.transfer.amount} exceeds the fan amount ${settlement.fan_amount}`);
    const outcome = hand.revealed?.outcome;
    if (outcome === 'HAND_OUTCOME_WIN' && settlement.transfer) {
      const winner = hand.players.get(hand.revealed.winner);
      if (winner && settlement.transfer.to_player_id !== winner)
        problems.push(`${where}: the transfer goes to ${settlement.transfer.to_player_id}, the winner is ${winner}`);
    }
  }

  // Every amount the stream showed this player is the ledger's, reason by reason.
  for (const [reason, amount] of shown) {
    const inLedger = moved.get(reason) ?? 0n;
    if (amount !== inLedger)
      problems.push(`${where}: shown ${short(reason, 'POSTING_REASON_')} ${amount}, the ledger moved ${inLedger}`);
  }
  // What the ledger moved that the stream did not show: only the room's fee, which ListRooms states.
  for (const [reason, amount] of moved) {
    if (shown.has(reason)) continue;
    if (reason === 'POSTING_REASON_FEE') {
      const fee = big(room.rules.fee);
      if (amount !== -fee) problems.push(`${where}: the ledger charged a fee of ${-amount}, the room's is ${fee}`);
    } else if (amount !== 0n) {
      problems.push(`${where}: the ledger moved ${short(reason, 'POSTING_REASON_')} ${amount}, never shown`);
    }
  }
  // The balance shown after the hand is the one the ledger has after the hand's last entry.
  const balance = hand.settled.balances.find((b) => b.seat === hand.seat);
  const after = entries.length ? big(entries[entries.length - 1].balance_after) : null;
  if (!balance) problems.push(`${where}: HandSettled.balances has no balance for this seat`);
  else if (after !== null && big(balance.balance) !== after)
    problems.push(`${where}: shown balance ${balance.balance}, the ledger's after the hand is ${after}`);
  if (hand.settled.balances.length && hand.settled.balances.length !== 2)
    problems.push(`${where}: HandSettled.balances has ${hand.settled.balances.length} seats, not 2`);

  const outcome = hand.revealed ? short(hand.revealed.outcome, 'HAND_OUTCOME_') : 'not revealed';
  const winner = hand.revealed?.winner && hand.revealed.winner !== 'SEAT_UNSPECIFIED' ? ` by ${seatName(hand.revealed.winner)}` : '';
  const capped = settlement?.capped_by_carry ? ' capped by a carry' : '';
  const fan = settlement ? ` fan ${settlement.total_fan} amount ${settlement.fan_amount}${capped}` : '';
  const pairs = [...new Set([...shown.keys(), ...moved.keys()])]
    .map((r) => `${short(r, 'POSTING_REASON_')} shown ${shown.has(r) ? shown.get(r) : '-'} ledger ${moved.get(r) ?? 0n}`)
    .join('; ');
  const m = hand.multipliers;
  const times = m ? ` (${m.negotiated}x negotiated, ${m.progressive}x progressive)` : '';
  const line =
    `${where}: seat ${seatName(hand.seat)}, ${outcome}${winner},${fan}${times}; ${pairs || 'nothing moved'}; ` +
    `balance shown ${balance ? balance.balance : '-'} ledger ${after ?? '-'} — ${problems.length ? 'MISMATCH' : 'ok'}`;
  return { problems, line };
}

// Every HandSettled shows both seats' ratings; this player's, per profile, run on from hand to hand
// (each starts where the last one left it), and GetRating ends where the last hand left it.
function checkRatings(hands, rooms, session, rated) {
  const problems = [];
  const lines = [];
  const last = new Map();
  for (const hand of hands) {
    if (!hand.settled) continue;
    const where = `${hand.room} hand ${hand.number}`;
    const profile = rooms.get(hand.room).rules.profile;
    if (hand.settled.ratings.length !== 2) problems.push(`${where}: HandSettled.ratings has ${hand.settled.ratings.length} seats, not 2`);
    const mine = hand.settled.ratings.find((r) => r.player_id === session.playerId);
    if (!mine) { problems.push(`${where}: HandSettled.ratings has none for this player`); continue; }
    if (mine.seat !== hand.seat) problems.push(`${where}: my rating change is for seat ${mine.seat}, I sat ${hand.seat}`);
    if (mine.after.profile !== profile) problems.push(`${where}: a ${mine.after.profile} rating moved in a ${profile} room`);
    const previous = last.get(profile);
    const start = previous ? previous.after : null;
    if (start && (start.rating !== mine.before.rating || start.hands_rated !== mine.before.hands_rated))
      problems.push(`${where}: the rating before the hand is ${mine.before.rating}, the last hand left ${start.rating}`);
    if (mine.after.hands_rated !== mine.before.hands_rated + 1)
      problems.push(`${where}: hands rated ${mine.before.hands_rated} -> ${mine.after.hands_rated}`);
    last.set(profile, mine);
  }
  for (const [profile, change] of last) {
    const now = rated.ratings.find((r) => r.profile === profile);
    if (!now || now.rating !== change.after.rating || now.deviation !== change.after.deviation)
      problems.push(`GetRating ${profile}: ${now ? now.rating : 'none'}, the last hand showed ${change.after.rating}`);
    else
      lines.push(`${short(profile, 'PROFILE_')} rating ${now.rating.toFixed(1)} ± ${now.deviation.toFixed(1)} after ${now.hands_rated} hands (conservative ${now.conservative.toFixed(1)})`);
  }
  return { problems, lines };
}

function checkLedger(ledger, balance) {
  const problems = [];
  for (let i = 1; i < ledger.length; i += 1) {
    const expected = big(ledger[i - 1].balance_after) + big(ledger[i].amount);
    if (big(ledger[i].balance_after) !== expected)
      problems.push(`ledger entry ${ledger[i].transaction_id}: balance_after ${ledger[i].balance_after}, expected ${expected}`);
  }
  const last = ledger.length ? big(ledger[ledger.length - 1].balance_after) : 0n;
  if (big(balance.balance) !== last) problems.push(`GetBalance says ${balance.balance}, the ledger's last balance is ${last}`);
  if (big(balance.held) !== 0n) problems.push(`GetBalance still holds ${balance.held} after every table closed`);
  if (big(balance.available) !== big(balance.balance) - big(balance.held))
    problems.push(`GetBalance: available ${balance.available} is not balance - held`);
  return problems;
}

// --- a spectator's stream: ListLiveTables, then Watch --------------------------------------------

function millisOf(timestamp) {
  return Number(timestamp?.seconds ?? 0) * 1000 + Number(timestamp?.nanos ?? 0) / 1e6;
}

// What only a seat may see, by event kind: a spectator is never sent it.
const SEAT_SECRETS = {
  tiles_dealt: ['tiles'],
  tile_drawn: ['tile'],
  tiles_exchanged: ['given', 'received'],
  offer_resolved: ['offer_id', 'given', 'received'],
  item_applied: ['given', 'received'],
  doubling_chosen: ['start_doubled'],
};

// Watches table `tableId` of `roomId` until its end; resolves with what was seen and the problems.
async function watchTable(session, roomId, tableId) {
  const listed = await unary(session.matchmaking, 'ListLiveTables', { room_id: roomId }, session.metadata);
  const summary = listed.tables.find((t) => t.table_id === tableId);
  if (!summary) throw new ClientError(`ListLiveTables(${roomId}) does not list the table ${tableId}`);
  const delayMillis = summary.spectate_delay_seconds * 1000;
  const table = new session.contract.TableService(
    summary.address,
    channelCredentials(session.args),
    channelOptions(summary.address, session.args),
  );
  const stream = table.Watch({ table_id: tableId, last_seen_sequence: 0 }, session.metadata);
  const seen = { summary, state: null, kinds: new Map(), last: 0, minLag: Infinity, problems: [] };
  return new Promise((resolve, reject) => {
    stream.on('data', (response) => {
      if (response.kind === 'state') {
        if (seen.state || seen.last) seen.problems.push('a second WatchResponse.state on a fresh watch');
        seen.state = response.state;
        seen.last = Number(response.state.sequence);
        return;
      }
      const event = response.event;
      if (!seen.state) seen.problems.push('the first WatchResponse is not the delayed table state');
      if (!event || !event.kind) {
        seen.problems.push(`a spectator event without a typed kind: ${JSON.stringify(response)}`);
        return;
      }
      if (Number(event.sequence) !== seen.last + 1) seen.problems.push(`spectator event ${event.sequence} after ${seen.last}`);
      seen.last = Number(event.sequence);
      seen.kinds.set(event.kind, (seen.kinds.get(event.kind) ?? 0) + 1);
      const lag = Date.now() - millisOf(event.occurred_at);
      seen.minLag = Math.min(seen.minLag, lag);
      if (lag + 1 < delayMillis) seen.problems.push(`event ${event.sequence} came ${lag} ms after it happened, before the ${delayMillis} ms delay`);
      for (const field of SEAT_SECRETS[event.kind] ?? []) {
        if (event[event.kind][field]) seen.problems.push(`a spectator was shown ${event.kind}.${field} (event ${event.sequence})`);
      }
      if (event.kind === 'offer_made' && event.offer_made.offer) seen.problems.push('a spectator was shown an offer');
    });
    stream.on('error', (err) => reject(callError('Watch', err)));
    stream.on('end', () => {
      if (!seen.kinds.has('table_ended')) seen.problems.push('the spectator stream ended before table_ended');
      table.close();
      resolve(seen);
    });
  });
}

// --- the archive: match history and replays ------------------------------------------------

function tablesOf(hands) {
  const tables = new Map(); // table id -> its hands, in order
  for (const hand of hands) tables.set(hand.table_id, [...(tables.get(hand.table_id) ?? []), hand]);
  return tables;
}

function ledgerOfTable(ledger, tableId) {
  // Every entry of the table's hands, exchanges, items and guesses names the table in its reference.
  return ledger.filter((entry) => entry.reference.includes(tableId)).reduce((sum, e) => sum + big(e.amount), 0n);
}

// Until the archive holds every table's hands, settled, with the ledger's figures (or the wait ends).
async function archivedMatches(session, tables, ledger) {
  const until = Date.now() + ARCHIVE_WAIT_SECONDS * 1000;
  for (;;) {
    const matches = await session.matches();
    const byTable = new Map(matches.map((m) => [m.table_id, m]));
    const ready = [...tables].every(
      ([tableId, played]) =>
        byTable.get(tableId)?.hands === played.length &&
        big(byTable.get(tableId).prestige_moved) === ledgerOfTable(ledger, tableId),
    );
    if (ready || Date.now() > until) return byTable;
    await sleep(200);
  }
}

async function checkArchive(session, hands, ledger, log) {
  const problems = [];
  const tables = tablesOf(hands);
  const byTable = await archivedMatches(session, tables, ledger);
  for (const [tableId, played] of tables) {
    const where = `archive ${played[0].room} ${tableId}`;
    const match = byTable.get(tableId);
    if (!match) {
      problems.push(`${where}: ListMatches does not list the table`);
      continue;
    }
    if (match.room_id !== played[0].room) problems.push(`${where}: room ${match.room_id}`);
    if (match.profile !== `PROFILE_${played[0].profile.toUpperCase()}`) problems.push(`${where}: profile ${match.profile}`);
    if (match.player.player_id !== session.playerId || match.player.seat !== played[0].seat)
      problems.push(`${where}: the player is ${match.player.player_id} in seat ${match.player.seat}`);
    if (!match.opponent_is_bot) problems.push(`${where}: the house bot opponent ${match.opponent.player_id} is not marked a bot`);
    if (match.hands !== played.length) problems.push(`${where}: ${match.hands} hands archived, ${played.length} played`);
    const outcomes = played.map((hand) => short(hand.revealed?.outcome, 'HAND_OUTCOME_'));
    const won = played.filter((h) => h.revealed?.outcome === 'HAND_OUTCOME_WIN' && h.revealed.winner === h.seat).length;
    const drawn = outcomes.filter((o) => o === 'drawn').length;
    if (match.hands_won !== won || match.hands_drawn !== drawn)
      problems.push(`${where}: won ${match.hands_won} drawn ${match.hands_drawn}, the stream showed ${won} and ${drawn}`);
    const moved = ledgerOfTable(ledger, tableId);
    if (big(match.prestige_moved) !== moved) problems.push(`${where}: prestige moved ${match.prestige_moved}, the ledger ${moved}`);
    if (!['MATCH_RESULT_WON', 'MATCH_RESULT_LOST', 'MATCH_RESULT_EVEN'].includes(match.result))
      problems.push(`${where}: result ${match.result}`);
    if (!match.started_at || big(match.last_hand_at?.seconds) < big(match.started_at.seconds))
      problems.push(`${where}: started ${JSON.stringify(match.started_at)}, last hand ${JSON.stringify(match.last_hand_at)}`);

    const last = played[played.length - 1];
    const reply = await unary(session.archive, 'GetReplay', { hand_id: last.hand_id }, session.metadata);
    const replay = reply.replay;
    const steps = replay.steps;
    const final = steps.length ? steps[steps.length - 1] : null;
    if (replay.hand_id !== last.hand_id || replay.table_id !== tableId || replay.pairing_id !== match.pairing_id)
      problems.push(`${where}: the replay is of ${replay.hand_id} at ${replay.table_id}`);
    if (replay.result?.hand_id !== last.hand_id || replay.result.outcome !== `ARCHIVED_OUTCOME_${last.revealed ? { win: 'WIN', drawn: 'DRAWN', escape: 'ESCAPE' }[short(last.revealed.outcome, 'HAND_OUTCOME_')] : 'VOID'}`)
      problems.push(`${where}: the replay's result is ${JSON.stringify(replay.result?.outcome)}`);
    if (final?.kind !== 'event' || final.event.first_seat?.kind !== 'hand_revealed')
      problems.push(`${where}: the replay's last step is ${final?.kind} ${final?.event?.first_seat?.kind}, not hand_revealed`);
    else if (!final.state.seats.every((s) => s.concealed || s.melds.length))
      problems.push(`${where}: the replay's last state hides a hand`);
    if (replay.fairness?.seed?.length !== 8 || replay.fairness.commitment.length !== 32)
      problems.push(`${where}: the replay's fairness proof has a ${replay.fairness?.seed?.length}-byte seed`);
    if (replay.deal?.dealt?.length !== 2 || !replay.deal.dealt.every((seat) => seat.concealed))
      problems.push(`${where}: the replay's deal does not show both hands`);
    log(
      `${where}: ${match.hands} hands (won ${match.hands_won}, lost ${match.hands_lost}, drawn ${match.hands_drawn}), ` +
        `prestige moved ${match.prestige_moved}, ${short(match.result, 'MATCH_RESULT_')}; replay of ${last.hand_id}: ` +
        `${steps.length} steps ending in ${final?.event?.first_seat?.kind}`,
    );
  }
  try {
    await unary(session.archive, 'GetReplay', { hand_id: 'no-such-table-h1' }, session.metadata);
    problems.push('GetReplay of an unknown hand answered');
  } catch (err) {
    if (!String(err.message).includes('NOT_FOUND')) problems.push(`GetReplay of an unknown hand: ${err.message}`);
  }
  return problems;
}

// --- main ------------------------------------------------------------------------------------

function parseArgs(argv) {
  const args = {
    wallet: '',
    matchmaking: '',
    scoring: '',
    rooms: [],
    hands: 2,
    carry: 500,
    multiplier: 2,
    name: 'node-client',
    timeoutSeconds: 75,
    watch: '',
    followSeconds: 30,
    proto: path.resolve(__dirname, '..', '..', 'proto'),
    dump: '',
    caFile: '',
    stateFile: '',
    plaintext: false,
  };
  for (let i = 0; i < argv.length; i += 1) {
    const flag = argv[i];
    if (flag === '--plaintext') {
      args.plaintext = true;
      continue;
    }
    const value = argv[i + 1];
    if (value === undefined) throw new ClientError(`${flag} needs a value`);
    i += 1;
    switch (flag) {
      case '--wallet': args.wallet = value; break;
      case '--matchmaking': args.matchmaking = value; break;
      case '--scoring': args.scoring = value; break;
      case '--room': args.rooms.push(value); break;
      case '--hands': args.hands = Number(value); break;
      case '--carry': args.carry = Number(value); break;
      case '--multiplier': args.multiplier = Number(value); break;
      case '--name': args.name = value; break;
      case '--timeout-seconds': args.timeoutSeconds = Number(value); break;
      case '--proto': args.proto = path.resolve(value); break;
      case '--dump': args.dump = path.resolve(value); break;
      case '--watch': args.watch = value; break;
      case '--follow-seconds': args.followSeconds = Number(value); break;
      case '--ca-file': args.caFile = path.resolve(value); break;
      case '--state-file': args.stateFile = path.resolve(value); break;
      default: throw new ClientError(`unknown option ${flag}`);
    }
  }
  if (!args.wallet || !args.matchmaking || args.rooms.length === 0)
    throw new ClientError('usage: client.js --wallet HOST:PORT --matchmaking HOST:PORT --room ROOM [--room ROOM…]');
  if (!(args.hands >= 1)) throw new ClientError('--hands must be at least 1');
  resolveTls(args);
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const timer = setTimeout(() => {
    console.error(`node client: ERROR: not done within ${args.timeoutSeconds}s`);
    process.exit(2);
  }, args.timeoutSeconds * 1000);
  const session = new Session(loadContract(args.proto), args);
  const log = (line) => console.log(`  ${line}`);
  try {
    await session.login(args.name);
    const start = await session.balance();
    console.log(`logged in as ${session.playerId} (${args.name}), balance ${start.balance}`);
    const rooms = await session.rooms();
    const hands = [];
    const watchProblems = [];
    const [firstRoom, firstCarry] = args.rooms[0].split(':');
    const privateProblems = rooms.has(firstRoom)
      ? await checkPrivateTable(session, rooms.get(firstRoom), Number(firstCarry ?? args.carry), log)
      : [];
    for (const wanted of args.rooms) {
      const [roomId, carryText] = wanted.split(':');
      const carry = carryText === undefined ? args.carry : Number(carryText);
      const room = rooms.get(roomId);
      if (!room) throw new ClientError(`ListRooms has no room ${roomId} (it lists ${[...rooms.keys()].join(', ')})`);
      const rules = room.rules;
      console.log(
        `room ${roomId} (${short(rules.profile, 'PROFILE_')}, 1 fan = ${rules.fan_rate}, fee ${rules.fee}), carry ${carry}`,
      );
      const ready = await session.findTable(room, carry, log);
      log(`table ${ready.table_id} at ${ready.address}, seat ${seatName(ready.seat)}`);
      const watching = args.watch === roomId ? watchTable(session, roomId, ready.table_id) : null;
      watching?.catch(() => {}); // awaited below, after the play: not an unhandled rejection meanwhile
      const played = await playTable(session, ready, room, log);
      if (watching) {
        const seen = await watching;
        const kinds = [...seen.kinds.keys()].join(', ');
        log(
          `watched table ${ready.table_id} as a spectator (delay ${seen.summary.spectate_delay_seconds} s): ` +
            `state at ${seen.state?.sequence}, then events up to ${seen.last} (${kinds}), the earliest ${seen.minLag} ms after it happened`,
        );
        watchProblems.push(...seen.problems);
        if (!seen.kinds.has('tile_discarded')) watchProblems.push('the spectator saw no discard');
      }
      if (played.length !== args.hands) throw new ClientError(`${roomId}: ${played.length} hands played, ${args.hands} wanted`);
      hands.push(...played);
      await session.holdsReleased(); // the next Enqueue needs the carry back
    }

    let ledger = await session.history();
    let balance = await session.balance();
    const waitUntil = Date.now() + LEDGER_WAIT_SECONDS * 1000;
    while ((!ledgerHasCaughtUp(ledger, hands, rooms, session) || big(balance.held) !== 0n) && Date.now() < waitUntil) {
      await sleep(200);
      ledger = await session.history();
      balance = await session.balance();
    }

    const problems = [];
    console.log('settlements, as shown on the Play stream and as in ListHistory:');
    for (const hand of hands) {
      const checked = checkHand(hand, ledger, rooms.get(hand.room), session);
      console.log(`  ${checked.line}`);
      problems.push(...checked.problems);
    }
    problems.push(...checkLedger(ledger, balance));
    problems.push(...watchProblems);
    problems.push(...privateProblems);
    const ratings = checkRatings(hands, rooms, session, await session.ratings());
    for (const line of ratings.lines) console.log(`  ${line}`);
    problems.push(...ratings.problems);
    console.log(`balance ${start.balance} -> ${balance.balance} (held ${balance.held}); ${ledger.length} ledger entries`);
    if (session.archive) {
      console.log('match history and replays (ArchiveService):');
      problems.push(...(await checkArchive(session, hands, ledger, log)));
    }
    if (problems.length) {
      console.log(`node client: FAILED: ${problems.length} mismatch(es) between the stream and the ledger:`);
      for (const problem of problems) console.log(`  - ${problem}`);
      process.exitCode = 1;
    } else {
      console.log(`node client: OK: ${hands.length} hands in ${args.rooms.length} rooms, every settlement shown equals the ledger`);
    }
  } finally {
    clearTimeout(timer);
    session.close();
  }
}

if (require.main === module) {
  main().catch((err) => {
    console.error(`node client: ERROR: ${err instanceof ClientError ? err.message : err.stack || err}`);
    process.exit(2);
  });
}

module.exports = { loadContract, Session, ClientError };
