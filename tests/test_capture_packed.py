"""kcodec.capture.packed: the pipeline's stage-1 packer reads each packet as the general parser does."""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_capture_speedups import _IP_TCP

from kcodec.capture.packed import PACKED_FIELDS, PACKED_SIZE, SegmentPacker

_CODES = {"u1": "B", "u4": "I", "i4": "i", "i8": "q", "f8": "d"}


def _unpacked(packed: bytes) -> list[dict[str, Any]]:
    """The packed segments as rows, read field by field as ``PACKED_FIELDS`` (the NumPy dtype the
    pipeline reads them with) describes them: byte order, kind and width."""
    formats = []
    for name, t in PACKED_FIELDS:  # (">u4": big-endian; "<f8", or "u1" with no order: little-endian)
        formats.append((name, struct.Struct((">" if t[0] == ">" else "<") + _CODES[t.lstrip("<>")])))
    assert sum(f.size for _, f in formats) == PACKED_SIZE
    rows = []
    for start in range(0, len(packed), PACKED_SIZE):
        row, pos = {}, start
        for name, f in formats:
            row[name] = f.unpack_from(packed, pos)[0]
            pos += f.size
        rows.append(row)
    return rows


@settings(max_examples=2000, deadline=None)
@given(_IP_TCP, st.integers(-1, 5000), st.binary(max_size=20), st.binary(max_size=20), st.booleans())
def test_the_packers_inline_read_is_the_general_parse(
    ip: bytes, data_offset: int, before: bytes, after: bytes, ethernet: bool
) -> None:
    """A packet read inline (Ethernet, IPv4 without options, TCP) or by the general parser (any
    other, here raw IP) packs the fields of the segment the general parser makes of its bytes; pure
    ACKs and what is not TCP pack nothing, fragments are counted."""
    from kcodec.capture.segments import _DLT_EN10MB, _Fragment, _general_segment

    linktype, frame = (_DLT_EN10MB, b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip) if ethernet else (101, ip)
    buf, start = before + frame + after, len(before)
    packer = SegmentPacker("f", 1)  # every segment handed on at once
    got = packer.make(3, 7, 1.5, linktype, buf, start, start + len(frame), data_offset)
    try:
        general: Any = _general_segment(linktype, frame, 1.5, "f", 3, 7, data_offset, False)
    except _Fragment:
        general = "fragment"
    issue = packer.issue()
    assert list(packer.rest()) == []
    if general == "fragment":
        assert got is None and issue is not None and issue.length == 1
        return
    assert issue is None
    if general is None:
        assert got is None
        return
    assert got is not None
    key, first, packed = got
    assert (key, first, len(packed)) == (general.key, 7, PACKED_SIZE)
    assert _unpacked(packed) == [
        {
            "seq": general.seq,
            "ack": general.ack,
            "forward": int(general.key.startswith(general.src + " ")),
            "flags": general.flags,
            "timestamp": 1.5,
            "offset": 7,
            "payload_offset": general.payload_offset,
            "payload_length": len(general.payload),
        }
    ]


def test_a_keys_segments_are_handed_on_in_chunks_both_directions_together() -> None:
    """Both directions of a connection share one key's bytes, in packet order; a chunk is handed on
    when full, with the record offset of its first segment, and the rest at the end."""

    def packet(src: bytes, dst: bytes, sport: int, dport: int, seq: int, data: bytes) -> bytes:
        tcp = sport.to_bytes(2, "big") + dport.to_bytes(2, "big") + seq.to_bytes(4, "big")
        tcp += b"\0\0\0\0" + bytes([0x50, 0x18]) + b"\xff\xff\0\0\0\0"
        ip = bytes([0x45, 0]) + (40 + len(data)).to_bytes(2, "big") + b"\0\0\x40\0" + bytes([64, 6, 0, 0])
        return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + src + dst + tcp + data

    a, b = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    frames = [
        packet(a, b, 5000, 9092, 1, b"x"),
        packet(b, a, 9092, 5000, 7, b"yy"),
        packet(a, b, 5000, 9092, 2, b"z"),
    ]
    packer = SegmentPacker("f", 2)
    made = [packer.make(i, 100 * i, float(i), 1, f, 0, len(f), 100 * i + 16) for i, f in enumerate(frames)]
    assert made[0] is None and made[2] is None
    assert made[1] is not None
    key, first, packed = made[1]
    assert (key, first) == ("10.0.0.1:5000 10.0.0.2:9092", 0)
    rows = _unpacked(packed)
    assert [(r["forward"], r["seq"], r["payload_offset"], r["payload_length"]) for r in rows] == [
        (1, 1, 16 + 54, 1),
        (0, 7, 116 + 54, 2),
    ]
    rest = list(packer.rest())
    assert [(k, f, [r["seq"] for r in _unpacked(p)]) for k, f, p in rest] == [(key, 200, [2])]
