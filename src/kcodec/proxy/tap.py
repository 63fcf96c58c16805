"""What one proxied connection looks like to its client, decoded live and recorded (sans-I/O).

A :class:`Tap` is told, in the order they happen, the bytes the client sent (requests, as read from
it) and the bytes it was sent (responses, after any address rewriting), and how the connection
ended. It feeds them to the capture decoder's per-connection stage
(:class:`kcodec.capture.ConnectionDecoder`, ``feed_bytes``), which yields the same
:class:`~kcodec.capture.CapturedFrame` and :class:`~kcodec.capture.CaptureIssue` events as ``kcodec
decode-capture``, and, when a pcap is being written, to a :class:`~kcodec.proxy.pcap.TcpFlow` at the
same timestamp, so that the file reads back to the same events.
"""

from __future__ import annotations

from collections.abc import Callable

from kcodec.capture import CaptureEvent, ConnectionDecoder, Direction
from kcodec.capture.framing import MAX_FRAME_SIZE
from kcodec.capture.segments import endpoint
from kcodec.proxy.pcap import PcapWriter, Side, TcpFlow, capture_time

__all__ = ["Tap"]

Endpoint = tuple[str, int]


class Tap:
    """One connection's live decoding and recording (see the module docstring)."""

    def __init__(
        self,
        number: int,
        client: Endpoint,
        server: Endpoint,
        sink: Callable[[CaptureEvent], None] | None,
        pcap: PcapWriter | None = None,
        *,
        strict: bool = False,
        max_frame_size: int = MAX_FRAME_SIZE,
    ) -> None:
        self.number = number
        self.client = endpoint(*client)
        self.server = endpoint(*server)
        self._sink = sink
        self._decoder = (
            None
            if sink is None
            else ConnectionDecoder(
                number, client=self.client, server=self.server, strict=strict, max_frame_size=max_frame_size
            )
        )
        self._flow = None if pcap is None else TcpFlow(pcap, client, server)
        self.ended = False

    def _emit(self, events: list[CaptureEvent]) -> None:
        if self._sink is not None:
            for ev in events:
                self._sink(ev)

    def opened(self) -> None:
        if self._flow is not None:
            self._flow.open(capture_time())

    def data(self, direction: Direction, payload: bytes | bytearray) -> None:
        """``payload`` went from the client to the proxy (``request``) or to the client (``response``)."""
        if self.ended or not payload:
            return
        ts = capture_time()
        if self._flow is not None:
            self._flow.data("client" if direction == "request" else "server", payload, ts)
        if self._decoder is not None:
            data = payload if isinstance(payload, bytes) else bytes(payload)
            self._emit(self._decoder.feed_bytes(direction, data, ts))

    def closed(self, first: Side, *, reset: bool = False) -> None:
        """The connection ended, begun by ``first`` (the client, or the proxy on the server's side)."""
        if self.ended:
            return
        self.ended = True
        if self._flow is not None:
            self._flow.close(first, capture_time(), reset=reset)
        if self._decoder is not None:
            self._emit(self._decoder.finish())
