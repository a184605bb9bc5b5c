"""A TCP relay that stands for a server's address and can drop every connection at once, as a killed
process does (no GOAWAY: the sockets close under the calls), and stop answering at that address."""

from __future__ import annotations

import asyncio


class Relay:
    """A TCP relay to ``upstream``; :meth:`cut` drops every connection and the listener at once
    (synchronously: nothing written after it reaches the server)."""

    def __init__(self) -> None:
        self.upstream = ""
        self._server: asyncio.Server | None = None
        self._transports: list[asyncio.WriteTransport] = []
        self.cut_done = False

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._connected, "127.0.0.1", 0)
        return f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, port = self.upstream.rsplit(":", 1)
        try:
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
        except OSError:  # nothing answers upstream: neither does the relay
            writer.transport.abort()
            return
        self._transports += [writer.transport, up_writer.transport]

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            while not self.cut_done and (data := await source.read(65536)):
                if self.cut_done:
                    return
                sink.write(data)

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True)
        for transport in (writer.transport, up_writer.transport):
            transport.close()

    def cut(self) -> None:
        self.cut_done = True
        self.close()

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for transport in self._transports:
            transport.abort()
