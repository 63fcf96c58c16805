"""A test server on 127.0.0.1 whose asyncio loop runs in a thread of its own (the plumbing the fake,
SASL/TLS and proxy test peers share): a context manager that starts it on a free port and, on exit,
closes it, cancels its connection tasks and stops the thread."""

from __future__ import annotations

import asyncio
import ssl
import threading
from typing import Any, Self


class LoopServer:
    """Subclasses implement ``_handle`` (adding their task to ``_tasks`` so that exit cancels it)."""

    #: named in the assertion when the server does not start
    kind = "test server"

    def __init__(self, server_ssl: ssl.SSLContext | None = None) -> None:
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._server_ssl = server_ssl
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def start() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self._server_ssl)
            self.port = self._server.sockets[0].getsockname()[1]
            self._ready.set()

        self.loop.run_until_complete(start())
        self.loop.run_forever()

    def __enter__(self) -> Self:
        self._thread.start()
        assert self._ready.wait(5), f"{self.kind} did not start"
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
