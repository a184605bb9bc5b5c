"""Finished hands as supervised-learning data, with their players' consent (issue 30; ``duel export``).

- :mod:`.encoding` — the one seam between a hand and a record: a :data:`DecisionEncoder` turns the
  engine's table before a decision, the deciding seat and its action into the record's fields; the
  :func:`view_encoder` shipped here writes the seat's own view (what that seat saw, nothing more).
- :mod:`.decisions` — a ``Replay`` played through the engine, each decision of the wanted seats
  encoded on the table as it stood.
- :mod:`.rewards` — a seat's reward for a hand: what the wallet moved for it, in 1番.
- :mod:`.records` — one JSON line per decision: the encoder's fields and the hand's metadata.
- :mod:`.archive` — which hands may be exported: players who share (wallet), their archived hands
  (scoring's archive), read with an admin token.
- :mod:`.exporter` — the whole run: hands in, JSON lines out, and what was left out and why.
"""
