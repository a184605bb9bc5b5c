"""A finished hand as a record a player can open and check: the commitment to its randomness
(:mod:`~duelmahjong.replay.fairness`), the ``Replay`` built from its table's log
(:mod:`~duelmahjong.replay.build`) and its verification from the seed
(:mod:`~duelmahjong.replay.verify`). docs/protocol.md "Provably fair walls" explains the scheme.
"""
