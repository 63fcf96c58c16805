"""Stage 2b: Kafka framing (int32 size + frame) of one direction's bytes, and request/response pairing.

A :class:`Framer` is the sink of a :class:`~kcodec.capture.reassembly.HalfStream` (or is fed
in-order bytes directly): it cuts the byte stream into size-prefixed frames and hands each one on as a
:class:`RawFrame`, complete or broken (a gap or the end of the capture inside it, or a size prefix
that cannot be Kafka's). Where the next frame boundary is unknown (after a gap that swallowed one,
at a stream whose start was not captured, after an implausible size) it looks for the next plausible
frame (a request: sane size, known API key and version, sane client id length; a response: sane size
and the correlation id of a request still waiting on the connection) and reports the bytes skipped.
Memory: the bytes of one incomplete frame (frames claiming more than ``max_size`` are not Kafka).

:class:`Pairing` keeps the requests of one connection that wait for their response, by correlation
id, bounded (``limit``; the oldest are dropped past it, and counted).
"""

from __future__ import annotations

import re
import struct
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from kcodec.capture.events import Direction, IssueKind, reduce_by_fields
from kcodec.protocol.errors import DecodeError
from kcodec.protocol.registry import apis

__all__ = ["MAX_FRAME_SIZE", "Framer", "Pairing", "RawFrame", "plausible_request"]

#: Frames claiming more than this are taken as "not Kafka" (the broker's socket.request.max.bytes is
#: 100 MiB by default; fetch responses can be larger, so be generous).
MAX_FRAME_SIZE: Final = 256 * 1024 * 1024
_I32: Final = struct.Struct(">i")
_REQ_HEAD: Final = struct.Struct(">ihhih")
_RESP_HEAD: Final = struct.Struct(">ii")
# Where a request header may start: api key 0..127 and version 0..63, as they are on the wire.
_REQUEST_HINT: Final = re.compile(rb"\x00[\x00-\x7f]\x00[\x00-\x3f]")
_SIZE_PATH: Final = "frame.size"
_KEEP: Final = 16  # bytes kept while searching (a candidate's header may start in them)
#: How far a resync candidate whose frame reaches past the bytes at hand is held, waiting for a
#: candidate after it whose frame is followed by another plausible frame (checked: preferred).
_VERIFY: Final = 64 * 1024


@dataclass(slots=True, init=False)
class RawFrame:
    """A frame's bytes as captured, with where and when it was seen, and what broke it (if it is)."""

    offset: int  # stream offset of the size prefix
    data: bytes  # the frame, size prefix included (shorter than 4 + size if broken)
    timestamp: float
    size: int | None  # the size prefix, if captured
    error: DecodeError | None  # framing problem (bad size, truncated, broken by a gap)
    framed: bool  # False if the bytes are not Kafka framing at all (header fields meaningless)

    # (written out: compiled, the __init__ that dataclass writes costs 8x the instructions)
    def __init__(
        self,
        offset: int,
        data: bytes,
        timestamp: float,
        size: int | None,
        error: DecodeError | None = None,
        framed: bool = True,
    ) -> None:
        self.offset = offset
        self.data = data
        self.timestamp = timestamp
        self.size = size
        self.error = error
        self.framed = framed

    def __reduce__(self) -> tuple[Any, ...]:
        return reduce_by_fields(self)


@cache
def _known_versions() -> dict[int, tuple[int, int]]:
    return {a.key: (a.min_version, a.max_version) for a in apis()}


def plausible_request(buf: bytes | bytearray, pos: int) -> bool:
    """Could a request frame start at ``pos``? (size, API key and version, client id length)"""
    if len(buf) - pos < 14:
        return False
    size: int
    key: int
    version: int
    client_len: int
    size, key, version, _corr, client_len = _REQ_HEAD.unpack_from(buf, pos)
    if size < 10 or size > MAX_FRAME_SIZE:
        return False
    versions = _known_versions().get(key)
    if versions is None or not versions[0] <= version <= versions[1]:
        return False
    return client_len == -1 or 0 <= client_len <= size - 10


class Pairing:
    """Requests waiting for their response on one connection (correlation id -> api key, version,
    time sent); bounded by ``limit`` (the oldest are dropped, counted in ``dropped``)."""

    __slots__ = ("_order", "_pending", "_serial", "count", "dropped", "limit")

    def __init__(self, limit: int = 10000) -> None:
        self._pending: dict[int, deque[tuple[int, int, float, int]]] = {}
        self._order: deque[tuple[int, int]] = deque()
        self._serial = 0
        self.count = 0
        self.dropped = 0
        self.limit = limit

    def __contains__(self, corr: int) -> bool:
        return bool(self._pending.get(corr))

    def add(self, corr: int, api_key: int, api_version: int, sent: float) -> None:
        self._serial += 1
        q = self._pending.get(corr)
        if q is None:
            q = self._pending[corr] = deque()
        q.append((api_key, api_version, sent, self._serial))
        self._order.append((corr, self._serial))
        self.count += 1
        while self.count > self.limit:
            c, serial = self._order.popleft()
            q = self._pending.get(c)
            if q and q[0][3] == serial:
                q.popleft()
                self.count -= 1
                self.dropped += 1
                if not q:
                    del self._pending[c]

    def take(self, corr: int) -> tuple[int, int, float] | None:
        """The oldest waiting request with correlation id ``corr`` (removed), or None."""
        q = self._pending.get(corr)
        if not q:
            return None
        key, version, sent, _ = q.popleft()
        if not q:
            del self._pending[corr]
        self.count -= 1
        order, pending = self._order, self._pending
        while order:
            c, serial = order[0]
            head = pending.get(c)
            if head and head[0][3] == serial:
                break
            order.popleft()
        return key, version, sent

    def waiting(self) -> list[int]:
        return list(self._pending)

    def plausible_response(self, buf: bytes | bytearray, pos: int) -> bool:
        """Could the response to a waiting request start at ``pos``?"""
        if len(buf) - pos < 8:
            return False
        size, corr = _RESP_HEAD.unpack_from(buf, pos)
        return 4 <= size <= MAX_FRAME_SIZE and bool(self._pending.get(corr))


Emit = Callable[[RawFrame], None]
Report = Callable[[float, IssueKind, str, int, int], None]  # (time, kind, message, offset, length)


class Framer:
    """Cuts one direction's in-order bytes into frames (see the module docstring). A
    :class:`~kcodec.capture.reassembly.StreamSink`: ``data``, ``gap``; then ``finish``."""

    __slots__ = (
        "_buf",
        "_more",
        "_more_len",
        "_recheck",
        "_skip",
        "_skipped",
        "_start",
        "_unchecked",
        "_want",
        "_why",
        "direction",
        "emit",
        "latest",
        "max_size",
        "pairing",
        "report",
        "synced",
        "tentative",
    )

    def __init__(
        self,
        direction: Direction,
        emit: Emit,
        report: Report,
        pairing: Pairing,
        *,
        max_size: int = MAX_FRAME_SIZE,
        stream_start_seen: bool = True,
    ) -> None:
        self.direction = direction
        self.emit = emit
        self.report = report
        self.pairing = pairing
        self.max_size = max_size
        self._buf = bytearray()
        self._start = 0  # stream offset of _buf[0]
        # when _buf holds the start of one frame and nothing else to do: the length _buf must reach to
        # hold all of it (0: not known; _cut decides)
        self._want = 0
        # meanwhile, the frame's later pieces, not yet added to _buf (see _gather), and their length:
        # a frame that ends where a segment ends is then made of its pieces with one copy
        self._more: list[bytes] = []
        self._more_len = 0
        self._skip = 0  # bytes still to drop: the rest of a frame broken by a gap
        # the skip comes from a frame header read before a gap: the first bytes after the gap are
        # checked first (a damaged segment can make a frame's size claim bytes that are not its own)
        self._recheck = False
        self._skipped = 0  # bytes dropped while looking for a frame boundary
        self._why = ""
        self.synced = True
        # A stream whose start was not captured may begin inside a frame: check its first frame.
        self.tentative = not stream_start_seen
        # why the next frame's header is checked before it is believed (while ``tentative``)
        self._unchecked = "at the start of the stream (its start was not captured)"
        self.latest = 0.0

    def _plausible(self, buf: bytes | bytearray, pos: int) -> bool:
        if self.direction == "request":
            return plausible_request(buf, pos)
        return self.pairing.plausible_response(buf, pos)

    def _candidates(self, buf: bytearray, pos: int) -> Iterator[int]:
        """Plausible frame starts at or after ``pos``, in order."""
        if self.direction == "request":
            for m in _REQUEST_HINT.finditer(buf, pos + 4):
                if plausible_request(buf, m.start() - 4):
                    yield m.start() - 4
            return
        waiting = self.pairing.waiting()
        if not waiting:
            return
        hint = re.compile(b"|".join(re.escape(_I32.pack(c)) for c in waiting[-256:]))
        for m in hint.finditer(buf, pos + 4):
            if self.pairing.plausible_response(buf, m.start() - 4):
                yield m.start() - 4

    def _search(self, buf: bytearray, pos: int) -> tuple[int | None, bool]:
        """The frame start to resync at, at or after ``pos``, and whether it is checked: the first
        candidate whose frame ends in ``buf`` followed by another plausible frame (or by the end of
        ``buf``); else the first candidate whose frame reaches past ``buf`` (unchecked); else None."""
        n = len(buf)
        first: int | None = None
        for c in self._candidates(buf, pos):
            (size,) = _I32.unpack_from(buf, c)
            end = c + 4 + size
            if end > n:
                if first is None:
                    first = c
                continue
            if end == n or n - end < 14 or self._plausible(buf, end):
                return c, True
        return first, False

    def _lost_sync(self, why: str) -> None:
        self.synced = False
        self._why = why

    def data(self, offset: int, data: bytes, timestamp: float) -> None:
        if timestamp > self.latest:
            self.latest = timestamp
        want = self._want
        if want:  # the middle of a frame spanning segments: gather it (no skip, no search pending)
            self._more.append(data)
            self._more_len += len(data)
            buf = self._buf
            have = len(buf) + self._more_len
            if have < want:
                return
            self._want = 0
            if have == want:  # the frame ends with this segment (what _cut would do, with one copy)
                frame = b"".join([buf, *self._more])
                self._more.clear()
                self._more_len = 0
                buf.clear()
                start = self._start
                self._start = start + want
                self.emit(RawFrame(start, frame, self.latest, want - 4))
                return
            self._gather()
            self._cut()
            return
        if self._skip and self._recheck:
            self._recheck = False
            if offset == self._start and self._plausible(data, 0):
                self.report(
                    timestamp,
                    "resync",
                    f"a plausible frame starts right after the gap: the {self._skip} bytes the frame "
                    "before it claimed beyond the gap were not skipped",
                    offset,
                    0,
                )
                self._skip = 0
        if self._skip:
            n = min(self._skip, len(data))
            self._skip -= n
            if n == len(data):
                return
            data = data[n:]
            offset += n
        buf = self._buf
        if not buf:
            if self.synced and not self.tentative:
                data = self._whole_frames(offset, data)
                if not data:
                    return
                offset = self._start
            self._start = offset
        buf += data
        self._cut()

    def _gather(self) -> None:
        """The pieces held apart while waiting for the rest of a frame, added to ``_buf``."""
        if self._more:
            self._buf += b"".join(self._more)
            self._more.clear()
            self._more_len = 0

    def _whole_frames(self, offset: int, data: bytes) -> bytes:
        """Emit the complete, plausible frames at the start of ``data`` straight from it (no copy
        into the buffer); the rest of ``data`` is returned, and ``_start`` set to its offset."""
        pos, n = 0, len(data)
        emit, max_size, latest = self.emit, self.max_size, self.latest
        size: int
        while n - pos >= 4:
            (size,) = _I32.unpack_from(data, pos)
            end = pos + 4 + size
            if size < 0 or size > max_size or end > n:
                break
            emit(RawFrame(offset + pos, data if pos == 0 and end == n else data[pos:end], latest, size))
            pos = end
        self._start = offset + pos
        return data[pos:] if pos else data

    def _cut(self) -> None:
        buf = self._buf
        n = len(buf)
        pos = 0
        emit, start = self.emit, self._start
        size: int
        while True:
            if not self.synced:
                found, checked = self._search(buf, pos)
                if found is not None and not checked and n - found < _VERIFY:
                    self._skipped += found - pos  # wait for more bytes: a checked candidate may follow
                    pos = found
                    break
                if found is None:
                    keep_from = max(pos, n - _KEEP)
                    self._skipped += keep_from - pos
                    pos = keep_from
                    break
                skipped = self._skipped + found - pos
                if skipped:
                    self.report(
                        self.latest,
                        "resync",
                        f"skipped {skipped} bytes {self._why} to the next plausible frame",
                        start + found - skipped,
                        skipped,
                    )
                self._skipped = 0
                self.synced = True
                self.tentative = False
                pos = found
            if n - pos < 4:
                break
            if self.tentative:
                if n - pos < 14:
                    break
                self.tentative = False
                if not self._plausible(buf, pos):
                    self._lost_sync(self._unchecked)
                    continue
            (size,) = _I32.unpack_from(buf, pos)
            if size < 0 or size > self.max_size:
                emit(
                    RawFrame(
                        start + pos,
                        bytes(buf[pos : pos + 64]),
                        self.latest,
                        size,
                        DecodeError(f"implausible frame size {size}: not Kafka framing", 0, "frame.size"),
                        framed=False,
                    )
                )
                self._lost_sync(f"after an implausible frame size ({size})")
                pos += 1  # the search starts one byte on; that byte is skipped
                self._skipped += 1
                continue
            end = pos + 4 + size
            if end > n:
                self._want = end - pos  # (the frame starts the buffer once the bytes before are gone)
                break
            frame = bytes(buf) if pos == 0 and end == n else bytes(buf[pos:end])  # (one copy, not two)
            emit(RawFrame(start + pos, frame, self.latest, size))
            pos = end
        if pos:
            del buf[:pos]
            self._start = start + pos

    def gap(self, offset: int, length: int, timestamp: float, forced: bool) -> None:
        why = " (given up on: too many later segments waiting)" if forced else ""
        self.report(
            timestamp,
            "gap",
            f"{length} bytes missing (not captured) at stream offset {offset}{why}",
            offset,
            length,
        )
        resume = offset + length
        self._gather()
        buf = self._buf
        if self._skip:
            if length < self._skip:
                self._skip -= length
            else:
                self._skip = 0
                self._lost_sync("after a gap")
        elif self.synced and buf:
            have = len(buf)
            if have >= 4:
                (size,) = _I32.unpack_from(buf, 0)
                frame_end = self._start + 4 + size
                self.emit(
                    RawFrame(
                        self._start,
                        bytes(buf),
                        self.latest,
                        size,
                        DecodeError(
                            f"frame truncated: {size} bytes claimed, {have - 4} captured before a gap",
                            0,
                            "frame.size",
                        ),
                    )
                )
                if frame_end >= resume:
                    self._skip = frame_end - resume
                    self._recheck = self._skip > 0
                else:
                    self._lost_sync("after a gap")
            else:
                self.emit(self._cut_prefix("before a gap"))
                self._lost_sync("after a gap")
        elif self.synced:
            self._lost_sync("after a gap")
        else:
            self._skipped += len(buf)
        buf.clear()
        self._want = 0
        self._start = resume
        # the bytes after a gap may not be where the sequence numbers put them (a damaged header):
        # the next frame's header is checked against the pairing before it is believed
        self.tentative = True
        self._unchecked = self._check_why("after a gap")

    def suspect(self) -> None:
        """The bytes that follow come from a segment that overlapped bytes already passed on: the
        next frame's header is checked against the pairing before it is believed."""
        if self.synced and not self.tentative:
            self.tentative = True
            self._unchecked = self._check_why("after overlapping segments")

    def _check_why(self, where: str) -> str:
        if self.direction == "request":
            return f"{where} (the frame there did not fit: no valid API key and version)"
        return f"{where} (the frame there did not fit: no request waits for it)"

    def _cut_prefix(self, why: str) -> RawFrame:
        buf = self._buf
        return RawFrame(
            self._start,
            bytes(buf),
            self.latest,
            None,
            DecodeError(f"frame size prefix cut short: {len(buf)} of 4 bytes captured {why}", 0, _SIZE_PATH),
        )

    def finish(self) -> None:
        """The end of the stream: report a frame it ends inside, or bytes no frame was found in."""
        self._gather()
        buf = self._buf
        if not self.synced and buf:  # a candidate still waiting to be checked: the stream has ended
            found, _ = self._search(buf, 0)
            if found is not None:
                skipped = self._skipped + found
                if skipped:
                    self.report(
                        self.latest,
                        "resync",
                        f"skipped {skipped} bytes {self._why} to the next plausible frame",
                        self._start - self._skipped,
                        skipped,
                    )
                del buf[:found]
                self._start += found
                self._skipped = 0
                self.synced, self.tentative = True, False
                self._cut()
        if not self.synced:
            skipped = self._skipped + len(buf)
            if skipped:
                self.report(
                    self.latest,
                    "resync",
                    f"no frame boundary found in the last {skipped} bytes of the stream "
                    f"({self._why.strip()}); skipped",
                    self._start + len(buf) - skipped,
                    skipped,
                )
        elif buf:
            have = len(buf)
            if have < 4:
                self.emit(self._cut_prefix("(capture ends)"))
            else:
                (size,) = _I32.unpack_from(buf, 0)
                self.emit(
                    RawFrame(
                        self._start,
                        bytes(buf),
                        self.latest,
                        size,
                        DecodeError(
                            f"frame truncated: {size} bytes claimed, {have - 4} captured before the "
                            "capture ends",
                            0,
                            "frame.size",
                        ),
                    )
                )
                self.report(
                    self.latest,
                    "truncated",
                    f"stream ends inside a frame: {size - (have - 4)} bytes of it not captured",
                    self._start,
                    size - (have - 4),
                )
        buf.clear()
        self._want = 0
        self._skipped = 0
