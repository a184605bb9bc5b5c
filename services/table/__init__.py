"""The table service: live tables, one asyncio task each, and their Play streams.

Who owns what (each message family is built in one module, from engine values or the table's state):

- ``main``: the composition root (:class:`~services.table.main.TableServer`); ``config``: settings;
  ``api``: the gRPC servicer and its replies (``OpenTableResponse``, tickets, edge refusals);
- ``core``: the host (live tables, capacity, drain) and the check of an ``OpenTable`` request;
  ``ports``: what a live table is given (``OpenRequest``, the bus ports, what it reads of its host);
- ``live``: one live table (its inbox, its task, the checks of a seat's request, the BUSY refusal and
  ``GetTableStatusResponse``); ``live_state``: its declared state; ``broadcast``: what its seats are
  shown (``PlayResponse``, ``ActionRejected``), written ahead first; ``hands``: what moves its hands
  on, one collaborator per phase, put together: ``dealing`` (a hand dealt, the items chosen for it
  spent), ``steps`` (a hand in play: each action applied, the next decisions), ``charges`` (the items
  and paid exchanges a hand spends, told to the wallet as they are shown), ``settling`` (a hand's end:
  SETTLING until the wallet's answer comes as an inbox message), ``between`` (between hands: continue
  or leave), ``timers`` (deadlines, 托管, claim windows passed);
  ``seats``: one seat's stream and clocks; ``tickets``: table tickets;
- in ``duelmahjong.views`` (a library, so the replay and the scoring service build the same messages):
  ``codec``, the contract's words for engine values — seats, phases, room rules, actions and legal
  actions, refusal texts, timestamps; ``seat_views``: ``SeatView`` and ``LegalActions`` (and the tile,
  task, meld and river pieces seat messages share); ``seat_events``: ``SeatEvent`` (engine events as a
  seat sees them, the table's own events); ``items``: ``ItemCount``, ``ItemUsed`` (T6);
- ``records``: the write-ahead log's ``TableLogRecord``; ``rebuild``: a live table's state rebuilt
  from its log (pure); ``results``: ``HandResult``, ``ExchangeCharged``, ``GuessResolved``;
- on NATS: ``wal`` (``TableEventAppended``, and a table's log read back), ``publishers`` (envelopes,
  ``HandEnded``, ``TableOpened``, ``TableClosed``, the events above), ``settlements`` (the wallet's
  ``SettlementApplied``), ``announcer`` (``TableServerAnnounced``); ``metrics``: the server's metrics;
- ``spectators``: ``Watch`` — a table's public events, delayed, for any number of spectators, derived
  from what the table keeps and its log rebuilds;
- keeping tables past their server: ``ownership`` (leases and owner records in a JetStream key-value
  bucket), ``adoption`` (the loop that serves orphans and hand-offs), ``failover`` (claims on open,
  adoption from the log, letting a taken table go, drain as hand-off).
"""
