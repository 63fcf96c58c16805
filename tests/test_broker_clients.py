"""Real Kafka clients against kcodec's mock broker on 127.0.0.1: confluent-kafka (librdkafka),
kafka-python and kcat produce and consume through it (every compression codec, keys, headers, consumer
groups, committed offsets with leader epochs), and librdkafka's consumer detects an unclean leader
election's truncation through OffsetsForLeaderEpoch (KIP-320). Every test is bounded in time."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kcodec.broker import MockCluster
from kcodec.records import NewRecord

pytestmark = pytest.mark.interop
ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
QUIET = {"log_level": 0}


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as c:
        yield c


def consume(
    consumer: Any, count: int, timeout: float = 20.0, *, stop_on_error: bool = False
) -> tuple[list[Any], list[Any]]:
    """Poll until ``count`` messages arrived (or an error, or ``timeout``): (messages, errors)."""
    got: list[Any] = []
    errors: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline and not (stop_on_error and errors):
        m = consumer.poll(0.2)
        if m is None:
            continue
        (errors if m.error() else got).append(m)
    return got, errors


def rdkafka_produce(bootstrap: str, topic: str, messages: list[tuple[bytes, bytes]], **conf: Any) -> None:
    p = ck.Producer({"bootstrap.servers": bootstrap, **QUIET, **conf})
    failed: list[Any] = []
    for key, value in messages:
        p.produce(topic, key=key, value=value, headers=[("codec", conf.get("compression.type", "none").encode()),
                                                         ("n", value)],
                  on_delivery=lambda err, msg: failed.append(err) if err else None)
    assert p.flush(20) == 0 and failed == []


# --- confluent-kafka / librdkafka ---------------------------------------------------------------------


def test_librdkafka_every_codec_keys_headers_group_and_commits(cluster: MockCluster) -> None:
    cluster.create_topic("rd", 3)
    sent = {}
    for codec in CODECS:
        msgs = [(f"{codec}-k{i}".encode(), f"{codec}-v{i}".encode()) for i in range(20)]
        rdkafka_produce(cluster.bootstrap, "rd", msgs, **{"compression.type": codec, "linger.ms": 20})
        sent.update(dict(msgs))
    c = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "rd-group", "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, **QUIET})
    try:
        c.subscribe(["rd"])
        got, errors = consume(c, len(sent))
        assert errors == []
        assert {m.key(): m.value() for m in got} == sent
        for m in got:
            headers = dict(m.headers())
            assert headers["n"] == m.value() and m.value().startswith(headers["codec"])
            assert m.leader_epoch() == 0
        committed = c.commit(asynchronous=False)
        assert sorted((tp.partition, tp.offset, tp.leader_epoch) for tp in committed) == [
            (p, cluster.describe("rd", p).log_end_offset, 0) for p in range(3)
        ]
        again = c.committed([ck.TopicPartition("rd", p) for p in range(3)], timeout=10)
        assert [(tp.offset, tp.leader_epoch) for tp in again] == [(tp.offset, 0) for tp in committed]
    finally:
        c.close()
    used = cluster.request_counts()
    assert {"Produce", "Fetch", "JoinGroup", "SyncGroup", "OffsetCommit", "OffsetFetch"} <= set(used)
    print("librdkafka used:", used)


def test_librdkafka_consumer_group_shares_partitions(cluster: MockCluster) -> None:
    cluster.create_topic("grp", 4)
    msgs = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(200)]
    rdkafka_produce(cluster.bootstrap, "grp", msgs)
    conf = {"bootstrap.servers": cluster.bootstrap, "group.id": "shared", "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "range", "session.timeout.ms": 6000, "enable.auto.commit": False,
            **QUIET}
    a, b = ck.Consumer(conf), ck.Consumer(conf)
    try:
        a.subscribe(["grp"])
        b.subscribe(["grp"])
        # Until both have joined, the first may read partitions the rebalance then hands to the second,
        # which reads them again from the start (nothing was committed): at least once, as in Kafka.
        got: list[Any] = []
        wanted = {v for _, v in msgs}

        def split() -> tuple[set[int], set[int]]:
            return {tp.partition for tp in a.assignment()}, {tp.partition for tp in b.assignment()}

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
            {v for _, _, v in got} != wanted or sorted(map(len, split())) != [2, 2]
        ):
            for c in (a, b):
                m = c.poll(0.1)
                if m is not None and not m.error():
                    got.append((c is a, m.partition(), m.value()))
        assert {v for _, _, v in got} == wanted
        assert sorted(map(len, split())) == [2, 2] and not split()[0] & split()[1]
        assert {is_a for is_a, _, _ in got} == {True, False}  # both consumed
        for c in (a, b):
            c.commit(asynchronous=False)
    finally:
        a.close()
        b.close()
    g = cluster.call(lambda: cluster.state.groups.groups["shared"])
    assert {k: v.offset for k, v in g.offsets.items()} == {
        ("grp", p): cluster.describe("grp", p).log_end_offset for p in range(4)
    }


def _read_old(cluster: MockCluster, reset: str, assign: bool) -> Any:
    cluster.create_topic("u", 1)
    for i in range(10):  # ten batches, offsets 0-9, leader epoch 0
        cluster.append("u", 0, [NewRecord(f"old-{i}".encode())])
    conf = {"bootstrap.servers": cluster.bootstrap, "group.id": f"trunc-{reset}", "auto.offset.reset": reset,
            "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 500, **QUIET}
    c = ck.Consumer(conf)
    if assign:
        c.assign([ck.TopicPartition("u", 0, 0)])
    else:
        c.subscribe(["u"])
    got, errors = consume(c, 10)
    assert errors == [] and [(m.offset(), m.leader_epoch()) for m in got] == [(i, 0) for i in range(10)]
    return c


def test_librdkafka_resets_to_the_divergence_after_an_unclean_election(cluster: MockCluster) -> None:
    c = _read_old(cluster, "earliest", assign=False)
    try:
        info = cluster.unclean_election("u", 0, truncate_to=5, records=[NewRecord(f"new-{i}".encode()) for i in range(3)])
        assert (info.leader_epoch, info.log_end_offset) == (1, 8)
        got, errors = consume(c, 3)
        # KIP-320: the fetch at epoch 0 is fenced, the consumer learns epoch 1 from Metadata, asks
        # OffsetsForLeaderEpoch(epoch 0) -> (0, 5), sees 5 < its position 10 and seeks back to 5.
        assert errors == []
        assert [(m.offset(), m.leader_epoch(), m.value()) for m in got] == [
            (5 + i, 1, f"new-{i}".encode()) for i in range(3)
        ]
    finally:
        c.close()
    assert "OffsetForLeaderEpoch" in cluster.request_counts()


def test_librdkafka_reports_the_truncation_without_a_reset_policy(cluster: MockCluster) -> None:
    c = _read_old(cluster, "error", assign=True)
    try:
        cluster.unclean_election("u", 0, truncate_to=5, records=[NewRecord(b"new")])
        got, errors = consume(c, 1, timeout=15, stop_on_error=True)
        assert got == [] and errors, "the consumer must not read past the truncation"
        text = errors[0].error().str()
        assert "Partition log truncation detected at offset 10 (leader epoch 0)" in text
        assert "broker end offset is 5 (offset leader epoch 0)" in text
    finally:
        c.close()


def test_librdkafka_producer_follows_a_leader_move(cluster: MockCluster) -> None:
    cluster.create_topic("move", 1)
    p = ck.Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, **QUIET})
    delivered: list[Any] = []
    for i in range(50):
        p.produce("move", value=f"{i}".encode(), on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
        if i == 25:
            p.flush(10)
            cluster.move_leader("move", 0)
    assert p.flush(30) == 0
    assert all(err is None for err, _ in delivered) and sorted(o for _, o in delivered) == list(range(50))
    info = cluster.describe("move")
    assert (info.leader_epoch, info.log_end_offset) == (1, 50)
    assert "InitProducerId" in cluster.request_counts()


def test_librdkafka_idempotent_producer_goes_on_after_an_unclean_election(cluster: MockCluster) -> None:
    # The new leader of an unclean election kept only offsets 0-4 (another writer's): it has no state for
    # the idempotent producer, whose next batch then carries sequence 20. Kafka accepts it
    # (ProducerAppendInfo.checkSequence: no current producer epoch, any sequence); refusing it with
    # OUT_OF_ORDER_SEQUENCE_NUMBER makes librdkafka's idempotent producer fail fatally.
    cluster.create_topic("idem-u", 1)
    cluster.append("idem-u", 0, [NewRecord(f"other-{i}".encode()) for i in range(5)])
    fatal: list[Any] = []
    p = ck.Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "linger.ms": 0,
                     "error_cb": fatal.append, **QUIET})
    delivered: list[Any] = []

    def send(values: list[bytes]) -> None:
        for v in values:
            p.produce("idem-u", value=v,
                      on_delivery=lambda err, msg: delivered.append((err, msg.value(), msg.offset())))
            p.poll(0)
        assert p.flush(30) == 0

    before = [f"before-{i}".encode() for i in range(20)]
    send(before)
    assert [(e, o) for e, _, o in delivered] == [(None, 5 + i) for i in range(20)]
    info = cluster.unclean_election("idem-u", 0, truncate_to=5)
    assert (info.log_end_offset, info.leader_epoch) == (5, 1)
    delivered.clear()
    after = [f"after-{i}".encode() for i in range(20)]
    send(after)
    assert fatal == [] and all(err is None for err, _, _ in delivered), (fatal, delivered[:3])
    assert sorted((o, v) for _, v, o in delivered) == [(5 + i, v) for i, v in enumerate(after)]
    assert cluster.describe("idem-u").log_end_offset == 25


# --- kafka-python -------------------------------------------------------------------------------------


def test_kafka_python_every_codec_group_and_commits(cluster: MockCluster) -> None:
    kafka = pytest.importorskip("kafka", reason="kafka-python is not installed")
    cluster.create_topic("kp", 2)
    sent = {}
    for codec in CODECS:
        p = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap, compression_type=None if codec == "none" else codec)
        for i in range(10):
            key, value = f"{codec}-k{i}".encode(), f"{codec}-v{i}".encode()
            p.send("kp", key=key, value=value, headers=[("codec", codec.encode())])
            sent[key] = value
        p.flush(20)
        p.close(5)
    c = kafka.KafkaConsumer("kp", bootstrap_servers=cluster.bootstrap, group_id="kp-group",
                            auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=8000)
    try:
        got = {}
        for m in c:
            got[m.key] = m.value
            assert dict(m.headers)["codec"] in m.value
            if len(got) == len(sent):
                break
        assert got == sent
        # What commit() sends: each position with the leader epoch kafka-python knows for it. That is
        # the epoch of the last record it returned, or -1 once it has drained an empty fetch for the
        # partition (kafka-python resets the epoch then), which depends on timing.
        positions = c._subscription.all_consumed_offsets()
        c.commit()
        committed = [c.committed(kafka.TopicPartition("kp", p)) for p in range(2)]
        assert committed == [cluster.describe("kp", p).log_end_offset for p in range(2)]
    finally:
        c.close()
    stored = cluster.call(lambda: cluster.state.groups.groups["kp-group"].offsets)
    sent_epochs = {tp.partition: pos.leader_epoch for tp, pos in positions.items()}
    # the partition of the last record returned always has its epoch: the loop stopped right there
    assert 0 in sent_epochs.values() and set(sent_epochs.values()) <= {0, -1}
    # KIP-320: the broker keeps the committed leader epoch exactly as the client sent it
    assert {partition: v.leader_epoch for (_, partition), v in stored.items()} == sent_epochs
    print("kafka-python used:", cluster.request_counts())


def test_kafka_python_and_librdkafka_read_each_others_records(cluster: MockCluster) -> None:
    kafka = pytest.importorskip("kafka", reason="kafka-python is not installed")
    cluster.create_topic("x", 1)
    p = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap, compression_type="zstd")
    p.send("x", key=b"from", value=b"kafka-python", headers=[("h", b"1")])
    p.flush(10)
    p.close(5)
    rdkafka_produce(cluster.bootstrap, "x", [(b"from", b"librdkafka")], **{"compression.type": "lz4"})
    c = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "x1", "auto.offset.reset": "earliest", **QUIET})
    c.subscribe(["x"])
    got, _ = consume(c, 2)
    c.close()
    assert [m.value() for m in got] == [b"kafka-python", b"librdkafka"]
    kc = kafka.KafkaConsumer("x", bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=5000)
    values = [m.value for _, m in zip(range(2), kc, strict=False)]
    kc.close()
    assert values == [b"kafka-python", b"librdkafka"]


# --- kcat ---------------------------------------------------------------------------------------------


def test_kcat_produces_and_consumes(cluster: MockCluster) -> None:
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        pytest.skip("kcat is not installed (Debian package kcat)")
    cluster.create_topic("kc", 1)
    lines = "".join(f"k{i}:v{i}\n" for i in range(5))
    subprocess.run([kcat, "-b", cluster.bootstrap, "-t", "kc", "-P", "-K:", "-z", "snappy"], input=lines.encode(),
                   check=True, timeout=30, capture_output=True)
    out = subprocess.run([kcat, "-b", cluster.bootstrap, "-t", "kc", "-C", "-o", "beginning", "-e", "-f", "%k=%s@%o\n"],
                         check=True, timeout=30, capture_output=True).stdout.decode()
    assert out.splitlines() == [f"k{i}=v{i}@{i}" for i in range(5)]
