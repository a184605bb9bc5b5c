"""``duel play``: a terminal client a person plays whole hands with (prompt_toolkit).

:mod:`tiles` draws tiles (Unicode mahjong tiles or plain letters), :mod:`guest` remembers the guest
player between runs, :mod:`lobby` is the way to a table (rooms, carry, private codes, T7
negotiation) and :mod:`screens` its screens, :mod:`seat` is the person's seat at the table (what
the stream showed, the decision offered and the keys that answer it; :mod:`choices` numbers the
actions, :mod:`events` words the events), :mod:`board` and :mod:`settlement` draw the table, and
:mod:`app` runs it all in one full-screen prompt_toolkit application on the gRPC event loop.
"""
