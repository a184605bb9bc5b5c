"""A small asyncio gRPC client of the backend, for game clients, bots, the demo and the tests.

- :class:`~duelmahjong.client.session.DuelClient` — login (wallet), rooms, queue and T7 negotiation
  (matchmaking), then :meth:`~duelmahjong.client.session.DuelClient.play` at the table.
- :mod:`duelmahjong.client.play` — one seat's ``Play`` stream driven by a policy and a
  :class:`~duelmahjong.client.play.MatchPlan` (how many hands, or escape).
- :mod:`duelmahjong.client.spectate` — a spectator's ``Watch`` stream of a live table, following it
  when it moves (:meth:`~duelmahjong.client.session.DuelClient.live_tables`, ``watch``).
- :class:`~duelmahjong.client.history.MatchHistory` — a player's pairings, their hands and the
  replay of any finished hand (scoring's ``ArchiveService``).
- :mod:`duelmahjong.client.policy` — :class:`~duelmahjong.client.policy.BaselineBot`, the engine's
  bot over the seat's view.
"""
