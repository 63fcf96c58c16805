"""Many connections at once: :class:`CaptureDecoder` (segments in capture order -> events) and
:func:`iter_capture` (a capture file -> events, streamed).

The decoder routes each segment to its connection's
:class:`~kcodec.capture.connection.ConnectionDecoder` (a new one per 4-tuple, and again when a SYN
reopens a 4-tuple), numbers connections 1, 2, ... in order of their first segment, and finishes a
connection a little (``linger`` seconds of capture time) after both sides closed it, so that memory
is bounded by the connections open at a time, not by the capture's length.

A SYN that would reopen a 4-tuple whose connection is still open (not closed by FIN or RST) is held
until the stream's own segments tell: the peer's SYN-ACK of it, or the sender's next segment at its
sequence number + 1, make it a new connection (port reuse after a close that was not captured); data
that continues the open connection's stream makes it an anomaly (a corrupt or stray SYN), reported
as such and otherwise ignored, so that the connection's later frames are not lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Final

from kcodec.capture.connection import DEFAULT_PORTS, ConnectionDecoder
from kcodec.capture.events import CaptureEvent, CaptureIssue
from kcodec.capture.framing import MAX_FRAME_SIZE
from kcodec.capture.segments import TH_ACK, TH_FIN, TH_RST, TH_SYN, Segment, iter_segments

__all__ = ["SWEEP_EVERY", "CaptureDecoder", "decode_segments", "iter_capture"]

SWEEP_EVERY: Final = 2048  # segments between sweeps of closed connections
_NOTHING: list[tuple[int, int, list[CaptureEvent]]] = []  # (never appended to)


class CaptureDecoder:
    """Decodes the segments of any number of connections, fed in capture order (see the module
    docstring). ``first_number``: the number given to the first connection."""

    def __init__(
        self,
        *,
        ports: Iterable[int] = DEFAULT_PORTS,
        autodetect: bool = True,
        strict: bool = False,
        max_frame_size: int = MAX_FRAME_SIZE,
        first_number: int = 1,
        linger: float = 5.0,
    ) -> None:
        self.ports = tuple(ports)
        self.autodetect = autodetect
        self.strict = strict
        self.max_frame_size = max_frame_size
        self.next_number = first_number
        self.linger = linger
        self.open: dict[str, ConnectionDecoder] = {}
        # key -> (capture time it was seen closed, index of the segment that closed it)
        self._closing: dict[str, tuple[float, int]] = {}
        self._seen = 0  # segments of the capture counted so far (see advance)
        self.connections = 0
        self._held_syn: dict[str, Segment] = {}  # key -> a SYN into an open connection, undecided

    def _new(self, key: str) -> ConnectionDecoder:
        conn = ConnectionDecoder(
            self.next_number,
            ports=self.ports,
            autodetect=self.autodetect,
            strict=self.strict,
            max_frame_size=self.max_frame_size,
        )
        self.next_number += 1
        self.connections += 1
        self.open[key] = conn
        return conn

    def feed(self, seg: Segment) -> list[CaptureEvent]:
        """One segment (any connection), in capture order; the events it completes."""
        out = self.route(seg)
        swept = self.advance(seg.timestamp)
        for _, _, events in swept:
            out = out + events if out else events
        return out

    def route(self, seg: Segment) -> list[CaptureEvent]:
        """``seg`` to its connection (opening one if needed): the events it completes. Unlike
        :meth:`feed`, the segment is not counted and nothing is swept: a decoder that is given only
        some connections of a capture (one shard of it) calls :meth:`advance` for every segment."""
        key = seg.key
        conn = self.open.get(key)
        out: list[CaptureEvent] = []
        held = self._held_syn.get(key) if self._held_syn else None
        if held is not None and conn is not None:
            verdict = _reopens(held, seg)
            if verdict is True:  # a new connection on the 4-tuple: it starts with the held SYN
                del self._held_syn[key]
                out = self._reopen(key, conn, held)
                conn = self.open[key]
            elif verdict is False:
                del self._held_syn[key]
                out = [_stray_syn(conn, held)]
        if conn is not None and seg.flags & TH_SYN and conn.is_new_connection(seg):
            if not conn.closed and not seg.payload:
                self._held_syn[key] = seg  # until the stream's next segments tell (module docstring)
                return out
            out = out + conn.finish() if out else conn.finish()
            del self.open[key]
            self._closing.pop(key, None)
            conn = None
        if conn is None:
            if not seg.payload and not seg.flags & (TH_SYN | TH_FIN | TH_RST):
                return out
            if not seg.payload and seg.flags & (TH_FIN | TH_RST) and not seg.flags & TH_SYN:
                return out  # the end of a connection whose data was all before the capture (or finished)
            conn = self._new(key)
        events = conn.feed_segment(seg)
        if events:
            out = out + events if out else events
        if conn.closed and key not in self._closing:
            self._closing[key] = (seg.timestamp, self._seen)
        return out

    def _reopen(self, key: str, old: ConnectionDecoder, syn: Segment) -> list[CaptureEvent]:
        """Finish ``old`` and start a new connection on ``key`` with ``syn``: the events of both."""
        out = old.finish()
        del self.open[key]
        self._closing.pop(key, None)
        conn = self._new(key)
        return out + conn.feed_segment(syn)

    def _unheld(self, key: str) -> list[CaptureEvent]:
        """The anomaly of a SYN still held for ``key`` when its connection ends, if any."""
        held = self._held_syn.pop(key, None) if self._held_syn else None
        conn = self.open.get(key)
        return [_stray_syn(conn, held)] if held is not None and conn is not None else []

    def skip(self, n: int) -> None:
        """Counts ``n`` segments of the capture routed elsewhere, as :meth:`advance` would, none of
        them where it sweeps (every ``SWEEP_EVERY``-th segment): the caller calls :meth:`advance`
        for those, so that their times are not needed."""
        self._seen += n

    def advance(self, now: float) -> list[tuple[int, int, list[CaptureEvent]]]:
        """Counts one segment of the capture (``now``: its time), routed here or not; every
        ``SWEEP_EVERY``-th, connections closed more than ``linger`` seconds of capture time ago are
        finished: ``(index of the segment that closed it, its number, its last events)`` for each, in
        the order they closed. The cadence counts every segment, so that all shards of a capture sweep at the
        same places and their events merge into the order one decoder gives."""
        self._seen += 1
        if self._seen % SWEEP_EVERY or not self._closing:
            return _NOTHING
        out: list[tuple[int, int, list[CaptureEvent]]] = []
        for key, (when, index) in list(self._closing.items()):
            if now - when >= self.linger:
                del self._closing[key]
                stray = self._unheld(key)
                conn = self.open.pop(key, None)
                if conn is not None:
                    out.append((index, conn.number, stray + conn.finish()))
        return out

    def finish(self) -> list[CaptureEvent]:
        """The end of the capture: every open connection is finished, in order of number."""
        return [ev for _, events in self.finish_each() for ev in events]

    def finish_each(self) -> list[tuple[int, list[CaptureEvent]]]:
        """:meth:`finish`, as ``(connection number, its last events)`` in order of number."""
        out = [
            (conn.number, self._unheld(key) + conn.finish())
            for key, conn in sorted(self.open.items(), key=lambda kc: kc[1].number)
        ]
        self.open.clear()
        self._closing.clear()
        return out


_M32: Final = 0xFFFFFFFF


def _reopens(syn: Segment, seg: Segment) -> bool | None:
    """Whether the segment after a held SYN shows it opened a new connection (True), showed it to be
    stray (False: data continuing the open stream), or neither yet (None)."""
    after = (syn.seq + 1) & _M32
    if seg.src == syn.dst and seg.flags & TH_SYN and seg.flags & TH_ACK and seg.ack == after:
        return True  # the peer's SYN-ACK of it
    if seg.src == syn.src and seg.seq == after:
        return True  # the sender goes on from it
    if seg.payload or seg.flags & (TH_FIN | TH_RST):
        return False
    return None


def _stray_syn(conn: ConnectionDecoder, syn: Segment) -> CaptureIssue:
    side = "request" if syn.src == conn.client else "response" if syn.src == conn.server else None
    return CaptureIssue(
        syn.timestamp,
        "anomaly",
        f"a SYN from {syn.src} (sequence number {syn.seq}) inside the open connection, whose stream then "
        "went on: ignored (a stray or corrupt segment, not a new connection)",
        conn.number,
        conn.client,
        conn.server,
        side,  # type: ignore[arg-type]
    )


def decode_segments(
    segments: Iterable[Segment | CaptureIssue],
    *,
    ports: Iterable[int] = DEFAULT_PORTS,
    autodetect: bool = True,
    strict: bool = False,
    max_frame_size: int = MAX_FRAME_SIZE,
    first_number: int = 1,
) -> Iterator[CaptureEvent]:
    """Events of segments given in capture order (issues among them are passed through)."""
    decoder = CaptureDecoder(
        ports=ports,
        autodetect=autodetect,
        strict=strict,
        max_frame_size=max_frame_size,
        first_number=first_number,
    )
    for seg in segments:
        if isinstance(seg, CaptureIssue):
            yield seg
        else:
            yield from decoder.feed(seg)
    yield from decoder.finish()


def iter_capture(
    source: str | Path | IO[bytes],
    *,
    ports: Iterable[int] = DEFAULT_PORTS,
    autodetect: bool = True,
    strict: bool = False,
    max_frame_size: int = MAX_FRAME_SIZE,
    start: int = 0,
    end: int | None = None,
) -> Iterator[CaptureEvent]:
    """Every Kafka frame (``CapturedFrame``) and problem (``CaptureIssue``) of a capture, streamed:
    each is yielded as soon as it is complete (so in the order frames complete in the capture, which
    is time order unless the capture is). Memory is bounded by the connections open at a time and the
    requests waiting for responses on them, not by the size of the capture.

    ``source``: a path, ``"-"`` (standard input) or a binary file object. ``strict=False`` (the
    default) decodes leniently: bytes left after a body and known off-spec layouts become diagnostics
    instead of errors. ``start``/``end``: only the packets recorded in that byte range of the file.
    Raises ``CaptureFileError`` (a ``KcodecError``) only if the data is not a pcap/pcapng at all.
    """
    yield from decode_segments(
        iter_segments(source, start=start, end=end),
        ports=ports,
        autodetect=autodetect,
        strict=strict,
        max_frame_size=max_frame_size,
    )
