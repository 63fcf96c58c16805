"""Stage 1a: the packet records of a pcap or pcapng file, streamed, optionally one byte range of it.

:func:`iter_packets` yields :class:`RawPacket` (link-layer bytes, capture time, link type) and
:class:`~kcodec.capture.events.CaptureIssue` (kind ``capture-file``) for damage, in file order, read in
blocks (memory: one block plus one record) from a path, ``"-"`` (standard input) or a file object.

Records are framed here, not by dpkt, so that damage does not end the reading: a record header with
an absurd length or timestamp is reported, and reading resumes at the next plausible record (its
length fits the snap length, its time is near the last good one, another plausible header or the end
follows). A file cut anywhere is reported with the byte offset; a cut record's captured part is
still yielded. A byte range (``start``/``end``, for one split of a distributed job) starts at the
first plausible record at or after ``start`` and stops after the record that starts before ``end``,
so that splits ``[0, a)``, ``[a, b)``, ... read every record exactly once.
"""
from __future__ import annotations

import struct
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final, TypeVar, cast

from kcodec.capture.events import CaptureIssue
from kcodec.protocol.errors import KcodecError

__all__ = ["CaptureFileError", "RawPacket", "RecordMaker", "iter_packets", "iter_records"]

_T = TypeVar("_T")
#: What :func:`iter_records` turns each record into: called with (packet number, record offset, time,
#: link type, buffer, start, stop, file offset of the data or -1), ``buffer[start:stop]`` being the data
#: (a reader's block, no copy); returns the item to yield, or None for nothing. It must not raise.
RecordMaker = Callable[[int, int, float, int, bytes, int, int, int], _T | None]

#: Record lengths above this are taken as damage whatever the snap length says (jumbo frames and TSO
#: captures stay far below; pcap's own maximum snap length is 256 KiB).
MAX_RECORD: Final = 16 * 1024 * 1024
#: A record whose time is this far from the last good record's is taken as a damaged header.
MAX_TIME_JUMP: Final = 2 * 86400.0
_BLOCK = 1 << 20  # (not Final: a test reads with smaller blocks)

_PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
    b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
_PCAPNG_SHB: Final = b"\x0a\x0d\x0d\x0a"
_NG_IDB, _NG_EPB, _NG_SPB, _NG_PB = 1, 6, 3, 2
_NG_KNOWN = {_NG_IDB, 2, 3, 4, 5, 6, 0xA, 0x0A0D0D0A, 0xBAD, 0x40000BAD}


class CaptureFileError(KcodecError):
    """The capture file is not a pcap/pcapng file kcodec can read (or cannot be opened)."""


@dataclass(slots=True)
class RawPacket:
    """One packet record: the captured link-layer bytes (possibly cut by the snap length)."""

    index: int  # 1, 2, ... in the order read (from the file's first record unless a range was asked)
    offset: int  # byte offset of the record in the file
    timestamp: float
    linktype: int
    data: bytes
    wire_length: int
    data_offset: int = -1  # byte offset of ``data`` in the file (-1: not known)


class _Reader:
    """Buffered reading with absolute offsets. ``need(n)`` makes the ``n`` bytes at ``pos`` available
    in ``buf`` (from index ``pos - base``), keeping every byte from ``keep`` (default: ``pos``) on.

    From a seekable file, the next block is read from ``keep`` on (the bytes still needed are read
    again) rather than added to them: a new block of 1 MiB copied behind the few kept bytes cost
    more than its reading did (17-24 ms against 10 ms per 64 MB, measured). On a pipe, the block
    is added to the kept bytes."""

    def __init__(self, f: IO[bytes], pos: int, initial: bytes = b"") -> None:
        self.f = f
        self.buf = initial
        self.base = pos - len(initial)  # file offset of buf[0]
        self.pos = pos - len(initial)
        self.keep: int | None = None
        self.eof = False
        self.origin = _origin(f, pos)  # where offset 0 is in a seekable ``f`` (None: not seekable)

    def need(self, n: int) -> bool:
        end = self.pos - self.base + n
        if end <= len(self.buf):
            return True
        keep = self.pos if self.keep is None else min(self.keep, self.pos)
        if self.origin is not None and not self.eof:
            return self._read_from(keep, n)
        drop = keep - self.base
        buf = self.buf[drop:]
        base = keep
        parts = [buf]
        have = len(buf)
        want = self.pos - base + n
        while not self.eof and have < want:
            chunk = self.f.read(max(_BLOCK, want - have))
            if not chunk:
                self.eof = True
                break
            parts.append(chunk)
            have += len(chunk)
        self.buf = b"".join(parts)
        self.base = base
        return self.pos - base + n <= len(self.buf)

    def _read_from(self, keep: int, n: int) -> bool:
        """:meth:`need` on a seekable file: a block read from ``keep`` on (False only at the end of
        the file: then ``eof`` is set, and the last bytes stay in ``buf``)."""
        assert self.origin is not None
        want = self.pos - keep + n
        self.f.seek(self.origin + keep)
        buf = self.f.read(max(want, _BLOCK))
        while len(buf) < want:  # (a short read: more until the end of the file)
            more = self.f.read(want - len(buf))
            if not more:
                self.eof = True
                break
            buf += more
        self.buf, self.base = buf, keep
        return want <= len(buf)

    def available(self) -> int:
        self.need(0)
        return len(self.buf) - (self.pos - self.base)

    def rest(self) -> bytes:
        """Everything left (reads to the end of the data)."""
        while self.need(self.available() + 1):
            pass
        i = self.pos - self.base
        return self.buf[i:]

    def take(self, n: int) -> bytes:
        """The ``n`` bytes at ``pos`` (``need(n)`` first); ``pos`` moves past them."""
        i = self.pos - self.base
        self.pos += n
        return self.buf[i : i + n]


def _origin(f: IO[bytes], pos: int) -> int | None:
    """The position in ``f`` of the data's offset 0, given that ``f`` is at offset ``pos``; None if
    ``f`` cannot seek (a pipe, standard input from one)."""
    try:
        return f.tell() - pos if f.seekable() else None
    except (AttributeError, OSError, ValueError):
        return None


def _open(source: str | Path | IO[bytes]) -> tuple[IO[bytes], str, bool]:
    if isinstance(source, str | Path):
        if str(source) == "-":
            return sys.stdin.buffer, "-", False
        try:
            return open(source, "rb"), str(source), True
        except OSError as e:
            raise CaptureFileError(f"cannot open {source}: {e.strerror or e}") from None
    name = str(getattr(source, "name", "<stream>"))
    return source, name, False


@contextmanager
def _capture_file(source: str | Path | IO[bytes], name: str | None) -> Iterator[tuple[IO[bytes], bytes, str]]:
    """The opened capture (closed after, if opened here), its 4-byte magic and its label; raises
    :class:`CaptureFileError` for an empty file or one that is no pcap/pcapng."""
    f, label, owned = _open(source)
    try:
        head = f.read(4)
        if len(head) < 4:
            raise CaptureFileError("the capture file is " + ("cut short" if head else "empty"))
        if head != _PCAPNG_SHB and head not in _PCAP_MAGICS:
            raise CaptureFileError(f"not a pcap or pcapng file (starts with {head.hex()})")
        yield f, head, name or label
    finally:
        if owned:
            f.close()


def iter_packets(
    source: str | Path | IO[bytes], *, start: int = 0, end: int | None = None, name: str | None = None
) -> Iterator[RawPacket | CaptureIssue]:
    """Every packet record of a pcap/pcapng file, and every problem with the file, in file order.

    ``source``: a path, ``"-"`` for standard input, or a binary file object (seekable if ``start``
    is past the file header; on a pipe the bytes before ``start`` are read and dropped). ``name``
    labels issues (default: the path). Raises :class:`CaptureFileError` only when the data is no
    pcap/pcapng at all or cannot be opened.
    """
    with _capture_file(source, name) as (f, head, label):
        if head == _PCAPNG_SHB:
            yield from _PcapNg(f, head, label).packets(start, end)
        else:
            yield from _Pcap(f, head, label).packets(start, end, None)


def iter_records(
    source: str | Path | IO[bytes],
    make: RecordMaker[_T],
    *,
    start: int = 0,
    end: int | None = None,
    name: str | None = None,
) -> Iterator[_T | CaptureIssue]:
    """:func:`iter_packets`, with each packet record turned into ``make``'s item (see
    :data:`RecordMaker`) instead of a :class:`RawPacket`: for a pcap file read from its block buffer
    without copying the record's data; records ``make`` turns into None are not yielded."""
    with _capture_file(source, name) as (f, head, label):
        if head in _PCAP_MAGICS:
            records = _Pcap(f, head, label).packets(start, end, make)
            yield from cast("Iterator[_T | CaptureIssue]", records)  # (make given: no RawPacket)
            return
        for p in _PcapNg(f, head, label).packets(start, end):
            if isinstance(p, CaptureIssue):
                yield p
                continue
            item = make(p.index, p.offset, p.timestamp, p.linktype, p.data, 0, len(p.data), p.data_offset)
            if item is not None:
                yield item


def _skip_to(f: IO[bytes], at: int, target: int) -> int:
    """Move ``f`` from offset ``at`` to ``target`` (seek, or read and drop on a pipe); the new offset."""
    if target <= at:
        return at
    try:
        f.seek(target)
        return target
    except (OSError, ValueError):
        left = target - at
        while left > 0:
            chunk = f.read(min(left, _BLOCK))
            if not chunk:
                break
            left -= len(chunk)
        return target - left


def _issue(ts: float, message: str, label: str, at: int, length: int | None = None) -> CaptureIssue:
    return CaptureIssue(ts, "capture-file", message, length=length, file=label, file_offset=at)


class _Pcap:
    def __init__(self, f: IO[bytes], magic: bytes, label: str) -> None:
        self.f = f
        self.label = label
        self.order, self.unit = _PCAP_MAGICS[magic]
        rest = f.read(20)
        if len(rest) < 20:
            raise CaptureFileError(f"the pcap file header is cut short ({4 + len(rest)} of 24 bytes)")
        _major, _minor, _zone, _sigfigs, snaplen, linktype = struct.unpack(self.order + "HHiIII", rest)
        self.linktype: int = linktype & 0x0FFFFFFF  # the upper bits carry FCS flags
        self.max_len: int = min(max(snaplen, 262144), MAX_RECORD)  # (typed, as the record loop's locals)
        self.header = struct.Struct(self.order + "IIII")
        self.frac_max = 1_000_000 if self.unit == 1e-6 else 1_000_000_000

    def _problem(self, r: _Reader, last_ts: float | None) -> str | None:
        """None if the record header at ``r.pos`` (16 bytes available) is plausible, else the reason."""
        sec, frac, incl, orig = self.header.unpack_from(r.buf, r.pos - r.base)
        if incl > self.max_len:
            return f"absurd record length {incl}"
        if orig < incl:
            return f"record length {incl} above its original length {orig}"
        if frac > self.frac_max:  # exactly one second is read as the next second (see packets())
            return f"bad timestamp fraction {frac}"
        if last_ts is not None and abs(sec - last_ts) > MAX_TIME_JUMP:
            return f"bad timestamp {sec} (previous record at {int(last_ts)})"
        return None

    def _chain(self, r: _Reader, at: int, last_ts: float | None, more: int) -> bool:
        """Plausible headers at ``at`` and after the next ``more`` records (or the end of the data)."""
        saved, r.keep = r.pos, r.pos
        try:
            r.pos = at
            for n in range(more + 1):
                if not r.need(16):
                    return n > 0 and r.available() == 0
                if self._problem(r, last_ts) is not None:
                    return False
                sec, _, incl, _ = self.header.unpack_from(r.buf, r.pos - r.base)
                last_ts = float(sec)
                r.pos += 16 + incl
            return True
        finally:
            r.pos, r.keep = saved, None

    def _resync(self, r: _Reader, at: int, last_ts: float | None, more: int) -> int | None:
        """The first offset at or after ``at`` where a plausible chain of records starts."""
        while True:
            r.pos = at
            if not r.need(16):
                return None
            if self._problem(r, last_ts) is None and self._chain(r, at, last_ts, more):
                return at
            at += 1

    def packets(
        self, start: int, end: int | None, make: RecordMaker[_T] | None
    ) -> Iterator[RawPacket | _T | CaptureIssue]:
        """The records (as ``RawPacket``, or as ``make`` makes them) and the file's issues."""
        label, unit, hdr, linktype = self.label, self.unit, self.header, self.linktype
        r = _Reader(self.f, _skip_to(self.f, 24, start))
        last_ts: float | None = None
        index = 0
        if start > 24:  # a split: find the first record at or after start
            found = self._resync(r, r.pos, None, 2)
            if found is None:
                return
            r.pos = found
        max_len, frac_max, jump = self.max_len, self.frac_max, MAX_TIME_JUMP
        unpack = hdr.unpack_from
        while end is None or r.pos < end:
            # fast path: the plausible records wholly in the buffer, read with the position in locals
            # (``r.pos`` is set when the loop leaves; nothing else reads it), and typed: a compiled build
            # compares machine numbers (the last record's time is ``last`` once ``timed``)
            buf, base = r.buf, r.base
            i, n = r.pos - base, len(buf)
            stop = n if end is None else min(n, end - base)  # (records that start before ``end``)
            timed = last_ts is not None
            last: float = 0.0 if last_ts is None else last_ts
            while i < stop and i + 16 <= n:
                header: tuple[int, int, int, int] = unpack(buf, i)
                sec, frac, incl, orig = header
                at = i + 16
                after = at + incl
                if (
                    incl > max_len
                    or orig < incl
                    or frac >= frac_max
                    or after > n
                    or (timed and not -jump <= sec - last <= jump)
                ):
                    break
                index += 1
                last, timed = float(sec), True
                if make is not None:
                    item = make(index, base + i, sec + frac * unit, linktype, buf, at, after, base + at)
                    i = after
                    if item is not None:
                        yield item
                    continue
                yield RawPacket(index, base + i, sec + frac * unit, linktype, buf[at:after], orig, base + at)
                i = after
            last_ts = last if timed else last_ts
            r.pos = base + i
            if end is not None and r.pos >= end:
                break
            if not r.need(16):
                left = r.available()
                if left:
                    yield _issue(
                        last_ts or 0.0,
                        f"file ends inside a record header ({left} of 16 bytes) after packet {index}",
                        label,
                        r.pos,
                        16 - left,
                    )
                return
            problem = self._problem(r, last_ts)
            if problem is not None:
                bad_at = r.pos
                found = self._resync(r, bad_at + 1, last_ts, 1)
                if found is None:
                    r.pos = bad_at
                    skipped = r.available()
                    yield _issue(
                        last_ts or 0.0,
                        f"damaged record header after packet {index} ({problem}); no plausible record "
                        f"follows: the last {skipped} bytes of the file were skipped",
                        label,
                        bad_at,
                        skipped,
                    )
                    return
                yield _issue(
                    last_ts or 0.0,
                    f"damaged record header after packet {index} ({problem}); skipped {found - bad_at} "
                    f"bytes to the next plausible record at offset {found}",
                    label,
                    bad_at,
                    found - bad_at,
                )
                r.pos = found
                continue
            rec_at = r.pos
            sec, frac, incl, orig = hdr.unpack_from(r.buf, rec_at - r.base)
            ts = sec + frac * unit
            last_ts = float(sec)
            index += 1
            r.pos += 16
            if frac == frac_max:  # some writers (dpkt's among them) round up to a whole second
                note = f"packet {index}: timestamp fraction {frac} (a whole second) read as the next second"
                yield _issue(ts, note, label, rec_at, 16)
            if not r.need(incl):
                data = r.rest()
                yield _issue(
                    ts,
                    f"file ends inside packet {index}: {len(data)} of its {incl} bytes captured",
                    label,
                    rec_at,
                    incl - len(data),
                )
                if data:
                    made = _made(make, RawPacket(index, rec_at, ts, linktype, data, orig, rec_at + 16))
                    if made is not None:
                        yield made
                return
            made = _made(make, RawPacket(index, rec_at, ts, linktype, r.take(incl), orig, rec_at + 16))
            if made is not None:
                yield made


def _made(make: RecordMaker[_T] | None, p: RawPacket) -> RawPacket | _T | None:
    if make is None:
        return p
    return make(p.index, p.offset, p.timestamp, p.linktype, p.data, 0, len(p.data), p.data_offset)


class _PcapNg:
    """pcapng: sections (byte order), interfaces (link type, time resolution), packet blocks."""

    def __init__(self, f: IO[bytes], head: bytes, label: str) -> None:
        self.f = f
        self.label = label
        self.head = head
        self.order = "<"
        self.interfaces: list[tuple[int, float, float]] = []  # (linktype, tick, offset seconds)

    def _interface(self, body: bytes) -> None:
        o = self.order
        linktype = struct.unpack_from(o + "H", body, 0)[0]
        tick, offset = 1e-6, 0.0
        pos = 8
        while pos + 4 <= len(body):
            code, length = struct.unpack_from(o + "HH", body, pos)
            value = body[pos + 4 : pos + 4 + length]
            if code == 0:
                break
            if code == 9 and length >= 1:  # if_tsresol
                v = value[0]
                tick = 2.0 ** -(v & 0x7F) if v & 0x80 else 10.0**-v
            elif code == 14 and length == 8:  # if_tsoffset
                offset = float(struct.unpack(o + "q", value)[0])
            pos += 4 + length + (-length % 4)
        self.interfaces.append((linktype, tick, offset))

    def _header(self, r: _Reader) -> tuple[int, int]:
        """(type, length) of the block at ``r.pos`` (12 bytes available); a section header sets the
        byte order first."""
        i = r.pos - r.base
        if r.buf[i : i + 4] == _PCAPNG_SHB:
            self.order = "<" if r.buf[i + 8 : i + 12] == b"\x4d\x3c\x2b\x1a" else ">"
        btype, blen = struct.unpack_from(self.order + "II", r.buf, i)
        return btype, blen

    def _problem(self, r: _Reader) -> str | None:
        """None if the block at ``r.pos`` is whole and plausible, else the reason."""
        btype, blen = self._header(r)
        if btype not in _NG_KNOWN and btype & 0x80000000 == 0:
            return f"unknown block type {btype:#x}"
        if blen % 4 or blen < 12 or blen > MAX_RECORD:
            return f"absurd block length {blen}"
        if not r.need(blen):
            return None  # cut by the end of the data: reported by the caller
        (trail,) = struct.unpack_from(self.order + "I", r.buf, r.pos - r.base + blen - 4)
        if trail != blen:
            return f"block length {blen} does not match its trailing copy {trail}"
        return None

    def _resync(self, r: _Reader, at: int) -> int | None:
        """The first 4-aligned offset (relative to ``at``) where a whole, plausible packet, interface
        or section block starts, followed by another such block or the end of the data."""
        saved_order = self.order
        while True:
            r.pos = at
            if not r.need(12):
                return None
            btype, blen = self._header(r)
            known = btype in (_NG_EPB, _NG_SPB, _NG_IDB, 0x0A0D0D0A)
            if known and self._problem(r) is None and r.need(blen):
                r.keep = at
                r.pos = at + blen
                ok = not r.need(12) or self._problem(r) is None
                r.keep = None
                if ok:
                    r.pos = at
                    return at
            self.order = saved_order
            at += 4

    def packets(self, start: int, end: int | None) -> Iterator[RawPacket | CaptureIssue]:
        label = self.label
        r = _Reader(self.f, 4, self.head)
        index = 0
        last_ts = 0.0
        skipping = start > 0  # a split: read section/interface blocks, then jump to start
        while end is None or r.pos < end or skipping:
            if skipping and self.interfaces:
                read_to = r.base + len(r.buf)
                if start >= read_to:
                    r = _Reader(self.f, _skip_to(self.f, read_to, start))
                r.pos = max(r.pos, start)
                found = self._resync(r, r.pos + (-r.pos % 4))  # blocks are 4-byte aligned
                if found is None:
                    return
                r.pos = found
                skipping = False
                continue
            if not r.need(12):
                left = r.available()
                if left:
                    yield _issue(
                        last_ts,
                        f"file ends inside a block header ({left} of 12 bytes) after packet {index}",
                        label,
                        r.pos,
                        12 - left,
                    )
                return
            problem = self._problem(r)
            btype, blen = self._header(r)
            if problem is None and not r.need(blen):
                left = r.available()
                yield _issue(
                    last_ts,
                    f"file ends inside a block ({left} of its {blen} bytes) after packet {index}",
                    label,
                    r.pos,
                    blen - left,
                )
                return
            if problem is not None:
                bad_at = r.pos
                found = self._resync(r, bad_at + 4)
                if found is None:
                    r.pos = bad_at
                    skipped = r.available()
                    yield _issue(
                        last_ts,
                        f"damaged block after packet {index} ({problem}); no plausible block follows: "
                        f"the last {skipped} bytes of the file were skipped",
                        label,
                        bad_at,
                        skipped,
                    )
                    return
                yield _issue(
                    last_ts,
                    f"damaged block after packet {index} ({problem}); skipped {found - bad_at} bytes "
                    f"to the next plausible block at offset {found}",
                    label,
                    bad_at,
                    found - bad_at,
                )
                r.pos = found
                continue
            at = r.pos
            block = r.take(blen)[8:-4]
            if btype == 0x0A0D0D0A:
                self.interfaces = []
                continue
            if btype == _NG_IDB:
                self._interface(block)
                continue
            if skipping:  # a packet block before the split's start, ahead of any interface
                continue
            packet = self._packet(btype, block)
            if packet is None:
                continue
            ts, linktype, data, wire, data_at = packet
            index += 1
            last_ts = ts
            yield RawPacket(index, at, ts, linktype, data, wire, at + 8 + data_at)

    def _packet(self, btype: int, block: bytes) -> tuple[float, int, bytes, int, int] | None:
        """(time, link type, data, wire length, offset of the data in the block's body) of a packet
        block, or None."""
        o = self.order
        if btype == _NG_EPB and len(block) >= 20:
            iface, hi, lo, cap, wire = struct.unpack_from(o + "IIIII", block, 0)
            data_at = 20
        elif btype == _NG_PB and len(block) >= 20:
            iface = struct.unpack_from(o + "H", block, 0)[0]
            hi, lo, cap, wire = struct.unpack_from(o + "IIII", block, 4)
            data_at = 20
        elif btype == _NG_SPB and len(block) >= 4:
            (wire,) = struct.unpack_from(o + "I", block, 0)
            iface, hi, lo, cap, data_at = 0, 0, 0, min(wire, len(block) - 4), 4
        else:
            return None
        if iface >= len(self.interfaces):
            return None
        linktype, tick, offset = self.interfaces[iface]
        ts = ((hi << 32) | lo) * tick + offset
        return ts, linktype, block[data_at : data_at + cap], wire, data_at
