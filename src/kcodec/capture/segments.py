"""Stage 1b: TCP segments, as plain records a distributed job can store, ship and group.

:func:`iter_segments` reads a capture (:func:`~kcodec.capture.packets.iter_packets`), parses the
link, IP (v4/v6) and TCP headers of each packet and yields a :class:`Segment` for every TCP segment
that carries data or a SYN/FIN/RST flag (pure ACKs carry nothing the decoder needs and are dropped),
together with the file's ``capture-file`` issues. Packets that are not TCP are skipped; IPv4
fragments (not reassembled) are counted and reported once at the end.

``Segment`` fields are plain values (str, int, float, bytes), so ``dataclasses.asdict(seg)`` is a
Spark/Arrow row and ``Segment(**row)`` reads it back; :data:`SEGMENT_SCHEMA` lists the fields and
their types. ``key`` is the same for both directions of a TCP 4-tuple: group by it, order each group
by capture order (``file`` order, then ``offset``) and feed it to a
:class:`~kcodec.capture.stream.CaptureDecoder` (port reuse on the same 4-tuple is handled there).
"""

from __future__ import annotations

import struct
from _socket import AF_INET, AF_INET6, inet_ntop  # (socket's own: without socket.py's enums)
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final, TypeVar, cast

from kcodec.capture.events import CaptureIssue, reduce_by_fields
from kcodec.capture.packets import RecordMaker, iter_records

__all__ = [
    "SEGMENT_SCHEMA",
    "Segment",
    "SegmentBuilder",
    "connection_names",
    "endpoint",
    "iter_segments",
    "segment_facts_maker",
    "segment_of",
]

_T = TypeVar("_T")

TH_FIN: Final = 0x01
TH_SYN: Final = 0x02
TH_RST: Final = 0x04
TH_PUSH: Final = 0x08
TH_ACK: Final = 0x10


@dataclass(slots=True, init=False)
class Segment:
    """One captured TCP segment (payload possibly shorter than sent if the snap length cut it)."""

    key: str  # the connection's 4-tuple, the same in both directions: "a b" with a < b
    src: str  # sender "host:port" ("[v6 address]:port" for IPv6)
    dst: str
    seq: int  # TCP sequence number (32 bits)
    ack: int  # TCP acknowledgment number (meaningful with the ACK flag)
    flags: int  # TCP flags (FIN 1, SYN 2, RST 4, PSH 8, ACK 16)
    timestamp: float  # capture time, seconds since the epoch
    payload: bytes
    file: str  # the capture file it came from
    index: int  # packet number in what was read of that file (1, 2, ...)
    offset: int  # byte offset of the packet's record in that file
    payload_offset: int  # byte offset of the payload in that file (-1: not known)

    # (written out: compiled, the __init__ that dataclass writes costs 8x the instructions)
    def __init__(
        self,
        key: str,
        src: str,
        dst: str,
        seq: int,
        ack: int,
        flags: int,
        timestamp: float,
        payload: bytes,
        file: str = "",
        index: int = 0,
        offset: int = 0,
        payload_offset: int = -1,
    ) -> None:
        self.key = key
        self.src = src
        self.dst = dst
        self.seq = seq
        self.ack = ack
        self.flags = flags
        self.timestamp = timestamp
        self.payload = payload
        self.file = file
        self.index = index
        self.offset = offset
        self.payload_offset = payload_offset

    def __reduce__(self) -> tuple[Any, ...]:
        return reduce_by_fields(self)

    @property
    def syn(self) -> bool:
        return bool(self.flags & TH_SYN)

    @property
    def fin(self) -> bool:
        return bool(self.flags & TH_FIN)

    @property
    def rst(self) -> bool:
        return bool(self.flags & TH_RST)


#: (field, type) of :class:`Segment` for building a table schema (string, long, double, binary).
SEGMENT_SCHEMA: tuple[tuple[str, str], ...] = (
    ("key", "string"),
    ("src", "string"),
    ("dst", "string"),
    ("seq", "long"),
    ("ack", "long"),
    ("flags", "long"),
    ("timestamp", "double"),
    ("payload", "binary"),
    ("file", "string"),
    ("index", "long"),
    ("offset", "long"),
    ("payload_offset", "long"),
)

#: What :func:`segment_facts_maker`'s maker calls per segment, with :class:`Segment`'s fields in its order
#: (key, src, dst, seq, ack, flags, timestamp, *payload length*, file, index, offset, payload offset);
#: what it returns is yielded unless None.
SegmentBuilder = Callable[[str, str, str, int, int, int, float, int, str, int, int, int], _T | None]

_U16: Final = struct.Struct(">H")
# the common case in one read: Ethernet (no VLAN tag), IPv4 without options, TCP: ethertype,
# version/IHL, total length, flags/fragment offset, protocol, addresses, ports, seq, ack, data
# offset, TCP flags
_ETH_IPV4_TCP: Final = struct.Struct(">12xHBxH2xHxB2x4s4sHHIIBB")
_ETH_IPV4_TCP_SIZE: Final = _ETH_IPV4_TCP.size


def plain_eth_ipv4_tcp(linktype: int, buf: bytes, start: int, stop: int) -> bool:
    """Is the packet at ``buf[start:stop]`` Ethernet, IPv4 without options or fragmenting, and TCP
    with a header of at least 20 bytes: what the segment readers read inline (the fields byte by
    byte: compiled, an index into bytes is a machine operation, where a struct's unpack_from is a
    call that parses its arguments)? Any other packet goes to the general parser."""
    return (
        linktype == _DLT_EN10MB
        and stop - start >= _ETH_IPV4_TCP_SIZE
        and buf[start + 12] == 8  # EtherType 0x0800: IPv4
        and buf[start + 13] == 0
        and buf[start + 14] == 0x45  # version 4, a 20-byte header
        and buf[start + 23] == 6  # TCP
        and not buf[start + 20] & 0x3F  # neither a fragment (offset) nor more fragments to come
        and not buf[start + 21]
        and buf[start + 46] >= 0x50  # a TCP header of at least 20 bytes
    )
_TCP: Final = struct.Struct(">HHII")
_ETH_IPV4: Final = 0x0800
_ETH_IPV6: Final = 0x86DD
_ETH_VLAN: Final = 0x8100
_ETH_QINQ: Final = 0x88A8
_DLT_NULL: Final = 0
_DLT_EN10MB: Final = 1
_DLT_LOOP: Final = 108
_DLT_SLL: Final = 113
_DLT_SLL2: Final = 276
_DLT_RAW: Final = (12, 14, 101)  # raw IP: the version field says IPv4 or IPv6
_DLT_IPV4: Final = 228  # raw IPv4 only
_DLT_IPV6: Final = 229  # raw IPv6 only

_endpoints: dict[tuple[bytes, int], str] = {}
# (source address, source port, destination address, destination port) -> (key, src, dst)
_names: dict[tuple[bytes, int, bytes, int], tuple[str, str, str]] = {}
_names_by_ends: dict[bytes, tuple[str, str, str]] = {}  # the same, by addresses and ports as bytes


def endpoint(host: str, port: int) -> str:
    """``"host:port"``, with IPv6 hosts in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _endpoint(addr: bytes, port: int) -> str:
    key = (addr, port)
    text = _endpoints.get(key)
    if text is None:
        if len(_endpoints) > 65536:
            _endpoints.clear()
        family = AF_INET if len(addr) == 4 else AF_INET6
        text = _endpoints[key] = endpoint(inet_ntop(family, addr), port)
    return text


def _network_layer(linktype: int, buf: bytes) -> tuple[int, int] | None:
    """(ethertype, offset of the IP header) of one link-layer frame, or None if not IPv4/IPv6."""
    if linktype == _DLT_EN10MB:
        if len(buf) < 14:
            return None
        (etype,) = _U16.unpack_from(buf, 12)
        pos = 14
        while etype in (_ETH_VLAN, _ETH_QINQ) and len(buf) >= pos + 4:
            (etype,) = _U16.unpack_from(buf, pos + 2)
            pos += 4
        return etype, pos
    if linktype in (_DLT_NULL, _DLT_LOOP):
        if len(buf) < 4:
            return None
        family = struct.unpack_from(">I" if linktype == _DLT_LOOP else "<I", buf, 0)[0]
        if family > 0xFFFF:  # DLT_NULL is in the capturing host's byte order: try the other one
            family = struct.unpack_from(">I", buf, 0)[0]
        etype = _ETH_IPV4 if family == 2 else _ETH_IPV6 if family in (10, 24, 28, 30) else 0
        return etype, 4
    if linktype == _DLT_SLL:  # Linux cooked capture
        return (_U16.unpack_from(buf, 14)[0], 16) if len(buf) >= 16 else None
    if linktype == _DLT_SLL2:  # Linux cooked capture v2
        return (_U16.unpack_from(buf, 0)[0], 20) if len(buf) >= 20 else None
    if linktype in _DLT_RAW:
        if not buf:
            return None
        version = buf[0] >> 4
        return (_ETH_IPV4 if version == 4 else _ETH_IPV6 if version == 6 else 0), 0
    if linktype == _DLT_IPV4:
        return _ETH_IPV4, 0
    if linktype == _DLT_IPV6:
        return _ETH_IPV6, 0
    return None


class _Fragment(Exception):
    pass


def _tcp_of(etype: int, buf: bytes, pos: int) -> tuple[bytes, bytes, int, int] | None:
    """(source address, destination address, TCP header offset, end of the TCP segment) or None.
    The link layer says which IP version follows; a packet whose version field says otherwise is
    malformed (None), as the IP stacks that receive it drop it (Linux's ip_rcv_core, ip6_rcv_core)."""
    if etype == _ETH_IPV4:
        if len(buf) < pos + 20 or buf[pos] >> 4 != 4:
            return None
        ihl = (buf[pos] & 0x0F) * 4
        (total,) = _U16.unpack_from(buf, pos + 2)
        if buf[pos + 9] != 6 or ihl < 20:
            return None
        if _U16.unpack_from(buf, pos + 6)[0] & 0x3FFF:
            raise _Fragment
        end = pos + total if total >= ihl else len(buf)  # total 0: TSO-offloaded capture
        return buf[pos + 12 : pos + 16], buf[pos + 16 : pos + 20], pos + ihl, min(end, len(buf))
    if etype == _ETH_IPV6:
        if len(buf) < pos + 40 or buf[pos] >> 4 != 6:
            return None
        (plen,) = _U16.unpack_from(buf, pos + 4)
        nxt, at = buf[pos + 6], pos + 40
        while nxt in (0, 43, 60) and len(buf) >= at + 8:  # hop-by-hop, routing, destination options
            nxt, at = buf[at], at + (buf[at + 1] + 1) * 8
        if nxt == 44:
            raise _Fragment
        if nxt != 6:
            return None
        end = pos + 40 + plen if plen else len(buf)
        return buf[pos + 8 : pos + 24], buf[pos + 24 : pos + 40], at, min(end, len(buf))
    return None


def segment_of(
    linktype: int,
    data: bytes,
    timestamp: float,
    *,
    file: str = "",
    index: int = 0,
    offset: int = 0,
    data_offset: int = -1,
) -> Segment | None:
    """The TCP segment in one link-layer frame, or None if it is not TCP over IPv4/IPv6 (raises
    nothing; an IP fragment is None too). ``data_offset``: where ``data`` starts in the file, if
    known (the segment's ``payload_offset`` is then set)."""
    try:
        return _segment(linktype, data, 0, len(data), timestamp, file, index, offset, data_offset, True)
    except _Fragment:
        return None


def _ipv4_end(total: int, n: int) -> int:
    """Where the IPv4 packet of ``total`` bytes (its header's total length; 0 in a TSO-offloaded
    capture: up to the frame's end) ends in an Ethernet frame of ``n`` bytes; -1 when what is there
    cannot hold the IPv4 and TCP headers."""
    end = 14 + total if total >= 20 else n
    if end > n:
        end = n
    return end if end - 34 >= 20 else -1


def _segment(
    linktype: int,
    buf: bytes,
    start: int,
    stop: int,
    ts: float,
    file: str,
    index: int,
    offset: int,
    data_offset: int,
    keep_acks: bool,
) -> Segment | None:
    """The segment in the link-layer frame ``buf[start:stop]`` (raises ``_Fragment`` for a fragment)."""
    if linktype == _DLT_EN10MB and stop - start >= _ETH_IPV4_TCP_SIZE:
        etype, vihl, total, frag, proto, saddr, daddr, sport, dport, seq, ack, off, flags = (
            _ETH_IPV4_TCP.unpack_from(buf, start)
        )
        if etype == _ETH_IPV4 and vihl == 0x45 and proto == 6 and not frag & 0x3FFF and off >= 0x50:
            end = _ipv4_end(total, stop - start)
            if end < 0:
                return None
            at = 34 + (off >> 4) * 4
            payload = buf[start + at : start + end] if at < end else b""
            if not payload and not keep_acks and not flags & (TH_SYN | TH_FIN | TH_RST):
                return None
            names = _names.get((saddr, sport, daddr, dport))
            if names is None:
                names = connection_names(saddr, sport, daddr, dport)
            return Segment(
                names[0],
                names[1],
                names[2],
                seq,
                ack,
                flags,
                ts,
                payload,
                file,
                index,
                offset,
                data_offset + at if data_offset >= 0 and payload else -1,
            )
    if start or stop != len(buf):
        buf = buf[start:stop]
    return _general_segment(linktype, buf, ts, file, index, offset, data_offset, keep_acks)


def _general_segment(
    linktype: int,
    data: bytes,
    ts: float,
    file: str,
    index: int,
    offset: int,
    data_offset: int,
    keep_acks: bool,
) -> Segment | None:
    net = _network_layer(linktype, data)
    if net is None:
        return None
    found = _tcp_of(net[0], data, net[1])
    if found is None:
        return None
    saddr, daddr, at, end = found
    if end - at < 20:
        return None
    sport, dport, seq, ack = _TCP.unpack_from(data, at)
    hlen = (data[at + 12] >> 4) * 4
    flags = data[at + 13]
    if hlen < 20:
        return None
    payload = data[at + hlen : end] if at + hlen < end else b""
    if not payload and not keep_acks and not flags & (TH_SYN | TH_FIN | TH_RST):
        return None
    payload_offset = data_offset + at + hlen if data_offset >= 0 and payload else -1
    key, src, dst = connection_names(saddr, sport, daddr, dport)
    return Segment(key, src, dst, seq, ack, flags, ts, payload, file, index, offset, payload_offset)


def connection_names(saddr: bytes, sport: int, daddr: bytes, dport: int) -> tuple[str, str, str]:
    """(key, src, dst) of a segment's addresses and ports (remembered: a capture has few 4-tuples)."""
    names = _names.get((saddr, sport, daddr, dport))
    if names is None:
        src, dst = _endpoint(saddr, sport), _endpoint(daddr, dport)
        key = f"{src} {dst}" if src < dst else f"{dst} {src}"
        if len(_names) > 65536:
            _names.clear()
        names = _names[(saddr, sport, daddr, dport)] = (key, src, dst)
    return names


def _names_of_ends(ends: bytes) -> tuple[str, str, str]:
    """:func:`connection_names` of IPv4 addresses and TCP ports as they are in the headers
    (``saddr daddr sport dport``, 12 bytes), remembered by those bytes."""
    names = connection_names(ends[:4], int.from_bytes(ends[8:10]), ends[4:8], int.from_bytes(ends[10:12]))
    if len(_names_by_ends) > 65536:
        _names_by_ends.clear()
    _names_by_ends[ends] = names
    return names


def iter_segments(
    source: str | Path | IO[bytes],
    *,
    start: int = 0,
    end: int | None = None,
    name: str | None = None,
    keep_acks: bool = False,
) -> Iterator[Segment | CaptureIssue]:
    """Every TCP segment of a capture (or of its byte range ``start``..``end``, see
    :func:`~kcodec.capture.packets.iter_packets`) and every problem with the file, in file order.
    ``keep_acks``: also yield segments without data or SYN/FIN/RST."""
    return cast("Iterator[Segment | CaptureIssue]", _iter_segments(source, start, end, name, keep_acks, None))


Pick = Callable[[str, int, float], "bool | float | None"]
"""``(connection key, length of the data, time) -> True | float | None`` (:func:`iter_some_segments`)."""


def iter_some_segments(
    source: str | Path | IO[bytes], pick: Pick
) -> Iterator[Segment | CaptureIssue | float]:
    """:func:`iter_segments` for a decoder of some connections only (one shard of a capture).
    ``pick`` is asked about every segment, in file order, given its connection key, the length of
    its data and its time: ``True`` yields the segment; anything else is yielded in its place
    (its data not copied), but for None, which yields nothing. A shard keeps its own segments,
    and of the others' only the times it needs for its clock: one call and no yield for most."""
    return _iter_segments(source, 0, None, None, False, pick)


def _iter_segments(
    source: str | Path | IO[bytes],
    start: int,
    end: int | None,
    name: str | None,
    keep_acks: bool,
    pick: Pick | None,
) -> Iterator[Segment | CaptureIssue | float]:
    if name is None:
        name = str(source) if isinstance(source, str | Path) else str(getattr(source, "name", "<stream>"))
    seen = _Seen()
    make = _segment_maker(name, keep_acks, seen, Segment, True, pick)
    records = iter_records(source, make, start=start, end=end, name=name)
    yield from cast("Iterator[Segment | CaptureIssue | float]", records)
    issue = seen.issue(name)
    if issue is not None:
        yield issue


def segment_facts_maker(
    file: str, build: SegmentBuilder[_T], keep_acks: bool = False
) -> tuple[RecordMaker[_T], Callable[[], CaptureIssue | None]]:
    """A record maker (for :func:`~kcodec.capture.packets.iter_records`) that hands each TCP segment's
    fields to ``build`` (see :data:`SegmentBuilder`: the payload's *length* stands where
    :class:`Segment` has its bytes, which are not copied) and returns what ``build`` returns; and
    what to report once the records are done: the IP fragments seen, as an issue (None if there
    were none). For a reader that keeps where payloads lie rather than the payloads (a distributed
    job's first stage): no :class:`Segment` object and no copy of the data per packet."""
    seen = _Seen()
    make = cast("RecordMaker[_T]", _segment_maker(file, keep_acks, seen, build, False))
    return make, lambda: seen.issue(file)


class _Seen:
    __slots__ = ("fragments", "last_ts")

    def __init__(self) -> None:
        self.fragments = 0
        self.last_ts = 0.0

    def issue(self, file: str) -> CaptureIssue | None:
        """The fragments seen, as one issue (None if none were)."""
        if not self.fragments:
            return None
        return CaptureIssue(
            self.last_ts,
            "capture-file",
            f"{self.fragments} IP fragments were not reassembled (their TCP data is not decoded)",
            length=self.fragments,
            file=file,
        )


def _segment_maker(
    file: str,
    keep_acks: bool,
    seen: _Seen,
    build: Callable[..., _T | None],
    copy: bool,
    pick: Pick | None = None,
) -> Callable[[int, int, float, int, bytes, int, int, int], _T | float | None]:
    """The record maker of :func:`iter_segments` (``build`` the :class:`Segment` class, ``copy``
    true) and :func:`segment_facts_maker` (``copy`` false: the payload's length is passed instead of
    its bytes): :func:`_segment` with the common Ethernet/IPv4/TCP case inline (one call per
    packet), IP fragments counted in ``seen``; ``pick`` as :func:`iter_some_segments` has it."""
    names_by_ends = _names_by_ends

    def make(
        index: int, offset: int, ts: float, linktype: int, buf: bytes, start: int, stop: int, data_offset: int
    ) -> _T | float | None:
        seen.last_ts = ts
        # the Ethernet/IPv4/TCP fields read byte by byte: compiled, an index into bytes is a machine
        # operation, where a struct's unpack_from is a call that parses its arguments
        if plain_eth_ipv4_tcp(linktype, buf, start, stop):
            total = buf[start + 16] << 8 | buf[start + 17]
            off, flags = buf[start + 46], buf[start + 47]
            end = _ipv4_end(total, stop - start)
            if end < 0:
                return None
            at = 34 + (off >> 4) * 4
            if at >= end and not keep_acks and not flags & 0x07:  # no data, no SYN, FIN, RST
                return None
            ends = buf[start + 26 : start + 38]
            names = names_by_ends.get(ends)
            if names is None:
                names = _names_of_ends(ends)
            key, src, dst = names
            if pick is not None:
                picked = pick(key, end - at if at < end else 0, ts)
                if picked is not True:
                    return picked
            i = start + 38
            seq = buf[i] << 24 | buf[i + 1] << 16 | buf[i + 2] << 8 | buf[i + 3]
            ack = buf[i + 4] << 24 | buf[i + 5] << 16 | buf[i + 6] << 8 | buf[i + 7]
            po = data_offset + at if data_offset >= 0 and at < end else -1
            if copy:  # (a Segment made here: compiled, a direct call, where ``build`` parses its arguments)
                data = buf[start + at : start + end] if at < end else b""
                return cast("_T", Segment(key, src, dst, seq, ack, flags, ts, data, file, index, offset, po))
            size = end - at if at < end else 0
            return build(key, src, dst, seq, ack, flags, ts, size, file, index, offset, po)
        try:
            seg = _segment(linktype, buf, start, stop, ts, file, index, offset, data_offset, keep_acks)
        except _Fragment:
            seen.fragments += 1
            return None
        if seg is not None and pick is not None:
            picked = pick(seg.key, len(seg.payload), ts)
            if picked is not True:
                return picked
        if seg is None or copy:  # (copy: ``build`` is the Segment class, and ``seg`` what it makes)
            return cast("_T | None", seg)
        return build(
            seg.key, seg.src, seg.dst, seg.seq, seg.ack, seg.flags, seg.timestamp,
            len(seg.payload), seg.file, seg.index, seg.offset, seg.payload_offset,
        )  # fmt: skip

    return make
