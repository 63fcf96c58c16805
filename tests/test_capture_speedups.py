"""The fast paths of ``kcodec decode-capture`` give exactly what the plain code they stand in for gives."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any, Final

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kcodec.capture.segments import Segment
from kcodec.cli.capture_table import clock


def _datetime_clock(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).strftime("%H:%M:%S.%f")[:-3]


@settings(max_examples=3000, deadline=None)
@given(
    st.one_of(
        st.floats(min_value=0, max_value=253402300799.0),
        st.builds(lambda s, us, d: s + us / 1e6 + d, st.integers(0, 2**34), st.integers(0, 10**6 - 1),
                  st.sampled_from([0.0, 5e-7, -5e-7, 4.9999e-7, 1e-9, -1e-9])),
    )
)
@example(0.0)
@example(1.9999995)
@example(1700000000.0000005)
@example(1700000000.0000015)
@example(86399.9999999)
def test_clock_is_datetime_s_text(ts: float) -> None:
    if 0 <= ts < 253402300800.0:
        assert clock(ts) == _datetime_clock(ts)


# --- segments: the Ethernet/IPv4/TCP fast path against the general parser ----------------------------

_IP_TCP = st.builds(
    lambda vihl, total, frag, proto, addrs, ports, seq, ack, off, flags, rest: bytes([vihl, 0])
    + total.to_bytes(2, "big") + b"\0\0" + frag.to_bytes(2, "big") + bytes([64, proto]) + b"\0\0"
    + addrs + ports + seq.to_bytes(4, "big") + ack.to_bytes(4, "big") + bytes([off, flags]) + rest,
    st.sampled_from([0x45, 0x45, 0x45, 0x46, 0x44, 0x65]),
    st.one_of(st.integers(0, 120), st.integers(0, 65535)),
    st.sampled_from([0, 0, 0, 0x4000, 0x2000, 0x0001]),
    st.sampled_from([6, 6, 6, 17]),
    st.binary(min_size=8, max_size=8),
    st.binary(min_size=4, max_size=4),
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**32 - 1),
    st.sampled_from([0x50, 0x50, 0x80, 0x40, 0xF0, 0x00]),
    st.integers(0, 255),
    st.binary(max_size=80),
)


# the Ethernet header says IPv4, the IP header says version 6, and read as IPv6 the bytes hold a
# hop-by-hop header followed by a fragment header (44): the raw-IP parse (DLT_RAW, where the version
# field decides) took it for an IPv6 fragment while the Ethernet fast path gave None
_V6_IN_V4: Final = (
    bytes([0x65, 0, 0, 60, 0, 0, 0, 0, 64, 6, 0, 0]) + bytes(range(1, 9)) + b"\x1f\x90\x23\x84" + bytes(8)
    + bytes([0x50, 0x18]) + bytes(6) + bytes([44, 0]) + bytes(30)
)


def _parse(linktype: int, data: bytes, at: int, keep_acks: bool, general: bool = False) -> object:
    from kcodec.capture.segments import _Fragment, _general_segment, _segment

    try:
        if general:
            return _general_segment(linktype, data, 1.5, "f", 3, 7, at, keep_acks)
        return _segment(linktype, data, 0, len(data), 1.5, "f", 3, 7, at, keep_acks)
    except _Fragment:
        return "fragment"


@settings(max_examples=2000, deadline=None)
@given(_IP_TCP, st.booleans(), st.integers(-1, 5000))
@example(_V6_IN_V4, True, -1)
@example(_V6_IN_V4, False, 100)
@example(_V6_IN_V4[:1] + bytes([0, 0, 0]) + _V6_IN_V4[4:], True, -1)  # total length 0 (TSO)
def test_ethernet_ipv4_fast_path_is_the_general_parse(ip: bytes, keep_acks: bool, data_offset: int) -> None:
    """The fast path against the code it stands in for (the general parse of the same Ethernet frame),
    and against the same packet under the raw-IPv4 link type (LINKTYPE_IPV4, never on the fast path):
    both link layers say IPv4, so a version field that says otherwise makes the packet malformed."""
    from kcodec.capture.segments import _DLT_EN10MB, _DLT_IPV4

    ether = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip
    fast = _parse(_DLT_EN10MB, ether, data_offset, keep_acks)
    assert fast == _parse(_DLT_EN10MB, ether, data_offset, keep_acks, general=True)
    raw_at = data_offset + 14 if data_offset >= 0 else -1
    assert fast == _parse(_DLT_IPV4, ip, raw_at, keep_acks)
    if ip[0] >> 4 == 4:  # raw IP (DLT_RAW): the version field decides, and it says IPv4
        assert fast == _parse(101, ip, raw_at, keep_acks)
    else:
        assert fast is None


def test_the_version_field_must_match_what_the_link_layer_says() -> None:
    from kcodec.capture.segments import _DLT_EN10MB, _DLT_IPV4, _DLT_IPV6

    # an IPv6 packet carrying a TCP SYN, then the same bytes with other version fields
    v6 = bytes([0x60, 0, 0, 0, 0, 20, 6, 64]) + bytes(range(32))
    v6 += b"\x1f\x90\x23\x84" + bytes(8) + b"\x50\x02" + bytes(6)
    assert isinstance(_parse(101, v6, -1, True), Segment)
    assert isinstance(_parse(_DLT_IPV6, v6, -1, True), Segment)
    assert isinstance(_parse(_DLT_EN10MB, b"\x02" * 12 + b"\x86\xdd" + v6, -1, True), Segment)
    assert _parse(_DLT_IPV4, v6, -1, True) is None
    for first in (0x40, 0x50, 0x00, 0xF0):
        other = bytes([first]) + v6[1:]
        assert _parse(_DLT_IPV6, other, -1, True) is None
        assert _parse(_DLT_EN10MB, b"\x02" * 12 + b"\x86\xdd" + other, -1, True) is None
        if first != 0x40:  # a version field that is neither 4 nor 6: no IP at all
            assert _parse(101, other, -1, True) is None
    assert _parse(_DLT_EN10MB, b"\x02" * 12 + b"\x08\x00" + _V6_IN_V4, -1, True) is None
    assert _parse(101, _V6_IN_V4, -1, True) == "fragment"  # read as the IPv6 packet it says it is


@settings(max_examples=2000, deadline=None)
@given(_IP_TCP, st.booleans(), st.integers(-1, 5000), st.binary(max_size=20), st.binary(max_size=20))
def test_segment_maker_is_the_general_parse(
    ip: bytes, keep_acks: bool, data_offset: int, before: bytes, after: bytes
) -> None:
    """iter_segments' record maker (the common case inline, reading the record inside the reader's
    block) makes what the general parser makes of the record's own bytes; the facts maker (the
    pipeline's, without copying the payload) hands on the same fields, the payload's length in place
    of its bytes."""
    from kcodec.capture.segments import (
        _DLT_EN10MB,
        Segment,
        _Fragment,
        _general_segment,
        _Seen,
        _segment_maker,
        segment_facts_maker,
    )

    ether = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip
    seen = _Seen()
    buf, start = before + ether + after, len(before)
    record = (3, 7, 1.5, _DLT_EN10MB, buf, start, start + len(ether), data_offset)
    made = _segment_maker("f", keep_acks, seen, Segment, True)(*record)
    try:
        general: Any = _general_segment(_DLT_EN10MB, ether, 1.5, "f", 3, 7, data_offset, keep_acks)
    except _Fragment:
        general = "fragment"
    assert (made if seen.fragments == 0 else "fragment") == general
    assert seen.last_ts == 1.5
    facts, fragments = segment_facts_maker("f", lambda *fields: fields, keep_acks)
    got = facts(*record)
    issue = fragments()
    if general == "fragment":
        assert got is None and issue is not None and issue.length == 1
    else:
        assert issue is None
        fields = dataclasses.fields(Segment)
        want = None if general is None else tuple(getattr(general, f.name) for f in fields)
        assert got == (None if want is None else (*want[:7], len(want[7]), *want[8:]))


def _segments_by_packets(source: object, keep_acks: bool) -> list[object]:
    """iter_segments the plain way: every RawPacket through segment_of (fragments counted apart)."""
    from kcodec.capture import CaptureIssue, RawPacket, iter_packets
    from kcodec.capture.segments import _Fragment, _general_segment

    out: list[object] = []
    fragments, last_ts = 0, 0.0
    for p in iter_packets(source, name="cap"):  # type: ignore[arg-type]
        if isinstance(p, CaptureIssue):
            out.append(p)
            continue
        assert isinstance(p, RawPacket)
        last_ts = p.timestamp
        try:
            seg = _general_segment(
                p.linktype, p.data, p.timestamp, "cap", p.index, p.offset, p.data_offset, keep_acks
            )
        except _Fragment:
            fragments += 1
            continue
        if seg is not None:
            out.append(seg)
    if fragments:
        out.append(("fragments", fragments, last_ts))
    return out


def _fused(source: object, keep_acks: bool) -> list[object]:
    from kcodec.capture import CaptureIssue, iter_segments

    out: list[object] = []
    for s in iter_segments(source, name="cap", keep_acks=keep_acks):  # type: ignore[arg-type]
        if isinstance(s, CaptureIssue) and "fragments" in s.message:
            out.append(("fragments", s.length, s.timestamp))
        else:
            out.append(s)
    return out


def test_iter_segments_is_packets_then_segments_on_the_sample_captures() -> None:
    import io
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    files = [root / "samples" / "sample.pcap", *sorted((root / "tests" / "captures").glob("*.pcap*"))]
    for path in files:
        data = path.read_bytes()
        for keep_acks in (False, True):
            assert _fused(io.BytesIO(data), keep_acks) == _segments_by_packets(io.BytesIO(data), keep_acks)


_PACKET = st.one_of(
    _IP_TCP.map(lambda ip: b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip),
    st.binary(max_size=70),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 10), _PACKET), max_size=12),
    st.sampled_from(["pcap", "pcapng"]),
    st.integers(0, 40),
    st.booleans(),
)
def test_iter_segments_is_packets_then_segments_on_built_and_damaged_files(
    packets: list[tuple[float, bytes]], kind: str, cut: int, keep_acks: bool
) -> None:
    """Built captures, whole and cut short (a record cut by the end of the file takes the reader's
    slow path): the fused reader gives what packets-then-segments gives."""
    import io

    from pcap_build import pcap, pcapng

    data = (pcap if kind == "pcap" else pcapng)([(1700000000 + t, p) for t, p in packets])
    for d in (data, data[: max(len(data) - cut, 0)]):
        if len(d) < 4:
            continue
        try:
            expected = _segments_by_packets(io.BytesIO(d), keep_acks)
        except Exception as e:  # the file header itself is cut: both raise the same
            import pytest

            with pytest.raises(type(e)):
                _fused(io.BytesIO(d), keep_acks)
            continue
        assert _fused(io.BytesIO(d), keep_acks) == expected


# --- framing: gathering a frame that spans segments without cutting at every segment ------------------


def _frames_stream(sizes: list[int], junk: bytes) -> bytes:
    out = b""
    for i, size in enumerate(sizes):
        body = (bytes([0, 3, 0, 1]) + i.to_bytes(4, "big") + b"\xff\xff" + bytes(range(256)) * 8)[:size]
        out += size.to_bytes(4, "big", signed=True) + body.ljust(size, b"\x07")
    return out + junk


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.one_of(st.integers(0, 40), st.integers(10, 3000)), max_size=8),
    st.binary(max_size=6),
    st.lists(st.integers(1, 1500), min_size=1, max_size=30),
    st.lists(st.tuples(st.integers(0, 30), st.integers(1, 50)), max_size=2),
    st.sampled_from(["request", "response"]),
    st.booleans(),
)
def test_framer_gathering_is_cutting_at_every_segment(
    sizes: list[int],
    junk: bytes,
    cuts: list[int],
    gaps: list[tuple[int, int]],
    direction: str,
    start_seen: bool,
) -> None:
    from kcodec.capture.framing import Framer, Pairing

    stream = _frames_stream(sizes, junk)
    pieces: list[tuple[int, bytes]] = []
    pos, k = 0, 0
    while pos < len(stream):
        n = cuts[k % len(cuts)]
        pieces.append((pos, stream[pos : pos + n]))
        pos, k = pos + n, k + 1
    gap_at = {i: length for i, length in gaps}

    def run(every_time: bool) -> list[object]:
        """``every_time``: without the gathering fast path, every segment goes through ``_cut`` (what
        the fast path waits for is forgotten after each segment; a subclass would do, but the compiled
        build's classes take none)."""
        seen: list[object] = []
        pairing = Pairing()
        for corr in range(len(sizes)):
            pairing.add(corr, 3, 1, 0.0)
        framer = Framer(
            direction,  # type: ignore[arg-type]
            seen.append,
            lambda *a: seen.append(a),
            pairing,
            max_size=2000,
            stream_start_seen=start_seen,
        )
        shift = 0
        for i, (offset, piece) in enumerate(pieces):
            if i in gap_at:
                framer.gap(offset + shift, gap_at[i], float(i), False)
                shift += gap_at[i]
            framer.data(offset + shift, piece, float(i))
            if every_time:
                framer._want = 0
        framer.finish()
        return [
            (x.offset, x.data, x.timestamp, x.size, str(x.error), x.framed) if hasattr(x, "framed") else x
            for x in seen
        ]

    assert run(False) == run(True)


# --- the table: a frame's row with the API column remembered per API and version ----------------------


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(-1, 80)),
            st.one_of(st.none(), st.integers(-1, 20)),
            st.sampled_from(["request", "response"]),
            st.one_of(st.none(), st.floats(0, 5, allow_nan=False)),
            st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
            st.one_of(st.none(), st.integers(0, 10**9)),
            st.integers(1, 100000),
            st.floats(0, 2e9, allow_nan=False),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_table_frame_row_is_the_head_and_parts(
    frames: list[tuple[int | None, int | None, str, float | None, int | None, int | None, int, float]],
) -> None:
    import io

    from kcodec.capture import CapturedFrame
    from kcodec.cli.capture_table import TableWriter

    out = io.StringIO()
    writer = TableWriter(out=out)
    expected: list[str] = []
    for key, version, direction, latency, corr, size, conn, ts in frames:
        f = CapturedFrame(ts, conn, "c:1", "s:2", direction, 0, size, b"", key, version, corr)  # type: ignore[arg-type]
        f.latency = latency
        parts = [("", "topic[0 @5]"), ("dim", "x 1")]
        writer.frame(f, parts, [])
        # the row as TableWriter wrote it before the API column was remembered
        name = f.api_name or (f"key {f.api_key}" if f.api_key is not None else "?")
        api = f"{name} v{f.api_version}" if f.api_version is not None else name
        if direction == "response" and latency is not None:
            parts = [*parts, ("dim", f"({latency * 1000:.1f} ms)")]
        head = writer._head(
            clock(ts), f"#{conn}", "->" if direction == "request" else "<-", api,
            "" if corr is None else str(corr), "?" if size is None else str(size),
        )
        expected.append((head + "  ".join([t for _, t in parts])).rstrip() + "\n")
    assert out.getvalue() == "".join(expected)


# --- frames: decoders resolved once per route against decode_at --------------------------------------


def _reference_frame(data: bytes, request: bool, key: int, version: int) -> object:
    """What decode_request / decode_response gave when they ran decode_at for header and body."""
    from kcodec.protocol.codec import decode_at
    from kcodec.protocol.errors import DecodeError, KcodecError, TrailingBytesError
    from kcodec.protocol.registry import api

    try:
        size = int.from_bytes(data[:4], "big", signed=True)
        if len(data) < 4 or size < 0 or 4 + size != len(data):
            return "framing"
        body = memoryview(data)[4:]
        if request:
            key = int.from_bytes(body[0:2], "big", signed=True)
            version = int.from_bytes(body[2:4], "big", signed=True)
        info = api(key)
        name = info.request if request else info.response
        hv = info.request_header_version(version) if request else info.response_header_version(version)
        header, pos = decode_at("RequestHeader" if request else "ResponseHeader", hv, body)
        obj, end = decode_at(name, version, body, pos)
        return (header, obj, end == len(body))
    except TrailingBytesError:
        return "trailing"
    except DecodeError as e:
        return (type(e).__name__, e.offset + 4, e.path)
    except KcodecError as e:
        return type(e).__name__


def _frame_outcome(data: bytes | bytearray | memoryview, request: bool, key: int, version: int) -> object:
    from kcodec.protocol.errors import DecodeError, KcodecError, TrailingBytesError
    from kcodec.protocol.frames import decode_request, decode_response

    size = int.from_bytes(data[:4], "big", signed=True)
    if len(data) < 4 or size < 0 or 4 + size != len(data):
        return "framing"
    try:
        f = decode_request(data, strict=False) if request else decode_response(data, key, version, strict=False)
        return (f.header, f.body, not f.diagnostics)
    except TrailingBytesError:
        return "trailing"
    except DecodeError as e:
        return (type(e).__name__, e.offset, e.path)
    except KcodecError as e:
        return type(e).__name__


@settings(max_examples=600, deadline=None)
@given(st.sampled_from([(0, 9), (1, 13), (1, 4), (3, 12), (8, 2), (12, 4), (18, 3)]), st.booleans(),
       st.binary(max_size=120), st.integers(0, 2**31 - 1))
def test_frames_decode_as_decode_at_does(route: tuple[int, int], request: bool, rest: bytes, corr: int) -> None:
    key, version = route
    head = key.to_bytes(2, "big") + version.to_bytes(2, "big") if request else b""
    payload = head + corr.to_bytes(4, "big") + rest
    data = len(payload).to_bytes(4, "big") + payload
    expected = _reference_frame(data, request, key, version)
    assert _frame_outcome(data, request, key, version) == expected
    # the frame is read where it lies, whatever holds it: the same outcome, offsets counted alike
    for held in (bytearray(data), memoryview(data), memoryview(b"xx" + data)[2:]):
        assert _frame_outcome(held, request, key, version) == expected
