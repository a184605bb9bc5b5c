"""Mahjong rules for the ``duel`` (决斗麻将) and ``erren`` (二人麻将) profiles.

Pure: no network, no protobuf.
"""
