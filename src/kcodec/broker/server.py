"""One mock broker: an asyncio listener that reads request frames, answers them through the handlers
and writes responses in order. Malformed input gets Kafka's treatment, never a crash: a frame size
out of bounds, an unknown API, an unsupported version (except ApiVersions, KIP-511) or a body that does
not decode closes the connection.

No connection can hold the broker (BrokerConfig): one idle for ``connections_max_idle_ms``, or whose
request frame trickles in for longer than ``request_timeout_ms``, or that reads nothing of a response
for ``connections_max_idle_ms``, is closed, and what the broker still had to write to it is dropped
(as it is for a client that went away); connections past ``max_connections`` are closed on arrival."""

from __future__ import annotations

import asyncio
import logging
import struct
from collections import Counter
from typing import Any

from kcodec.broker.faults import error_response
from kcodec.broker.handlers import ROUTES, RequestContext, served_versions
from kcodec.broker.handlers.api_versions import (
    API_VERSIONS_KEY,
    handle_api_versions,
    unsupported_api_versions_reply,
)
from kcodec.broker.state import ClusterState
from kcodec.protocol.codec import encode, encode_chunks, message_class
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.errors import KcodecError
from kcodec.protocol.frames import decode_request, encode_response
from kcodec.protocol.registry import api

log = logging.getLogger("kcodec.broker")

_SIZE = struct.Struct(">i")
_HEAD = struct.Struct(">hhi")  # api key, api version, correlation id: the same in every header version
PRODUCE_KEY = 0
_NO_RESPONSE = object()  # an injected error on a Produce with acks=0: nothing is sent back


class Close(Exception):
    """The connection must be closed (the reason is logged)."""


class BrokerServer:
    """The listener of broker ``node_id`` of a cluster."""

    def __init__(self, cluster: ClusterState, node_id: int, host: str, port: int) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.host = host
        self.port = port
        self.versions = served_versions(cluster.config.proposals)
        self.connections = 0
        self.requests: Counter[tuple[int, int]] = Counter()  # (api key, version) -> requests answered
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, self.host, self.port, limit=2**16)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            if self.node_id in self.cluster.faults.down:
                return  # down (control API): the connection is closed at once
            limit = self.cluster.config.max_connections
            if self.connections >= limit:
                log.warning(
                    "broker %d: %d connections open (max_connections), closing the new one from %s",
                    self.node_id,
                    limit,
                    writer.get_extra_info("peername"),
                )
                writer.transport.abort()
                return
            self.connections += 1
            try:
                await self._serve(reader, writer)
            finally:
                self.connections -= 1
        except asyncio.CancelledError:
            pass  # the broker is closing: end quietly (the task ends normally, nothing to report)
        finally:
            self._tasks.discard(task)
            if writer.transport.get_write_buffer_size():
                writer.transport.abort()  # the client is gone or stuck: drop what it did not take
            else:
                writer.close()
            lost = reader.exception()
            if lost is not None:  # drain() re-raised it through _serve: its traceback holds that frame
                lost.__traceback__ = None  # (and the frame the reader: a cycle only the gc would end)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        idle_ms = self.cluster.config.connections_max_idle_ms
        try:
            while True:
                frame = await self._next_frame(reader)
                reply = await self.process(frame)
                if reply is not None:
                    writer.writelines(reply)
                    del reply  # (the transport holds what it did not send yet, and drops it on close)
                    try:
                        async with asyncio.timeout(idle_ms / 1000):
                            await writer.drain()
                    except TimeoutError:
                        raise Close(f"the client read nothing of a response for {idle_ms} ms") from None
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        except Close as e:
            log.info("broker %d: closing a connection: %s", self.node_id, e)

    async def _next_frame(self, reader: asyncio.StreamReader) -> bytes:
        """The next request frame: its first byte within ``connections_max_idle_ms``, all of it
        within ``request_timeout_ms`` of that byte (else :class:`Close`)."""
        config = self.cluster.config
        limit = config.max_request_bytes
        try:
            async with asyncio.timeout(config.connections_max_idle_ms / 1000):
                first = await reader.readexactly(1)
        except TimeoutError:
            raise Close(f"idle for {config.connections_max_idle_ms} ms (connections_max_idle_ms)") from None
        try:
            async with asyncio.timeout(config.request_timeout_ms / 1000):
                head = first + await reader.readexactly(3)
                (size,) = _SIZE.unpack(head)
                if not _HEAD.size <= size <= limit:
                    raise Close(f"request size {size} outside [{_HEAD.size}, {limit}]")
                return head + await reader.readexactly(size)
        except TimeoutError:
            ms = config.request_timeout_ms
            raise Close(f"a request frame took over {ms} ms to arrive (request_timeout_ms)") from None

    async def process(self, frame: bytes) -> list[bytes | bytearray | memoryview] | None:
        """The response frame to one request frame, as buffers to write in order (None: no response,
        Produce with acks=0); raises :class:`Close` when Kafka would close the connection."""
        if len(frame) < 4 + _HEAD.size or _SIZE.unpack_from(frame)[0] != len(frame) - 4:
            raise Close(f"not a request frame ({len(frame)} bytes)")
        key, version, correlation_id = _HEAD.unpack_from(frame, 4)
        served = self.versions.get(key)
        if served is None:
            raise Close(f"unknown or unserved api key {key}")
        if key == API_VERSIONS_KEY and version > served[1]:
            body = unsupported_api_versions_reply(self.versions)
            return [encode_response(body, 0, correlation_id=correlation_id)]
        if not served[0] <= version <= served[1]:
            raise Close(f"api key {key} version {version} outside {served[0]}-{served[1]}")
        try:
            request = decode_request(frame)
        except KcodecError as e:
            raise Close(f"api key {key} v{version}: {e}") from None
        self.requests[(key, version)] += 1
        ctx = RequestContext(self.cluster, self.node_id, version, request.header.client_id)  # type: ignore[attr-defined]
        try:
            response = await self._injected(key, version, request.body)
            if response is None:
                response = await self._handle(ctx, key, request.body)
            elif response is _NO_RESPONSE:
                return None
            if response is None:
                return None
            return response_chunks(response, key, version, correlation_id)
        except Close:
            raise
        except Exception as e:  # a handler bug must not take the broker down: close, as Kafka would
            log.exception("broker %d: api key %d v%d failed", self.node_id, key, version)
            raise Close(f"internal error in api key {key} v{version}: {e!r}") from None

    async def _injected(self, key: int, version: int, body: Any) -> Any:
        """A fault injected through the control API (kcodec.broker.faults): wait its latency, then the
        error response to answer with (``_NO_RESPONSE`` for Produce with acks=0), or None to serve the
        request as usual."""
        fault = self.cluster.faults.take(self.node_id, key)
        if fault is None:
            return None
        if fault.latency_ms:
            await asyncio.sleep(fault.latency_ms / 1000)
        if fault.error is ErrorCode.NONE:
            return None
        if key == PRODUCE_KEY and body.acks == 0:
            return _NO_RESPONSE
        return error_response(key, version, body, fault.error, message_class(f"{api(key).name}Response"))

    def drop_connections(self) -> None:
        """Close every open connection (the broker goes down; see kcodec.broker.faults)."""
        for t in list(self._tasks):
            t.cancel()

    async def _handle(self, ctx: RequestContext, key: int, body: Any) -> Any:
        if key == API_VERSIONS_KEY:
            return await handle_api_versions(ctx, body, self.versions)
        handler = ROUTES[key].handler
        assert handler is not None
        return await handler(ctx, body)


def response_chunks(
    body: Any, key: int, version: int, correlation_id: int
) -> list[bytes | bytearray | memoryview]:
    """A response frame as buffers: size and header, then the body with its large record batches
    left uncopied (kcodec.encode_chunks)."""
    header = message_class("ResponseHeader")(correlation_id=correlation_id)  # type: ignore[call-arg]
    head = encode(header, api(key).response_header_version(version))
    parts = encode_chunks(body, version)
    size = len(head) + sum(len(p) for p in parts)
    return [_SIZE.pack(size) + head, *parts]
