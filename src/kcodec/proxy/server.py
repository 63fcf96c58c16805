"""The proxy: listeners, sessions, live decoding and the pcap, started and stopped together (asyncio).

:class:`Proxy` opens a listener for the ``upstream`` broker on ``listen``; each client accepted there
(or on a per-broker listener opened later, see :mod:`kcodec.proxy.listeners`) runs as a
:class:`~kcodec.proxy.session.Session`. Connections are numbered 1, 2, ... in the order they are
accepted, as ``kcodec decode-capture`` numbers them in the recorded pcap. Every event (decoded frames
and stream issues of the capture decoder, and the proxy's own :class:`~kcodec.proxy.events.ProxyNotice`)
goes to ``on_event`` as it happens, on the event loop's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kcodec.capture.framing import MAX_FRAME_SIZE
from kcodec.capture.segments import endpoint
from kcodec.proxy.errors import ProxySetupError
from kcodec.proxy.events import ProxyEvent, ProxyNotice
from kcodec.proxy.listeners import AddressBook, Endpoint
from kcodec.proxy.pcap import PcapWriter, capture_time
from kcodec.proxy.session import Session, SessionLimits
from kcodec.proxy.tap import Tap

__all__ = ["Proxy", "ProxyConfig", "ProxyStats"]


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    """What the proxy listens on and forwards to, and its bounds.

    ``listen``: the first listener (port 0: any free port); its host must be an address clients can
    be sent to, since the per-broker listeners are opened on it and advertised with it.
    ``decode``: run the live decoder (its events go to ``on_event``); ``limits``: timeouts, the frame
    limit, buffer sizes and whether advertised broker addresses are rewritten. ``max_listeners``
    bounds the per-broker listeners, ``max_connections`` the client connections open at a time (more
    are closed on arrival)."""

    listen: Endpoint
    upstream: Endpoint
    limits: SessionLimits = field(default_factory=SessionLimits)
    max_listeners: int = 256
    max_connections: int = 1024
    decode: bool = True
    strict: bool = False


@dataclass(slots=True)
class ProxyStats:
    accepted: int = 0
    refused: int = 0
    open: int = 0
    request_bytes: int = 0
    response_bytes: int = 0
    rewritten: int = 0


def _listen_host(host: str) -> str:
    """``host`` as one IP address (the first it resolves to); wildcards are refused."""
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError as e:
            raise ProxySetupError(f"cannot resolve listen host {host!r}: {e.strerror or e}") from None
        addr = ipaddress.ip_address(str(infos[0][4][0]))
    if addr.is_unspecified:
        raise ProxySetupError(
            f"listen host {host} is a wildcard: give the address clients reach the proxy on (the "
            "per-broker listeners are opened on it and advertised to clients with it)"
        )
    return str(addr)


def _is_itself(upstream: Endpoint, listener: Endpoint) -> bool:
    """Whether connecting to ``upstream`` reaches ``listener`` (the same port at its address, a name
    for it, or the wildcard address, which a connection takes for the local host)."""
    host, port = upstream
    if port != listener[1]:
        return False
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return False  # (a name that does not resolve: the sessions say so)
    mine = ipaddress.ip_address(listener[0])
    for info in infos:
        addr = ipaddress.ip_address(str(info[4][0]).partition("%")[0])
        if addr == mine or addr.is_unspecified:
            return True
    return False


class Proxy:
    """See the module docstring. ``await start()``, then ``await stop()`` (or ``async with``)."""

    def __init__(
        self,
        config: ProxyConfig,
        on_event: Callable[[ProxyEvent], None] | None = None,
        pcap: PcapWriter | None = None,
    ) -> None:
        self.config = config
        self.stats = ProxyStats()
        self._on_event = on_event
        self._pcap = pcap
        self._next_number = 1
        self._tasks: set[asyncio.Task[Any]] = set()  # one per session
        self._handlers: set[asyncio.Task[Any]] = set()  # asyncio's, one per accepted connection
        self._book: AddressBook | None = None
        self.address: Endpoint | None = None

    @property
    def listeners(self) -> list[tuple[Endpoint, Endpoint]]:
        """(broker, proxy listener) pairs, the first one for ``upstream``."""
        return [] if self._book is None else self._book.items()

    async def start(self) -> Endpoint:
        """Open the first listener; its address."""
        host = _listen_host(self.config.listen[0])
        self._book = AddressBook(host, self._accept, limit=self.config.max_listeners)
        try:
            self.address = await self._book.open(self.config.upstream, self.config.listen[1])
        except OSError as e:
            reason = os.strerror(e.errno) if e.errno else str(e)
            raise ProxySetupError(
                f"cannot listen on {endpoint(host, self.config.listen[1])}: {reason}"
            ) from None
        if _is_itself(self.config.upstream, self.address):
            self._book.close()
            with contextlib.suppress(OSError):
                await self._book.wait_closed()
            raise ProxySetupError(
                f"the upstream broker {endpoint(*self.config.upstream)} is this proxy's own listener "
                f"{endpoint(*self.address)}: it would forward every connection to itself"
            )
        self._emit(
            ProxyNotice(
                capture_time(),
                "listening",
                f"{endpoint(*self.address)} leads to broker {endpoint(*self.config.upstream)}",
                details={"listener": endpoint(*self.address), "broker": endpoint(*self.config.upstream)},
            )
        )
        return self.address

    async def stop(self) -> None:
        """Stop accepting, end every connection (both sides closed, the tap finished), flush the pcap."""
        if self._book is not None:
            self._book.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*self._handlers, return_exceptions=True)  # they end with their sessions
        if self._book is not None:
            with contextlib.suppress(OSError):
                await self._book.wait_closed()
        if self._pcap is not None:
            self._pcap.flush()

    async def __aenter__(self) -> Proxy:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _emit(self, event: ProxyEvent) -> None:
        if self._on_event is not None:
            self._on_event(event)

    async def _accept(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: Endpoint, local: Endpoint
    ) -> None:
        number = self._next_number
        self._next_number += 1
        peer = writer.get_extra_info("peername")
        client: Endpoint = (str(peer[0]), int(peer[1]))
        sink = self._emit if self.config.decode and self._on_event is not None else None
        tap = Tap(
            number,
            client,
            local,
            sink,
            self._pcap,
            strict=self.config.strict,
            max_frame_size=max(self.config.limits.max_frame_size, MAX_FRAME_SIZE),
        )
        assert self._book is not None
        session = Session(
            number, reader, writer, upstream, tap, self.config.limits, self._book.ensure, self._emit
        )
        self.stats.accepted += 1
        if self.stats.open >= self.config.max_connections:
            self.stats.refused += 1
            tap.opened()
            session.notice(
                "protocol", f"{self.stats.open} connections are open (the limit); closed on arrival"
            )
            writer.transport.abort()
            tap.closed("server", reset=True)
            return
        # The session runs in a task of its own, which stop() cancels; this handler task (asyncio's, for
        # the accepted connection) only waits for it and never ends cancelled itself (asyncio would
        # report that as an error).
        handler = asyncio.current_task()
        task = asyncio.create_task(self._run(session))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if handler is not None:
            self._handlers.add(handler)
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            task.cancel()
        finally:
            if handler is not None:
                self._handlers.discard(handler)

    async def _run(self, session: Session) -> None:
        self.stats.open += 1
        try:
            await session.run()
        finally:
            self.stats.open -= 1
            self.stats.request_bytes += session.sent["request"]
            self.stats.response_bytes += session.sent["response"]
            self.stats.rewritten += session.rewritten
            if self._pcap is not None:
                self._pcap.flush()
