"""The proxy's listeners: one per upstream broker, opened on demand (asyncio).

:class:`AddressBook` maps each broker address the upstream advertises (``(host, port)`` as written in
a Metadata, FindCoordinator, DescribeCluster, ... response) to a listener of the proxy on its listen
host; a client sent to that listener is connected to that broker. The first listener is the one for
``--upstream``; the others are opened the first time a response names their broker. Their number is
bounded (``limit``): past it, further brokers are not given a listener and their addresses are left
as the upstream wrote them (the caller reports it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable

__all__ = ["AddressBook", "Endpoint", "Handler"]

Endpoint = tuple[str, int]
#: Called for each client accepted on a listener: (reader, writer, the broker it leads to, the listener).
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, Endpoint, Endpoint], Awaitable[None]]


class AddressBook:
    """Upstream broker address -> proxy listener (see the module docstring)."""

    def __init__(self, host: str, handler: Handler, *, limit: int = 256) -> None:
        self.host = host
        self.limit = limit
        self._handler = handler
        self._local: dict[Endpoint, Endpoint] = {}
        self._servers: list[asyncio.Server] = []
        self._lock = asyncio.Lock()

    def __len__(self) -> int:
        return len(self._local)

    def items(self) -> list[tuple[Endpoint, Endpoint]]:
        """(broker, listener) pairs, in the order the listeners were opened."""
        return list(self._local.items())

    def local_for(self, upstream: Endpoint) -> Endpoint | None:
        return self._local.get(upstream)

    async def open(self, upstream: Endpoint, port: int = 0) -> Endpoint:
        """A listener on ``port`` (0: any free one) leading to ``upstream``; its address."""
        found = self._local.get(upstream)
        if found is not None:
            return found

        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._handler(reader, writer, upstream, local)

        server = await asyncio.start_server(accept, self.host, port)
        sockname = server.sockets[0].getsockname()
        local: Endpoint = (str(sockname[0]), int(sockname[1]))
        self._servers.append(server)
        self._local[upstream] = local
        return local

    async def ensure(self, upstreams: Iterable[Endpoint]) -> tuple[dict[Endpoint, Endpoint], list[Endpoint]]:
        """Listeners for every address of ``upstreams``: (address -> listener, the addresses newly
        given one). Addresses past the limit are left out of the mapping."""
        opened: list[Endpoint] = []
        async with self._lock:
            for ep in upstreams:
                if ep in self._local:
                    continue
                if len(self._local) >= self.limit:
                    continue
                await self.open(ep)
                opened.append(ep)
        mapping = {ep: self._local[ep] for ep in upstreams if ep in self._local}
        return mapping, opened

    def close(self) -> None:
        """Stop accepting on every listener."""
        for server in self._servers:
            server.close()

    async def wait_closed(self) -> None:
        for server in self._servers:
            await server.wait_closed()
