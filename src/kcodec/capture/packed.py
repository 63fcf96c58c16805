"""Stage 1b for a job that keeps where payloads lie: the TCP segments of a capture packed per connection.

:class:`SegmentPacker` is a record maker (for :func:`~kcodec.capture.packets.iter_records`) that reads
each packet's TCP segment as :func:`~kcodec.capture.segments.iter_segments` does (pure ACKs dropped,
IP fragments counted) but makes no :class:`~kcodec.capture.segments.Segment` and copies no payload:
it appends the segment's facts, :data:`PACKED_SIZE` bytes laid out as :data:`PACKED_FIELDS`, to the
bytes of its connection key, and hands a key's bytes on (``(key, record offset of its first segment,
packed)``) once they hold ``chunk`` segments; :meth:`SegmentPacker.rest` gives the others at the end.
A packed segment says where its payload lies in the file (``payload_offset``, ``payload_length``), so
that a later stage reads the payloads of the connections it decodes, and only those.

The common case (Ethernet, IPv4 without options, TCP) is read inline, one call per packet and no
call per segment: the sequence and acknowledgment numbers are copied as the header has them (big
endian), the other fields packed with one ``struct`` call. Any other packet goes through
:mod:`~kcodec.capture.segments`' general parser.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Final

from kcodec.capture.events import CaptureIssue
from kcodec.capture.packets import RecordMaker
from kcodec.capture.segments import (
    _Fragment,
    _names_by_ends,
    _names_of_ends,
    _Seen,
    _segment,
    plain_eth_ipv4_tcp,
)

__all__ = ["PACKED_FIELDS", "PACKED_SIZE", "Packed", "SegmentPacker"]

#: The fields of a packed segment, in order, as NumPy type strings: the TCP sequence and
#: acknowledgment numbers (big endian, as in the header), whether the key's first endpoint sent it
#: (1) or its second (0), the TCP flags, the capture time, the file offsets of the packet's record
#: and of its payload (-1: no payload) and the payload's length.
PACKED_FIELDS: Final = (
    ("seq", ">u4"),
    ("ack", ">u4"),
    ("forward", "u1"),
    ("flags", "u1"),
    ("timestamp", "<f8"),
    ("offset", "<i8"),
    ("payload_offset", "<i8"),
    ("payload_length", "<i4"),
)
_SEQ_ACK: Final = struct.Struct(">II")
_REST: Final = struct.Struct("<BBdqqi")  # the fields after seq and ack
#: Bytes of one packed segment.
PACKED_SIZE: Final = _SEQ_ACK.size + _REST.size

#: What the packer hands on: (connection key, record offset of the first segment, packed segments).
Packed = tuple[str, int, bytes]


class _Group:
    """The packed segments of one connection key not yet handed on."""

    __slots__ = ("first", "key", "packed")

    def __init__(self, key: str) -> None:
        self.key = key
        self.first = 0
        self.packed = bytearray()

    def take(self) -> Packed:
        out = (self.key, self.first, bytes(self.packed))
        self.packed = bytearray()
        return out


class SegmentPacker:
    """Packs the TCP segments of one file (or byte range) per connection key (see the module
    docstring). ``make`` is the record maker; a chunk is handed on once it holds ``chunk`` segments."""

    def __init__(self, file: str, chunk: int) -> None:
        self.file = file
        self._full = max(chunk, 1) * PACKED_SIZE
        self._groups: dict[str, _Group] = {}
        # a direction's addresses and ports as the IPv4 and TCP headers have them -> (its key's first
        # endpoint sent it, the key's group)
        self._ends: dict[bytes, tuple[int, _Group]] = {}
        self._seen = _Seen()
        self.make = self._maker()

    def _group(self, key: str) -> _Group:
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group(key)
        return group

    def _by_ends(self, ends: bytes) -> tuple[int, _Group]:
        key, src, _dst = _names_by_ends.get(ends) or _names_of_ends(ends)
        entry = self._ends[ends] = (int(_forward(key, src)), self._group(key))
        return entry

    def _maker(self) -> RecordMaker[Packed]:
        seen, by_ends, full, rest, other = self._seen, self._ends, self._full, _REST.pack, self._other

        def make(
            index: int,
            offset: int,
            ts: float,
            linktype: int,
            buf: bytes,
            start: int,
            stop: int,
            data_offset: int,
        ) -> Packed | None:
            seen.last_ts = ts
            if not plain_eth_ipv4_tcp(linktype, buf, start, stop):
                return other(index, offset, ts, linktype, buf, start, stop, data_offset)
            n = stop - start
            total = buf[start + 16] << 8 | buf[start + 17]
            end = 14 + total if total >= 20 else n  # (total 0: a TSO-offloaded capture)
            if end > n:
                end = n
            if end < 54:  # the IPv4 and TCP headers do not fit
                return None
            flags = buf[start + 47]
            at = 34 + (buf[start + 46] >> 4) * 4
            if at >= end and not flags & 0x07:  # no data, no SYN, FIN, RST
                return None
            ends = buf[start + 26 : start + 38]
            entry = by_ends.get(ends)
            if entry is None:
                entry = self._by_ends(ends)
            forward, group = entry
            packed = group.packed
            if not packed:
                group.first = offset
            packed += buf[start + 38 : start + 46]  # seq, ack
            if at < end:
                where = data_offset + at if data_offset >= 0 else -1
                packed += rest(forward, flags, ts, offset, where, end - at)
            else:
                packed += rest(forward, flags, ts, offset, -1, 0)
            if len(packed) >= full:
                return group.take()
            return None

        return make

    def _other(
        self,
        index: int,
        offset: int,
        ts: float,
        linktype: int,
        buf: bytes,
        start: int,
        stop: int,
        data_offset: int,
    ) -> Packed | None:
        """A packet that is not Ethernet, IPv4 without options and TCP: the general parser's segment."""
        made = self.general(index, offset, ts, linktype, buf, start, stop, data_offset)
        if made is None:
            return None
        key, one = made
        group = self._group(key)
        packed = group.packed
        if not packed:
            group.first = offset
        packed += one
        if len(packed) >= self._full:
            return group.take()
        return None

    def general(
        self,
        index: int,
        offset: int,
        ts: float,
        linktype: int,
        buf: bytes,
        start: int,
        stop: int,
        data_offset: int,
    ) -> tuple[str, bytes] | None:
        """The segment of any packet read by the general parser, as (key, its packed bytes), not added
        to its key's; None if it has none (an IP fragment is counted)."""
        try:
            seg = _segment(linktype, buf, start, stop, ts, self.file, index, offset, data_offset, False)
        except _Fragment:
            self._seen.fragments += 1
            return None
        if seg is None:
            return None
        forward = int(_forward(seg.key, seg.src))
        one = _SEQ_ACK.pack(seg.seq, seg.ack) + _REST.pack(
            forward, seg.flags, ts, offset, seg.payload_offset, len(seg.payload)
        )
        return seg.key, one

    def saw(self, ts: float) -> None:
        """Take ``ts`` as the time of the last packet read (for the fragments' issue), when the packets
        were read apart from :attr:`make`."""
        self._seen.last_ts = ts

    def rest(self) -> Iterator[Packed]:
        """The keys' segments not yet handed on."""
        for group in self._groups.values():
            if group.packed:
                yield group.take()

    def issue(self) -> CaptureIssue | None:
        """The IP fragments seen, as one issue (None if there were none)."""
        return self._seen.issue(self.file)


def _forward(key: str, src: str) -> bool:
    """Whether ``src`` is the first endpoint of ``key`` (``"a b"``)."""
    return key.startswith(src) and key[len(src)] == " "
