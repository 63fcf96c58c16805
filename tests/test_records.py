"""kcodec.records: record batches (magic 2) and message sets (magic 0/1), all codecs, builder.

Golden batches come from Kafka's MemoryRecordsBuilder (tests/golden/record_batches.jsonl.gz).
"""

from __future__ import annotations

import base64
import os
import struct
import zlib
from typing import Any

import cramjam
import crc32c
import golden_data
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcodec.protocol.errors import DecodeError, EncodeError
from kcodec.records import (
    Compression,
    ControlType,
    CorruptRecordError,
    CrcMismatchError,
    DecompressedSizeError,
    DecompressionError,
    LegacyBatch,
    NewRecord,
    Record,
    RecordBatch,
    TimestampType,
    UnsupportedCompressionError,
    build_batch,
    build_control_batch,
    iter_batches,
    lz4frame,
    parse_control_record,
)
from kcodec.records import compression as comp
from kcodec.records.varint import read_varint, read_varlong, varint_size, write_varint, write_varlong

CASES = golden_data.record_batch_cases()
CODECS = list(Compression)
LEGACY_CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]


def _b64(value: str | None) -> bytes | None:
    return None if value is None else base64.b64decode(value)


def _expected(case: dict[str, Any]) -> list[Record]:
    bi = case["builder_input"]
    out = []
    for i, r in enumerate(bi["records"]):
        headers = [(h["key"], _b64(h["value"])) for h in r.get("headers", [])]
        ts = r["timestamp"] if bi["magic"] > 0 else -1
        out.append(Record(bi["baseOffset"] + i, ts, _b64(r.get("key")), _b64(r.get("value")), headers))
    return out


def _decode_all(data: bytes | memoryview, **kw: Any) -> list[Record]:
    return [r for b in iter_batches(data, **kw) for r in b.records()]


def _rewrap_v2(batch: bytes, body: bytes | None = None, *, attributes: int | None = None) -> bytes:
    """A magic 2 batch with its records section and/or attributes replaced; length and CRC fixed."""
    head = bytearray(batch[:61])
    if body is None:
        body = batch[61:]
    if attributes is not None:
        head[21:23] = struct.pack(">h", attributes)
    head[8:12] = struct.pack(">i", 49 + len(body))
    head[17:21] = struct.pack(">I", crc32c.crc32c(bytes(head[21:]) + body))
    return bytes(head) + body


def _golden_id(case: dict[str, Any]) -> str:
    return golden_data.case_id(case)


# --- golden --------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=_golden_id)
def test_golden_decodes_to_builder_input(case: dict[str, Any]) -> None:
    bi = case["builder_input"]
    data = bytes.fromhex(case["hex"])
    batches = iter_batches(data)
    listed = list(batches)
    assert batches.truncated_bytes == 0 and batches.truncated_at is None
    assert sum(b.size for b in listed) == len(data)
    for b in listed:
        assert b.magic == bi["magic"]
        assert b.compression == bi["compression"]
        assert not b.is_control
        if b.magic == 2:
            assert isinstance(b, RecordBatch)
            assert b.base_offset == bi["baseOffset"]
            assert b.producer_id == bi.get("producerId", -1)
            assert b.producer_epoch == bi.get("producerEpoch", -1)
            assert b.base_sequence == bi.get("baseSequence", -1)
            assert b.is_transactional == bi.get("isTransactional", False)
            assert b.partition_leader_epoch == bi.get("partitionLeaderEpoch", -1)
            assert b.timestamp_type is TimestampType.CREATE_TIME
            assert b.last_offset_delta == len(bi["records"]) - 1
            assert b.base_timestamp == bi["records"][0]["timestamp"]
            assert b.max_timestamp == max(r["timestamp"] for r in bi["records"])
            assert b.crc == crc32c.crc32c(data[21 : b.size])
        else:
            assert isinstance(b, LegacyBatch)
            assert b.producer_id == -1 and b.partition_leader_epoch == -1
            expected_type = TimestampType.NO_TIMESTAMP_TYPE if b.magic == 0 else TimestampType.CREATE_TIME
            assert b.timestamp_type is expected_type
    assert _decode_all(data) == _expected(case)
    assert _decode_all(memoryview(b"xx" + data)[2:]) == _expected(case)  # zero-copy slices work


def _build_like(case: dict[str, Any], compression: str) -> bytes:
    bi = case["builder_input"]
    recs = [
        NewRecord(r.value, key=r.key, headers=r.headers, timestamp=ts["timestamp"])
        for r, ts in zip(_expected(case), bi["records"], strict=True)
    ]
    return build_batch(
        recs,
        magic=bi["magic"],
        compression=compression,
        base_offset=bi["baseOffset"],
        producer_id=bi.get("producerId", -1),
        producer_epoch=bi.get("producerEpoch", -1),
        base_sequence=bi.get("baseSequence", -1),
        transactional=bi.get("isTransactional", False),
        partition_leader_epoch=bi.get("partitionLeaderEpoch", -1),
    )


@pytest.mark.parametrize("case", CASES, ids=_golden_id)
def test_golden_rebuilds(case: dict[str, Any]) -> None:
    bi = case["builder_input"]
    golden = bytes.fromhex(case["hex"])
    if bi["compression"] == "none":
        assert _build_like(case, "none") == golden  # byte-identical to Kafka
        return
    # Compressed: same header (but codec bits, length, CRC) and the same records once decompressed.
    plain = _build_like(case, "none")
    (batch,) = iter_batches(golden)
    assert golden[:8] == plain[:8] and golden[12:17] == plain[12:17]
    assert golden[23:61] == plain[23:61]
    assert comp.decompress(batch.compression, golden[61:]) == plain[61:]
    ours = _build_like(case, bi["compression"])
    assert _decode_all(ours) == _expected(case)
    assert ours[21:23] == golden[21:23]  # attributes


# --- round trips ---------------------------------------------------------------------------------


def _sample_records(magic: int, n: int = 5, big: bool = False) -> list[NewRecord]:
    out = []
    for i in range(n):
        headers: list[tuple[str, bytes | None]] = [] if magic < 2 else [("h", b"1"), ("h", None), ("é", b"")]
        value = os.urandom(200_000) if big and i == 1 else (None if i == 2 else b"value-%d" % i * (i + 1))
        out.append(
            NewRecord(
                value, key=None if i == 0 else b"k%d" % i, headers=headers, timestamp=1_700_000_000_000 + i
            )
        )
    return out


@pytest.mark.parametrize("big", [False, True], ids=["small", "big"])
@pytest.mark.parametrize(
    ("magic", "codec"),
    [(2, c) for c in CODECS] + [(m, c) for m in (0, 1) for c in LEGACY_CODECS],
    ids=lambda v: str(v),
)
def test_round_trip(magic: int, codec: Compression, big: bool) -> None:
    recs = _sample_records(magic, big=big)
    data = build_batch(recs, magic=magic, compression=codec, base_offset=100)
    batches = list(iter_batches(data))
    assert {b.compression for b in batches} == {codec}
    got = [r for b in batches for r in b.records()]
    assert [r.offset for r in got] == list(range(100, 105))
    assert [(r.key, r.value, r.headers) for r in got] == [(r.key, r.value, list(r.headers)) for r in recs]
    assert [r.timestamp for r in got] == [r.timestamp if magic else -1 for r in recs]
    assert batches[0].base_offset == 100 and batches[-1].last_offset == 104
    if codec is not Compression.NONE or magic == 2:
        assert len(batches) == 1 and batches[0].last_offset_delta == 4


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_explicit_offsets_and_log_append_time(magic: int) -> None:
    recs = [NewRecord(b"a", timestamp=5, offset=10), NewRecord(b"b", timestamp=3, offset=13)]
    codec = Compression.GZIP
    data = build_batch(
        recs,
        magic=magic,
        compression=codec,
        base_offset=10,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=99,
    )
    (batch,) = iter_batches(data)
    got = list(batch.records())
    assert [r.offset for r in got] == [10, 13]
    if magic == 0:
        assert [r.timestamp for r in got] == [-1, -1]
    else:
        assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
        assert batch.max_timestamp == 99
        assert [r.timestamp for r in got] == [99, 99]
    # decoded Records rebuild to the same bytes
    assert (
        build_batch(
            got if magic else [NewRecord(r.value, offset=r.offset) for r in got],
            magic=magic,
            compression=codec,
            base_offset=10,
            timestamp_type=TimestampType.LOG_APPEND_TIME,
            log_append_time=99,
        )
        == data
        or codec is not Compression.NONE
    )


def test_magic1_wrapper_uses_relative_inner_offsets() -> None:
    data = build_batch(
        [NewRecord(b"a", timestamp=1), NewRecord(b"b", timestamp=7)],
        magic=1,
        compression="gzip",
        base_offset=500,
    )
    (batch,) = iter_batches(data)
    assert batch.last_offset == 501 and batch.base_offset == 500 and batch.max_timestamp == 7
    (_, size, _, _, _) = struct.unpack_from(">qiIbb", data)
    inner = zlib.decompress(data[12 + 4 + 2 + 8 + 4 + 4 : 12 + size], 31)
    assert struct.unpack_from(">q", inner)[0] == 0  # relative
    assert [r.timestamp for r in batch.records()] == [1, 7]


def test_control_batch() -> None:
    data = build_control_batch(
        ControlType.COMMIT,
        producer_id=7,
        producer_epoch=3,
        coordinator_epoch=11,
        base_offset=9,
        timestamp=123,
    )
    (batch,) = iter_batches(data)
    assert batch.is_control and batch.is_transactional and batch.producer_id == 7
    (rec,) = batch.records()
    marker = parse_control_record(rec)
    assert marker.type is ControlType.COMMIT and marker.coordinator_epoch == 11 and rec.offset == 9
    abort = build_control_batch(ControlType.ABORT, producer_id=7, producer_epoch=3)
    assert parse_control_record(next(next(iter_batches(abort)).records())).type is ControlType.ABORT
    # generic builder flag too
    data2 = build_batch(
        [NewRecord(rec.value, key=rec.key, timestamp=123)],
        control=True,
        transactional=True,
        producer_id=7,
        producer_epoch=3,
        base_offset=9,
    )
    assert data2 == data


def test_many_batches_and_truncation() -> None:
    parts = [
        build_batch(_sample_records(2), compression="zstd", base_offset=0),
        build_batch(_sample_records(1, 2), magic=1, base_offset=5),
        build_batch(_sample_records(0, 2), magic=0, compression="gzip", base_offset=7),
        build_batch(_sample_records(2), compression="lz4", base_offset=9),
    ]
    data = b"".join(parts)
    assert [r.offset for r in _decode_all(data)] == list(range(14))
    bounds = [0] + [b.position + b.size for b in iter_batches(data)]  # magic 1 "none": one per message
    assert len(bounds) == 6 and bounds[-1] == len(data)
    for cut in range(len(data) + 1):
        batches = iter_batches(data[:cut])
        complete = max(b for b in bounds if b <= cut)
        assert batches.truncated_bytes == cut - complete
        got = list(batches)
        assert sum(b.size for b in got) == complete
        assert batches.truncated_bytes == cut - complete
        assert batches.truncated_at == (None if cut == complete else complete)
        for b in got:
            list(b.records())
    with pytest.raises(CorruptRecordError, match="truncated"):
        list(iter_batches(data[:-1], allow_truncated=False))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_property_build_decode(data: st.DataObject) -> None:
    magic = data.draw(st.sampled_from([0, 1, 2]), label="magic")
    codec = data.draw(st.sampled_from(CODECS if magic == 2 else LEGACY_CODECS), label="codec")
    opt_bytes = st.none() | st.binary(max_size=300)
    headers = st.just([]) if magic < 2 else st.lists(st.tuples(st.text(max_size=10), opt_bytes), max_size=4)
    ts = st.integers(0, 2**41)
    recs = data.draw(
        st.lists(
            st.builds(NewRecord, opt_bytes, key=opt_bytes, headers=headers, timestamp=ts),
            min_size=1,
            max_size=12,
        ),
        label="records",
    )
    gaps = data.draw(st.lists(st.integers(0, 1000), min_size=len(recs), max_size=len(recs)), label="gaps")
    base = data.draw(st.integers(0, 2**40), label="base_offset")
    offset = base
    for r, gap in zip(recs, gaps, strict=True):
        offset += gap if magic == 2 or codec is Compression.NONE else 0
        r.offset = offset
        offset += 1
    kw: dict[str, Any] = {}
    if magic == 2:
        kw = dict(
            producer_id=data.draw(st.integers(-1, 2**62)),
            producer_epoch=data.draw(st.integers(-1, 2**15 - 1)),
            base_sequence=data.draw(st.integers(-1, 2**31 - 1)),
            transactional=data.draw(st.booleans()),
            partition_leader_epoch=data.draw(st.integers(-1, 2**31 - 1)),
        )
    built = build_batch(recs, magic=magic, compression=codec, base_offset=base, **kw)
    batches = list(iter_batches(built))
    got = [r for b in batches for r in b.records()]
    assert [(r.offset, r.key, r.value, r.headers) for r in got] == [
        (r.offset, r.key, r.value, list(r.headers)) for r in recs
    ]
    assert [r.timestamp for r in got] == [r.timestamp if magic else -1 for r in recs]
    for name, value in kw.items():
        attr = "is_transactional" if name == "transactional" else name
        assert getattr(batches[0], attr) == value
    if magic == 2:  # decoded records rebuild byte-identically (compressed: same codec output)
        assert build_batch(got, compression=codec, base_offset=base, **kw) == built


def _careful_records(
    buf: bytes, count: int, last_delta: int
) -> tuple[list[Record], tuple[str, str, int] | None]:
    """Reference: every record through the careful parser (what the fast path must agree with),
    offset deltas increasing up to ``last_delta``."""
    from kcodec.records.batch import _parse_one

    out: list[Record] = []
    pos = 0
    prev = -1
    try:
        for i in range(count):
            record, end = _parse_one(buf, pos, 100, 1000, None)
            delta = record.offset - 100
            if not prev < delta <= last_delta:
                reason = (
                    f"record {i}: offset delta {delta} after {prev} (deltas must increase, up to the "
                    f"last offset delta {last_delta})"
                )
                return out, ("InvalidOffsetError", f"batch at offset 100: {reason}", 61 + pos)
            prev = delta
            pos = end
            out.append(record)
        if pos != len(buf):
            raise DecodeError(
                f"{len(buf) - pos} bytes left after the {count} records the header declares", pos
            )
    except (DecodeError, IndexError) as e:
        at = e.offset if isinstance(e, DecodeError) else pos
        reason = e.reason if isinstance(e, DecodeError) else "record runs past the end of the batch"
        return out, ("CorruptRecordError", f"batch at offset 100: {reason}", 61 + at)
    return out, None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fast_record_parser_agrees_with_careful_parser(data: st.DataObject) -> None:
    """The inlined fast path yields exactly what the careful parser yields, errors included."""
    from kcodec.records.batch import _parse_records

    opt_bytes = st.none() | st.binary(max_size=40) | st.sampled_from([b"x" * 200, b"y" * 9000, b"z" * 20000])
    headers = st.lists(
        st.tuples(st.sampled_from(["a", "\u00e9", "k" * 70]), opt_bytes), max_size=3
    ) | st.just([("h", b"")] * 70)
    ts = st.sampled_from([0, 1, 100, 70_000, 2**40])
    recs = data.draw(
        st.lists(
            st.builds(NewRecord, opt_bytes, key=opt_bytes, headers=headers, timestamp=ts),
            min_size=1,
            max_size=6,
        )
    )
    body = bytearray(build_batch(recs)[61:])
    for pos, byte in data.draw(
        st.lists(st.tuples(st.integers(0, len(body) - 1), st.integers(0, 255)), max_size=4)
    ):
        body[pos] = byte
    body = body[: data.draw(st.integers(0, len(body)))] if data.draw(st.booleans()) else body
    count = max(0, len(recs) + data.draw(st.sampled_from([0, 0, 1, -1])))
    last_delta = len(recs) - 1 + data.draw(st.sampled_from([0, 0, 1, -1]))
    got: list[Record] = []
    error = None
    try:
        for r in _parse_records(bytes(body), count, 100, 1000, None, 61, False, last_delta):
            got.append(r)
    except CorruptRecordError as e:
        error = (type(e).__name__, str(e).split(" at byte ")[0], e.offset)
    assert (got, error) == _careful_records(bytes(body), count, last_delta)


# --- errors --------------------------------------------------------------------------------------


def _v2_batch(codec: Compression = Compression.NONE, base_offset: int = 42) -> bytes:
    return build_batch(_sample_records(2), compression=codec, base_offset=base_offset)


def test_crc_mismatch_v2() -> None:
    data = bytearray(b"\x00" * 0 + _v2_batch())
    data[70] ^= 0xFF
    prefix = build_batch([NewRecord(b"x")], base_offset=0)
    buf = prefix + bytes(data)
    it = iter_batches(buf)
    assert next(it).base_offset == 0  # batches before the corrupt one are yielded
    with pytest.raises(CrcMismatchError) as exc:
        next(it)
    assert exc.value.base_offset == 42 and exc.value.offset == len(prefix) + 17
    assert "batch at offset 42" in str(exc.value) and isinstance(exc.value, DecodeError)
    assert len(_decode_all(bytes(data), verify_crc=False)) == 5


@pytest.mark.parametrize("magic", [0, 1])
def test_crc_mismatch_legacy(magic: int) -> None:
    data = bytearray(build_batch([NewRecord(b"value")], magic=magic, base_offset=3))
    data[-1] ^= 1
    with pytest.raises(CrcMismatchError, match="CRC32 mismatch") as exc:
        list(iter_batches(bytes(data)))
    assert exc.value.base_offset == 3 and exc.value.offset == 12
    inner = build_batch([NewRecord(b"a"), NewRecord(b"b")], magic=magic, compression="gzip")
    assert len(_decode_all(inner)) == 2


def test_unknown_codec() -> None:
    data = _rewrap_v2(_v2_batch(), attributes=5)
    with pytest.raises(UnsupportedCompressionError, match="codec id 5") as exc:
        list(iter_batches(data))
    assert exc.value.offset == 21 and exc.value.base_offset == 42
    legacy = bytearray(build_batch([NewRecord(b"v")], magic=1))
    legacy[17] = 4  # zstd is not allowed at magic 1
    legacy[12:16] = struct.pack(">I", zlib.crc32(bytes(legacy[16:])))
    with pytest.raises(UnsupportedCompressionError, match="not valid for magic 1"):
        list(iter_batches(bytes(legacy)))


def test_unknown_magic_and_bad_lengths() -> None:
    data = bytearray(_v2_batch())
    data[16] = 3
    with pytest.raises(CorruptRecordError, match="unknown magic 3") as exc:
        list(iter_batches(bytes(data)))
    assert exc.value.offset == 16
    data = bytearray(_v2_batch())
    data[8:12] = struct.pack(">i", 13)
    with pytest.raises(CorruptRecordError, match="below the minimum"):
        list(iter_batches(bytes(data)))
    data[8:12] = struct.pack(">i", 30)  # legacy minimum but below magic 2's
    with pytest.raises(CorruptRecordError, match="minimum 49 for magic 2"):
        list(iter_batches(bytes(data)))


def test_corrupt_records_section() -> None:
    good = _v2_batch()
    # record count says 6, only 5 present
    bad = bytearray(good)
    bad[57:61] = struct.pack(">i", 6)
    with pytest.raises(CorruptRecordError) as exc:
        list(next(iter_batches(_rewrap_v2(bytes(bad)))).records())
    assert exc.value.base_offset == 42 and exc.value.offset >= 61
    # trailing garbage after the records
    with pytest.raises(CorruptRecordError, match="bytes left after"):
        list(next(iter_batches(_rewrap_v2(good, good[61:] + b"\x00"))).records())
    # a record length that runs past the end
    with pytest.raises(CorruptRecordError, match="runs past"):
        big = bytearray()
        write_varint(big, 100_000)
        list(next(iter_batches(_rewrap_v2(good, bytes(big) + good[62:]))).records())


@pytest.mark.parametrize("codec", [c for c in CODECS if c is not Compression.NONE])
def test_corrupt_compressed_data(codec: Compression) -> None:
    good = _v2_batch(codec)
    body = bytearray(good[61:])
    garbage = bytes(body[:4]) + bytes(b ^ 0x5A for b in body[4:])
    batch = next(iter_batches(_rewrap_v2(good, garbage)))  # header-only: no error yet
    with pytest.raises((DecompressionError, CorruptRecordError)) as exc:
        list(batch.records())
    # lz4: the error names the frame's flag byte (byte 4 of the frame: now an unknown frame version)
    assert exc.value.base_offset == 42 and exc.value.offset == 61 + (4 if codec is Compression.LZ4 else 0)


@pytest.mark.parametrize(
    ("magic", "codec"), [(2, c) for c in CODECS[1:]] + [(1, c) for c in LEGACY_CODECS[1:]]
)
def test_decompression_bomb_guard(magic: int, codec: Compression) -> None:
    data = build_batch([NewRecord(bytes(4 << 20))], magic=magic, compression=codec)
    assert len(data) < 300_000
    (batch,) = iter_batches(data, max_decompressed_size=1 << 20)
    with pytest.raises(DecompressedSizeError, match="more than") as exc:
        list(batch.records())
    assert exc.value.base_offset is not None
    assert len(_decode_all(data)[0].value or b"") == 4 << 20  # default limit: 64 MiB


def test_zstd_without_content_size_and_bounded_growth() -> None:
    c = cramjam.zstd.Compressor()
    payload = os.urandom(1000) * 3000
    c.compress(payload)
    frame = bytes(c.finish())
    assert comp._zstd_hint(frame) is None
    assert comp.decompress(Compression.ZSTD, frame) == payload
    with pytest.raises(comp.SizeLimitError):
        comp.decompress(Compression.ZSTD, frame, max_size=len(payload) - 1)
    assert comp.decompress(Compression.ZSTD, frame, max_size=len(payload)) == payload


# --- codec details -------------------------------------------------------------------------------


def test_snappy_xerial_written_and_raw_accepted() -> None:
    payload = os.urandom(100) * 1000
    framed = comp.compress(Compression.SNAPPY, payload)
    assert framed[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    assert comp.decompress(Compression.SNAPPY, framed) == payload
    raw = bytes(cramjam.snappy.compress_raw(payload))
    assert comp.decompress(Compression.SNAPPY, raw) == payload
    good = _v2_batch(Compression.SNAPPY)
    body = comp.decompress(Compression.SNAPPY, good[61:])
    rewrapped = _rewrap_v2(good, bytes(cramjam.snappy.compress_raw(body)))
    assert _decode_all(rewrapped) == _decode_all(good)


def test_lz4_kafka_3160_and_foreign_frames() -> None:
    assert (lz4frame.xxh32(bytes([0x60, 0x40])) >> 8) & 0xFF == 0x82  # Kafka's usual header byte
    assert lz4frame.xxh32(b"") == 0x02CC5D05
    assert lz4frame.xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F
    payload = b"hello kafka " * 10000
    broken = lz4frame.compress(payload, broken_header_checksum=True)
    correct = lz4frame.compress(payload)
    assert broken[6] != correct[6] and broken[:6] == correct[:6]
    for frame in (correct, bytes(cramjam.lz4.compress(payload))):  # cramjam: linked blocks
        assert comp.decompress(Compression.LZ4, frame) == payload
    # KAFKA-3160: the broken header checksum is accepted for magic 0 and 1 only
    for magic in (0, 1):
        assert comp.decompress(Compression.LZ4, broken, magic=magic) == payload
    with pytest.raises(comp.CodecError, match="header checksum mismatch") as exc:
        comp.decompress(Compression.LZ4, broken)
    assert exc.value.position == 6
    bad = bytearray(correct)
    bad[6] ^= 0xFF
    for magic in (0, 1, 2):
        with pytest.raises(comp.CodecError, match="header checksum"):
            comp.decompress(Compression.LZ4, bytes(bad), magic=magic)
    # magic 0 lz4 messages are written with the broken checksum, magic 1 with the correct one
    m0 = build_batch([NewRecord(payload)], magic=0, compression="lz4")
    m1 = build_batch([NewRecord(payload)], magic=1, compression="lz4")
    assert m0[26 + 6] == broken[6] and m1[34 + 6] == correct[6]  # value (the frame) at 26 / 34
    assert _decode_all(m0)[0].value == payload and _decode_all(m1)[0].value == payload
    # a magic 1 wrapper with the KAFKA-3160 checksum (old clients) is read too
    m1_broken = _rewrap_legacy(m1, _legacy_inner(m1, magic=1, broken=True))
    assert _decode_all(m1_broken)[0].value == payload


# --- lz4 frame checksums ---------------------------------------------------------------------------


def _xxh32(data: bytes) -> int:
    import xxhash

    return xxhash.xxh32_intdigest(data)


def _hand_frame(content: bytes, *, block_checksum: bool, content_checksum: bool) -> bytes:
    """An LZ4 frame of raw (stored) blocks of 60000 bytes, written by hand from the frame format spec."""
    blocks = [content[i : i + 60000] for i in range(0, len(content), 60000)]
    flg = 0x40 | 0x20 | (0x10 if block_checksum else 0) | (0x04 if content_checksum else 0)
    descriptor = bytes((flg, 0x40))
    out = bytearray(struct.pack("<I", 0x184D2204) + descriptor)
    out.append((_xxh32(descriptor) >> 8) & 0xFF)
    for block in blocks:
        out += struct.pack("<I", len(block) | 0x80000000) + block
        if block_checksum:
            out += struct.pack("<I", _xxh32(block))
    out += b"\0\0\0\0"
    if content_checksum:
        out += struct.pack("<I", _xxh32(b"".join(blocks)))
    return bytes(out)


def _lz4_frames(payload: bytes) -> dict[str, bytes]:
    """Frames with header, block and content checksums: by hand, and by the reference C library."""
    frames = {"hand": _hand_frame(payload, block_checksum=True, content_checksum=True)}
    lz4_frame = pytest.importorskip("lz4.frame", reason="python-lz4 is not installed")
    for linked in (False, True):
        frames["lz4-linked" if linked else "lz4-independent"] = lz4_frame.compress(
            payload, block_linked=linked, block_checksum=True, content_checksum=True, store_size=True
        )
    return frames


def _checksum_positions(frame: bytes) -> dict[str, int]:
    """Position of the header checksum, the first block checksum and the content checksum."""
    flg = frame[4]
    pos = 6 + (8 if flg & 0x08 else 0)
    out = {"header": pos}
    pos += 1
    (size,) = struct.unpack_from("<I", frame, pos)
    out["block"] = pos + 4 + (size & 0x7FFFFFFF)
    out["content"] = len(frame) - 4
    return out


def _legacy_inner(wrapper: bytes, *, magic: int, broken: bool) -> bytes:
    """The lz4 frame of a magic 0/1 wrapper, with its header checksum made broken/correct."""
    value_at = 26 if magic == 0 else 34
    frame = bytearray(wrapper[value_at:])
    descriptor = bytes(frame[4:6])
    frame[6] = (_xxh32((b"\x04\x22\x4d\x18" if broken else b"") + descriptor) >> 8) & 0xFF
    return bytes(frame)


def _rewrap_legacy(wrapper: bytes, value: bytes) -> bytes:
    """A magic 0/1 wrapper message (null key) with its value replaced; size and CRC fixed."""
    magic = wrapper[16]
    value_at = 26 if magic == 0 else 34
    body = wrapper[16 : value_at - 4] + struct.pack(">i", len(value)) + value
    return wrapper[:8] + struct.pack(">iI", len(body) + 4, zlib.crc32(body)) + body


def test_lz4_checksums_verified() -> None:
    payload = os.urandom(40000) + b"kafka " * 20000
    for name, frame in _lz4_frames(payload).items():
        assert comp.decompress(Compression.LZ4, frame) == payload, name
        assert frame[4] & 0x14 == 0x14, name  # block and content checksum flags set
        for what, at in _checksum_positions(frame).items():
            bad = bytearray(frame)
            bad[at] ^= 0x01
            with pytest.raises(comp.CodecError, match=f"{what} checksum mismatch") as exc:
                comp.decompress(Compression.LZ4, bytes(bad))
            assert exc.value.position == at, (name, what)
        # a corrupt block is caught by its checksum before the decompressor sees it
        bad = bytearray(frame)
        bad[_checksum_positions(frame)["block"] - 10] ^= 0xFF
        with pytest.raises(comp.CodecError, match="block checksum mismatch"):
            comp.decompress(Compression.LZ4, bytes(bad))
        # no content checksum after the end mark: truncated
        with pytest.raises(comp.CodecError, match="truncated"):
            comp.decompress(Compression.LZ4, frame[:-4])


@pytest.mark.parametrize("what", ["header", "block", "content"])
def test_lz4_checksum_mismatch_in_batches(what: str) -> None:
    """A corrupt checksum inside a (CRC-valid) batch is a DecompressionError naming batch and byte."""
    payload = b"".join(b"value-%05d;" % i for i in range(8000))
    v2 = build_batch([NewRecord(payload, key=b"k")], compression="lz4", base_offset=42)
    body = comp.decompress(Compression.LZ4, v2[61:])
    for name, frame in _lz4_frames(body).items():
        assert _decode_all(_rewrap_v2(v2, frame))[0].value == payload, name
        at = _checksum_positions(frame)[what]
        bad = bytearray(frame)
        bad[at] ^= 0x40
        (batch,) = iter_batches(_rewrap_v2(v2, bytes(bad)))  # the batch CRC covers the corrupt frame
        with pytest.raises(DecompressionError, match=f"LZ4 {what} checksum mismatch") as exc:
            list(batch.records())
        assert exc.value.base_offset == 42 and exc.value.offset == 61 + at, name
        assert "batch at offset 42" in str(exc.value)
    # magic 0/1 wrappers: the error points into the wrapper's value
    for magic in (0, 1):
        wrapper = build_batch([NewRecord(payload)], magic=magic, compression="lz4", base_offset=7)
        inner = comp.decompress(Compression.LZ4, _legacy_inner(wrapper, magic=magic, broken=False))
        frame = _hand_frame(inner, block_checksum=True, content_checksum=True)
        assert _decode_all(_rewrap_legacy(wrapper, frame))[0].value == payload
        at = _checksum_positions(frame)[what]
        bad = bytearray(frame)
        bad[at] ^= 0x40
        (batch,) = iter_batches(_rewrap_legacy(wrapper, bytes(bad)))
        with pytest.raises(DecompressionError, match=f"LZ4 {what} checksum mismatch") as exc:
            list(batch.records())
        assert exc.value.base_offset == 7 and exc.value.offset == (26 if magic == 0 else 34) + at


def test_lz4_content_size_checked() -> None:
    lz4_frame = pytest.importorskip("lz4.frame", reason="python-lz4 is not installed")
    payload = b"abc" * 5000
    frame = bytearray(lz4_frame.compress(payload, block_linked=False, store_size=True))
    assert comp.decompress(Compression.LZ4, bytes(frame)) == payload
    frame[6:14] = struct.pack("<Q", len(payload) + 1)
    frame[14] = (_xxh32(bytes(frame[4:14])) >> 8) & 0xFF
    with pytest.raises(comp.CodecError, match="declares 15001 bytes but holds 15000"):
        comp.decompress(Compression.LZ4, bytes(frame))


def test_lz4_linked_blocks_bomb_guard() -> None:
    payload = bytes(6 << 20)
    frame = bytes(cramjam.lz4.compress(payload))  # linked blocks: decoded by cramjam as a whole
    assert frame[4] & 0x20 == 0
    assert comp.decompress(Compression.LZ4, frame) == payload
    with pytest.raises(comp.SizeLimitError, match="more than 1048576"):
        comp.decompress(Compression.LZ4, frame, max_size=1 << 20)
    assert comp.decompress(Compression.LZ4, frame, max_size=len(payload)) == payload


def test_varints() -> None:
    for v in (0, 1, -1, 63, -64, 64, 2**31 - 1, -(2**31)):
        out = bytearray()
        write_varint(out, v)
        assert read_varint(out, 0) == (v, len(out)) and varint_size(v) == len(out)
    for v in (2**63 - 1, -(2**63), 2**40):
        out = bytearray()
        write_varlong(out, v)
        assert read_varlong(out, 0) == (v, len(out)) and varint_size(v) == len(out)
    with pytest.raises(EncodeError):
        write_varint(bytearray(), 2**31)
    with pytest.raises(DecodeError):
        read_varint(b"\xff\xff\xff\xff\xff\x01", 0)
    with pytest.raises(DecodeError):
        read_varint(b"\xff", 0)


def test_builder_refusals() -> None:
    with pytest.raises(EncodeError):
        build_batch([])
    with pytest.raises(EncodeError, match="magic 2"):
        build_batch([NewRecord(b"x")], magic=1, compression="zstd")
    with pytest.raises(EncodeError, match="headers"):
        build_batch([NewRecord(b"x", headers=[("a", b"b")])], magic=0)
    with pytest.raises(EncodeError, match="control"):
        build_batch([NewRecord(b"x")], magic=1, control=True)
    with pytest.raises(EncodeError, match="does not follow"):
        build_batch([NewRecord(b"x", offset=5), NewRecord(b"y", offset=5)], base_offset=0)
    with pytest.raises(EncodeError, match="log_append_time"):
        build_batch([NewRecord(b"x")], timestamp_type=TimestampType.LOG_APPEND_TIME)
    with pytest.raises(ValueError):
        build_batch([NewRecord(b"x")], compression="brotli")


# --- interop with kafka-python's record code (its snappy/lz4/zstd need the test extras' libraries) --


@pytest.mark.interop
@pytest.mark.parametrize(
    ("magic", "codec"),
    [(m, c.value) for m in (0, 1, 2) for c in CODECS if m == 2 or c is not Compression.ZSTD],
)
def test_kafka_python_interop(magic: int, codec: str) -> None:
    import kafka.codec
    from kafka.record import MemoryRecords
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    if codec != "none" and not getattr(kafka.codec, f"has_{codec}")():
        pytest.skip(f"kafka-python has no {codec} library here (test extras: python-snappy, lz4, zstandard)")
    ctype = Compression(codec).id
    recs = _sample_records(magic, 4)
    if magic == 2:
        kb: Any = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=ctype,
            is_transactional=False,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            batch_size=1 << 20,
        )
    else:
        kb = LegacyRecordBatchBuilder(magic=magic, compression_type=ctype, batch_size=1 << 20)
    for i, r in enumerate(recs):
        if magic == 2:
            kb.append(i, timestamp=r.timestamp, key=r.key, value=r.value, headers=list(r.headers))
        else:
            kb.append(i, timestamp=r.timestamp, key=r.key, value=r.value)
    theirs = bytes(kb.build())
    got = _decode_all(theirs)
    assert [(r.key, r.value) for r in got] == [(r.key, r.value) for r in recs]
    # kafka-python's producer writes magic 1 wrappers with offset 0 (the broker assigns offsets), so
    # Kafka's rule (wrapper offset - last relative offset) gives negative absolute offsets there.
    first = got[0].offset
    assert [r.offset for r in got] == list(range(first, first + len(recs)))
    assert first == (-3 if magic == 1 and codec != "none" else 0)
    if codec == "none":  # kafka-python writes partition leader epoch 0 where Kafka writes -1
        assert build_batch(recs, magic=magic, partition_leader_epoch=0 if magic == 2 else -1) == theirs
    # and kafka-python reads ours
    ours = build_batch(recs, magic=magic, compression=codec)
    mr = MemoryRecords(ours)
    read = []
    while mr.has_next():
        batch = mr.next_batch()
        read += [(rec.offset, rec.key, rec.value) for rec in batch]
    assert read == [(i, r.key, r.value) for i, r in enumerate(recs)]
