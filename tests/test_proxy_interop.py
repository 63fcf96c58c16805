"""Real clients producing and consuming through the live proxy (kcodec.proxy) against real brokers on
127.0.0.1: confluent-kafka (librdkafka) and kafka-python, against librdkafka's mock cluster with three
brokers and against tansu. Checked each time:

- every record produced is consumed (through the proxy, both ways);
- the clients stay on the proxy: every broker address in every Metadata, FindCoordinator and
  DescribeCluster response they received is a proxy listener, and their connections reached more than
  one upstream broker through the per-broker listeners (mock cluster);
- the pcap recorded on the way reads back (``kcodec decode-capture``'s reader) to exactly the frames
  decoded live, timestamps included, with no stream issue.

Each test is bounded in time and stops the proxy, the clients and the brokers it started.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from proxy_runner import ProxyRun, read_back, running_proxy
from rdkafka_mock import MockCluster, MockUnavailable
from tansu_broker import TansuUnavailable, tansu_broker

import kcodec
from kcodec.capture.segments import endpoint

pytestmark = pytest.mark.interop
ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
kafka = pytest.importorskip("kafka", reason="kafka-python is not installed")
ADDRESS_KEYS = {kcodec.api(n).key for n in ("Metadata", "FindCoordinator", "DescribeCluster")}
MOCK_KAFKA_PYTHON = {
    "api_version": (2, 3)
}  # the mock answers ApiVersions v3+ off-spec (test_records_interop)


@pytest.fixture(scope="module")
def mock3() -> Iterator[tuple[str, int]]:
    try:
        cluster = MockCluster(brokers=3)
    except MockUnavailable as e:
        pytest.skip(f"librdkafka mock cluster unavailable: {e}")
    with cluster:
        yield cluster.brokers[0]


@pytest.fixture(scope="module")
def tansu() -> Iterator[tuple[str, int]]:
    try:
        with tansu_broker() as address:
            yield address
    except TansuUnavailable as e:
        pytest.skip(str(e))


def _records(prefix: str, n: int) -> list[tuple[bytes, bytes]]:
    return [(f"{prefix}-k{i}".encode(), f"{prefix}-v{i}".encode()) for i in range(n)]


def _ck_produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "log_level": 0, "linger.ms": 5})
    for key, value in records:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(15) == 0


def _ck_consume(consumer: Any, want: int, seconds: float = 45) -> set[tuple[bytes, bytes]]:
    got: set[tuple[bytes, bytes]] = set()
    deadline = time.monotonic() + seconds
    try:
        while len(got) < want and time.monotonic() < deadline:
            msg = consumer.poll(0.3)
            if msg is not None and not msg.error():
                got.add((msg.key(), msg.value()))
    finally:
        consumer.close()
    return got


def _kp_produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]], **config: Any) -> None:
    """Every record acknowledged: a failed send raises its error here instead of showing up later as
    records missing from what is consumed."""
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, **config)
    try:
        futures = [producer.send(topic, key=key, value=value) for key, value in records]
        producer.flush(30)
        for future in futures:
            future.get(timeout=1)
    finally:
        producer.close(5)


def _kp_consume(consumer: Any, want: int, seconds: float = 45) -> set[tuple[bytes, bytes]]:
    """Polls until every record is in or the deadline passes. The deadline is generous: joining a group
    on a loaded 2-core CI machine has taken longer than kafka-python's 15 s ``consumer_timeout_ms``."""
    got: set[tuple[bytes, bytes]] = set()
    deadline = time.monotonic() + seconds
    try:
        while len(got) < want and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=300).values():
                got.update((msg.key, msg.value) for msg in batch)
    finally:
        consumer.close()
    return got


def _story(run: ProxyRun) -> str:
    """What went through the proxy, for an assertion's message: frames counted by API and direction,
    every error a frame carries, and the proxy's notices but for listening, rewriting and closing."""
    counts: dict[str, int] = {}
    for f in run.frames():
        name = f"{f.api_name} {f.direction}"
        counts[name] = counts.get(name, 0) + 1
    errors = [f.error for f in run.frames() if f.error is not None]
    notices = [
        f"{n.kind}: {n.message}" for n in run.notices() if n.kind not in ("listening", "rewritten", "closed")
    ]
    return f"frames {counts}; frame errors {errors}; notices {notices}"


def _advertised(frame: Any) -> list[tuple[str, int]]:
    """Every (host, port) a decoded response body advertises (brokers, coordinators)."""
    out: list[tuple[str, int]] = []
    body = frame.body
    holders = list(getattr(body, "brokers", None) or []) + list(getattr(body, "coordinators", None) or [])
    if frame.api_key == kcodec.api("FindCoordinator").key and frame.api_version < 4:
        holders.append(body)
    for h in holders:
        if h.host and h.port >= 0:
            out.append((h.host, h.port))
    return out


def _check_stays_on_proxy(run: ProxyRun) -> set[str]:
    """The clients were only ever told about proxy listeners; the upstream brokers they reached."""
    listeners = {local for _, local in run.proxy.listeners}
    told = [
        ep
        for f in run.frames()
        if f.direction == "response" and f.api_key in ADDRESS_KEYS and f.body is not None
        for ep in _advertised(f)
    ]
    assert told, "no broker addresses seen"
    assert set(told) <= listeners, f"clients were told about {set(told) - listeners}"
    return {str(n.upstream) for n in run.notices("closed")}


def _check_recording(run: ProxyRun, pcap: Path) -> None:
    live = [f.to_dict() for f in run.frames()]
    back, others = read_back(pcap, run.listener_ports())
    assert others == []
    assert len(back) == len(live) > 0
    assert back == live
    assert all(f["error"] is None for f in live), [f["error"] for f in live if f["error"]]
    assert run.notices("unrewritten") == [] and run.notices("protocol") == []


def test_confluent_kafka_through_the_proxy_to_three_mock_brokers(
    mock3: tuple[str, int], tmp_path: Path
) -> None:
    pcap = tmp_path / "ck.pcap"
    records = _records("ck", 60)
    with running_proxy(mock3, pcap=pcap) as run:
        _ck_produce(run.bootstrap, "ck-orders", records)
        consumer = ck.Consumer(
            {
                "bootstrap.servers": run.bootstrap,
                "group.id": "ck-group",
                "auto.offset.reset": "earliest",
                "log_level": 0,
            }
        )
        consumer.subscribe(["ck-orders"])
        assert _ck_consume(consumer, len(records)) == set(records), _story(run)
        seen = {
            (b.host, b.port)
            for b in ck.Producer({"bootstrap.servers": run.bootstrap}).list_topics(timeout=5).brokers.values()
        }
        assert seen == {local for _, local in run.proxy.listeners}
        assert len(run.proxy.listeners) == 3
    reached = _check_stays_on_proxy(run)
    assert len(reached) >= 2, reached  # partitions led by several brokers, each through its listener
    assert {endpoint(*b) for b, _ in run.proxy.listeners} >= reached
    _check_recording(run, pcap)


def test_kafka_python_through_the_proxy_to_three_mock_brokers(mock3: tuple[str, int], tmp_path: Path) -> None:
    pcap = tmp_path / "kp.pcap"
    records = _records("kp", 40)
    with running_proxy(mock3, pcap=pcap) as run:
        _kp_produce(run.bootstrap, "kp-orders", records, linger_ms=5, **MOCK_KAFKA_PYTHON)
        consumer = kafka.KafkaConsumer(
            "kp-orders",
            bootstrap_servers=run.bootstrap,
            group_id="kp-group",
            auto_offset_reset="earliest",
            **MOCK_KAFKA_PYTHON,
        )
        assert _kp_consume(consumer, len(records)) == set(records), _story(run)
    reached = _check_stays_on_proxy(run)
    assert len(reached) >= 2, reached
    kinds = {(f.api_name, f.direction) for f in run.frames()}
    assert {("FindCoordinator", "response"), ("JoinGroup", "response"), ("Fetch", "response")} <= kinds
    _check_recording(run, pcap)


def test_both_clients_through_the_proxy_to_tansu(tansu: tuple[str, int], tmp_path: Path) -> None:
    """tansu completes a consumer group's JoinGroup only after the rebalance timeout (also without the
    proxy), so the consumers here are assigned their partitions."""
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka.admin import KafkaAdminClient

    pcap = tmp_path / "tansu.pcap"
    ck_records, kp_records = _records("ck", 30), _records("kp", 20)
    with running_proxy(tansu, pcap=pcap) as run:
        admin = AdminClient({"bootstrap.servers": run.bootstrap, "log_level": 0})
        for future in admin.create_topics([NewTopic("tansu-orders", 3, 1)]).values():
            future.result(10)
        _ck_produce(run.bootstrap, "tansu-orders", ck_records)
        _kp_produce(run.bootstrap, "tansu-orders", kp_records)
        everything = set(ck_records) | set(kp_records)
        consumer = ck.Consumer({"bootstrap.servers": run.bootstrap, "group.id": "unused", "log_level": 0})
        consumer.assign([ck.TopicPartition("tansu-orders", p, 0) for p in range(3)])
        assert _ck_consume(consumer, len(everything)) == everything, _story(run)
        kp_consumer = kafka.KafkaConsumer(bootstrap_servers=run.bootstrap)
        kp_consumer.assign([kafka.TopicPartition("tansu-orders", p) for p in range(3)])
        kp_consumer.seek_to_beginning()
        assert _kp_consume(kp_consumer, len(everything)) == everything, _story(run)
        kp_admin = KafkaAdminClient(bootstrap_servers=run.bootstrap)
        cluster = kp_admin.describe_cluster()  # DescribeCluster v1 (tansu offers it)
        kp_admin.close()
        assert [(b["host"], b["port"]) for b in cluster["brokers"]] == [run.address]
    _check_stays_on_proxy(run)
    described = [f for f in run.frames() if f.api_name == "DescribeCluster" and f.direction == "response"]
    assert described and _advertised(described[0]) == [run.address]
    assert len(run.notices("rewritten")) >= 3
    _check_recording(run, pcap)


def test_kcat_through_the_proxy(mock3: tuple[str, int], tmp_path: Path) -> None:
    """kcat (Debian's, librdkafka inside): its metadata listing names only proxy listeners; what it
    produces through the proxy it consumes back through the proxy."""
    import json
    import shutil
    import subprocess

    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.skip("kcat is not installed (Debian package kcat)")
    pcap = tmp_path / "kcat.pcap"
    lines = [f"line {i}" for i in range(20)]
    with running_proxy(mock3, pcap=pcap) as run:
        base = [kcat, "-b", run.bootstrap, "-X", "log_level=0"]
        listing = subprocess.run([*base, "-L", "-J"], capture_output=True, text=True, timeout=30, check=True)
        brokers = {
            (b["name"].rsplit(":", 1)[0], int(b["name"].rsplit(":", 1)[1].split("/")[0]))
            for b in json.loads(listing.stdout)["brokers"]
        }
        assert brokers == {local for _, local in run.proxy.listeners}
        subprocess.run(
            [*base, "-P", "-t", "kcat-lines"],
            input="\n".join(lines) + "\n",
            text=True,
            timeout=30,
            check=True,
        )
        consumed = subprocess.run(
            [*base, "-C", "-t", "kcat-lines", "-o", "beginning", "-e", "-q"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        assert sorted(consumed.stdout.splitlines()) == sorted(lines)
    _check_stays_on_proxy(run)
    _check_recording(run, pcap)
