"""Minimal Kafka network clients: a blocking :class:`Connection` and an asyncio :class:`AsyncConnection`.

Both frame requests with :func:`kcodec.encode_request`, give each one a fresh correlation id, match
responses by correlation id (responses may arrive in any order, so requests can be pipelined) and decode
every response at the version of its request. Errors are the typed ones of :mod:`kcodec.net.client_errors`.

Transports are pluggable so that TLS and SASL can be layered on without changing this module:

* ``Connection(..., socket_factory=f)``: ``f(host, port, timeout)`` returns a connected socket-like
  object (``sendall``, ``recv``, ``settimeout``, ``close``), e.g. one wrapped by ``ssl.SSLContext``;
* ``AsyncConnection(..., stream_factory=f)``: ``await f(host, port)`` returns an asyncio
  ``(StreamReader, StreamWriter)`` pair; the default is :func:`asyncio.open_connection` with ``ssl=``;
* ``on_connect``: called with the open connection before it is handed out.

TLS and SASL are built in: ``ssl_context=`` (an :class:`ssl.SSLContext`, e.g. from :func:`tls_context`)
wraps the socket, ``sasl=`` (:class:`kcodec.net.sasl.SaslCredentials`) runs SaslHandshake and
SaslAuthenticate (PLAIN, SCRAM-SHA-256/512) right after connecting.

A peer that is not a Kafka broker is named in the error: "looks like HTTP", "looks like TLS" (a TLS
listener reached without ``ssl_context``); timeouts say how long they waited.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Self

from kcodec.net.client_errors import (
    BrokerConnectionError,
    ClientError,
    ConnectionClosedError,
    NotInFlightError,
    ProtocolError,
    RequestTimeoutError,
)
from kcodec.net.peer_sniff import describe_foreign_reply
from kcodec.net.sasl import SaslCredentials, SaslExchange
from kcodec.net.transport import (
    SocketFactory,
    SocketLike,
    StreamFactory,
    bad_size,
    check_port,
    closed_early,
    default_socket_factory,
    os_reason,
    parse_host_port,
    tls_context,
    tls_failure,
    tls_socket_factory,
)
from kcodec.protocol.errors import DecodeError, KcodecError
from kcodec.protocol.frames import ResponseFrame, decode_response, encode_request
from kcodec.protocol.model import Message
from kcodec.protocol.registry import api

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "AsyncConnection",
    "Connection",
    "ConnectionSettings",
    "SocketLike",
    "parse_host_port",
    "tls_context",
]

DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default
_SIZE = struct.Struct(">i")
_CORR = struct.Struct(">i")


def _run_sasl(request: Callable[[Message, int], Message], credentials: SaslCredentials) -> None:
    exchange = SaslExchange(credentials)
    while (step := exchange.next_request()) is not None:
        exchange.feed(request(*step))


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    """How to reach brokers: the same timeout, client id, TLS context and SASL credentials for every
    broker of a cluster (``kcodec versions --all-brokers``, ``kcodec metadata``)."""

    timeout: float = 10.0
    client_id: str | None = "kcodec"
    ssl_context: ssl.SSLContext | None = None
    sasl: SaslCredentials | None = None

    def connection(self, host: str, port: int) -> Connection:
        """A (not yet opened) :class:`Connection` to ``host:port`` with these settings."""
        return Connection(
            host,
            port,
            timeout=self.timeout,
            client_id=self.client_id,
            ssl_context=self.ssl_context,
            sasl=self.sasl,
        )


class _Pending:
    __slots__ = ("api_key", "api_version", "strict")

    def __init__(self, api_key: int, api_version: int, strict: bool) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.strict = strict


class _Correlator:
    """Correlation ids (int32, wrapping, never reusing one still in flight) and the requests in flight."""

    def __init__(self) -> None:
        self._next = 0
        self.pending: dict[int, _Pending] = {}

    def new_id(self) -> int:
        while True:
            cid = self._next
            self._next = 0 if self._next >= 0x7FFFFFFF else self._next + 1
            if cid not in self.pending:
                return cid


def _decode(frame: bytes, pending: _Pending) -> ResponseFrame:
    try:
        return decode_response(frame, pending.api_key, pending.api_version, strict=pending.strict)
    except DecodeError as e:
        name = api(pending.api_key).response
        raise ProtocolError(f"{name} v{pending.api_version} does not decode: {e}") from e


def _correlation_id(frame: bytes) -> int:
    if len(frame) < 8:
        raise ProtocolError(f"a response frame of {len(frame) - 4} bytes has no correlation id")
    (cid,) = _CORR.unpack_from(frame, 4)
    return int(cid)


class Connection:
    """A blocking connection to one broker.

    ::

        with Connection("127.0.0.1", 9092, timeout=5) as conn:
            frame = conn.request(ApiVersionsRequest(), 3)
            frame.body.api_keys

    ``timeout`` bounds connecting and each :meth:`receive` (seconds). A timeout never desynchronises the
    stream: bytes already read are kept, so the connection stays usable. A protocol violation (bad frame
    size, unknown correlation id) closes it.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout: float = 10.0,
        client_id: str | None = "kcodec",
        socket_factory: SocketFactory | None = None,
        on_connect: Callable[[Connection], None] | None = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        ssl_context: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        sasl: SaslCredentials | None = None,
    ) -> None:
        self.host = host
        self.port = check_port(port, f"{host}:{port}")
        self.timeout = timeout
        self.client_id = client_id
        self.max_frame_size = max_frame_size
        if socket_factory is None:
            socket_factory = (
                default_socket_factory
                if ssl_context is None
                else tls_socket_factory(ssl_context, server_hostname)
            )
        self._factory = socket_factory
        self._on_connect = on_connect
        self.sasl = sasl
        self._got_bytes = False
        self._sock: SocketLike | None = None
        self._buf = bytearray()
        self._ids = _Correlator()
        self._arrived: dict[int, bytes] = {}  # frames read while waiting for another correlation id

    # -- lifecycle ---------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def connect(self) -> Self:
        if self._sock is not None:
            return self
        try:
            self._sock = self._factory(self.host, self.port, self.timeout)
        except TimeoutError as e:
            raise RequestTimeoutError(
                f"connecting to {self.host}:{self.port} timed out after {self.timeout:g} s"
            ) from e
        except ssl.SSLError as e:
            raise tls_failure(self.host, self.port, e) from e
        except OSError as e:
            raise BrokerConnectionError(f"cannot connect to {self.host}:{self.port}: {os_reason(e)}") from e
        self._got_bytes = False
        try:
            if self.sasl is not None:
                _run_sasl(lambda body, version: self.request(body, version).body, self.sasl)
            if self._on_connect is not None:
                self._on_connect(self)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        sock, self._sock = self._sock, None
        self._buf.clear()
        self._arrived.clear()
        self._ids.pending.clear()
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()

    def __enter__(self) -> Self:
        return self.connect()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- requests ----------------------------------------------------------------------------------

    def send(self, body: Message, version: int, *, strict: bool = True) -> int:
        """Send ``body`` at ``version``; return its correlation id (pass it to :meth:`receive`)."""
        sock = self._require()
        info = api(type(body).MESSAGE_NAME)
        cid = self._ids.new_id()
        frame = encode_request(body, version, correlation_id=cid, client_id=self.client_id)
        try:
            sock.settimeout(self.timeout)
            sock.sendall(frame)
        except TimeoutError as e:
            self.close()  # a partial write cannot be undone
            raise RequestTimeoutError(
                f"sending to {self.host}:{self.port} timed out after {self.timeout:g} s"
            ) from e
        except OSError as e:
            self.close()
            raise BrokerConnectionError(f"sending to {self.host}:{self.port} failed: {e}") from e
        self._ids.pending[cid] = _Pending(info.key, version, strict)
        return cid

    def receive_raw(self, correlation_id: int, *, timeout: float | None = None) -> bytes:
        """The raw response frame (size prefix included) of the request ``correlation_id``."""
        if correlation_id not in self._ids.pending:
            raise NotInFlightError(f"no request with correlation id {correlation_id} is in flight")
        wait = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        while correlation_id not in self._arrived:
            frame = self._read_frame(deadline, wait)
            cid = _correlation_id(frame)
            if cid not in self._ids.pending or cid in self._arrived:
                self.close()
                raise ProtocolError(f"unexpected correlation id {cid} from {self.host}:{self.port}")
            self._arrived[cid] = frame
        del self._ids.pending[correlation_id]
        return self._arrived.pop(correlation_id)

    def receive(self, correlation_id: int, *, timeout: float | None = None) -> ResponseFrame:
        """The decoded response to the request ``correlation_id`` (decoded at that request's version)."""
        pending = self._ids.pending.get(correlation_id)
        if pending is None:
            raise NotInFlightError(f"no request with correlation id {correlation_id} is in flight")
        return _decode(self.receive_raw(correlation_id, timeout=timeout), pending)

    def request(
        self, body: Message, version: int, *, timeout: float | None = None, strict: bool = True
    ) -> ResponseFrame:
        """Send ``body`` at ``version`` and wait for its response."""
        return self.receive(self.send(body, version, strict=strict), timeout=timeout)

    # -- reading -----------------------------------------------------------------------------------

    def _require(self) -> SocketLike:
        if self._sock is None:
            raise ConnectionClosedError(f"connection to {self.host}:{self.port} is not open")
        return self._sock

    def _read_frame(self, deadline: float, wait: float) -> bytes:
        while True:
            if len(self._buf) >= 4:
                (size,) = _SIZE.unpack_from(self._buf, 0)
                if size < 4 or size > self.max_frame_size:
                    if len(self._buf) < 16 and describe_foreign_reply(bytes(self._buf)) is None:
                        with contextlib.suppress(ClientError):  # a little more text to name the peer
                            self._fill(min(deadline, time.monotonic() + 0.2), wait)
                    error = bad_size(size, bytes(self._buf[:64]), self.host, self.port)
                    self.close()
                    raise error
                if len(self._buf) >= 4 + size:
                    frame = bytes(self._buf[: 4 + size])
                    del self._buf[: 4 + size]
                    return frame
            self._fill(deadline, wait)

    def _fill(self, deadline: float, wait: float) -> None:
        sock = self._require()
        left = deadline - time.monotonic()
        late = f"no response from {self.host}:{self.port} within {wait:g} s"
        if left <= 0:
            raise RequestTimeoutError(late)
        try:
            sock.settimeout(left)
            chunk = sock.recv(65536)
        except TimeoutError as e:
            raise RequestTimeoutError(late) from e
        except OSError as e:
            self.close()
            where = f"{self.host}:{self.port}"
            raise BrokerConnectionError(f"reading from {where} failed: {os_reason(e)}") from e
        if not chunk:
            got = self._got_bytes
            self.close()
            raise closed_early(self.host, self.port, got)
        self._got_bytes = True
        self._buf += chunk


class AsyncConnection:
    """An asyncio connection to one broker; any number of requests may be in flight at once.

    ::

        async with AsyncConnection("127.0.0.1", 9092) as conn:
            a, b = await asyncio.gather(conn.request(req1, 3), conn.request(req2, 12))

    A background task reads frames and hands each to the request with its correlation id. If the
    connection breaks, every request in flight fails with the same error.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout: float = 10.0,
        client_id: str | None = "kcodec",
        ssl_context: ssl.SSLContext | None = None,
        stream_factory: StreamFactory | None = None,
        on_connect: Callable[[AsyncConnection], Awaitable[None]] | None = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        sasl: SaslCredentials | None = None,
    ) -> None:
        self.host = host
        self.port = check_port(port, f"{host}:{port}")
        self.sasl = sasl
        self.timeout = timeout
        self.client_id = client_id
        self.max_frame_size = max_frame_size
        self._ssl = ssl_context
        self._factory = stream_factory
        self._on_connect = on_connect
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._task: asyncio.Task[None] | None = None
        self._ids = _Correlator()
        self._waiters: dict[int, asyncio.Future[bytes]] = {}
        self._abandoned: set[int] = set()  # timed-out requests whose late responses are dropped
        self._error: BaseException | None = None

    @property
    def connected(self) -> bool:
        return self._writer is not None and self._error is None

    async def connect(self) -> Self:
        if self._writer is not None:
            return self
        try:
            if self._factory is not None:
                opening = self._factory(self.host, self.port)
            else:
                opening = asyncio.open_connection(self.host, self.port, ssl=self._ssl)
            self._reader, self._writer = await asyncio.wait_for(opening, self.timeout)
        except TimeoutError as e:
            raise RequestTimeoutError(
                f"connecting to {self.host}:{self.port} timed out after {self.timeout:g} s"
            ) from e
        except ssl.SSLError as e:
            raise tls_failure(self.host, self.port, e) from e
        except OSError as e:
            raise BrokerConnectionError(f"cannot connect to {self.host}:{self.port}: {os_reason(e)}") from e
        self._error = None
        self._task = asyncio.get_running_loop().create_task(self._read_loop())
        try:
            if self.sasl is not None:
                exchange = SaslExchange(self.sasl)
                while (step := exchange.next_request()) is not None:
                    exchange.feed((await self.request(*step)).body)
            if self._on_connect is not None:
                await self._on_connect(self)
        except BaseException:
            await self.close()
            raise
        return self

    async def close(self) -> None:
        task, self._task = self._task, None
        writer, self._writer = self._writer, None
        self._reader = None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._fail_all(ConnectionClosedError(f"connection to {self.host}:{self.port} was closed"))
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError, TimeoutError, ssl.SSLError):
                await asyncio.wait_for(writer.wait_closed(), 1.0)

    async def __aenter__(self) -> Self:
        return await self.connect()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def request_raw(
        self, body: Message, version: int, *, timeout: float | None = None
    ) -> tuple[bytes, int]:
        """Send ``body`` at ``version``; return the raw response frame and the request's correlation id."""
        if self._writer is None:
            raise ConnectionClosedError(f"connection to {self.host}:{self.port} is not open")
        if self._error is not None:
            raise self._error
        info = api(type(body).MESSAGE_NAME)
        wait = self.timeout if timeout is None else timeout
        cid = self._ids.new_id()
        frame = encode_request(body, version, correlation_id=cid, client_id=self.client_id)
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._ids.pending[cid] = _Pending(info.key, version, True)
        self._waiters[cid] = fut
        try:
            self._writer.write(frame)
            await asyncio.wait_for(self._writer.drain(), wait)
            return await asyncio.wait_for(asyncio.shield(fut), wait), cid
        except TimeoutError as e:
            if not fut.done():
                self._abandoned.add(cid)
                fut.cancel()
            raise RequestTimeoutError(
                f"no response from {self.host}:{self.port} to {info.request} v{version} within {wait:g} s"
            ) from e
        except ClientError:  # BrokerConnectionError is an OSError too: keep it as it is
            raise
        except OSError as e:
            raise BrokerConnectionError(f"sending to {self.host}:{self.port} failed: {e}") from e
        finally:
            self._waiters.pop(cid, None)
            if cid not in self._abandoned:
                self._ids.pending.pop(cid, None)

    async def request(
        self, body: Message, version: int, *, timeout: float | None = None, strict: bool = True
    ) -> ResponseFrame:
        """Send ``body`` at ``version`` and return its decoded response."""
        raw, _ = await self.request_raw(body, version, timeout=timeout)
        return _decode(raw, _Pending(api(type(body).MESSAGE_NAME).key, version, strict))

    async def _read_loop(self) -> None:
        reader = self._reader
        assert reader is not None
        got_bytes = False
        try:
            while True:
                try:
                    head = await reader.readexactly(4)
                except asyncio.IncompleteReadError as e:
                    raise closed_early(self.host, self.port, got_bytes or bool(e.partial)) from e
                got_bytes = True
                (size,) = _SIZE.unpack(head)
                if size < 4 or size > self.max_frame_size:
                    with contextlib.suppress(TimeoutError, OSError):
                        head += await asyncio.wait_for(reader.read(60), 0.2)
                    raise bad_size(size, head, self.host, self.port)
                try:
                    frame = head + await reader.readexactly(size)
                except asyncio.IncompleteReadError as e:
                    raise ConnectionClosedError(
                        f"{self.host}:{self.port} closed the connection inside a frame"
                    ) from e
                cid = _correlation_id(frame)
                if cid in self._abandoned:
                    self._abandoned.discard(cid)
                    self._ids.pending.pop(cid, None)
                    continue
                fut = self._waiters.get(cid)
                if fut is None:
                    raise ProtocolError(f"unexpected correlation id {cid} from {self.host}:{self.port}")
                if not fut.done():
                    fut.set_result(frame)
        except asyncio.CancelledError:
            raise
        except (KcodecError, OSError) as e:
            err: BaseException = e
            if isinstance(e, OSError) and not isinstance(e, KcodecError):
                err = BrokerConnectionError(f"reading from {self.host}:{self.port} failed: {e}")
            self._fail_all(err)
            writer = self._writer
            if writer is not None:
                writer.close()

    def _fail_all(self, err: BaseException) -> None:
        if self._error is None:
            self._error = err
        for fut in self._waiters.values():
            if not fut.done():
                fut.set_exception(err)
        self._waiters.clear()
