"""A TLS-terminating TCP proxy on 127.0.0.1 for tests: clients speak TLS to it, it forwards the bytes
in the clear to a real peer (e.g. librdkafka's mock cluster), so TLS is tested against a real broker."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading


class TlsProxy:
    def __init__(self, backend: tuple[str, int], context: ssl.SSLContext) -> None:
        self.backend = backend
        self.context = context
        self.port = 0
        self.connections = 0
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

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
        self._tasks.add(task)  # type: ignore[arg-type]
        try:
            b_reader, b_writer = await asyncio.open_connection(*self.backend)
            await asyncio.gather(self._pipe(reader, b_writer), self._pipe(b_reader, writer))
        except (ConnectionError, OSError, asyncio.CancelledError):
            writer.close()
        finally:
            self._tasks.discard(task)  # type: ignore[arg-type]

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def start() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.context)
            self.port = self._server.sockets[0].getsockname()[1]
            self._ready.set()

        self.loop.run_until_complete(start())
        self.loop.run_forever()

    def __enter__(self) -> TlsProxy:
        self._thread.start()
        assert self._ready.wait(5), "TLS proxy did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            for t in list(self._tasks):
                t.cancel()
            await asyncio.sleep(0)

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()
