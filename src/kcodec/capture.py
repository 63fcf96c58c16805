"""Decode the Kafka traffic in a packet capture (pcap or pcapng): ``iter_capture(path)``.

The capture is read with dpkt; link, IP (v4/v6) and TCP headers are parsed here. Each TCP connection
is reassembled per direction in sequence order (retransmitted and overlapping segments are dropped
once their bytes are known, out-of-order segments are put in place, missing bytes are reported as
gaps), cut into size-prefixed Kafka frames, and decoded: client->server frames as requests, server->
client frames as responses to the request with the same correlation id on that connection.

Nothing in a capture makes this raise: every frame that cannot be decoded is yielded with the typed
error (``kcodec.errors.DecodeError`` with ``.offset`` and ``.path``, or another ``KcodecError``), and
stream problems (gaps, a truncated tail, a flow that is not Kafka) are yielded as ``CaptureIssue``.

A connection is Kafka traffic if one of its ports is a Kafka port (``ports``, default 9092; that side
is the broker) or, with ``autodetect``, if the first frame one side sends decodes as a request.

The whole capture is read before anything is yielded (events come out in time order); the records
are plain dataclasses so that other pipelines (e.g. a Spark job) can reuse them.
"""

from __future__ import annotations

import bisect
import ipaddress
import struct
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import dpkt

from kcodec.errors import DecodeError, KcodecError
from kcodec.frames import ResponseFrame, decode_request, decode_response
from kcodec.model import Message
from kcodec.registry import api, apis

if TYPE_CHECKING:
    from kcodec.jsonconv import RecordsMode

__all__ = [
    "DEFAULT_PORTS",
    "CaptureEvent",
    "CaptureIssue",
    "CapturedFrame",
    "iter_capture",
    "iter_packets",
    "summarize",
]

DEFAULT_PORTS: tuple[int, ...] = (9092,)
#: Frames claiming more than this are taken as "not Kafka" (the broker's socket.request.max.bytes is
#: 100 MiB by default; fetch responses can be larger, so be generous).
MAX_FRAME_SIZE = 256 * 1024 * 1024

Direction = Literal["request", "response"]
IssueKind = Literal["gap", "truncated", "retransmits", "not-kafka", "resync", "capture-file"]

_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_API_VERSIONS_KEY = 18
_METADATA_KEY = 3
_UNSUPPORTED_VERSION = 35


# --- records -------------------------------------------------------------------------------------


@dataclass(slots=True)
class CapturedFrame:
    """One Kafka frame seen on a connection, decoded or not.

    ``error`` is set when the frame could not be decoded (``header``/``body`` are then ``None``, or
    only ``header`` is set); ``api_key``, ``api_version`` and ``correlation_id`` are filled in as far
    as the bytes tell. ``stream_offset`` is the position of the frame's size prefix in its direction's
    byte stream; ``error.offset`` counts from the size prefix.
    """

    timestamp: float  # capture time of the segment that completed the frame (seconds since the epoch)
    connection: int  # 1, 2, ... in order of first packet
    client: str  # "host:port"
    server: str
    direction: Direction
    stream_offset: int
    size: int | None  # the size prefix (bytes after it), if it was captured
    raw: bytes  # the frame as captured, size prefix included (shorter than 4 + size if truncated)
    api_key: int | None = None
    api_version: int | None = None
    correlation_id: int | None = None
    header_version: int | None = None
    header: Message | None = None
    body: Message | None = None
    error: KcodecError | None = None
    diagnostics: tuple[str, ...] = ()
    latency: float | None = None  # responses: seconds since the matching request

    @property
    def api_name(self) -> str | None:
        if self.api_key is None:
            return None
        try:
            return api(self.api_key).name
        except KcodecError:
            return None

    @property
    def ok(self) -> bool:
        return self.error is None and self.body is not None

    @property
    def message_name(self) -> str | None:
        return None if self.body is None else type(self.body).MESSAGE_NAME

    def to_dict(self, *, body: bool = True, records: RecordsMode = "raw") -> dict[str, Any]:
        """A JSON-ready dict; header and body as Kafka JSON (``kcodec.to_json``) when ``body``.

        ``records``: ``"raw"`` keeps ``records`` fields as Kafka JSON's base64 blob; ``"base64"`` /
        ``"text"`` expand them into batches and records (``kcodec.to_json(..., records=...)``), with
        malformed or truncated record data shown as far as it decodes, and the error in place.
        """
        from kcodec.jsonconv import to_json

        out: dict[str, Any] = {
            "type": "frame",
            "time": self.timestamp,
            "connection": self.connection,
            "client": self.client,
            "server": self.server,
            "direction": self.direction,
            "stream_offset": self.stream_offset,
            "size": self.size,
            "api_key": self.api_key,
            "api_name": self.api_name,
            "api_version": self.api_version,
            "correlation_id": self.correlation_id,
        }
        if self.latency is not None:
            out["latency"] = self.latency
        if body:
            out["header"] = (
                None
                if self.header is None or self.header_version is None
                else to_json(self.header, self.header_version)
            )
            out["body"] = (
                None
                if self.body is None or self.api_version is None
                else to_json(self.body, self.api_version, records=records)
            )
        out["error"] = None if self.error is None else error_dict(self.error)
        if self.diagnostics:
            out["diagnostics"] = list(self.diagnostics)
        return out


@dataclass(slots=True)
class CaptureIssue:
    """A problem with the stream rather than one frame: missing bytes, a truncated tail, and so on."""

    timestamp: float
    kind: IssueKind
    message: str
    connection: int | None = None
    client: str | None = None
    server: str | None = None
    direction: Direction | None = None
    stream_offset: int | None = None
    length: int | None = None  # bytes concerned (missing, skipped, left over)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "issue",
            "time": self.timestamp,
            "kind": self.kind,
            "message": self.message,
            "connection": self.connection,
            "client": self.client,
            "server": self.server,
            "direction": self.direction,
            "stream_offset": self.stream_offset,
            "length": self.length,
        }


CaptureEvent = CapturedFrame | CaptureIssue


def error_dict(error: KcodecError) -> dict[str, Any]:
    """The typed error of a frame as JSON: class, message, and offset/path for decode errors."""
    out: dict[str, Any] = {"type": type(error).__name__, "message": str(error)}
    if isinstance(error, DecodeError):
        out["offset"] = error.offset
        out["path"] = error.path
        out["reason"] = error.reason
    return out


# --- packets -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Packet:
    """One TCP segment as captured (payload possibly shorter than sent if the snap length cut it)."""

    index: int
    timestamp: float
    src: str
    sport: int
    dst: str
    dport: int
    seq: int
    flags: int
    payload: bytes

    @property
    def syn(self) -> bool:
        return bool(self.flags & dpkt.tcp.TH_SYN)

    @property
    def ack_flag(self) -> bool:
        return bool(self.flags & dpkt.tcp.TH_ACK)

    @property
    def fin(self) -> bool:
        return bool(self.flags & dpkt.tcp.TH_FIN)

    @property
    def rst(self) -> bool:
        return bool(self.flags & dpkt.tcp.TH_RST)


class CaptureFileError(KcodecError):
    """The capture file is not a pcap/pcapng file kcodec can read."""


_ETH_IPV4, _ETH_IPV6, _ETH_VLAN, _ETH_QINQ = 0x0800, 0x86DD, 0x8100, 0x88A8


def _open_reader(f: Any) -> Any:
    magic = f.read(4)
    f.seek(0)
    if len(magic) < 4:
        raise CaptureFileError("the capture file is empty")
    try:
        if magic == b"\x0a\x0d\x0d\x0a":
            return dpkt.pcapng.Reader(f)
        return dpkt.pcap.Reader(f)
    except (ValueError, dpkt.UnpackError, struct.error) as e:
        raise CaptureFileError(f"not a pcap or pcapng file ({e})") from None


def _network_layer(linktype: int, buf: bytes) -> tuple[int, bytes] | None:
    """(ethertype, IP packet) of one link-layer frame, or None if it is not IPv4/IPv6."""
    if linktype == dpkt.pcap.DLT_EN10MB:
        if len(buf) < 14:
            return None
        (etype,) = _U16.unpack_from(buf, 12)
        pos = 14
        while etype in (_ETH_VLAN, _ETH_QINQ) and len(buf) >= pos + 4:
            (etype,) = _U16.unpack_from(buf, pos + 2)
            pos += 4
        return etype, buf[pos:]
    if linktype in (dpkt.pcap.DLT_NULL, dpkt.pcap.DLT_LOOP):
        if len(buf) < 4:
            return None
        family = struct.unpack_from(">I" if linktype == dpkt.pcap.DLT_LOOP else "<I", buf, 0)[0]
        if family > 0xFFFF:  # DLT_NULL is host byte order: try the other one
            family = struct.unpack_from(">I", buf, 0)[0]
        etype = _ETH_IPV4 if family == 2 else _ETH_IPV6 if family in (10, 24, 28, 30) else 0
        return etype, buf[4:]
    if linktype == 113:  # Linux cooked capture (SLL)
        return (_U16.unpack_from(buf, 14)[0], buf[16:]) if len(buf) >= 16 else None
    if linktype == 276:  # Linux cooked capture v2 (SLL2)
        return (_U16.unpack_from(buf, 0)[0], buf[20:]) if len(buf) >= 20 else None
    if linktype in (12, 14, 101, 228, 229):  # raw IP
        if not buf:
            return None
        return (_ETH_IPV4 if buf[0] >> 4 == 4 else _ETH_IPV6), buf
    return None


def _tcp_of(etype: int, ip: bytes) -> tuple[str, str, bytes] | None:
    """(source, destination, TCP segment cut to the IP payload length) or None if not TCP."""
    if etype == _ETH_IPV4:
        if len(ip) < 20 or ip[0] >> 4 != 4:
            return None
        ihl = (ip[0] & 0x0F) * 4
        (total,) = _U16.unpack_from(ip, 2)
        frag = _U16.unpack_from(ip, 6)[0] & 0x3FFF
        if ip[9] != 6 or frag or ihl < 20:  # not TCP, or a fragment (not reassembled)
            return None
        end = total if total >= ihl else len(ip)  # total 0: TSO-offloaded capture, use what is there
        src, dst = str(ipaddress.IPv4Address(ip[12:16])), str(ipaddress.IPv4Address(ip[16:20]))
        return src, dst, ip[ihl:end]
    if etype == _ETH_IPV6:
        if len(ip) < 40:
            return None
        (plen,) = _U16.unpack_from(ip, 4)
        nxt, pos = ip[6], 40
        while nxt in (0, 43, 60) and len(ip) >= pos + 8:  # hop-by-hop, routing, destination options
            nxt, pos = ip[pos], pos + (ip[pos + 1] + 1) * 8
        if nxt != 6:
            return None
        src, dst = str(ipaddress.IPv6Address(ip[8:24])), str(ipaddress.IPv6Address(ip[24:40]))
        return src, dst, ip[pos : 40 + plen if plen else len(ip)]
    return None


def iter_packets(path: str | Path, issues: list[CaptureIssue] | None = None) -> Iterator[Packet]:
    """Every TCP segment in a pcap/pcapng file; a damaged file tail is reported to ``issues``."""
    with open(path, "rb") as f:
        reader = _open_reader(f)
        linktype = reader.datalink()
        index = 0
        last_ts = 0.0
        it = iter(reader)
        while True:
            try:
                ts, buf = next(it)
            except StopIteration:
                break
            except (dpkt.UnpackError, ValueError, struct.error) as e:
                if issues is not None:
                    issues.append(
                        CaptureIssue(
                            last_ts,
                            "capture-file",
                            f"capture file ends in a damaged record after packet {index}: {e}",
                        )
                    )
                break
            index += 1
            last_ts = float(ts)
            net = _network_layer(linktype, bytes(buf))
            if net is None:
                continue
            tcp = _tcp_of(*net)
            if tcp is None or len(tcp[2]) < 20:
                continue
            src, dst, seg = tcp
            sport, dport, seq = struct.unpack_from(">HHI", seg, 0)
            off = (seg[12] >> 4) * 4
            flags = seg[13]
            if off < 20:
                continue
            yield Packet(index, last_ts, src, sport, dst, dport, seq, flags, seg[off:])


# --- TCP reassembly ------------------------------------------------------------------------------


def _endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(slots=True)
class _Run:
    """Contiguous reassembled bytes of one direction: ``data`` starts at stream offset ``start``."""

    start: int
    data: bytearray
    ends: list[int] = field(default_factory=list)  # stream offset after each added segment
    times: list[float] = field(default_factory=list)  # running max capture time at that point

    @property
    def end(self) -> int:
        return self.start + len(self.data)

    def time_at(self, offset: int) -> float:
        """When the byte before stream ``offset`` had arrived (and everything before it in this run)."""
        i = bisect.bisect_left(self.ends, offset)
        return self.times[min(i, len(self.times) - 1)]


@dataclass(slots=True)
class _Half:
    """One direction of a connection: its segments, then its reassembled runs."""

    isn: int | None = None  # sequence number of the SYN
    segments: list[tuple[int, int, float, bytes]] = field(default_factory=list)  # (seq, index, ts, data)

    def add(self, p: Packet) -> None:
        seq = p.seq
        if p.syn:
            self.isn = seq
            seq += 1  # the SYN takes one sequence number; data in it (TCP Fast Open) follows
        if p.payload:
            self.segments.append((seq, p.index, p.timestamp, p.payload))

    def reassemble(self) -> tuple[list[_Run], int, int]:
        """The runs of bytes in stream order, and how many retransmitted / overlapping segments were cut."""
        if not self.segments:
            return [], 0, 0
        base = (self.isn + 1) if self.isn is not None else self.segments[0][0]

        def rel(seq: int) -> int:
            return ((seq - base + 0x80000000) & 0xFFFFFFFF) - 0x80000000

        ordered = sorted(((rel(seq), index, ts, data) for seq, index, ts, data in self.segments))
        shift = 0 if self.isn is not None else ordered[0][0]
        runs: list[_Run] = []
        retransmits = overlaps = 0
        cur: int | None = None
        latest = 0.0
        for start, _, ts, data in ordered:
            start -= shift
            end = start + len(data)
            if cur is not None and end <= cur:
                retransmits += 1
                continue
            if cur is None or start > cur:
                runs.append(_Run(start, bytearray()))
                cur = start
            elif start < cur:
                overlaps += 1
                data = data[cur - start :]
            latest = max(latest, ts)
            run = runs[-1]
            run.data += data
            run.ends.append(end)
            run.times.append(latest)
            cur = end
        return runs, retransmits, overlaps


@dataclass(slots=True)
class _Conn:
    number: int
    a: tuple[str, int]  # the side that sent the first packet seen (or the SYN)
    b: tuple[str, int]
    a_syn: bool = False  # a sent a SYN without ACK: a is the client
    b_syn: bool = False
    halves: dict[tuple[str, int], _Half] = field(default_factory=dict)
    first_ts: float = 0.0

    def half(self, src: tuple[str, int]) -> _Half:
        h = self.halves.get(src)
        if h is None:
            h = self.halves[src] = _Half()
        return h


def _connections(packets: Iterable[Packet]) -> list[_Conn]:
    """Group segments into connections; a new SYN on a finished 4-tuple starts a new connection."""
    conns: list[_Conn] = []
    current: dict[frozenset[tuple[str, int]], _Conn] = {}
    for p in packets:
        src, dst = (p.src, p.sport), (p.dst, p.dport)
        key = frozenset((src, dst))
        conn = current.get(key)
        pure_syn = p.syn and not p.ack_flag
        if conn is not None and pure_syn:
            h = conn.halves.get(src)
            if h is not None and h.isn is not None and h.isn != p.seq:
                conn = None  # port reuse: a new connection on the same 4-tuple
            elif h is not None and h.isn is None and (h.segments or conn.half(dst).segments):
                conn = None
        if conn is None:
            conn = _Conn(len(conns) + 1, src, dst, first_ts=p.timestamp)
            conns.append(conn)
            current[key] = conn
        if pure_syn:
            if src == conn.a:
                conn.a_syn = True
            else:
                conn.b_syn = True
        conn.half(src).add(p)
    return conns


# --- framing -------------------------------------------------------------------------------------


@dataclass(slots=True)
class _RawFrame:
    offset: int
    data: bytes
    timestamp: float
    size: int | None
    error: DecodeError | None = None  # framing problem (bad size, truncated, broken by a gap)
    framed: bool = True  # False if the bytes are not Kafka framing at all (header fields meaningless)


def _split(
    runs: list[_Run],
    plausible: Callable[[bytes, int], bool],
    issues: list[CaptureIssue],
    issue: Callable[..., CaptureIssue],
    max_size: int,
) -> list[_RawFrame]:
    """Cut a direction's runs into frames; report gaps, truncated tails and bytes that are not frames."""
    frames: list[_RawFrame] = []
    expect: int | None = runs[0].start if runs else None  # stream offset where the next frame starts
    if runs and runs[0].start > 0:
        issues.append(
            issue(
                runs[0].time_at(runs[0].start),
                "gap",
                f"{runs[0].start} bytes missing at the start of the stream",
                0,
                runs[0].start,
            )
        )
        expect = None
    for i, run in enumerate(runs):
        last = i == len(runs) - 1
        buf = bytes(run.data)
        if i > 0:
            prev = runs[i - 1]
            missing = run.start - prev.end
            issues.append(
                issue(
                    run.time_at(run.start),
                    "gap",
                    f"{missing} bytes missing (not captured) at stream offset {prev.end}",
                    prev.end,
                    missing,
                )
            )
        if expect is not None and run.start <= expect < run.end:
            pos = expect - run.start
        elif expect is not None and expect >= run.end:
            continue  # the whole run lies inside a frame broken by an earlier gap
        else:
            found = _resync(buf, plausible)
            if found is None:
                issues.append(
                    issue(
                        run.time_at(run.end),
                        "resync",
                        f"no frame boundary found in {len(buf)} bytes after a gap; skipped",
                        run.start,
                        len(buf),
                    )
                )
                expect = None
                continue
            if found:
                issues.append(
                    issue(
                        run.time_at(run.start + found),
                        "resync",
                        f"skipped {found} bytes after a gap to the next plausible frame",
                        run.start,
                        found,
                    )
                )
            pos = found
        expect = None
        while pos < len(buf):
            offset = run.start + pos
            if len(buf) - pos < 4:
                frames.append(
                    _RawFrame(
                        offset,
                        buf[pos:],
                        run.time_at(run.end),
                        None,
                        DecodeError(
                            f"frame size prefix cut short: {len(buf) - pos} of 4 bytes "
                            + ("captured (capture ends)" if last else "before a gap"),
                            0,
                            "frame.size",
                        ),
                    )
                )
                break
            (size,) = _I32.unpack_from(buf, pos)
            if size < 0 or size > max_size:
                frames.append(
                    _RawFrame(
                        offset,
                        buf[pos : pos + 64],
                        run.time_at(offset + 4),
                        size,
                        DecodeError(
                            f"implausible frame size {size}: not Kafka framing; "
                            f"{len(buf) - pos} bytes of this stream left undecoded",
                            0,
                            "frame.size",
                        ),
                        framed=False,
                    )
                )
                return frames
            end = pos + 4 + size
            if end > len(buf):
                have = len(buf) - pos - 4
                why = "the capture ends" if last else "a gap"
                frames.append(
                    _RawFrame(
                        offset,
                        buf[pos:],
                        run.time_at(run.end),
                        size,
                        DecodeError(
                            f"frame truncated: {size} bytes claimed, {have} captured before {why}",
                            0,
                            "frame.size",
                        ),
                    )
                )
                if last:
                    issues.append(
                        issue(
                            run.time_at(run.end),
                            "truncated",
                            f"stream ends inside a frame: {size - have} bytes of it not captured",
                            offset,
                            size - have,
                        )
                    )
                else:
                    expect = offset + 4 + size
                break
            frames.append(_RawFrame(offset, buf[pos:end], run.time_at(run.start + end), size))
            pos = end
    return frames


def _resync(buf: bytes, plausible: Callable[[bytes, int], bool], limit: int = 1 << 20) -> int | None:
    for pos in range(min(len(buf) - 3, limit)):
        if plausible(buf, pos):
            return pos
    return None


@cache
def _api_versions() -> dict[int, tuple[int, int]]:
    return {a.key: (a.min_version, a.max_version) for a in apis()}


def _plausible_request(buf: bytes, pos: int) -> bool:
    """Could a request frame start at ``pos``? (sane size, known api key and version)"""
    if len(buf) - pos < 12:
        return False
    size, key, version = struct.unpack_from(">ihh", buf, pos)
    if size < 8 or size > MAX_FRAME_SIZE:
        return False
    versions = _api_versions().get(key)
    return versions is not None and versions[0] <= version <= versions[1]


def _response_checker(pending: dict[int, deque[tuple[int, int, float]]]) -> Callable[[bytes, int], bool]:
    def plausible(buf: bytes, pos: int) -> bool:
        if len(buf) - pos < 8:
            return False
        size, corr = struct.unpack_from(">ii", buf, pos)
        return 4 <= size <= MAX_FRAME_SIZE and bool(pending.get(corr))

    return plausible


# --- decoding ------------------------------------------------------------------------------------


class UnmatchedResponseError(DecodeError):
    """A response whose correlation id matches no request seen on its connection."""


def _header_fields(raw: bytes, request: bool) -> tuple[int | None, int | None, int | None]:
    """(api key, api version, correlation id) read straight from a frame's first bytes, as far as present."""
    if request:
        key = _I16.unpack_from(raw, 4)[0] if len(raw) >= 6 else None
        ver = _I16.unpack_from(raw, 6)[0] if len(raw) >= 8 else None
        corr = _I32.unpack_from(raw, 8)[0] if len(raw) >= 12 else None
        return key, ver, corr
    return None, None, (_I32.unpack_from(raw, 4)[0] if len(raw) >= 8 else None)


def _as_kcodec_error(e: Exception) -> KcodecError:
    if isinstance(e, KcodecError):
        return e
    return DecodeError(f"{type(e).__name__}: {e}", 0, "frame")  # a decoder bug must not stop the capture


def _known_quirks(
    frame: CapturedFrame, resp: ResponseFrame | None, raw: bytes, asked: int
) -> tuple[str, ...]:
    """Explanations for off-spec replies of known peers, when a response did not decode cleanly."""
    if frame.api_key == _API_VERSIONS_KEY and (resp is None or resp.diagnostics) and frame.api_version:
        from kcodec.negotiation import diagnose_api_versions_reply

        quirk = diagnose_api_versions_reply(raw, asked)
        return (quirk.detail,) if quirk is not None else ()
    if (
        frame.api_key == _METADATA_KEY
        and resp is not None
        and (frame.api_version or 0) >= 9
        and [d.reason.split(" ", 1)[0] for d in resp.diagnostics] == ["1"]
        and raw[-1:] == b"\x00"
    ):
        return (
            "the extra byte is a second, empty top-level tagged-field section "
            "(librdkafka's mock cluster writes it for flexible Metadata versions)",
        )
    return ()


def _api_versions_v0(raw: bytes) -> ResponseFrame | None:
    """Kafka's rule: a broker that does not support the requested ApiVersions version answers with an
    ApiVersionsResponse v0 carrying UNSUPPORTED_VERSION. The frame if it decodes so, cleanly."""
    try:
        resp = decode_response(raw, _API_VERSIONS_KEY, 0, strict=True)
    except Exception:
        return None
    return resp if getattr(resp.body, "error_code", 0) == _UNSUPPORTED_VERSION else None


class _ConnDecoder:
    def __init__(
        self, conn: _Conn, ports: frozenset[int], autodetect: bool, strict: bool, max_size: int
    ) -> None:
        self.conn = conn
        self.ports = ports
        self.autodetect = autodetect
        self.strict = strict
        self.max_size = max_size

    def _sides(
        self, runs: dict[tuple[str, int], list[_Run]]
    ) -> tuple[tuple[str, int], tuple[str, int]] | None:
        """(client, server) of the connection, or None if it is not Kafka traffic."""
        a, b = self.conn.a, self.conn.b
        a_kafka, b_kafka = a[1] in self.ports, b[1] in self.ports
        if a_kafka != b_kafka:
            return (b, a) if a_kafka else (a, b)
        if a_kafka and b_kafka:
            return (b, a) if self.conn.b_syn and not self.conn.a_syn else (a, b)
        if not self.autodetect:
            return None
        order = [(a, b), (b, a)]
        if self.conn.b_syn and not self.conn.a_syn:
            order.reverse()
        for client, server in order:
            first = runs.get(client)
            if first and first[0].start == 0 and self._first_frame_is_request(bytes(first[0].data)):
                return client, server
        return None

    @staticmethod
    def _first_frame_is_request(buf: bytes) -> bool:
        if not _plausible_request(buf, 0):
            return False
        size = _I32.unpack_from(buf, 0)[0]
        if 4 + size > len(buf):
            return True  # plausible header; the frame is cut by the capture
        try:
            decode_request(buf[: 4 + size], strict=False)
        except Exception:
            return False
        return True

    def events(self) -> list[CaptureEvent]:
        conn = self.conn
        runs: dict[tuple[str, int], list[_Run]] = {}
        stats: dict[tuple[str, int], tuple[int, int]] = {}
        for side, half in conn.halves.items():
            r, retransmits, overlaps = half.reassemble()
            runs[side] = r
            stats[side] = (retransmits, overlaps)
        sides = self._sides(runs)
        if sides is None:
            total = sum(len(r.data) for rs in runs.values() for r in rs)
            if not total:
                return []
            return [
                CaptureIssue(
                    conn.first_ts,
                    "not-kafka",
                    f"connection {_endpoint(*conn.a)} <-> {_endpoint(*conn.b)} "
                    f"({total} bytes) is not Kafka traffic (no Kafka port, no request found)",
                    conn.number,
                    _endpoint(*conn.a),
                    _endpoint(*conn.b),
                    length=total,
                )
            ]
        client, server = sides
        c_text, s_text = _endpoint(*client), _endpoint(*server)
        issues: list[CaptureIssue] = []

        def issue_for(direction: Direction) -> Callable[..., CaptureIssue]:
            def make(
                ts: float, kind: IssueKind, message: str, offset: int | None, length: int | None
            ) -> CaptureIssue:
                return CaptureIssue(ts, kind, message, conn.number, c_text, s_text, direction, offset, length)

            return make

        out: list[CaptureEvent] = []
        pending: dict[int, deque[tuple[int, int, float]]] = defaultdict(deque)
        for raw in _split(
            runs.get(client, []), _plausible_request, issues, issue_for("request"), self.max_size
        ):
            frame = CapturedFrame(
                raw.timestamp, conn.number, c_text, s_text, "request", raw.offset, raw.size, raw.data
            )
            if raw.framed:
                frame.api_key, frame.api_version, frame.correlation_id = _header_fields(raw.data, True)
            if raw.error is not None:
                frame.error = raw.error
            else:
                try:
                    req = decode_request(raw.data, strict=self.strict)
                except Exception as e:
                    frame.error = _as_kcodec_error(e)
                else:
                    frame.header_version, frame.header, frame.body = req.header_version, req.header, req.body
                    frame.diagnostics = tuple(d.reason for d in req.diagnostics)
            if (
                frame.api_key is not None
                and frame.api_version is not None
                and frame.correlation_id is not None
            ):
                pending[frame.correlation_id].append((frame.api_key, frame.api_version, frame.timestamp))
            out.append(frame)
        check = _response_checker(pending)
        for raw in _split(runs.get(server, []), check, issues, issue_for("response"), self.max_size):
            frame = CapturedFrame(
                raw.timestamp, conn.number, c_text, s_text, "response", raw.offset, raw.size, raw.data
            )
            if raw.framed:
                _, _, frame.correlation_id = _header_fields(raw.data, False)
            queue = pending.get(frame.correlation_id) if frame.correlation_id is not None else None
            if queue:
                frame.api_key, frame.api_version, sent = queue.popleft()
                frame.latency = frame.timestamp - sent
            if raw.error is not None:
                frame.error = raw.error
            elif frame.api_key is None or frame.api_version is None:
                frame.error = UnmatchedResponseError(
                    f"no request with correlation id {frame.correlation_id} was seen on this connection",
                    4,
                    "ResponseHeader.correlation_id",
                )
            else:
                resp: ResponseFrame | None = None
                try:
                    resp = decode_response(raw.data, frame.api_key, frame.api_version, strict=self.strict)
                except Exception as e:
                    frame.error = _as_kcodec_error(e)
                asked = frame.api_version
                if frame.api_key == _API_VERSIONS_KEY and asked > 0 and (resp is None or resp.diagnostics):
                    fallback = _api_versions_v0(raw.data)
                    if fallback is not None:
                        resp, frame.api_version, frame.error = fallback, 0, None
                        frame.diagnostics = (
                            f"ApiVersions v{asked} answered with a v0 UNSUPPORTED_VERSION response",
                        )
                if resp is not None:
                    frame.header_version, frame.header, frame.body = (
                        resp.header_version,
                        resp.header,
                        resp.body,
                    )
                    frame.diagnostics += tuple(d.reason for d in resp.diagnostics)
                frame.diagnostics += _known_quirks(frame, resp, raw.data, asked)
            out.append(frame)
        for side, (retransmits, overlaps) in stats.items():
            if retransmits or overlaps:
                direction: Direction = "request" if side == client else "response"
                out.append(
                    CaptureIssue(
                        conn.first_ts,
                        "retransmits",
                        f"{retransmits} retransmitted and {overlaps} overlapping segments in the {direction} "
                        "stream; the first copy of each byte was kept",
                        conn.number,
                        c_text,
                        s_text,
                        direction,
                        None,
                        retransmits + overlaps,
                    )
                )
        out.extend(issues)
        return out


def iter_capture(
    path: str | Path,
    *,
    ports: Iterable[int] = DEFAULT_PORTS,
    autodetect: bool = True,
    strict: bool = False,
    max_frame_size: int = MAX_FRAME_SIZE,
) -> Iterator[CaptureEvent]:
    """Every Kafka frame (``CapturedFrame``) and stream problem (``CaptureIssue``) in a capture, by time.

    ``strict=False`` (the default) decodes leniently: bytes left after a body become diagnostics
    instead of errors, as captured traffic from newer clients may carry them.
    Raises ``CaptureFileError`` (a ``KcodecError``) only if the file is not a pcap/pcapng at all.
    """
    file_issues: list[CaptureIssue] = []
    conns = _connections(iter_packets(path, file_issues))
    port_set = frozenset(ports)
    events: list[tuple[float, int, int, CaptureEvent]] = []
    for conn in conns:
        for n, ev in enumerate(_ConnDecoder(conn, port_set, autodetect, strict, max_frame_size).events()):
            events.append((ev.timestamp, conn.number, n, ev))
    for n, ev in enumerate(file_issues):
        events.append((ev.timestamp, len(conns) + 1, n, ev))
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    for *_, ev in events:
        yield ev


# --- summaries -----------------------------------------------------------------------------------


def summarize(frame: CapturedFrame, width: int = 100) -> str:
    """A one-line summary of a frame: error, or key fields, topics, record bytes and error codes."""
    if frame.error is not None:
        return f"{type(frame.error).__name__}: {frame.error}"
    if frame.body is None:
        return ""
    from kcodec.codec import message_info

    body = frame.body
    name = type(body).MESSAGE_NAME
    version = frame.api_version or 0
    info = message_info(name)
    parts: list[str] = []
    topics: list[str] = []
    counts: dict[str, int] = defaultdict(int)
    errors: dict[int, int] = defaultdict(int)
    record_bytes = 0

    def walk(struct_name: str, obj: Any, depth: int) -> None:
        nonlocal record_bytes
        for f in info.fields_at(struct_name, version):
            value = getattr(obj, f.attr, None)
            if value is None:
                continue
            child = f.struct_name
            if f.is_array and child is not None:
                counts[f.attr] += len(value)
                for item in value:
                    walk(child, item, depth + 1)
                continue
            if child is not None:
                walk(child, value, depth + 1)
                continue
            if f.type == "records":
                record_bytes += len(value)
            elif f.attr == "error_code" and value:
                errors[int(value)] += 1
            elif depth == 1 and f.attr in ("name", "topic", "topic_name") and "topic" in struct_name.lower():
                topics.append(str(value))
            elif depth == 0 and _interesting(f.attr, value, f.default):
                parts.append(f"{f.attr}={_short(value)}")

    walk(name, body, 0)
    head: list[str] = []
    if frame.diagnostics:
        head.append("[" + "; ".join(frame.diagnostics) + "]")
    if errors:
        codes = (f"{code}x{n}" if n > 1 else str(code) for code, n in sorted(errors.items()))
        head.append("error_codes=" + ",".join(codes))
    if record_bytes:
        head.append(f"records={record_bytes}B")
    if topics:
        uniq = list(dict.fromkeys(topics))
        parts.append("topics=" + ",".join(uniq[:3]) + ("..." if len(uniq) > 3 else ""))
    parts.extend(f"{attr}={n}" for attr, n in counts.items() if attr != "topics")
    parts = head + parts
    text = " ".join(parts)
    return text if len(text) <= width else text[: width - 3] + "..."


def records_fields(frame: CapturedFrame) -> list[tuple[str, Any]]:
    """``(where, value)`` of every non-null ``records`` field in the frame's body, in order;
    ``where`` names the topic and partition (``"orders/0"``) as far as the body tells."""
    if frame.body is None:
        return []
    from kcodec.codec import message_info

    body = frame.body
    version = frame.api_version or 0
    info = message_info(type(body).MESSAGE_NAME)
    out: list[tuple[str, Any]] = []

    def walk(struct_name: str, obj: Any, topic: str, partition: str) -> None:
        for f in info.fields_at(struct_name, version):
            value = getattr(obj, f.attr, None)
            if value is None:
                continue
            child = f.struct_name
            if child is not None:
                for item in value if f.is_array else [value]:
                    walk(child, item, topic, partition)
            elif f.type == "records":
                out.append((f"{topic or '?'}/{partition or '?'}", value))
            elif "topic" in struct_name.lower() and f.attr in ("name", "topic", "topic_name", "topic_id"):
                topic = topic if f.attr == "topic_id" and topic else str(value)
            elif f.attr in ("partition", "partition_index", "index") and f.type == "int32":
                partition = str(value)

    walk(type(body).MESSAGE_NAME, body, "", "")
    return out


def _text_of(obj: dict[str, Any], name: str, width: int = 40) -> str:
    text: str
    if name + "Base64" in obj:
        text = "base64:" + str(obj[name + "Base64"])
    elif obj.get(name) is None:
        text = "null"
    else:
        text = repr(obj[name]) if isinstance(obj[name], str) else str(obj[name])
    return text if len(text) <= width else text[: width - 3] + "..."


def record_lines(
    frame: CapturedFrame, values: Literal["base64", "text"] = "text", limit: int = 20
) -> list[str]:
    """Lines describing the batches and records of the frame's ``records`` fields (for a table):
    per field a summary, then up to ``limit`` records (offset, key, value, headers) and any errors."""
    from kcodec.records.jsonview import records_summary, records_to_json

    lines: list[str] = []
    for where, data in records_fields(frame):
        if not len(data):
            continue  # nothing in it (e.g. a Fetch response partition without new records)
        lines.append(f"{where}: {records_summary(data)}")
        view = records_to_json(data, values=values)
        assert view is not None
        shown = 0
        for batch in view["batches"]:
            for key in ("error", "recordsError"):
                if key in batch:
                    lines.append(f"  ! batch at byte {batch['position']}: {batch[key]['message']}")
            for rec in batch.get("records", ()):
                shown += 1
                if shown > limit:
                    continue
                headers = ",".join(f"{h['key']}={_text_of(h, 'value', 20)}" for h in rec["headers"])
                lines.append(
                    f"  @{rec['offset']} key={_text_of(rec, 'key')} value={_text_of(rec, 'value')}"
                    + (f" headers={headers}" if headers else "")
                )
        if shown > limit:
            lines.append(f"  ... {shown - limit} more records")
        if "error" in view:
            lines.append(f"  ! {view['error']['message']}")
        if view["truncatedBytes"]:
            lines.append(f"  ({view['truncatedBytes']} bytes of an incomplete last batch)")
    return lines


def _interesting(attr: str, value: Any, default: Any) -> bool:
    if isinstance(value, bool | int | float | str):
        return bool(value != default) and attr != "throttle_time_ms"
    return False


def _short(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."
