"""Levels (级别) by prestige: a configurable table of thresholds.

>>> table = LevelTable.parse("0:新手,1000:熟手,5000:高手")
>>> table.level_of(0), table.level_of(999), table.level_of(1000), table.level_of(10**9)
((1, '新手'), (1, '新手'), (2, '熟手'), (3, '高手'))
>>> LevelTable.parse("100:新手")
Traceback (most recent call last):
...
ValueError: the first level must start at 0 prestige, got 100
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

# The seeds name no levels; a simple doubling-ish ladder until operators configure their own.
DEFAULT_LEVELS = "0:新手,1000:入门,3000:熟手,10000:高手,30000:专家,100000:大师,300000:宗师"


@dataclass(frozen=True)
class LevelTable:
    thresholds: tuple[int, ...]
    names: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> LevelTable:
        thresholds: list[int] = []
        names: list[str] = []
        for part in text.split(","):
            threshold, sep, name = part.strip().partition(":")
            if not sep or not name.strip():
                raise ValueError(f"level {part.strip()!r} is not 'min_prestige:name'")
            try:
                value = int(threshold)
            except ValueError:
                raise ValueError(f"level {part.strip()!r}: {threshold!r} is not an integer") from None
            if thresholds and value <= thresholds[-1]:
                raise ValueError(f"level thresholds must ascend: {value} after {thresholds[-1]}")
            thresholds.append(value)
            names.append(name.strip())
        if thresholds[0] != 0:
            raise ValueError(f"the first level must start at 0 prestige, got {thresholds[0]}")
        return cls(tuple(thresholds), tuple(names))

    def level_of(self, prestige: int) -> tuple[int, str]:
        """(1-based level number, name) for a prestige balance."""
        index = max(0, bisect.bisect_right(self.thresholds, prestige) - 1)
        return index + 1, self.names[index]
