"""What every client of this package is: an ``async with`` block that closes its channels at the end."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Closing:
    """``async with Client(...) as client:`` … closes the client (its gRPC channels) on the way out."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        raise NotImplementedError
