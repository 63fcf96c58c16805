"""Stage 2a: one direction of a TCP connection, reassembled: segments in, in-order bytes out.

:class:`HalfStream` takes the segments of one direction in capture order (``add``) and passes the
stream's bytes, in order and each byte once, to a sink (``sink.data(offset, bytes, time)``), with
``sink.gap(offset, length, time, forced)`` where bytes were never captured. Stream offsets count
from the byte after the SYN (or, for a connection whose start was not captured, from the earliest
of its first few segments), and go past 4 GiB: sequence numbers wrap, offsets do not.

- retransmitted segments (bytes already passed on) are dropped and counted (``retransmits``);
- overlapping segments are cut to their new bytes (counted in ``overlaps``), and the sink is told
  (``sink.suspect()``): a segment that overlaps bytes already passed on may have a damaged
  sequence number, so that its new bytes are not where the stream's frames continue;
- out-of-order segments wait until the bytes before them arrive, or until the receiver acknowledges
  them (``ack``: it got the missing bytes, the capture did not); what waits is bounded
  (``max_buffered`` bytes, ``max_segments`` segments): past that the missing bytes are given up on
  (``forced=True``) and reassembly goes on after them;
- ``finish()`` passes on whatever still waits, reporting the holes before it as gaps.
"""

from __future__ import annotations

import heapq
from typing import Final, Protocol

__all__ = ["HalfStream", "StreamSink"]

_M32: Final = 0xFFFFFFFF
_HALF: Final = 0x80000000


class StreamSink(Protocol):
    def data(self, offset: int, data: bytes, timestamp: float) -> None: ...

    def gap(self, offset: int, length: int, timestamp: float, forced: bool) -> None: ...

    def suspect(self) -> None: ...


def _signed(d: int) -> int:
    return ((d + _HALF) & _M32) - _HALF


class HalfStream:
    """Reassembles one direction of a TCP connection (see the module docstring)."""

    __slots__ = (
        "_early",
        "_heap",
        "_pending",
        "acked",
        "base",
        "buffered",
        "delivered",
        "max_buffered",
        "max_segments",
        "next",
        "overlaps",
        "retransmits",
        "sink",
        "startup",
    )

    def __init__(
        self,
        sink: StreamSink,
        *,
        max_buffered: int = 16 * 1024 * 1024,
        max_segments: int = 4096,
        startup: int = 4,
    ) -> None:
        self.sink = sink
        self.base: int | None = None  # sequence number of stream offset 0
        self.next = 0  # stream offset of the next byte to pass on
        self.acked = 0  # stream offset the receiver acknowledged: bytes before it were sent
        self._pending: dict[int, tuple[bytes, float]] = {}
        self._heap: list[int] = []
        self._early: list[tuple[int, bytes, float]] | None = []  # before stream offset 0 is known
        self.buffered = 0
        self.delivered = 0
        self.retransmits = 0
        self.overlaps = 0
        self.max_buffered = max_buffered
        self.max_segments = max_segments
        self.startup = startup

    @property
    def started(self) -> bool:
        return self._early is None

    def add(self, seq: int, payload: bytes, timestamp: float, syn: bool = False) -> None:
        """One segment of this direction (``syn``: it carries the SYN flag)."""
        if syn:
            if self._early is not None:
                self.base = (seq + 1) & _M32  # the SYN takes one sequence number
                self.settle()
            seq = (seq + 1) & _M32  # data in a SYN (TCP Fast Open) follows it
        if not payload:
            return
        if self._early is not None:
            self._early.append((seq, payload, timestamp))
            if len(self._early) >= self.startup:
                self.settle()
            return
        assert self.base is not None
        nxt = self.next
        rel = (seq - self.base) & _M32
        if rel == nxt & _M32 and not self._heap:  # in order, nothing waiting: the common case
            self.next = nxt + len(payload)
            self.delivered += len(payload)
            self.sink.data(nxt, payload, timestamp)
            return
        off = nxt + _signed(rel - (nxt & _M32))
        self._add(off, payload, timestamp)

    def settle(self) -> None:
        """Fix stream offset 0 now (the SYN, or the earliest segment held so far) and pass on what
        was held. Called when a segment arrives in the other direction: the peer answered, so the
        bytes before it were sent."""
        early = self._early
        if early is None:
            return
        self._early = None
        if self.base is None:
            if not early:
                self._early = []
                return
            first = early[0][0]
            self.base = min((s for s, _, _ in early), key=lambda s: _signed(s - first))
        base = self.base
        for seq, payload, ts in sorted(early, key=lambda e: _signed(e[0] - base)):
            off = self.next + _signed(((seq - base) & _M32) - (self.next & _M32))
            self._add(off, payload, ts)

    def ack(self, ack: int) -> None:
        """The receiver acknowledged everything before sequence number ``ack``: bytes missing before
        it were sent (and received) but not captured; stop waiting for them."""
        if self._early is not None:
            if not self._early:
                return
            self.settle()
        base = self.base
        assert base is not None
        nxt = self.next
        if nxt == 0 and not self._heap and ack != base:
            # before any data, the peer can acknowledge only the SYN: its acknowledgement is where the
            # stream starts (the SYN's own sequence number may be damaged)
            self.base = ack
            return
        off = nxt + ((((ack - base) & _M32) - (nxt & _M32) + _HALF) & _M32) - _HALF  # (_signed inline)
        if off <= self.acked:
            return
        self.acked = off
        while self._heap and self.next < off:
            if self._heap[0] > off:  # what waits lies beyond the acknowledged bytes: give up on those only
                self._skip_to(off, self._pending[self._heap[0]][1])
                break
            self._skip_hole(False)

    def push(self, data: bytes, timestamp: float) -> None:
        """The next in-order bytes of a stream that needs no reassembly (a proxy's byte stream)."""
        self._early = None
        if data:
            self._deliver(self.next, data, timestamp)

    def _add(self, off: int, data: bytes, ts: float) -> None:
        nxt = self.next
        end = off + len(data)
        if end <= nxt:
            self.retransmits += 1
            return
        if off > nxt:
            held = self._pending.get(off)
            if held is not None:
                if len(held[0]) >= len(data):
                    self.retransmits += 1
                    return
                self.buffered -= len(held[0])
            else:
                heapq.heappush(self._heap, off)
            self._pending[off] = (data, ts)
            self.buffered += len(data)
            if self.acked >= off:  # acknowledged: the bytes before it will not be captured
                self._skip_hole(False)
            elif self.buffered > self.max_buffered or len(self._pending) > self.max_segments:
                self._skip_hole(True)
            return
        self._deliver(off, data, ts)
        if self._heap:
            self._drain()

    def _deliver(self, off: int, data: bytes, ts: float) -> None:
        """Pass on the bytes of a segment that starts at or before ``next`` (its new bytes only)."""
        nxt = self.next
        if off + len(data) <= nxt:
            self.retransmits += 1
            return
        if off < nxt:
            self.overlaps += 1
            data = data[nxt - off :]
            self.sink.suspect()
        self.next = nxt + len(data)
        self.delivered += len(data)
        self.sink.data(nxt, data, ts)

    def _drain(self) -> None:
        heap, pending = self._heap, self._pending
        while heap and heap[0] <= self.next:
            off = heapq.heappop(heap)
            data, ts = pending.pop(off)
            self.buffered -= len(data)
            self._deliver(off, data, ts)

    def _skip_hole(self, forced: bool) -> None:
        """Give up on the bytes missing before the first waiting segment."""
        first = self._heap[0]
        self._skip_to(first, self._pending[first][1], forced)

    def _skip_to(self, off: int, ts: float, forced: bool = False) -> None:
        """Give up on the bytes missing before stream offset ``off`` (a segment with a damaged
        sequence number may wait far beyond the bytes still to come: they are not skipped)."""
        self.sink.gap(self.next, off - self.next, ts, forced)
        self.next = off
        self._drain()

    def finish(self) -> None:
        """Pass on everything still held (the holes before it become gaps)."""
        self.settle()
        while self._heap:
            self._skip_hole(False)
