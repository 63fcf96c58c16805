"""Record batches written by real producers, read back by kcodec.records.

confluent-kafka (librdkafka) and kafka-python produce keyed/unkeyed records with null values and
headers (duplicate keys kept) with every codec to librdkafka's mock cluster on 127.0.0.1; kcodec's
own client fetches the stored batches and ``iter_batches`` decodes them.

The mock cluster keeps what producers send: it copies the Produce request's records verbatim and
only overwrites the base offset (bytes 0-7) and the partition leader epoch (bytes 12-15), both
outside the CRC32C, which covers attributes..end.  ``iter_batches`` verifies that CRC (computed by the
producer), so the header fields, the compressed bytes and the records checked here are the
producer's own.  The mock only accepts magic 2 (UNSUPPORTED_VERSION otherwise).

kafka-python 3.0.12 against the mock: by default it probes with ApiVersions v4 (v3 when
``api_version=(2, 5)``); the mock answers flexible ApiVersions requests with an UNSUPPORTED_VERSION
body that is neither valid v3/v4 nor v0 (``test_mock_apiversions_v3_reply_is_malformed``), and
kafka-python then drops the connection instead of retrying lower, so bootstrap times out.  Pinning
``api_version=(2, 3)`` makes it send ApiVersions v2 (the mock's highest) and everything works, for
every codec.  kafka-python also refuses null header values (``headers`` must be (str, bytes) pairs),
so its records carry an empty header value instead.

Each test takes well under a few seconds; everything started is closed/destroyed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from rdkafka_mock import in_process_mock

import kcodec
from kcodec.net.client import Connection
from kcodec.records import Compression, NewRecord, Record, RecordBatch, build_batch, iter_batches
from kcodec.records import compression as comp

pytestmark = pytest.mark.interop

CODECS = [c.value for c in Compression]
FETCH_VERSION = 11  # topic names (v13+ use topic ids); the mock serves Fetch v0-16
Headers = list[tuple[str, bytes | None]]


@pytest.fixture(scope="module")
def mock_cluster() -> Iterator[tuple[str, int]]:
    """A one-broker librdkafka mock cluster: (host, port) of its broker on 127.0.0.1."""
    pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
    with in_process_mock() as address:
        yield address


def _messages(null_header_values: bool) -> list[tuple[bytes | None, bytes | None, Headers, int]]:
    """(key, value, headers, timestamp) of the records to produce: null keys, null values, big values
    (so that compression pays), duplicate header keys, a header with a null (or empty) value."""
    out: list[tuple[bytes | None, bytes | None, Headers, int]] = []
    for i in range(12):
        key = None if i % 5 == 3 else b"key-%d" % i
        value = None if i % 4 == 2 else (b"value %d, " % i) * (1 + 40 * (i % 3))
        headers: Headers = [("dup", b"first"), ("dup", b"second"), ("n", None if null_header_values else b"")]
        if i % 3 == 0:
            headers = [("only", "\u00e9t\u00e9".encode())]
        out.append((key, value, headers, 1_700_000_000_000 + 7 * i))
    return out


def _fetch(host: str, port: int, topic: str, expect: int) -> bytes:
    """The records of partition 0 of ``topic`` from offset 0 (as many fetches as needed)."""
    fetch = kcodec.message_class("FetchRequest")
    data = b""
    offset = 0
    with Connection(host, port, timeout=5) as conn:
        for _ in range(20):
            req = fetch(
                max_wait_ms=0,
                min_bytes=0,
                max_bytes=4 << 20,
                topics=[
                    fetch.FetchTopic(
                        topic=topic,
                        partitions=[
                            fetch.FetchPartition(
                                partition=0, fetch_offset=offset, partition_max_bytes=4 << 20
                            )
                        ],
                    )
                ],
            )
            part = conn.request(req, FETCH_VERSION).body.responses[0].partitions[0]
            assert part.error_code == 0
            chunk = bytes(part.records or b"")
            batches = iter_batches(chunk)
            last = [b.last_offset for b in batches]
            assert batches.truncated_bytes == 0
            data += chunk
            if last:
                offset = last[-1] + 1
            if offset >= expect:
                return data
    raise AssertionError(f"fetched only up to offset {offset} of {expect} records from {topic}")


def _check(
    data: bytes, codec: str, expected: list[tuple[bytes | None, bytes | None, Headers, int]]
) -> list[RecordBatch]:
    batches = list(iter_batches(data))  # CRC32C verified: the producer's bytes
    assert batches and all(isinstance(b, RecordBatch) for b in batches)
    v2 = [b for b in batches if isinstance(b, RecordBatch)]
    records: list[Record] = []
    pid = v2[0].producer_id
    sequence = 0
    for b in v2:
        assert b.magic == 2 and b.compression is Compression(codec)
        assert b.attributes & 0x07 == Compression(codec).id
        assert not b.is_control and not b.is_transactional
        assert b.producer_id == pid and pid >= 0 and b.producer_epoch >= 0  # idempotent producers
        assert b.base_sequence == sequence
        recs = list(b.records())
        assert len(recs) == b.record_count
        sequence += len(recs)
        records += recs
    assert [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in records] == [
        (i, k, v, h, ts) for i, (k, v, h, ts) in enumerate(expected)
    ]
    return v2


def _same_records_section(batch: RecordBatch, data: bytes) -> None:
    """kcodec's builder writes the same uncompressed records section as the producer did."""
    raw = data[batch.position : batch.position + batch.size]
    theirs = (
        raw[61:] if batch.compression is Compression.NONE else comp.decompress(batch.compression, raw[61:])
    )
    ours = build_batch(
        [NewRecord(r.value, key=r.key, headers=r.headers, timestamp=r.timestamp) for r in batch.records()],
        base_offset=batch.base_offset,
    )
    assert ours[61:] == theirs
    if batch.compression is Compression.NONE:  # the whole batch, header fields copied over
        rebuilt = build_batch(
            list(batch.records()),
            base_offset=batch.base_offset,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            partition_leader_epoch=batch.partition_leader_epoch,
        )
        assert rebuilt == raw


@pytest.mark.parametrize("codec", CODECS)
def test_librdkafka_producer_batches(mock_cluster: tuple[str, int], codec: str) -> None:
    ck = pytest.importorskip("confluent_kafka")
    host, port = mock_cluster
    topic = f"rdkafka-{codec}"
    expected = _messages(null_header_values=True)
    producer = ck.Producer(
        {
            "bootstrap.servers": f"{host}:{port}",
            "compression.codec": codec,
            "enable.idempotence": True,
            "linger.ms": 20,
            "message.timeout.ms": 5000,
            "log_level": 0,
        }
    )
    errors: list[Any] = []
    try:
        for key, value, headers, ts in expected:
            producer.produce(
                topic,
                value=value,
                key=key,
                partition=0,
                headers=headers,
                timestamp=ts,
                on_delivery=lambda err, _msg: errors.append(err) if err else None,
            )
        assert producer.flush(5) == 0
    finally:
        del producer
    assert errors == []
    data = _fetch(host, port, topic, len(expected))
    for batch in _check(data, codec, expected):
        _same_records_section(batch, data)
        body = data[batch.position + 61 : batch.position + batch.size]
        if codec == "lz4":  # librdkafka's lz4 frames: independent blocks, no content size
            assert body[:4] == b"\x04\x22\x4d\x18" and body[4] == 0x60
        if codec == "snappy":  # librdkafka writes raw snappy, not the xerial framing
            assert body[:8] != comp.XERIAL_MAGIC


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_producer_batches(mock_cluster: tuple[str, int], codec: str) -> None:
    kafka = pytest.importorskip("kafka", reason="kafka-python is not installed")
    kafka_codec = pytest.importorskip("kafka.codec")

    if codec != "none" and not getattr(kafka_codec, f"has_{codec}")():
        pytest.skip(f"kafka-python has no {codec} library here (test extras: python-snappy, lz4, zstandard)")
    host, port = mock_cluster
    topic = f"kafka-python-{codec}"
    expected = _messages(null_header_values=False)
    producer = kafka.KafkaProducer(
        bootstrap_servers=f"{host}:{port}",
        api_version=(2, 3),  # ApiVersions v2: see the module docstring
        compression_type=None if codec == "none" else codec,
        enable_idempotence=True,
        linger_ms=20,
        request_timeout_ms=5000,
        max_block_ms=5000,
    )
    try:
        futures = [
            producer.send(topic, value=value, key=key, partition=0, headers=headers, timestamp_ms=ts)
            for key, value, headers, ts in expected
        ]
        producer.flush(5)
        assert [f.get(timeout=1).offset for f in futures] == list(range(len(expected)))
    finally:
        producer.close(timeout=2)
    data = _fetch(host, port, topic, len(expected))
    for batch in _check(data, codec, expected):
        _same_records_section(batch, data)
        body = data[batch.position + 61 : batch.position + batch.size]
        if codec == "lz4":  # python-lz4 frames: independent blocks with the content size
            assert body[:4] == b"\x04\x22\x4d\x18" and body[4] == 0x68
        if codec == "snappy":  # kafka-python writes the xerial framing, like Kafka's Java client
            assert body[:8] == comp.XERIAL_MAGIC


def test_mock_apiversions_v3_reply_is_malformed(mock_cluster: tuple[str, int]) -> None:
    """Why kafka-python needs ``api_version=(2, 3)`` here: the mock's answer to ApiVersions v3/v4."""
    host, port = mock_cluster
    req = kcodec.message_class("ApiVersionsRequest")(
        client_software_name="kcodec", client_software_version="test"
    )
    with Connection(host, port, timeout=5) as conn:
        for version in (3, 4):
            raw = conn.receive_raw(conn.send(req, version))
            for as_version in (version, 0):
                with pytest.raises(kcodec.errors.DecodeError):
                    kcodec.decode_response(raw, 18, as_version, strict=True)
        # v2 (what kafka-python sends with api_version=(2, 3)) is answered properly
        assert conn.request(req, 2).body.error_code == 0
