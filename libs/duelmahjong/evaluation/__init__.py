"""Duplicate evaluation of table agents (``duel evaluate``, docs/evaluation.md): the agents and what
they may see, one wall played twice with the seats swapped, the settlement in 1番 units, statistics."""
