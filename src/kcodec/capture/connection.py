"""The sans-I/O per-connection decoder: TCP segments or byte streams in, capture events out.

:class:`ConnectionDecoder` runs stages 2a-2c (reassembly, framing and pairing, decoding) for one TCP
connection. Feed it either

- the connection's TCP segments in capture order (``feed_segment``), as the capture reader and a
  distributed job do; which side is the client is found from the ports (``ports``: the broker's),
  the SYN, or, with ``autodetect``, by which side's first bytes are a Kafka request; or
- its two byte streams, in order, as a proxy sees them (``feed_bytes(direction, data, time)``; the
  client and server are then given to the constructor and no detection takes place),

then call ``finish()`` once. Each call returns the events completed by what it was given, in the
order they completed: :class:`~kcodec.capture.events.CapturedFrame` per frame and
:class:`~kcodec.capture.events.CaptureIssue` per stream problem. Memory: the segments waiting for
missing bytes (bounded), the bytes of one incomplete frame per direction, and the requests waiting
for a response (bounded).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from kcodec.capture.decoding import FrameDecoder
from kcodec.capture.events import CaptureEvent, CaptureIssue, Direction, IssueKind
from kcodec.capture.framing import MAX_FRAME_SIZE, Framer, Pairing, RawFrame, plausible_request
from kcodec.capture.reassembly import HalfStream
from kcodec.capture.segments import TH_ACK, TH_FIN, TH_RST, TH_SYN, Segment
from kcodec.protocol.errors import KcodecError
from kcodec.protocol.frames import decode_request

__all__ = ["DEFAULT_PORTS", "ConnectionDecoder"]

DEFAULT_PORTS: tuple[int, ...] = (9092,)
#: Segments held while autodetection has not decided whether a connection is Kafka.
PROBE_SEGMENTS: Final = 256
PROBE_BYTES: Final = 1 << 20


class _Probe:
    """Collects the first bytes of one direction (for autodetection)."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def data(self, offset: int, data: bytes, timestamp: float) -> None:
        if len(self.buf) < PROBE_BYTES:
            self.buf += data

    def gap(self, offset: int, length: int, timestamp: float, forced: bool) -> None:
        if not self.buf:
            self.buf += b"\xff" * 4  # the start is missing: nothing to recognise

    def suspect(self) -> None:
        pass


def _port(ep: str) -> int:
    try:
        return int(ep.rsplit(":", 1)[1])
    except (IndexError, ValueError):
        return -1


class ConnectionDecoder:
    """One connection's decoder (see the module docstring)."""

    def __init__(
        self,
        number: int,
        *,
        client: str | None = None,
        server: str | None = None,
        ports: Iterable[int] = DEFAULT_PORTS,
        autodetect: bool = True,
        strict: bool = False,
        max_frame_size: int = MAX_FRAME_SIZE,
        max_buffered: int = 16 * 1024 * 1024,
        max_pending: int = 10000,
    ) -> None:
        self.number = number
        self.ports = frozenset(ports)
        self.autodetect = autodetect
        self.strict = strict
        self.max_frame_size = max_frame_size
        self.max_buffered = max_buffered
        self.max_pending = max_pending
        self.client = client
        self.server = server
        self.first_ts: float | None = None
        self.last_ts = 0.0
        self.kafka: bool | None = None  # None: not decided yet
        self.closed = False  # both sides sent FIN, or one sent RST
        self._a: str | None = None  # the first sender seen
        self._b: str | None = None
        self._syn_from: dict[str, int] = {}  # side -> sequence number of its SYN
        self._fin: set[str] = set()
        self._out: list[CaptureEvent] = []
        self._held: list[Segment] = []
        self._held_bytes = 0
        self._foreign_bytes = 0
        self._halves: dict[str, HalfStream] = {}
        self._framers: dict[str, Framer] = {}
        self._decoder: FrameDecoder | None = None
        self.pairing = Pairing(max_pending)
        if client is not None and server is not None:
            self._start(client, server, stream_start_seen=True)

    # --- feeding -----------------------------------------------------------------------------------

    def feed_bytes(self, direction: Direction, data: bytes, timestamp: float) -> list[CaptureEvent]:
        """The next bytes of one direction's stream (requests: client to server), in order."""
        if self._decoder is None:
            raise RuntimeError("feed_bytes needs the client and server given to the constructor")
        if self.first_ts is None:
            self.first_ts = timestamp
        self.last_ts = max(self.last_ts, timestamp)
        side = self.client if direction == "request" else self.server
        assert side is not None
        self._halves[side].push(data, timestamp)
        return self._take()

    def is_new_connection(self, seg: Segment) -> bool:
        """Whether ``seg`` (same 4-tuple) opens a new connection rather than continuing this one:
        a SYN with another initial sequence number, or a SYN after data or a close."""
        if not seg.flags & TH_SYN or seg.flags & TH_ACK:
            return False
        isn = self._syn_from.get(seg.src)
        if isn is not None:
            return isn != seg.seq
        return self.first_ts is not None and (self._held_bytes > 0 or self.closed or self._has_data())

    def _has_data(self) -> bool:
        return any(h.delivered or h.buffered for h in self._halves.values()) or self._foreign_bytes > 0

    def feed_segment(self, seg: Segment) -> list[CaptureEvent]:
        """The next TCP segment of this connection, in capture order."""
        ts = seg.timestamp
        if self.first_ts is None:
            self.first_ts = ts
            self._a, self._b = seg.src, seg.dst
        if ts > self.last_ts:
            self.last_ts = ts
        flags = seg.flags
        if flags & TH_SYN and seg.src not in self._syn_from:
            self._syn_from[seg.src] = seg.seq
            framer = self._framers.get(seg.src)
            if framer is not None and not self._halves[seg.src].delivered:
                framer.tentative = False
        if flags & (TH_FIN | TH_RST):
            if flags & TH_RST:
                self.closed = True
            self._fin.add(seg.src)
            if len(self._fin) >= 2:
                self.closed = True
        if self.kafka is None and self._decide(seg):
            return self._take()  # held (and, if that decided it, replayed)
        if self.kafka:
            self._add(seg)
        else:
            self._foreign_bytes += len(seg.payload)
        return self._take()

    def _add(self, seg: Segment) -> None:
        half = self._halves.get(seg.src)
        if half is None:
            return  # a third party on the 4-tuple cannot happen; ignore
        other = self._halves.get(seg.dst)
        payload, flags = seg.payload, seg.flags
        if other is not None:
            if payload:
                other.settle()  # the peer answered: what it was sent so far is all there is
            if flags & TH_ACK:
                other.ack(seg.ack)
        half.add(seg.seq, payload, seg.timestamp, bool(flags & TH_SYN))

    # --- deciding which side is the client ------------------------------------------------------------

    def _decide(self, seg: Segment) -> bool:
        """Decide which side is the client if the ports tell; else hold ``seg`` for autodetection
        (True: ``seg`` was taken)."""
        a, b = self._a, self._b
        assert a is not None and b is not None
        a_kafka, b_kafka = _port(a) in self.ports, _port(b) in self.ports
        if a_kafka != b_kafka:
            self._start(b, a) if a_kafka else self._start(a, b)
            return False
        if a_kafka and b_kafka:
            if b in self._syn_from and a not in self._syn_from:
                self._start(b, a)
            else:
                self._start(a, b)
            return False
        if not self.autodetect:
            self.kafka = False
            return False
        self._held.append(seg)
        self._held_bytes += len(seg.payload)
        self._probe(final=len(self._held) >= PROBE_SEGMENTS or self._held_bytes >= PROBE_BYTES)
        return True

    def _probe(self, final: bool) -> None:
        """Autodetection: the side whose first bytes are a request is the client."""
        a, b = self._a, self._b
        assert a is not None and b is not None
        probes = {a: _Probe(), b: _Probe()}
        halves = {side: HalfStream(p, startup=1) for side, p in probes.items()}
        for seg in self._held:
            halves[seg.src].add(seg.seq, seg.payload, seg.timestamp, bool(seg.flags & TH_SYN))
        order = [a, b]
        if b in self._syn_from and a not in self._syn_from:
            order.reverse()
        undecided = False
        for side in order:
            verdict = _looks_like_request(bytes(probes[side].buf), final)
            if verdict is None:
                undecided = True
            elif verdict:
                self._start(side, b if side == a else a)
                return
        if undecided and not final:
            return
        self.kafka = False
        self._foreign_bytes = self._held_bytes
        self._held = []
        self._held_bytes = 0

    def _start(self, client: str, server: str, stream_start_seen: bool | None = None) -> None:
        self.client, self.server = client, server
        self.kafka = True
        self._decoder = FrameDecoder(self.number, client, server, self.pairing, strict=self.strict)
        for side, direction in ((client, "request"), (server, "response")):
            framer = Framer(
                direction,  # type: ignore[arg-type]
                self._on_request if direction == "request" else self._on_response,
                self._reporter(direction),  # type: ignore[arg-type]
                self.pairing,
                max_size=self.max_frame_size,
                stream_start_seen=side in self._syn_from if stream_start_seen is None else stream_start_seen,
            )
            self._framers[side] = framer
            self._halves[side] = HalfStream(framer, max_buffered=self.max_buffered)
        held, self._held = self._held, []
        self._held_bytes = 0
        for seg in held:
            self._add(seg)

    # --- events --------------------------------------------------------------------------------------

    def _on_request(self, raw: RawFrame) -> None:
        assert self._decoder is not None
        self._out.append(self._decoder.request(raw))

    def _on_response(self, raw: RawFrame) -> None:
        assert self._decoder is not None
        self._out.append(self._decoder.response(raw))

    def _reporter(self, direction: Direction) -> object:
        def report(ts: float, kind: IssueKind, message: str, offset: int, length: int) -> None:
            issue = CaptureIssue(ts, kind, message, self.number, self.client, self.server, direction)
            issue.stream_offset, issue.length = offset, length
            self._out.append(issue)

        return report

    def _take(self) -> list[CaptureEvent]:
        out = self._out
        if out:
            self._out = []
        return out

    def finish(self) -> list[CaptureEvent]:
        """The end of the connection (or of the capture): what is still held is decoded or reported."""
        if self.kafka is None and self._held:
            self._probe(final=True)
        if self.kafka is False:
            if self._foreign_bytes:
                self._out.append(
                    CaptureIssue(
                        self.first_ts or 0.0,
                        "not-kafka",
                        f"connection {self._a} <-> {self._b} ({self._foreign_bytes} bytes) is not Kafka "
                        "traffic (no Kafka port, no request found)",
                        self.number,
                        self._a,
                        self._b,
                        length=self._foreign_bytes,
                    )
                )
            return self._take()
        for side in (self.client, self.server):
            if side is None or side not in self._halves:
                continue
            half = self._halves[side]
            half.finish()
            self._framers[side].finish()
            if half.retransmits or half.overlaps:
                direction = "request" if side == self.client else "response"
                self._out.append(
                    CaptureIssue(
                        self.first_ts or 0.0,
                        "retransmits",
                        f"{half.retransmits} retransmitted and {half.overlaps} overlapping segments in the "
                        f"{direction} stream; the first copy of each byte was kept",
                        self.number,
                        self.client,
                        self.server,
                        direction,  # type: ignore[arg-type]
                        None,
                        half.retransmits + half.overlaps,
                    )
                )
        if self.pairing.dropped:
            self._out.append(
                CaptureIssue(
                    self.last_ts,
                    "buffer",
                    f"{self.pairing.dropped} requests were still unanswered when {self.max_pending} later "
                    "requests were waiting; their responses (if any) are reported as unmatched",
                    self.number,
                    self.client,
                    self.server,
                    "request",
                    None,
                    self.pairing.dropped,
                )
            )
        return self._take()


def _looks_like_request(buf: bytes, final: bool) -> bool | None:
    """True/False if ``buf`` (a stream's first bytes) starts with a Kafka request or not; None if
    more bytes are needed to tell."""
    if len(buf) < 14:
        return False if final or (len(buf) >= 4 and buf[0] != 0) else None
    if not plausible_request(buf, 0):
        return False
    size = int.from_bytes(buf[:4], "big", signed=True)
    if 4 + size > len(buf):
        return True if final else None
    try:
        decode_request(buf[: 4 + size], strict=False)
    except KcodecError:
        return False
    except Exception:
        return False
    return True
