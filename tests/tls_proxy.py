"""A TLS-terminating TCP proxy on 127.0.0.1 for tests: clients speak TLS to it, it forwards the bytes
in the clear to a real peer (e.g. librdkafka's mock cluster), so TLS is tested against a real broker."""

from __future__ import annotations

import asyncio
import contextlib
import ssl

from loop_server import LoopServer


class TlsProxy(LoopServer):
    kind = "TLS proxy"

    def __init__(self, backend: tuple[str, int], context: ssl.SSLContext) -> None:
        super().__init__(context)
        self.backend = backend
        self.context = context
        self.connections = 0

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, ssl.SSLError, asyncio.CancelledError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            b_reader, b_writer = await asyncio.open_connection(*self.backend)
            await asyncio.gather(self._pipe(reader, b_writer), self._pipe(b_reader, writer))
        except (ConnectionError, OSError, asyncio.CancelledError):
            writer.close()
        finally:
            self._tasks.discard(task)

