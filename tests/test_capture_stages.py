"""The capture stages one by one (kcodec.capture): packet reading (damage, cuts, byte ranges),
segments as rows, reassembly, the sans-I/O connection decoder, port reuse."""

from __future__ import annotations

import dataclasses
import io
import pickle
import struct
from typing import Any

import pytest
from pcap_build import ACK, FIN, PSH, SYN, Conversation, pcap, pcap_header, pcap_record, pcapng, tcp_packet

import kcodec
from kcodec.capture import (
    SEGMENT_SCHEMA,
    CaptureDecoder,
    CapturedFrame,
    CaptureFileError,
    CaptureIssue,
    ConnectionDecoder,
    HalfStream,
    RawPacket,
    Segment,
    iter_capture,
    iter_packets,
    iter_segments,
)

C, S = ("10.1.0.1", 40100), ("10.1.0.2", 9092)


def _metadata(corr: int, topic: str) -> tuple[bytes, bytes]:
    req_cls: Any = kcodec.message_class("MetadataRequest")
    resp_cls: Any = kcodec.message_class("MetadataResponse")
    req = req_cls(topics=[req_cls.MetadataRequestTopic(name=topic)])
    broker = resp_cls.MetadataResponseBroker(node_id=1, host="b1", port=9092)
    resp = resp_cls(brokers=[broker], cluster_id="c", topics=[resp_cls.MetadataResponseTopic(name=topic)])
    return (
        kcodec.encode_request(req, 12, correlation_id=corr),
        kcodec.encode_response(resp, 12, correlation_id=corr),
    )


def _conversation(n: int = 20, mss: int = 1460, port: int = 40100) -> Conversation:
    conv = Conversation(("10.1.0.1", port), S, mss=mss).open()
    for i in range(n):
        req, resp = _metadata(i + 1, f"topic-{i}")
        conv.request(req)
        conv.response(resp)
    conv.close()
    return conv


def _frames(events: list[Any]) -> list[CapturedFrame]:
    return [e for e in events if isinstance(e, CapturedFrame)]


def _issues(events: list[Any], kind: str | None = None) -> list[CaptureIssue]:
    return [e for e in events if isinstance(e, CaptureIssue) and (kind is None or e.kind == kind)]


def _record_offsets(data: bytes) -> list[int]:
    out, pos = [], 24
    while pos + 16 <= len(data):
        out.append(pos)
        pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
    return out


# --- packets ---------------------------------------------------------------------------------------


def test_corrupt_record_length_is_reported_and_the_reader_resyncs() -> None:
    data = bytearray(pcap(_conversation().packets))
    offsets = _record_offsets(bytes(data))
    bad = offsets[30]
    struct.pack_into("<I", data, bad + 8, 16 * 1024 * 1024)  # incl_len = 16 MB
    events = list(iter_capture(io.BytesIO(bytes(data))))
    (damage,) = _issues(events, "capture-file")
    assert "absurd record length 16777216" in damage.message and damage.file_offset == bad
    assert damage.length is not None and bad + damage.length == offsets[31]  # resynchronised on the next
    packets = [p for p in iter_packets(io.BytesIO(bytes(data))) if isinstance(p, RawPacket)]
    assert len(packets) == len(offsets) - 1
    frames = _frames(events)
    assert sum(f.ok for f in frames) >= 38 and frames[-1].ok  # nothing after the damage is lost
    assert _issues(events, "gap")  # the skipped packet's bytes are a reported gap, not silence


def test_bad_timestamp_is_reported() -> None:
    data = bytearray(pcap(_conversation(5).packets))
    bad = _record_offsets(bytes(data))[7]
    struct.pack_into("<I", data, bad, 0x7FFFFFF0)  # year 2038 among 2023 packets
    events = list(iter_packets(io.BytesIO(bytes(data))))
    (damage,) = _issues(events, "capture-file")
    assert "bad timestamp" in damage.message and damage.file_offset == bad
    struct.pack_into("<I", data, bad, 1_700_000_000)
    struct.pack_into("<I", data, bad + 4, 2_000_000)  # microseconds out of range
    (damage,) = _issues(list(iter_packets(io.BytesIO(bytes(data)))), "capture-file")
    assert "bad timestamp fraction" in damage.message


def test_a_whole_second_in_the_fraction_is_the_next_second() -> None:
    """dpkt's pcap writer (and others) can round microseconds up to 1,000,000: tshark reads such a
    record; so does kcodec, as the next second, with a diagnostic, losing nothing."""
    data = bytearray(pcap(_conversation(5).packets))
    offsets = _record_offsets(bytes(data))
    whole = offsets[7]
    sec = struct.unpack_from("<I", data, whole)[0]
    struct.pack_into("<I", data, whole + 4, 1_000_000)
    events = list(iter_packets(io.BytesIO(bytes(data))))
    packets = [e for e in events if isinstance(e, RawPacket)]
    assert len(packets) == len(offsets)  # every record
    assert packets[7].timestamp == sec + 1
    (note,) = _issues(events, "capture-file")
    assert "timestamp fraction 1000000 (a whole second) read as the next second" in note.message
    assert note.file_offset == whole
    struct.pack_into("<I", data, whole + 4, 1_000_001)
    (damage,) = _issues(list(iter_packets(io.BytesIO(bytes(data)))), "capture-file")
    assert "bad timestamp fraction 1000001" in damage.message


def _record_size(fmt: str, p: RawPacket) -> int:
    return 16 + len(p.data) if fmt == "pcap" else 32 + len(p.data) + (-len(p.data) % 4)


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_a_file_cut_anywhere_is_reported(fmt: str) -> None:
    conv = Conversation(C, S).open()
    req, resp = _metadata(1, "t")
    conv.request(req)
    conv.response(resp)
    whole = (pcap if fmt == "pcap" else pcapng)(conv.packets)
    full = [p for p in iter_packets(io.BytesIO(whole)) if isinstance(p, RawPacket)]
    header = 24 if fmt == "pcap" else 28 + 20
    for cut in range(len(whole)):
        data = whole[:cut]
        try:
            items = list(iter_packets(io.BytesIO(data)))
        except CaptureFileError:
            assert cut < header
            continue
        packets = [p for p in items if isinstance(p, RawPacket)]
        issues = [i for i in items if isinstance(i, CaptureIssue)]
        whole_records = [p for p in full if p.offset + _record_size(fmt, p) <= cut]
        at_boundary = cut in {p.offset for p in full} or cut in (header, 28 if fmt == "pcapng" else 24)
        assert [p.offset for p in packets[: len(whole_records)]] == [p.offset for p in whole_records]
        if at_boundary:
            assert not issues, (cut, issues)
        else:
            assert len(issues) == 1 and "file ends inside" in issues[0].message, (cut, items)


class _Pipe(io.RawIOBase):
    """A non-seekable stream of ``data`` given in pieces of at most ``piece`` bytes (as a pipe)."""

    def __init__(self, data: bytes, piece: int) -> None:
        self.data, self.at, self.piece = data, 0, piece

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = min(len(b), self.piece, len(self.data) - self.at)
        b[:n] = self.data[self.at : self.at + n]
        self.at += n
        return n


def _damaged(fmt: str) -> bytes:
    """A capture with a damaged record header in the middle and a cut last record."""
    data = bytearray((pcap if fmt == "pcap" else pcapng)(_conversation(6).packets))
    if fmt == "pcap":
        struct.pack_into("<I", data, _record_offsets(bytes(data))[9] + 8, 16 * 1024 * 1024)
    else:
        data[len(data) // 2 : len(data) // 2 + 8] = b"\xff" * 8
    return bytes(data[:-7])


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
@pytest.mark.parametrize("block", [61, 1000, 1 << 20])
def test_a_seekable_file_and_a_pipe_read_alike(fmt: str, block: int, monkeypatch: Any) -> None:
    """A seekable file is read a block at a time from the first byte still needed (read again), a
    pipe by adding each block to those bytes: the same records and issues, whatever the block size."""
    from kcodec.capture import packets

    data = _damaged(fmt)
    monkeypatch.setattr(packets, "_BLOCK", block)

    def records(source: Any) -> list[tuple[Any, ...]]:
        return [
            (p.offset, p.timestamp, p.data) if isinstance(p, RawPacket) else (p.message, p.file_offset)
            for p in iter_packets(source)
        ]

    class Counted(io.BytesIO):
        reads = 0

        def read(self, n: int | None = -1) -> bytes:
            Counted.reads += 1
            return super().read(n)

    from_file = records(Counted(data))
    assert any(isinstance(r[0], str) for r in from_file) and len(from_file) > 15
    assert Counted.reads <= 3 * len(data) // block + 10  # (a block more per read, to the cut end too)
    assert records(io.BufferedReader(_Pipe(data, 4093))) == from_file
    assert records(io.BufferedReader(_Pipe(data, 13))) == from_file
    cut = pcap_header() + pcap_record(1.0, b"\x00" * 5000)[:2500]  # a long last record, cut
    Counted.reads = 0
    assert records(io.BufferedReader(_Pipe(cut, 97))) == records(Counted(cut))
    assert Counted.reads <= 3 * len(cut) // block + 10
    shifted = io.BytesIO(b"x" * 5 + data)  # a file object whose capture starts at its position 5
    shifted.seek(5)
    assert records(shifted) == from_file


def test_not_a_capture_and_empty_file() -> None:
    with pytest.raises(CaptureFileError, match="not a pcap"):
        list(iter_packets(io.BytesIO(b"GET / HTTP/1.1\r\n")))
    with pytest.raises(CaptureFileError, match="empty"):
        list(iter_packets(io.BytesIO(b"")))
    with pytest.raises(CaptureFileError, match="cannot open"):
        list(iter_packets("/nonexistent/file.pcap"))


def test_pcapng_damaged_block_resyncs() -> None:
    conv = _conversation(5)
    data = bytearray(pcapng(conv.packets))
    # the 10th enhanced packet block: break its length field
    pos, n = 0, 0
    while True:
        btype, blen = struct.unpack_from("<II", data, pos)
        if btype == 6:
            n += 1
            if n == 10:
                break
        pos += blen
    struct.pack_into("<I", data, pos + 4, 0x7FFFFFF0)
    items = list(iter_packets(io.BytesIO(bytes(data))))
    (damage,) = [i for i in items if isinstance(i, CaptureIssue)]
    assert "absurd block length" in damage.message and damage.file_offset == pos
    assert len([p for p in items if isinstance(p, RawPacket)]) == len(conv.packets) - 1


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_byte_ranges_read_every_record_exactly_once(fmt: str) -> None:
    conv = _conversation(30, mss=700)
    whole = (pcap if fmt == "pcap" else pcapng)(conv.packets)
    full = [(p.offset, p.data) for p in iter_packets(io.BytesIO(whole)) if isinstance(p, RawPacket)]
    for parts in (2, 3, 7, 13):
        bounds = [0, *(len(whole) * k // parts + k * 3 for k in range(1, parts)), len(whole)]
        got: list[tuple[int, bytes]] = []
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            items = list(iter_packets(io.BytesIO(whole), start=lo, end=hi))
            assert not [i for i in items if isinstance(i, CaptureIssue)]
            got += [(p.offset, p.data) for p in items if isinstance(p, RawPacket)]
        assert got == full, parts


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_byte_ranges_give_a_record_maker_every_record_exactly_once(fmt: str) -> None:
    """The same through ``iter_records``: the pcap reader hands ``make`` its block and the record's
    place in it (no copy), a path the byte ranges cut as well; every fourth record is turned down."""
    from kcodec.capture.packets import iter_records

    conv = _conversation(30, mss=700)
    whole = (pcap if fmt == "pcap" else pcapng)(conv.packets)

    def make(index: int, offset: int, ts: float, link: int, buf: bytes, lo: int, hi: int, at: int) -> Any:
        assert at == -1 or whole[at : at + hi - lo] == buf[lo:hi]  # (the data's offset in the file)
        return None if offset // 4 % 4 == 0 else (offset, ts, bytes(buf[lo:hi]))

    full = [
        (p.offset, p.timestamp, p.data)
        for p in iter_packets(io.BytesIO(whole))
        if isinstance(p, RawPacket) and p.offset // 4 % 4
    ]
    assert len(full) > 20
    for parts in (1, 2, 3, 7, 13):
        bounds = [0, *(len(whole) * k // parts + k * 3 for k in range(1, parts)), len(whole)]
        got: list[Any] = []
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            items = list(iter_records(io.BytesIO(whole), make, start=lo, end=hi))
            assert not [i for i in items if isinstance(i, CaptureIssue)]
            got += items
        assert got == full, parts


def test_segments_are_rows() -> None:
    segs = [s for s in iter_segments(io.BytesIO(pcap(_conversation(2).packets))) if isinstance(s, Segment)]
    assert [name for name, _ in SEGMENT_SCHEMA] == [f.name for f in dataclasses.fields(Segment)]
    kinds = {"string": str, "long": int, "double": float, "binary": bytes}
    for seg in segs:
        row = dataclasses.asdict(seg)
        assert all(isinstance(row[name], kinds[t]) for name, t in SEGMENT_SCHEMA)
        assert Segment(**row) == seg == pickle.loads(pickle.dumps(seg))
    assert {s.key for s in segs} == {"10.1.0.1:40100 10.1.0.2:9092"}
    assert not any(not s.payload and s.flags == ACK for s in segs)  # pure ACKs are dropped


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_payload_offset_locates_the_payload_in_the_file(fmt: str) -> None:
    """A job can ship a segment's position instead of its bytes and read them back from the file."""
    whole = (pcap if fmt == "pcap" else pcapng)(_conversation(20, mss=700).packets)
    segs = [s for s in iter_segments(io.BytesIO(whole)) if isinstance(s, Segment)]
    assert sum(1 for s in segs if s.payload) > 20
    for s in segs:
        if s.payload:
            assert whole[s.payload_offset : s.payload_offset + len(s.payload)] == s.payload
        else:
            assert s.payload_offset == -1
    mid = len(whole) // 2  # a byte range read apart gives the same positions
    split = [s for s in iter_segments(io.BytesIO(whole), start=mid) if isinstance(s, Segment)]
    assert split and [s.payload_offset for s in split] == [s.payload_offset for s in segs[-len(split) :]]


# --- reassembly ----------------------------------------------------------------------------------------


class Sink:
    """Collects what a HalfStream passes on: the bytes, and the gaps."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.events: list[tuple[Any, ...]] = []
        self.missing = 0

    def data(self, offset: int, data: bytes, ts: float) -> None:
        assert offset == len(self.buf) + self.missing
        self.buf += data

    def suspect(self) -> None:
        pass

    def gap(self, offset: int, length: int, ts: float, forced: bool) -> None:
        self.events.append(("gap", offset, length, forced))
        self.missing += length


def _half(**kw: Any) -> tuple[HalfStream, Sink]:
    sink = Sink()
    return HalfStream(sink, **kw), sink


PAYLOAD = bytes(range(256)) * 8


@pytest.mark.parametrize("isn", [1000, 0xFFFFFFFF - 700])  # the second one wraps mid-stream
def test_reassembly_reorder_duplicates_overlaps_and_wrap(isn: int) -> None:
    half, sink = _half()
    half.add(isn, b"", 1.0, syn=True)
    pieces = [(isn + 1 + i, PAYLOAD[i : i + 100]) for i in range(0, len(PAYLOAD), 100)]
    order = [0, 2, 1, 1, 4, 3, *range(5, len(pieces))]
    for k in order:
        half.add(pieces[k][0] & 0xFFFFFFFF, pieces[k][1], 1.0)
    half.add((isn + 1 + 250) & 0xFFFFFFFF, PAYLOAD[250:420], 1.0)  # overlaps what is there
    half.finish()
    assert bytes(sink.buf) == PAYLOAD and not sink.events
    assert half.retransmits == 2 and half.overlaps == 0


def test_reassembly_gap_at_finish_and_forced_by_the_bound() -> None:
    half, sink = _half(max_segments=3)
    half.add(5000, b"", 1.0, syn=True)
    half.add(5001, PAYLOAD[:100], 1.0)
    for i in range(200, 700, 100):  # bytes 100..199 never come
        half.add(5001 + i, PAYLOAD[i : i + 100], 1.0)
    assert sink.events == [("gap", 100, 100, True)]  # 4 segments waiting > 3: given up on
    assert bytes(sink.buf) == PAYLOAD[:100] + PAYLOAD[200:700]
    half.add(5001 + 800, PAYLOAD[800:900], 1.0)
    half.finish()
    assert sink.events[-1] == ("gap", 700, 100, False)


def test_reassembly_ack_ends_the_wait_for_bytes_never_captured() -> None:
    half, sink = _half()
    half.add(5000, b"", 1.0, syn=True)
    half.add(5001, PAYLOAD[:100], 1.0)
    half.add(5201, PAYLOAD[200:300], 1.0)
    assert not sink.events
    half.ack(5301)  # the receiver got everything: 100..199 were sent, not captured
    assert sink.events == [("gap", 100, 100, False)]
    assert bytes(sink.buf) == PAYLOAD[:100] + PAYLOAD[200:300]


def test_reassembly_mid_stream_start_with_reordered_first_segments() -> None:
    half, sink = _half()
    half.add(7100, PAYLOAD[100:200], 1.0)  # no SYN; the first segment seen is not the first sent
    half.add(7000, PAYLOAD[0:100], 1.0)
    half.add(7200, PAYLOAD[200:300], 1.0)
    half.finish()
    assert bytes(sink.buf) == PAYLOAD[:300] and not sink.events


# --- the connection decoder ----------------------------------------------------------------------------


def test_feed_bytes_in_any_pieces_gives_the_same_frames() -> None:
    pairs = [_metadata(i, f"t{i}") for i in range(1, 6)]
    requests = b"".join(r for r, _ in pairs)
    responses = b"".join(p for _, p in pairs)

    def run(step: int) -> list[tuple[Any, ...]]:
        dec = ConnectionDecoder(1, client="c:1", server="s:9092")
        events: list[Any] = []
        for i in range(0, max(len(requests), len(responses)), step):
            events += dec.feed_bytes("request", requests[i : i + step], 1.0 + i)
            events += dec.feed_bytes("response", responses[i : i + step], 1.5 + i)
        events += dec.finish()
        frames = [(f.direction, f.correlation_id, f.ok, f.to_dict()["body"]) for f in _frames(events)]
        return sorted(frames, key=lambda f: (f[0], f[1]))

    whole = run(1 << 20)
    assert len(whole) == 10 and all(ok for _, _, ok, _ in whole)
    assert run(1) == whole and run(7) == whole


def test_port_reuse_starts_a_new_connection() -> None:
    first = _conversation(2)
    second = Conversation(C, S, t=first.t + 1, cseq=777777, sseq=5555).open()
    req, resp = _metadata(9, "again")
    second.request(req)
    second.response(resp)
    events = list(iter_capture(io.BytesIO(pcap(first.packets + second.packets))))
    frames = _frames(events)
    assert [f.connection for f in frames] == [1, 1, 1, 1, 2, 2] and all(f.ok for f in frames)
    assert not _issues(events)


def test_a_stray_syn_inside_a_connection_loses_nothing() -> None:
    """A payload-less SYN with another sequence number in the middle of an open connection (a stray
    or corrupt segment): kcodec started a new connection there and lost the rest of the old one's
    frames; tshark keeps them all. It is an anomaly, reported, and every frame is kept."""
    conv = _conversation(10)
    middle = len(conv.packets) // 2
    t = conv.packets[middle][0]
    for src, dst in ((C, S), (S, C)):
        stray = (t, tcp_packet(src, dst, 123456, 0, SYN))
        packets = [*conv.packets[:middle], stray, *conv.packets[middle:]]
        events = list(iter_capture(io.BytesIO(pcap(packets))))
        frames = _frames(events)
        assert len(frames) == 20 and all(f.ok and f.connection == 1 for f in frames)
        (anomaly,) = _issues(events, "anomaly")
        assert "SYN" in anomaly.message and "123456" in anomaly.message and anomaly.connection == 1
        assert not [i for i in _issues(events) if i.kind != "anomaly"]


def _damaged_conversation(index: int, at: int, mask: int, n: int = 10) -> list[Any]:
    """The events of a ``n``-exchange conversation whose packet ``index`` has byte ``at`` of its TCP
    header XORed with ``mask``."""
    conv = _conversation(n)
    t, raw = conv.packets[index]
    data = bytearray(raw)
    data[14 + 20 + at] ^= mask  # Ethernet, IPv4 without options, then the TCP header
    packets = [*conv.packets[:index], (t, bytes(data)), *conv.packets[index + 1 :]]
    return list(iter_capture(io.BytesIO(pcap(packets))))


@pytest.mark.parametrize("shift", [7, 19, 33, -19])
def test_a_shifted_sequence_number_costs_only_its_own_frame(shift: int) -> None:
    """A response segment whose sequence number is off by a few bytes: its bytes overlap the next
    segment's, which then lands inside a frame. kcodec resynced onto a fake frame there ("size
    28416") that swallowed every later response; now the frame after an overlap or a gap is checked
    against the pairing, and a resync candidate whose frame would reach past the bytes at hand waits
    for a candidate that is followed by another plausible frame."""
    conv = _conversation(10)
    responses = [i for i, (_, raw) in enumerate(conv.packets) if raw[26:30] == bytes([10, 1, 0, 2])]
    responses = [i for i in responses if len(conv.packets[i][1]) > 54]  # with a payload
    for which in (3, 7):
        i = responses[which]
        t, raw = conv.packets[i]
        data = bytearray(raw)
        seq = struct.unpack_from(">I", data, 38)[0]  # Ethernet 14 + IPv4 20 + ports 4
        struct.pack_into(">I", data, 38, (seq + shift) & 0xFFFFFFFF)
        packets = [*conv.packets[:i], (t, bytes(data)), *conv.packets[i + 1 :]]
        events = list(iter_capture(io.BytesIO(pcap(packets))))
        frames = _frames(events)
        assert len(frames) == 19 and all(f.ok for f in frames), (shift, which)  # the shifted one lost
        assert _issues(events, "resync")


def test_one_damaged_tcp_header_byte_costs_at_most_two_exchanges() -> None:
    """300 damages (seeded: the same every run) of one byte of one packet's TCP header (ports,
    sequence and acknowledgement numbers, data offset, flags, window, checksum, urgent pointer) in
    a 10-exchange conversation: at most 4 of its 20 frames are lost (the damaged segment's frame and
    its answer, or, for a sequence number moved by up to 255 bytes, the frames its bytes land on)."""
    import random

    rng = random.Random(2026)
    packets = len(_conversation(10).packets)
    worst = 0
    for _ in range(300):
        index, at, mask = rng.randrange(packets), rng.randrange(20), rng.randrange(1, 256)
        lost = 20 - sum(f.ok for f in _frames(_damaged_conversation(index, at, mask)))
        assert lost <= 4, (index, at, mask, lost)
        worst = max(worst, lost)
    assert worst >= 2  # the damage does reach the decoding


def test_port_reuse_without_a_captured_close_starts_a_new_connection() -> None:
    """The first connection's close was not captured: a SYN with another sequence number, answered by
    the peer's SYN-ACK, opens a new connection on the 4-tuple."""
    first = _conversation(2)
    del first.packets[-3:]  # the FINs and their ACKs
    second = Conversation(C, S, t=first.t + 1, cseq=777777, sseq=5555).open()
    req, resp = _metadata(9, "again")
    second.request(req)
    second.response(resp)
    events = list(iter_capture(io.BytesIO(pcap(first.packets + second.packets))))
    frames = _frames(events)
    assert [f.connection for f in frames] == [1, 1, 1, 1, 2, 2] and all(f.ok for f in frames)
    assert not _issues(events, "anomaly")


def test_decoder_on_the_segments_of_one_connection_as_a_distributed_job_would() -> None:
    convs = [_conversation(3, port=40200 + i) for i in range(3)]
    packets = sorted((p for c in convs for p in c.packets), key=lambda p: p[0])
    rows = [dataclasses.asdict(s) for s in iter_segments(io.BytesIO(pcap(packets))) if isinstance(s, Segment)]
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["key"], []).append(row)
    got = []
    for n, key in enumerate(sorted(groups), start=1):
        dec = CaptureDecoder(first_number=n)
        events = [
            e for row in sorted(groups[key], key=lambda r: r["offset"]) for e in dec.feed(Segment(**row))
        ]
        got += [(f.connection, f.direction, f.correlation_id, f.ok) for f in _frames(events + dec.finish())]
    whole = list(iter_capture(io.BytesIO(pcap(packets))))
    assert sorted(got) == sorted((f.connection, f.direction, f.correlation_id, f.ok) for f in _frames(whole))


def test_a_stream_whose_start_was_not_captured_resyncs_on_the_first_request() -> None:
    conv = _conversation(4, mss=40)
    # drop the handshake and the first 3 data packets: the capture starts inside request 1
    packets = [p for p in conv.packets[3:] if len(p[1]) > 54][3:]
    events = list(iter_capture(io.BytesIO(pcap(packets))))
    frames = _frames(events)
    ok = [(f.direction, f.correlation_id) for f in frames if f.ok]
    assert ("request", 2) in ok and ("response", 2) in ok and ("response", 4) in ok
    assert _issues(events, "resync")


def test_acks_zero_produce_requests_wait_for_no_response() -> None:
    produce: Any = kcodec.message_class("ProduceRequest")
    dec = ConnectionDecoder(1, client="c:1", server="s:9092")
    for corr in range(100):
        dec.feed_bytes(
            "request", kcodec.encode_request(produce(acks=0, timeout_ms=1), 9, correlation_id=corr), 1.0
        )
    assert dec.pairing.count == 0


def test_unknown_flags_and_tcp_syn_with_data() -> None:
    """A SYN carrying data (TCP Fast Open): the data follows the SYN's sequence number."""
    req, resp = _metadata(1, "tfo")
    pkts = [
        (1.0, tcp_packet(C, S, 100, 0, SYN, req)),
        (1.1, tcp_packet(S, C, 900, 101 + len(req), SYN | ACK)),
        (1.2, tcp_packet(S, C, 901, 101 + len(req), ACK | PSH, resp)),
        (1.3, tcp_packet(C, S, 101 + len(req), 901 + len(resp), FIN | ACK)),
    ]
    frames = _frames(list(iter_capture(io.BytesIO(pcap(pkts)))))
    assert [(f.direction, f.ok) for f in frames] == [("request", True), ("response", True)]


def test_stdin_and_file_objects(tmp_path: Any) -> None:
    data = pcap(_conversation(2).packets)
    assert len(_frames(list(iter_capture(io.BytesIO(data))))) == 4
    assert pcap_header()[:4] == data[:4]
