"""Real traffic against Apache Kafka 4.4.0: the committed captures decode clean, and kcodec's JSON of
every frame is what Kafka's own classes read from the same bytes (issue 35).

The captures (``tools/record_apache_captures.py`` and ``tools/make_sample_capture.py`` re-record
them): ``tests/captures/apache_kafka_java.pcap`` (Kafka's Java tools and clients from the 4.4.0 jars),
``apache_kafka_librdkafka.pcap`` (confluent-kafka), ``apache_kafka_python.pcap`` (kafka-python), all
recorded with tcpdump on loopback, and ``samples/sample.pcap`` (confluent-kafka through a recording
proxy, the README's first command).

- ``decode-capture`` reads every frame of them with no issue, no undecodable frame and no diagnostic
  (``--fail-on issues,errors,diagnostics`` exits 0), and the frame counts are the recorded ones.
- For every frame, Kafka 4.4.0's generated classes (the oracle, tests/kafka_oracle.py) decode the
  header (``RequestHeaderData`` / ``ResponseHeaderData`` at the frame's header version) from the
  frame's bytes after the size prefix; the bytes the header leaves are the body, which they decode
  with ``<Api>RequestData`` / ``<Api>ResponseData`` at the frame's version, consuming every byte. The
  JsonConverter JSON of both must equal the ``header`` and ``body`` of ``decode-capture --json``
  (records fields: the oracle gives the record bytes as base64, as ``--records raw`` does).
"""

from __future__ import annotations

import base64
import json
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kafka_oracle as ko
import pytest
from click.testing import CliRunner
from golden_data import same

import kcodec
from kcodec.capture import CapturedFrame, CaptureIssue, iter_capture
from kcodec.cli import main

pytestmark = pytest.mark.xdist_group("kafka-oracle")  # one worker: the oracle JVMs run one at a time

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "tests" / "captures"
SAMPLE = ROOT / "samples" / "sample.pcap"

# file -> (connections, frames) as recorded (tcpdump on loopback; the sample through the proxy)
RECORDED: dict[Path, tuple[int, int]] = {
    CAPTURES / "apache_kafka_java.pcap": (39, 290),
    CAPTURES / "apache_kafka_librdkafka.pcap": (20, 182),
    CAPTURES / "apache_kafka_python.pcap": (9, 74),
    SAMPLE: (5, 46),
}
FILES = sorted(RECORDED)
IDS = [p.name for p in FILES]  # sample.pcap: samples/


def decoded(path: Path) -> tuple[list[CapturedFrame], list[CaptureIssue]]:
    frames: list[CapturedFrame] = []
    issues: list[CaptureIssue] = []
    for event in iter_capture(path):
        (frames if isinstance(event, CapturedFrame) else issues).append(event)  # type: ignore[arg-type]
    return frames, issues


def cli_frames(path: Path) -> list[dict[str, Any]]:
    result = CliRunner().invoke(main, ["decode-capture", str(path), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return [e for e in events if e["type"] == "frame"]


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_capture_decodes_clean(path: Path) -> None:
    frames, issues = decoded(path)
    assert issues == []
    bad = [(f.connection, f.api_name, f.api_version, f.error, f.diagnostics) for f in frames
           if not f.ok or f.diagnostics]
    assert bad == []
    assert (len({f.connection for f in frames}), len(frames)) == RECORDED[path]
    result = CliRunner().invoke(
        main, ["decode-capture", str(path), "--fail-on", "issues,errors,diagnostics"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def oracle() -> Iterator[ko.Oracle]:
    try:
        running = ko.start(("4.4.0",))
    except ko.OracleUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"Kafka oracle unavailable in CI: {exc}")
        pytest.skip(f"Kafka oracle unavailable: {exc}")
    try:
        yield running
    finally:
        running.stop()


def _class(oracle: ko.Oracle, name: str) -> str:
    kafka = oracle.kafka_class(name)
    assert kafka is not None, f"Kafka 4.4.0 has no class for {name}"
    return kafka.name


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_kcodec_json_is_what_kafka_reads(path: Path, oracle: ko.Oracle) -> None:
    frames, _ = decoded(path)
    shown = {(e["connection"], e["direction"], e["stream_offset"]): e for e in cli_frames(path)}
    assert len(shown) == len(frames) == RECORDED[path][1]
    headers = []
    for f in frames:
        kind = "RequestHeader" if f.direction == "request" else "ResponseHeader"
        headers.append({"op": "decode", "class": _class(oracle, kind), "version": f.header_version,
                        "hex": f.raw[4:].hex()})
    header_answers = oracle.batch(headers)
    bodies = []
    for f, answer in zip(frames, header_answers, strict=True):
        assert "error" not in answer, (f.connection, f.api_name, answer)
        body = f.raw[len(f.raw) - answer["remaining"]:]
        name = f"{f.api_name}{'Request' if f.direction == 'request' else 'Response'}"
        bodies.append(
            {"op": "decode", "class": _class(oracle, name), "version": f.api_version, "hex": body.hex()}
        )
    body_answers = oracle.batch(bodies)
    disagreements = []
    for f, head, answer in zip(frames, header_answers, body_answers, strict=True):
        ours = shown[(f.connection, f.direction, f.stream_offset)]
        where = f"#{f.connection} {f.direction} {f.api_name} v{f.api_version} corr {f.correlation_id}"
        if "error" in answer or answer["remaining"] != 0:
            disagreements.append(f"{where}: Kafka cannot read the body: {answer}")
        elif not same(answer["json"], ours["body"]):
            disagreements.append(f"{where}: Kafka {answer['json']} != kcodec {ours['body']}")
        if not same(head["json"], ours["header"]):
            disagreements.append(f"{where}: header: Kafka {head['json']} != kcodec {ours['header']}")
    assert disagreements == []


CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
# file -> (codecs of the produced record batches, APIs that must be there: groups, transactions, admin)
COVERAGE: dict[str, tuple[set[str], set[str]]] = {
    "apache_kafka_java.pcap": (
        set(CODEC_NAMES),
        # KIP-890's transaction version 2: no AddOffsetsToTxn from the client, the broker's own
        # AddPartitionsToTxn v5 (its verification) instead
        {"JoinGroup", "ConsumerGroupHeartbeat", "CreateTopics", "DescribeGroups", "InitProducerId",
         "AddPartitionsToTxn", "TxnOffsetCommit", "EndTxn", "WriteTxnMarkers", "ListTransactions"},
    ),
    "apache_kafka_librdkafka.pcap": (
        set(CODEC_NAMES),
        {"JoinGroup", "OffsetCommit", "CreateTopics", "CreatePartitions", "DeleteTopics", "DescribeConfigs",
         "ListGroups", "InitProducerId", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn"},
    ),
    "apache_kafka_python.pcap": ({"none", "gzip"}, {"JoinGroup", "OffsetCommit", "CreateTopics"}),
    "sample.pcap": ({"none"}, {"ConsumerGroupHeartbeat", "OffsetCommit"}),
}


def batch_codecs(records: bytes) -> set[str]:
    """The compression codec of each record batch (magic 2: attributes at byte 21, codec in bits 0-2)."""
    codecs, at = set(), 0
    while at + 23 <= len(records):
        (length,) = struct.unpack_from(">i", records, at + 8)
        (attributes,) = struct.unpack_from(">h", records, at + 21)
        codecs.add(CODEC_NAMES[attributes & 7])
        at += 12 + length
    return codecs


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_capture_covers_codecs_groups_transactions_and_admin(path: Path) -> None:
    frames, _ = decoded(path)
    codecs: set[str] = set()
    for f in frames:
        if f.api_name == "Produce" and f.direction == "request":
            assert f.body is not None and f.api_version is not None
            body = kcodec.to_json(f.body, f.api_version)
            for topic in body["topicData"]:
                for partition in topic["partitionData"]:
                    codecs |= batch_codecs(base64.b64decode(partition["records"] or ""))
    want_codecs, want_apis = COVERAGE[path.name]
    assert codecs == want_codecs
    assert want_apis <= {f.api_name for f in frames}
