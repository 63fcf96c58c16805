"""Record-count bombs: offsets validated as Kafka's writers produce them (MemoryRecordsBuilder:
offsets increase), a batch's declared count checked against what its bytes can hold, a records budget
per ``iter_batches`` call, and the mock broker refusing such a Produce with INVALID_RECORD (the error
of LogValidator.validateBatch's offset/count checks) without building the records. Memory is measured
in bytes allocated (tracemalloc peaks), never in time."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import broker_requests as rq
import pytest
from record_bombs import delta_zero_bomb, legacy_wrapper, v2_batch, v2_record

from kcodec.broker import BrokerConfig, MockCluster
from kcodec.net.client import Connection
from kcodec.protocol.error_codes import ErrorCode
from kcodec.records import (
    DEFAULT_MAX_RECORDS,
    Compression,
    CorruptRecordError,
    InvalidOffsetError,
    RecordLimitError,
    iter_batches,
    records_to_json,
)

MIB = 1 << 20
CORPUS = Path(__file__).resolve().parent / "fuzz_corpus" / "record_bombs.json"


def _peak(fn: Callable[[], Any]) -> tuple[Any, int]:
    """(what ``fn`` returned or raised, the peak bytes it had allocated)."""
    tracemalloc.start()
    try:
        try:
            result: Any = fn()
        except Exception as e:  # the outcome is what the tests look at
            result = e
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _read_all(data: bytes, **kw: Any) -> list[Any]:
    return [r for b in iter_batches(data, **kw) for r in b.records()]


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.ZSTD, Compression.GZIP])
def test_offset_deltas_that_do_not_increase_are_a_typed_error(codec: Compression) -> None:
    data = delta_zero_bomb(1000, codec)
    got = []
    with pytest.raises(InvalidOffsetError) as info:
        for record in next(iter_batches(data)).records():
            got.append(record)
    assert len(got) == 1 and got[0].offset == 0  # the records before the bad one, as a lazy reader
    e = info.value
    assert isinstance(e, CorruptRecordError) and e.base_offset == 0
    assert e.path == "records[1].offsetDelta" and "offset delta 0 after 0" in e.reason


def test_an_offset_delta_past_the_last_offset_delta_is_refused() -> None:
    data = v2_batch(v2_record(0) + v2_record(5), 2, 1)
    with pytest.raises(InvalidOffsetError, match="offset delta 5 after 0"):
        _read_all(data)


def test_gaps_in_offset_deltas_are_read() -> None:
    # a compacted log keeps the batch header and drops records: deltas increase with gaps
    data = v2_batch(v2_record(0) + v2_record(3) + v2_record(7), 3, 9)
    assert [r.offset for r in _read_all(data)] == [0, 3, 7]


def test_a_declared_count_the_bytes_cannot_hold_is_refused_before_any_work() -> None:
    data = v2_batch(v2_record(0), 1_000_000, 999_999)
    with pytest.raises(RecordLimitError, match="cannot fit in 8 bytes"):
        _read_all(data, max_records=10**9)
    zipped = v2_batch(v2_record(0) * 10, 500_000, 499_999, Compression.ZSTD)
    with pytest.raises(RecordLimitError, match="cannot fit in 80 decompressed bytes"):
        _read_all(zipped)


def test_the_issue_bomb_builds_nothing() -> None:
    """4,000,000 identical 8-byte records in a small zstd batch (the review's: 4,000,000 Record
    objects, +528 MiB): refused from its header, before decompressing."""
    data = delta_zero_bomb(4_000_000)
    assert len(data) < 4096
    error, peak = _peak(lambda: _read_all(data))
    assert isinstance(error, RecordLimitError) and f"max_records={DEFAULT_MAX_RECORDS}" in str(error)
    assert peak < MIB
    # with the budget raised it is decompressed (32 MB) and refused at its second record
    error, peak = _peak(lambda: _read_all(data, max_records=5_000_000))
    assert isinstance(error, InvalidOffsetError) and error.path == "records[1].offsetDelta"
    assert peak < 2 * 32_000_000 + 4 * MIB  # the decompressed bytes, no records


def test_the_budget_is_shared_by_the_batches_of_a_call_and_can_be_raised() -> None:
    one = v2_batch(b"".join(v2_record(d) for d in range(100)), 600 // 6, 99)
    data = one * 6  # 600 records
    assert len(_read_all(data)) == 600
    with pytest.raises(RecordLimitError, match="100 records exceed the records budget"):
        _read_all(data, max_records=550)
    assert len(_read_all(data, max_records=600)) == 600
    view = records_to_json(data, max_records=550)
    assert view is not None and "recordsError" in view["batches"][5]
    assert "recordsError" not in view["batches"][4]


def test_legacy_inner_offsets_must_increase() -> None:
    with pytest.raises(InvalidOffsetError) as info:
        _read_all(legacy_wrapper([0] * 1000))
    assert info.value.path == "records[1].offset" and "offset 0 after 0" in info.value.reason
    assert [r.offset for r in _read_all(legacy_wrapper([0, 1, 4], wrapper_offset=10))] == [6, 7, 10]


def test_a_legacy_bomb_builds_at_most_the_budget() -> None:
    """The review's legacy case (157,740 bytes -> 778 MiB): inner messages are counted against the
    budget as they are read, so at most ``max_records`` are ever built."""
    data = legacy_wrapper(list(range(200_000)))
    inner_bytes = 200_000 * 35
    error, peak = _peak(lambda: _read_all(data, max_records=1000))
    assert isinstance(error, RecordLimitError)
    assert peak < inner_bytes + 2 * MIB  # the decompressed messages, and ~1000 parsed ones
    got, peak = _peak(lambda: _read_all(data, max_records=200_000))
    assert len(got) == 200_000
    # a record is built as its message is read (no parsed message kept beside it): ~200 bytes each
    assert peak < inner_bytes + 200_000 * 250


# --- one buffer: decompressed records are read where they were decompressed ---------------------


def test_decompressed_records_are_not_copied_whole() -> None:
    """A small zstd batch of 32 MiB of zeros (refused at its first record): the peak is the buffer
    decompressed into, not twice it (the review measured 2x through ``records()``)."""
    size = 32 * MIB
    data = v2_batch(bytes(size), 1, 0, Compression.ZSTD)
    error, peak = _peak(lambda: _read_all(data))
    assert isinstance(error, CorruptRecordError)
    assert peak < size + 2 * MIB


@pytest.mark.parametrize("codec", [Compression.ZSTD, Compression.GZIP, Compression.LZ4, Compression.SNAPPY])
def test_records_keep_bytes_of_their_own(codec: Compression) -> None:
    """Read records hold ``bytes`` (not views of the buffer): the peak is the buffer plus what they
    keep, and the buffer is freed once they are built."""
    value = 4 * MIB
    records = b"".join(v2_record(d, bytes([d]) * value) for d in range(4))
    data = v2_batch(records, 4, 3, codec)
    got, peak = _peak(lambda: _read_all(data))
    assert [type(r.value) for r in got] == [bytes] * 4 and [r.value[:1] for r in got] == [
        bytes([d]) for d in range(4)
    ]
    assert peak < 2 * len(records) + 2 * MIB


# --- the mock broker ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(BrokerConfig(brokers=1)) as c:
        c.create_topic("t", 1)
        yield c


def test_the_broker_answers_bombs_with_invalid_record(cluster: MockCluster) -> None:
    tid = cluster.call(lambda: cluster.state.topics["t"].topic_id)
    host, port = cluster.addresses[0]
    with Connection(host, port, timeout=30) as conn:

        def produce(records: bytes) -> Any:
            resp = conn.request(rq.produce("t", tid, 9, records), 9).body
            return resp.responses[0].partition_responses[0]

        zero = produce(delta_zero_bomb(1000))
        assert zero.error_code == ErrorCode.INVALID_RECORD and "offset delta 0 after 0" in zero.error_message
        data = delta_zero_bomb(4_000_000)
        bomb, peak = _peak(lambda: produce(data))
        assert bomb.error_code == ErrorCode.INVALID_RECORD and "records budget" in bomb.error_message
        assert peak < 4 * MIB  # the broker built no records (it runs in this process)
        ok = produce(rq.batch(b"a", b"b"))
        assert ok.error_code == ErrorCode.NONE


def test_the_corpus_holds_the_bombs() -> None:
    cases = json.loads(CORPUS.read_text())["cases"]
    assert len(cases) >= 4 and all("issue 41" in c["why"] and c["expect"] == "refused" for c in cases)


def corpus_cases() -> list[dict[str, str]]:
    """The cases of tests/fuzz_corpus/record_bombs.json (``python tests/test_record_bombs.py`` writes
    them)."""
    why = "issue 41 item 1: "
    return [
        {"check": "records", "hex": delta_zero_bomb(4_000_000).hex(), "expect": "refused",
         "why": why + "4,000,000 identical 8-byte records in 2.4 KB of zstd, every offset delta 0"},
        {"check": "records", "hex": delta_zero_bomb(50, Compression.NONE).hex(), "expect": "refused",
         "why": why + "an uncompressed batch whose offset deltas are all 0"},
        {"check": "records", "hex": legacy_wrapper([0] * 5000).hex(), "expect": "refused",
         "why": why + "a magic 1 gzip wrapper of 5,000 inner messages all at offset 0"},
        {"check": "records", "hex": v2_batch(v2_record(0), 1_000_000, 999_999).hex(), "expect": "refused",
         "why": why + "an 8-byte record under a header declaring 1,000,000"},
    ]


if __name__ == "__main__":
    about = "Record-count bombs (issue 41): batches that would build millions of records from a few bytes."
    CORPUS.write_text(json.dumps({"about": about, "cases": corpus_cases()}, indent=1) + "\n")
