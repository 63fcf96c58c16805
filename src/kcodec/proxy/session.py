"""One proxied connection: a client of the proxy and the broker its listener leads to (asyncio).

Two pumps run side by side: requests from the client to the broker, responses from the broker to the
client. Each moves whole frames (size prefix, then that many bytes; a size that is negative or above
``max_frame_size`` ends the connection), unchanged, except responses that advertise broker addresses,
which are written again with the proxy's listeners in their place (:mod:`kcodec.proxy.rewrite`). What
the client sends and is sent goes to the connection's :class:`~kcodec.proxy.tap.Tap` as it passes.

Memory is bounded: a pump holds one frame at a time, and after writing it waits until the socket's
write buffer is below its high-water mark (``write_buffer``) before reading more, so a side that reads
slowly slows the other down (TCP backpressure) instead of making the proxy buffer. A side that reads
nothing at all for ``stall_timeout`` seconds while a write waits ends the connection. When either side
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

from kcodec.capture.segments import endpoint
from kcodec.errors import KcodecError
from kcodec.proxy.errors import FrameSizeError
from kcodec.proxy.events import NoticeKind, ProxyNotice
from kcodec.proxy.inflight import InFlight, request_key, response_correlation_id
from kcodec.proxy.listeners import Endpoint
from kcodec.proxy.pcap import Side, capture_time
from kcodec.proxy.rewrite import parse_response, rewrites
from kcodec.proxy.tap import Tap
from kcodec.registry import api

__all__ = ["Ending", "Session", "SessionLimits"]

EndKind = Literal["eof", "cut", "reset", "stalled", "protocol", "stopped", "unreachable"]
#: Gives listeners to broker addresses: (address -> listener, addresses newly given one).
EnsureListeners = Callable[[list[Endpoint]], Awaitable[tuple[dict[Endpoint, Endpoint], list[Endpoint]]]]


@dataclass(frozen=True, slots=True)
class SessionLimits:
    connect_timeout: float = 10.0
    stall_timeout: float = 30.0
    max_frame_size: int = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default
    write_buffer: int = 256 * 1024  # high-water mark of each socket's write buffer
    max_in_flight: int = 4096
    rewrite: bool = True


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


class _Cut(_Ended):
    """A side closed inside a frame; ``partial`` is what it sent of it."""

    def __init__(self, ending: Ending, partial: bytes) -> None:
        super().__init__(ending)
        self.partial = partial


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

    async def _pump(self, direction: Literal["request", "response"]) -> Ending:
        """Move frames one way until that way ends; how it ended."""
        up_reader, up_writer = self._up_reader, self._up_writer
        assert up_reader is not None and up_writer is not None
        if direction == "request":
            reader, writer, source, sink = self._client_reader, up_writer, "client", "server"
        else:
            reader, writer, source, sink = up_reader, self._client_writer, "server", "client"
        offset = 0
        try:
            while True:
                frame = await self._read_frame(reader, direction, source, offset)  # type: ignore[arg-type]
                offset += len(frame)
                if direction == "request":
                    key = request_key(frame)
                    if key is not None:
                        self.inflight.sent(key)
                else:
                    frame = await self._maybe_rewrite(frame)
                self.tap.data(direction, frame)
                await self._write(writer, frame, sink, direction)  # type: ignore[arg-type]
        except _Cut as cut:
            # the bytes of the unfinished frame still go through (and into the tap), then both close
            self.tap.data(direction, cut.partial)
            with contextlib.suppress(OSError, RuntimeError):
                writer.write(cut.partial)
            return cut.ending
        except _Ended as e:
            return e.ending

    async def _read_frame(
        self, reader: asyncio.StreamReader, direction: Literal["request", "response"], side: Side, offset: int
    ) -> bytes:
        peer = _peer_name(side)
        head = b""
        try:
            head = await reader.readexactly(4)
            size = int.from_bytes(head, "big", signed=True)
            if size < 0 or size > self.limits.max_frame_size:
                self.tap.data(direction, head)
                what = "negative" if size < 0 else f"above the limit of {self.limits.max_frame_size}"
                err = FrameSizeError(f"frame size {size} ({what})", direction, offset)
                self.notice("protocol", f"the {peer} sent {err}; closing both sides")
                raise _Ended(Ending(side, "protocol", str(err)))
            return head + await reader.readexactly(size)
        except asyncio.IncompleteReadError as e:
            partial = head + e.partial
            if not partial:
                raise _Ended(Ending(side, "eof", f"closed by the {peer}")) from None
            detail = f"the {peer} closed inside a frame ({len(partial)} bytes of it sent)"
            raise _Cut(Ending(side, "cut", detail), partial) from None
        except OSError as e:
            raise _Ended(_failed(side, e)) from None

    async def _write(
        self, writer: asyncio.StreamWriter, data: bytes, side: Side, direction: Literal["request", "response"]
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
        self.frames[direction] += 1

    # --- address rewriting -----------------------------------------------------------------------------

    async def _maybe_rewrite(self, frame: bytes) -> bytes:
        cid = response_correlation_id(frame)
        request = None if cid is None else self.inflight.answered(cid)
        if request is None or not self.limits.rewrite or not rewrites(*request):
            return frame
        api_key, api_version = request
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
            broken = ending.side == side and ending.kind in ("stalled", "reset")
            if broken or ending.kind == "stalled":
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
