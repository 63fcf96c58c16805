"""The JSON view of records: ``kcodec.records.records_to_json`` and ``kcodec.to_json(..., records=...)``."""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kcodec
from kcodec.records import (
    Compression,
    ControlType,
    NewRecord,
    build_batch,
    build_control_batch,
    records_summary,
    records_to_json,
)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


RECORDS = [
    NewRecord(b"hello", key=b"k1", headers=[("h", b"1"), ("h", b"2"), ("n", None)], timestamp=1000),
    NewRecord(None, key=None, timestamp=1001),
    NewRecord(b"\xff\xfe binary", key="clé".encode(), headers=[("bin", b"\x80")], timestamp=1002),
]


def _produce(records: bytes | None) -> Any:
    produce = kcodec.message_class("ProduceRequest")
    return produce(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            produce.TopicProduceData(
                name="t", partition_data=[produce.PartitionProduceData(index=0, records=records)]
            )
        ],
    )


def _records_of(obj: dict[str, Any]) -> Any:
    return obj["topicData"][0]["partitionData"][0]["records"]


def _corrupt_crc(batch: bytes) -> bytes:
    bad = bytearray(batch)
    bad[17] ^= 0xFF
    return bytes(bad)


def test_to_json_raw_is_kafka_json_and_default() -> None:
    data = build_batch(RECORDS, base_offset=5)
    msg = _produce(data)
    raw = kcodec.to_json(msg, 9)
    assert _records_of(raw) == _b64(data)
    assert kcodec.to_json(msg, 9, records="raw") == raw
    assert kcodec.from_json("ProduceRequest", 9, raw) == msg
    with pytest.raises(ValueError, match="records must be one of"):
        kcodec.to_json(msg, 9, records="expand")  # type: ignore[arg-type]


@pytest.mark.parametrize("codec", [c.value for c in Compression])
def test_to_json_expanded_base64_and_text(codec: str) -> None:
    data = build_batch(
        RECORDS, compression=codec, base_offset=5, producer_id=77, producer_epoch=3, base_sequence=10
    )
    msg = _produce(data)
    b64 = _records_of(kcodec.to_json(msg, 9, records="base64"))
    assert b64["sizeInBytes"] == len(data) and b64["truncatedBytes"] == 0 and "error" not in b64
    (batch,) = b64["batches"]
    assert batch == {
        **batch,
        "position": 0,
        "sizeInBytes": len(data),
        "magic": 2,
        "compression": codec,
        "timestampType": "CREATE_TIME",
        "baseOffset": 5,
        "lastOffsetDelta": 2,
        "partitionLeaderEpoch": -1,
        "isTransactional": False,
        "isControl": False,
        "baseTimestamp": 1000,
        "maxTimestamp": 1002,
        "producerId": 77,
        "producerEpoch": 3,
        "baseSequence": 10,
        "recordCount": 3,
    }
    assert batch["crc"] == struct.unpack_from(">I", data, 17)[0]
    assert batch["records"] == [
        {
            "offset": 5,
            "timestamp": 1000,
            "key": _b64(b"k1"),
            "value": _b64(b"hello"),
            "headers": [
                {"key": "h", "value": _b64(b"1")},
                {"key": "h", "value": _b64(b"2")},
                {"key": "n", "value": None},
            ],
        },
        {"offset": 6, "timestamp": 1001, "key": None, "value": None, "headers": []},
        {
            "offset": 7,
            "timestamp": 1002,
            "key": _b64("clé".encode()),
            "value": _b64(b"\xff\xfe binary"),
            "headers": [{"key": "bin", "value": _b64(b"\x80")}],
        },
    ]
    text = _records_of(kcodec.to_json(msg, 9, records="text"))
    recs = text["batches"][0]["records"]
    assert recs[0]["key"] == "k1" and recs[0]["value"] == "hello"
    assert recs[0]["headers"] == [
        {"key": "h", "value": "1"},
        {"key": "h", "value": "2"},
        {"key": "n", "value": None},
    ]
    assert recs[1]["key"] is None and recs[1]["value"] is None
    # not UTF-8: base64 under a name that says so
    assert recs[2]["key"] == "clé" and "value" not in recs[2]
    assert recs[2]["valueBase64"] == _b64(b"\xff\xfe binary")
    assert recs[2]["headers"] == [{"key": "bin", "valueBase64": _b64(b"\x80")}]
    json.dumps(text)  # JSON-ready


def test_null_records_and_legacy_and_control() -> None:
    assert _records_of(kcodec.to_json(_produce(None), 9, records="text")) is None
    assert records_to_json(None) is None
    legacy = build_batch([NewRecord(b"a", key=b"k", timestamp=5)], magic=1, compression="gzip", base_offset=9)
    legacy += build_batch([NewRecord(b"b")], magic=0, base_offset=10)
    view = records_to_json(legacy, values="text")
    assert view is not None
    b1, b0 = view["batches"]
    assert (b1["magic"], b1["compression"], b1["lastOffset"], b1["timestamp"]) == (1, "gzip", 9, 5)
    assert b1["records"] == [{"offset": 9, "timestamp": 5, "key": "k", "value": "a", "headers": []}]
    assert (b0["magic"], b0["timestampType"], b0["records"][0]["value"]) == (0, "NO_TIMESTAMP_TYPE", "b")
    control = build_control_batch(ControlType.COMMIT, producer_id=4, producer_epoch=1, coordinator_epoch=6)
    view = records_to_json(control)
    assert view is not None
    (cb,) = view["batches"]
    assert cb["isControl"] and cb["isTransactional"]
    assert cb["records"][0]["control"] == {"type": "COMMIT", "version": 0, "coordinatorEpoch": 6}


def test_bad_record_data_is_shown_as_far_as_it_decodes() -> None:
    good = build_batch(RECORDS, base_offset=0)
    later = build_batch([NewRecord(b"after")], base_offset=3)
    # 1. a CRC mismatch: the batch is still shown, flagged; the next batch is read
    view = records_to_json(_corrupt_crc(good) + later, values="text")
    assert view is not None
    first, second = view["batches"]
    assert first["error"]["type"] == "CrcMismatchError" and first["error"]["baseOffset"] == 0
    assert first["error"]["offset"] == 17
    assert [r["value"] for r in first["records"][:2]] == ["hello", None]
    assert first["records"][2]["valueBase64"] == _b64(b"\xff\xfe binary")
    assert second["records"][0]["value"] == "after" and "error" not in second
    # 2. the third record runs past the end of the batch (CRC valid): two records, then the error
    bad_records = _rewrap(good, good[61:-3])
    view = records_to_json(bad_records + later, values="text")
    assert view is not None
    first, second = view["batches"]
    assert [r["offset"] for r in first["records"]] == [0, 1]
    assert first["recordsError"]["type"] == "CorruptRecordError" and "error" not in first
    assert second["records"][0]["value"] == "after"
    # 3. corrupt compressed data: no records, the error
    gz = build_batch(RECORDS, compression="gzip")
    view = records_to_json(_rewrap(gz, gz[61:65] + bytes(b ^ 0x55 for b in gz[65:])))
    assert view is not None
    assert view["batches"][0]["records"] == []
    assert view["batches"][0]["recordsError"]["type"] == "DecompressionError"
    # 4. truncated tail (Fetch max_bytes): complete batches, then the leftover count
    view = records_to_json(good + later[:20])
    assert view is not None
    assert len(view["batches"]) == 1 and view["truncatedBytes"] == 20 and "error" not in view
    # 5. framing error (unknown magic): batches before it, then the error at the top
    weird = bytearray(later)
    weird[16] = 7
    view = records_to_json(good + bytes(weird))
    assert view is not None
    assert len(view["batches"]) == 1 and view["error"]["type"] == "CorruptRecordError"
    assert view["error"]["offset"] == len(good) + 16
    assert "unknown magic 7" in view["error"]["message"]
    summary = records_summary(good + bytes(weird))
    assert (
        summary.startswith(f"{len(good) + len(weird)}B 1 batch 3 records") and "CorruptRecordError" in summary
    )


def _rewrap(batch: bytes, body: bytes) -> bytes:
    head = bytearray(batch[:61])
    head[8:12] = struct.pack(">i", 49 + len(body))
    head[17:21] = struct.pack(">I", crc32c.crc32c(bytes(head[21:]) + body))
    return bytes(head) + body


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_never_raises_on_damaged_records(data: st.DataObject) -> None:
    codec = data.draw(st.sampled_from([c.value for c in Compression]))
    built = build_batch(RECORDS, compression=codec) + build_batch([NewRecord(b"x")], magic=1)
    buf = bytearray(built)
    for _ in range(data.draw(st.integers(1, 6))):
        pos = data.draw(st.integers(0, len(buf) - 1))
        buf[pos] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(buf)))
    for values in ("base64", "text"):
        view = records_to_json(bytes(buf[:cut]), values=values)  # type: ignore[arg-type]
        json.dumps(view)
    records_summary(bytes(buf[:cut]))
