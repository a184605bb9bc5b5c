"""House bots beyond the baseline (:mod:`duelmahjong.engine.bot`): pure decision functions over a
seat's state, with the baseline's signature ``choose(state, seat, legal) -> Action``."""
