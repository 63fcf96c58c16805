"""One proxied connection: a client of the proxy and the broker its listener leads to (asyncio).

Two pumps run side by side: requests from the client to the broker, responses from the broker to the
client. Each follows the frames (size prefix, then that many bytes; a size that is negative or above
``max_frame_size`` ends the connection) and streams them through unchanged as their bytes arrive,
except responses that may advertise broker addresses (:func:`kcodec.proxy.rewrite.rewrites`: the
response to a Metadata, FindCoordinator or DescribeCluster request, or to a Produce/Fetch/ShareFetch/
ShareAcknowledge request at a version with leader hints): those are read whole, written again with the
proxy's listeners in place of the brokers (:mod:`kcodec.proxy.rewrite`) and sent. What the client
sends and is sent goes to the connection's :class:`~kcodec.proxy.tap.Tap` as it passes.

Memory is bounded: a pump holds at most one chunk (``CHUNK``), or one frame that is being rewritten,
and after writing it waits until the socket's write buffer is below its high-water mark
(``write_buffer``) before reading more, so a side that reads slowly slows the other down (TCP
backpressure) instead of making the proxy buffer. A side that reads
nothing at all for ``stall_timeout`` seconds while a write waits ends the connection. A client cannot
hold a connection either: one that sends nothing for ``idle_timeout`` seconds while no request waits
for its response is closed (Kafka's ``connections.max.idle.ms``), and so is one whose request, once
its first byte came, takes over ``request_timeout`` seconds to arrive whole. When either side
closes, resets or misbehaves, what was read from it is delivered to the other side, the other side is
closed too, and one ``closed`` notice says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from kcodec.capture import Direction
from kcodec.capture.segments import endpoint
from kcodec.protocol.errors import KcodecError
from kcodec.protocol.registry import api
from kcodec.proxy.errors import FrameSizeError
from kcodec.proxy.events import NoticeKind, ProxyNotice
from kcodec.proxy.inflight import InFlight, request_key, response_correlation_id
from kcodec.proxy.listeners import Endpoint
from kcodec.proxy.pcap import Side, capture_time
from kcodec.proxy.rewrite import parse_response, rewrites
from kcodec.proxy.tap import Tap

__all__ = ["Ending", "Session", "SessionLimits"]

#: Bytes moved at a time when a frame is streamed through (the reader hands over what it has, up to this).
CHUNK = 256 * 1024
EndKind = Literal[
    "eof", "cut", "reset", "stalled", "protocol", "stopped", "unreachable", "error", "idle", "timeout"
]
#: Gives listeners to broker addresses: (address -> listener, addresses newly given one).
EnsureListeners = Callable[[list[Endpoint]], Awaitable[tuple[dict[Endpoint, Endpoint], list[Endpoint]]]]


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """The bounds of one proxied connection (seconds, bytes, counts)."""

    connect_timeout: float = 10.0  # to reach the broker; then the client's connection is closed
    stall_timeout: float = 30.0  # a side that takes nothing this long while data waits ends both
    idle_timeout: float = 600.0  # a client that sends nothing this long, no response awaited, is closed
    request_timeout: float = 30.0  # a request must arrive whole this soon after its first byte
    max_frame_size: int = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default
    write_buffer: int = 256 * 1024  # high-water mark of each socket's write buffer
    max_in_flight: int = 4096  # requests remembered while waiting for their responses
    rewrite: bool = True  # replace the broker addresses responses advertise


@dataclass(frozen=True, slots=True)
class Ending:
    """How a connection ended: which side (``client`` or ``server``, the broker) and how."""

    side: Side
    kind: EndKind
    detail: str = ""


class _Ended(Exception):
    def __init__(self, ending: Ending) -> None:
        self.ending = ending
        super().__init__(ending.detail)


class _Way:
    """One direction of a session: where frames come from and go to, and how far they got."""

    __slots__ = ("direction", "offset", "reader", "sent_of_frame", "sink", "source", "writer")

    def __init__(
        self,
        direction: Direction,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        source: Side,
        sink: Side,
    ) -> None:
        self.direction = direction
        self.reader, self.writer = reader, writer
        self.source, self.sink = source, sink
        self.offset = 0  # stream offset of the current frame's size prefix
        self.sent_of_frame = 0  # bytes of the current frame sent on


def _peer_name(side: Side) -> str:
    return "client" if side == "client" else "broker"


def _failed(side: Side, e: OSError) -> Ending:
    return Ending(side, "reset", f"the {_peer_name(side)}'s connection failed: {e.strerror or e}")


def _tune(writer: asyncio.StreamWriter, high_water: int) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    writer.transport.set_write_buffer_limits(high=high_water)


class Session:
    """One client connection and its broker connection (see the module docstring)."""

    def __init__(
        self,
        number: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        upstream: Endpoint,
        tap: Tap,
        limits: SessionLimits,
        ensure_listeners: EnsureListeners,
        notify: Callable[[ProxyNotice], None],
    ) -> None:
        self.number = number
        self.upstream = upstream
        self.tap = tap
        self.limits = limits
        self._ensure = ensure_listeners
        self._notify = notify
        self._client_reader, self._client_writer = reader, writer
        self._up_reader: asyncio.StreamReader | None = None
        self._up_writer: asyncio.StreamWriter | None = None
        self.inflight = InFlight(limits.max_in_flight)
        self.sent = {"request": 0, "response": 0}  # bytes delivered each way
        self.frames = {"request": 0, "response": 0}
        self.rewritten = 0
        self.ending: Ending | None = None

    # --- notices -----------------------------------------------------------------------------------

    def notice(self, kind: NoticeKind, message: str, **details: object) -> None:
        self._notify(
            ProxyNotice(
                capture_time(),
                kind,
                message,
                self.number,
                self.tap.client,
                self.tap.server,
                endpoint(*self.upstream),
                dict(details),
            )
        )

    # --- the connection's life -----------------------------------------------------------------------

    async def run(self) -> Ending:
        """Connect to the broker, pump both ways until one side ends, close both; the ending."""
        self.tap.opened()
        _tune(self._client_writer, self.limits.write_buffer)
        ending: Ending | None = None
        try:
            ending = await self._connect()
            if ending is None:
                ending = await self._pump_both()
        except asyncio.CancelledError:
            ending = Ending("server", "stopped", "the proxy stopped")
            await self._close(ending)
            self._finish(ending)
            raise
        except Exception as e:  # a bug, or an on_event callback that failed: never leave sockets open
            ending = Ending("server", "error", f"the proxy failed: {type(e).__name__}: {e}")
        await self._close(ending)
        self._finish(ending)
        return ending

    async def _connect(self) -> Ending | None:
        host, port = self.upstream
        try:
            async with asyncio.timeout(self.limits.connect_timeout):
                up_reader, up_writer = await asyncio.open_connection(host, port)
        except TimeoutError:
            wait = self.limits.connect_timeout
            detail = f"no connection to broker {endpoint(host, port)} within {wait:g} s"
        except OSError as e:
            detail = f"cannot connect to broker {endpoint(host, port)}: {e.strerror or e}"
        else:
            _tune(up_writer, self.limits.write_buffer)
            self._up_reader, self._up_writer = up_reader, up_writer
            return None
        self.notice("unreachable", detail)
        return Ending("server", "unreachable", detail)

    async def _pump_both(self) -> Ending:
        requests = asyncio.create_task(self._pump("request"))
        responses = asyncio.create_task(self._pump("response"))
        try:
            done, _ = await asyncio.wait({requests, responses}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            for task in (requests, responses):
                task.cancel()
            await asyncio.gather(requests, responses, return_exceptions=True)
            raise
        first = requests if requests in done else responses
        other = responses if first is requests else requests
        other.cancel()
        await asyncio.gather(other, return_exceptions=True)
        return first.result()

    async def _pump(self, direction: Direction) -> Ending:
        """Move frames one way until that way ends; how it ended."""
        up_reader, up_writer = self._up_reader, self._up_writer
        assert up_reader is not None and up_writer is not None
        if direction == "request":
            way = _Way(direction, self._client_reader, up_writer, "client", "server")
        else:
            way = _Way(direction, up_reader, self._client_writer, "server", "client")
        try:
            while True:
                if direction == "request":
                    await self._request(way)
                else:
                    await self._frame(way)
        except _Ended as e:
            return e.ending

    async def _request(self, way: _Way) -> None:
        """Move one request: its first byte within ``idle_timeout`` (unless a response is awaited),
        all of it within ``request_timeout`` of that byte."""
        idle = self.limits.idle_timeout
        while True:
            try:
                async with asyncio.timeout(idle):
                    first = await self._read(way, 1, b"")
                break
            except TimeoutError:
                if not len(self.inflight):
                    detail = f"the client sent nothing for {idle:g} s (idle timeout)"
                    raise _Ended(Ending("client", "idle", detail)) from None
        try:
            async with asyncio.timeout(self.limits.request_timeout):
                await self._frame(way, first)
        except TimeoutError:
            detail = f"a request took over {self.limits.request_timeout:g} s to arrive (request timeout)"
            self.notice("stalled", f"the client: {detail}; closing both sides")
            raise _Ended(Ending("client", "timeout", detail)) from None

    async def _frame(self, way: _Way, first: bytes = b"") -> None:
        """Move one frame (``first``: its first bytes, already read): streamed through as it
        arrives, or, for a response that may advertise brokers, read whole, rewritten and sent."""
        head = first + await self._read(way, 4 - len(first), first)
        size = int.from_bytes(head, "big", signed=True)
        if size < 0 or size > self.limits.max_frame_size:
            self.tap.data(way.direction, head)
            what = "negative" if size < 0 else f"above the limit of {self.limits.max_frame_size}"
            err = FrameSizeError(f"frame size {size} ({what})", way.direction, way.offset)
            hint = ""
            if way.direction == "request" and way.offset == 0 and head[:2] == b"\x16\x03":
                hint = " (it looks like a TLS handshake: the proxy forwards plaintext Kafka only)"
            self.notice("protocol", f"the {_peer_name(way.source)} sent {err}{hint}; closing both sides")
            raise _Ended(Ending(way.source, "protocol", str(err)))
        # the request's header (api key, version, correlation id), or the correlation id a response
        # carries: enough to know which request a response answers and whether to rewrite it
        lead = head + await self._read(way, min(size, 8 if way.direction == "request" else 4), head)
        if way.direction == "request":
            key = request_key(lead)
            if key is not None:
                self.inflight.sent(key)
        else:
            cid = response_correlation_id(lead)
            request = None if cid is None else self.inflight.answered(cid)
            if request is not None and self.limits.rewrite and rewrites(*request):
                frame = await self._read_whole(way, lead, 4 + size)
                await self._send(way, await self._rewrite(frame, cid, *request))
                self._frame_done(way, 4 + size)
                return
        left = 4 + size - len(lead)
        held = lead  # sent with the first chunk of the rest: one write, not two
        while left:
            try:
                chunk = await way.reader.read(min(left, CHUNK))
            except OSError as e:
                raise _Ended(_failed(way.source, e)) from None
            if not chunk:
                if held:
                    await self._send(way, held)
                raise _Ended(self._cut(way, 4 + size - left))
            left -= len(chunk)
            await self._send(way, held + chunk if held else chunk)
            held = b""
        if held:
            await self._send(way, held)
        self._frame_done(way, 4 + size)

    def _frame_done(self, way: _Way, length: int) -> None:
        way.offset += length
        way.sent_of_frame = 0
        self.frames[way.direction] += 1

    async def _read(self, way: _Way, n: int, held: bytes) -> bytes:
        """Exactly ``n`` bytes from ``way``'s source. If it closes first, what it sent of the frame
        (``held``: read but not yet sent on, then the bytes that came) still goes through."""
        try:
            return await way.reader.readexactly(n)
        except asyncio.IncompleteReadError as e:
            partial = held + e.partial
            if not partial and way.sent_of_frame == 0:
                raise _Ended(Ending(way.source, "eof", f"closed by the {_peer_name(way.source)}")) from None
            self.tap.data(way.direction, partial)
            with contextlib.suppress(OSError, RuntimeError):
                way.writer.write(partial)
            raise _Ended(self._cut(way, way.sent_of_frame + len(partial))) from None
        except OSError as e:
            raise _Ended(_failed(way.source, e)) from None

    async def _read_whole(self, way: _Way, lead: bytes, total: int) -> bytearray:
        """The rest of a frame that starts with ``lead``, into one buffer of ``total`` bytes (read in
        chunks: no second copy of the frame is made on the way). If the source closes first, what it
        sent of the frame goes through."""
        frame = bytearray(total)
        frame[: len(lead)] = lead
        pos = len(lead)
        while pos < total:
            try:
                chunk = await way.reader.read(min(total - pos, CHUNK))
            except OSError as e:
                raise _Ended(_failed(way.source, e)) from None
            if not chunk:
                partial = bytes(frame[:pos])
                self.tap.data(way.direction, partial)
                with contextlib.suppress(OSError, RuntimeError):
                    way.writer.write(partial)
                raise _Ended(self._cut(way, pos))
            frame[pos : pos + len(chunk)] = chunk
            pos += len(chunk)
        return frame

    @staticmethod
    def _cut(way: _Way, got: int) -> Ending:
        detail = f"the {_peer_name(way.source)} closed inside a frame ({got} bytes of it sent)"
        return Ending(way.source, "cut", detail)

    async def _send(self, way: _Way, data: bytes | bytearray) -> None:
        """``data`` on to the other side (and into the tap)."""
        self.tap.data(way.direction, data)
        await self._write(way.writer, data, way.sink, way.direction)
        way.sent_of_frame += len(data)

    async def _write(
        self,
        writer: asyncio.StreamWriter,
        data: bytes | bytearray,
        side: Side,
        direction: Literal["request", "response"],
    ) -> None:
        """Write ``data`` to ``side`` and wait while its write buffer is full; a side that takes
        nothing for ``stall_timeout`` seconds ends the connection."""
        peer = _peer_name(side)
        try:
            writer.write(data)
            transport = writer.transport
            before = transport.get_write_buffer_size()
            while True:
                try:
                    async with asyncio.timeout(self.limits.stall_timeout):
                        await writer.drain()
                    break
                except TimeoutError:
                    now = transport.get_write_buffer_size()
                    if now < before:
                        before = now
                        continue  # slow, but reading
                    detail = (
                        f"the {peer} read nothing for {self.limits.stall_timeout:g} s "
                        f"({now} bytes waiting to be sent to it)"
                    )
                    self.notice("stalled", detail + "; closing both sides")
                    raise _Ended(Ending(side, "stalled", detail)) from None
        except OSError as e:
            raise _Ended(_failed(side, e)) from None
        self.sent[direction] += len(data)

    # --- address rewriting -----------------------------------------------------------------------------

    async def _rewrite(
        self, frame: bytearray, cid: int | None, api_key: int, api_version: int
    ) -> bytes | bytearray:
        """The response frame with the broker addresses it advertises replaced by proxy listeners
        (opened as needed); as it came if it does not decode or advertises none."""
        what = f"{api(api_key).name} v{api_version} response (correlation id {cid})"
        try:
            parsed = parse_response(frame, api_key, api_version)
        except KcodecError as e:
            self.notice("unrewritten", f"{what} does not decode ({e}); forwarded as it came")
            return frame
        advertised = [] if parsed is None else parsed.endpoints
        if parsed is None or not advertised:
            return frame
        mapping, opened = await self._ensure(advertised)
        for ep in opened:
            local = mapping[ep]
            self.notice(
                "listening",
                f"{endpoint(*local)} leads to broker {endpoint(*ep)}",
                listener=endpoint(*local),
                broker=endpoint(*ep),
            )
        missing = [endpoint(*ep) for ep in advertised if ep not in mapping]
        if missing:
            self.notice(
                "unrewritten",
                f"{what}: no listener left for {', '.join(missing)} (listener limit reached); "
                "those addresses are forwarded as they came",
            )
        try:
            new = parsed.apply(lambda host, port: mapping.get((host, port)))
        except KcodecError as e:
            self.notice("unrewritten", f"{what} cannot be written again ({e}); forwarded as it came")
            return frame
        if new is None:
            return frame
        self.rewritten += 1
        pairs = {endpoint(*ep): endpoint(*mapping[ep]) for ep in advertised if ep in mapping}
        self.notice(
            "rewritten",
            f"{what}: " + ", ".join(f"{a} -> {b}" for a, b in pairs.items()),
            api_key=api_key,
            api_version=api_version,
            correlation_id=cid,
            addresses=pairs,
        )
        return new

    # --- the end ---------------------------------------------------------------------------------------

    async def _close(self, ending: Ending) -> None:
        """Close both sides: gracefully (what was written is delivered first) unless a side stalled
        or failed, in which case its connection is aborted."""
        self.ending = ending
        for side, writer in (("client", self._client_writer), ("server", self._up_writer)):
            if writer is None:
                continue
            broken = ending.side == side and ending.kind == "reset"
            if broken or ending.kind in ("stalled", "error", "timeout"):
                writer.transport.abort()
                continue
            with contextlib.suppress(OSError, RuntimeError):
                writer.close()
        grace = min(1.0, self.limits.stall_timeout) if ending.kind == "stopped" else self.limits.stall_timeout
        for writer in (self._client_writer, self._up_writer):
            if writer is None:
                continue
            try:
                async with asyncio.timeout(grace):
                    await writer.wait_closed()
            except (TimeoutError, OSError):
                writer.transport.abort()
            except asyncio.CancelledError:
                writer.transport.abort()
                raise

    def _finish(self, ending: Ending) -> None:
        by_client = ending.side == "client" and ending.kind in ("eof", "cut", "reset")
        self.tap.closed("client" if by_client else "server", reset=by_client and ending.kind == "reset")
        self.notice(
            "closed",
            f"{ending.detail}; {self.frames['request']} requests ({self.sent['request']} bytes) and "
            f"{self.frames['response']} responses ({self.sent['response']} bytes) went through"
            + (f", {self.rewritten} rewritten" if self.rewritten else ""),
            reason=ending.kind,
            by=_peer_name(ending.side),
            requests=self.frames["request"],
            responses=self.frames["response"],
            request_bytes=self.sent["request"],
            response_bytes=self.sent["response"],
            rewritten=self.rewritten,
        )
