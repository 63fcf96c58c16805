"""What fuzzing Apache Kafka found (benchmarks/fuzz_apache_kafka.py), kept as findings that must still
reproduce on a fresh broker of the release they were found on (tests/fuzz_corpus/apache_kafka/)."""

from __future__ import annotations

from pathlib import Path

import pytest
from apache_kafka import KafkaCluster

from kcodec.fuzz.findings import load_finding
from kcodec.fuzz.replay import replay

FINDINGS = sorted((Path(__file__).resolve().parent / "fuzz_corpus" / "apache_kafka").glob("*.json"))


@pytest.mark.apache_kafka
@pytest.mark.parametrize("path", FINDINGS, ids=[p.stem for p in FINDINGS])
def test_apache_kafka_findings_reproduce(path: Path, apache_kafka: KafkaCluster) -> None:
    """Each finding, replayed alone (kcodec fuzz replay's code path), gets the answer it was recorded
    with, and the broker stays up: these are Kafka's answers to odd input, not crashes."""
    finding = load_finding(path)
    assert path.name.startswith(f"apache-kafka-{apache_kafka.version.rsplit('.', 1)[0]}-")
    host, port = apache_kafka.address
    result = replay(finding, host, port, timeout=10.0)
    assert result.reproduced, result.text()
    assert result.alive
