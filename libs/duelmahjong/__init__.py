"""Duel Mahjong backend: pure libraries (rules, engine), service plumbing (platform) and the CLI.

Generated protobuf code lives in ``duelmahjong.v1`` (``make gen``).
"""
