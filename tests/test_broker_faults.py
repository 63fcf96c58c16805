"""The mock broker's injected faults (kcodec.broker.faults, through the control API): per-request errors
and latency, a broker taken down and brought back, a broker whose metadata lags a leadership change
behind. Raw kcodec requests show what the broker answers; librdkafka (confluent-kafka) and kafka-python
show what clients make of it: retries on retriable errors without loss or duplicates, a broker that is
down, and KIP-232's refusal of stale metadata (librdkafka keeps the newer epoch; kafka-python does not
check). Every wait is bounded."""

from __future__ import annotations

import logging
import time
from typing import Any

import broker_requests as rq
import pytest
from test_broker_raw import CASES, conn_to, partition_of, sample, topic_id

import kcodec
from kcodec.broker import BrokerError, MockCluster
from kcodec.fencing import metadata_staleness, partition_epochs
from kcodec.net.client_errors import ConnectionClosedError
from kcodec.protocol.error_codes import ErrorCode

QUIET = {"log_level": 0}


def error_codes(message: Any) -> list[int]:
    """Every error code field (``error_code``, ``partition_error_code``, ...) in a decoded message, depth
    first."""
    out: list[int] = []
    for name in getattr(message, "_fields_", ()):  # (a message's or struct's fields, in either build)
        value = getattr(message, name, None)
        if name.endswith("error_code") and isinstance(value, int):
            out.append(value)
        elif isinstance(value, list):
            for item in value:
                out.extend(error_codes(item))
        elif hasattr(value, "_fields_"):
            out.extend(error_codes(value))
    return out


# --- raw requests ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster() -> Any:
    with MockCluster(brokers=1) as c:
        c.create_topic("t", 1)
        yield c


@pytest.mark.parametrize(("key", "version"), CASES, ids=[f"{kcodec.api(k).name}-v{v}" for k, v in CASES])
def test_an_injected_error_answers_every_api_at_every_version(
    cluster: MockCluster, key: int, version: int
) -> None:
    tag = f"inj-{key}-{version}"
    if key == 20:
        cluster.create_topic(f"new-{tag}", 1)
    request = sample(key, version, cluster, tag)
    groups = (8, 9, 10, 11, 12, 13, 14)
    error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if key in groups else ErrorCode.NOT_ENOUGH_REPLICAS
    before = cluster.describe("t").log_end_offset
    assert cluster.inject_errors(key, [int(error)]) == 1
    with conn_to(cluster) as conn:
        body = conn.request(request, version).body
        codes = error_codes(body)
        assert error in codes and set(codes) <= {0, error}, (codes, body)  # 0: Fetch's top level
        if key in (0, 1, 2, 8, 23):
            assert partition_of(body).error_code == error
        assert cluster.faults()["pending"] == {}
        assert cluster.describe("t").log_end_offset == before  # a failed Produce appended nothing
        if key == 0:  # the next one is served
            assert partition_of(conn.request(request, version).body).error_code == ErrorCode.NONE


def test_injected_errors_are_per_broker_and_in_order() -> None:
    with MockCluster(brokers=2) as c:
        c.create_topic("o", 1)  # leader: broker 1
        assert c.inject_errors("ListOffsets", [6, 7], broker=1) == 2
        assert c.inject_errors(2, [15]) == 1  # any broker, after broker 1's own queue
        assert c.faults()["pending"] == {"1/2": 2, "any/2": 1}
        with conn_to(c, 1) as other:  # broker 2 takes only from the "any" queue
            got = partition_of(other.request(rq.list_offsets("o", 4), 4).body)
            assert got.error_code == 15
        with conn_to(c, 0) as leader:
            answers = [partition_of(leader.request(rq.list_offsets("o", 4), 4).body) for _ in range(3)]
        assert [a.error_code for a in answers] == [6, 7, 0]
        assert (answers[2].offset, c.faults()["pending"]) == (0, {})


def test_injected_latency_delays_the_answer() -> None:
    with MockCluster(brokers=1) as c:
        c.create_topic("l", 1)
        c.inject_errors("Metadata", [0], latency_ms=400)  # 0: served as usual, after the latency
        with conn_to(c) as conn:
            start = time.monotonic()
            body = conn.request(rq.metadata(["l"], 12), 12).body
            assert time.monotonic() - start >= 0.4  # at least the latency: a sleep never ends early
            assert body.topics[0].error_code == 0 and body.topics[0].partitions[0].leader_epoch == 0


def test_an_injected_error_on_produce_with_acks_0_sends_nothing_and_appends_nothing() -> None:
    with MockCluster(brokers=1) as c:
        c.create_topic("a0", 1)
        tid = topic_id(c, "a0")
        c.inject_errors("Produce", [int(ErrorCode.NOT_LEADER_OR_FOLLOWER)])
        with conn_to(c) as conn:
            conn.send(rq.produce("a0", tid, 9, rq.batch(b"x"), acks=0), 9)  # no response either way
            conn.send(rq.produce("a0", tid, 9, rq.batch(b"y"), acks=0), 9)
            answer = conn.request(rq.metadata(["a0"], 12), 12)  # in order: both produces were handled
            assert answer.body.topics[0].error_code == 0
        assert c.describe("a0").log_end_offset == 1


def test_bad_injections_are_control_errors() -> None:
    with MockCluster(brokers=1) as c:
        for kwargs, message in (
            ({"api": "NoSuchApi", "errors": [6]}, "no API"),
            ({"api": "DescribeAcls", "errors": [6]}, "does not serve"),
            ({"api": "Fetch", "errors": []}, "at least one"),
            ({"api": "Fetch", "errors": [31337]}, "not a Kafka error code"),
            ({"api": "Fetch", "errors": [6], "broker": 9}, "no broker 9"),
            ({"api": "Fetch", "errors": [6], "latency_ms": -1}, "latency_ms"),
        ):
            with pytest.raises(BrokerError, match=message):
                c.inject_errors(kwargs.pop("api"), kwargs.pop("errors"), **kwargs)
        with pytest.raises(BrokerError, match="no broker 7"):
            c.set_broker_down(7)
        with pytest.raises(BrokerError, match="behind"):
            c.stale_metadata(1, -1)
        assert c.faults() == {"pending": {}, "down": [], "stale": {}}


def test_a_broker_that_is_down_closes_connections_and_comes_back_up() -> None:
    with MockCluster(brokers=2) as c:
        c.create_topic("d", 1)
        with conn_to(c, 1) as conn:
            conn.request(rq.metadata(["d"], 12), 12)
            c.set_broker_down(2)
            with pytest.raises((ConnectionClosedError, OSError)):
                conn.request(rq.metadata(["d"], 12), 12)  # the open connection was dropped
        with pytest.raises((ConnectionClosedError, OSError)), conn_to(c, 1) as again:
            again.request(rq.metadata(["d"], 12), 12)  # a new one is closed at once
        with conn_to(c, 0) as up:  # the other broker still lists it (until leaders are moved)
            assert [b.node_id for b in up.request(rq.metadata(["d"], 12), 12).body.brokers] == [1, 2]
        c.set_broker_down(2, down=False)
        with conn_to(c, 1) as back:
            assert back.request(rq.metadata(["d"], 12), 12).body.topics[0].error_code == 0


def test_a_stale_broker_serves_the_leadership_one_change_behind() -> None:
    with MockCluster(brokers=3) as c:
        c.create_topic("m", 2)  # partition 0 led by broker 1, partition 1 by broker 2
        c.move_leader("m", 0, to=2)  # epoch 1
        c.move_leader("m", 0, to=3)  # epoch 2
        c.stale_metadata(2)
        with conn_to(c, 1) as stale, conn_to(c, 0) as fresh:
            old = stale.request(rq.metadata(["m"], 12), 12).body
            new = fresh.request(rq.metadata(["m"], 12), 12).body
        p0 = old.topics[0].partitions[0]
        assert (p0.leader_id, p0.leader_epoch) == (2, 1)  # one change behind
        assert (new.topics[0].partitions[0].leader_id, new.topics[0].partitions[0].leader_epoch) == (3, 2)
        assert old.topics[0].partitions[1].leader_epoch == 0  # never moved: nothing older to show
        # what a KIP-232 client makes of it
        verdict = metadata_staleness(partition_epochs(new), partition_epochs(old))
        found = [(s.topic, s.partition, s.cached_epoch, s.incoming_epoch) for s in verdict.stale_partitions]
        assert found == [("m", 0, 2, 1)]
        c.stale_metadata(2, behind=2)
        with conn_to(c, 1) as staler:
            p0 = staler.request(rq.metadata(["m"], 12), 12).body.topics[0].partitions[0]
        assert (p0.leader_id, p0.leader_epoch) == (1, 0)
        c.stale_metadata(2, behind=0)
        with conn_to(c, 1) as again:
            assert again.request(rq.metadata(["m"], 12), 12).body.topics[0].partitions[0].leader_epoch == 2


# --- real clients -----------------------------------------------------------------------------------------

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")


def _deliver(p: Any, topic: str, values: list[bytes]) -> list[Any]:
    delivered: list[Any] = []
    for v in values:
        p.produce(topic, value=v,
                  on_delivery=lambda err, msg: delivered.append((err, msg.value(), msg.offset())))
        p.poll(0)
    assert p.flush(60) == 0
    return delivered


@pytest.mark.interop
def test_librdkafka_retries_injected_retriable_produce_errors_without_loss_or_duplicates() -> None:
    with MockCluster(brokers=1) as c:
        c.create_topic("r", 1)
        p = ck.Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True, "linger.ms": 5,
                         "retry.backoff.ms": 10, **QUIET})
        _deliver(p, "r", [b"warm-up"])
        codes = [ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIMED_OUT]
        c.inject_errors("Produce", [int(e) for e in codes])
        before = c.broker_request_counts(1)["Produce"]
        values = [f"v{i}".encode() for i in range(30)]
        delivered = _deliver(p, "r", values)
        assert all(err is None for err, _, _ in delivered)
        assert sorted((o, v) for _, v, o in delivered) == [(1 + i, v) for i, v in enumerate(values)]
        assert c.describe("r").log_end_offset == 31  # each once
        retried = c.broker_request_counts(1)["Produce"] - before
        assert retried >= len(codes) + 1  # the failed ones were sent again
        assert c.faults()["pending"] == {}


@pytest.mark.interop
def test_librdkafka_retries_a_request_slower_than_its_timeout_and_the_broker_deduplicates() -> None:
    # The first Produce is held 4 s, longer than the client's 1 s socket timeout (socket.timeout.ms;
    # librdkafka's request.timeout.ms is the acks timeout): librdkafka gives up on it and sends the batch
    # again; the held request is then served too, and the retry is recognised as
    # a duplicate (same producer id, epoch and sequence: ProducerStateManager's last five batches).
    with MockCluster(brokers=1) as c:
        c.create_topic("slow", 1)
        p = ck.Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True,
                         "socket.timeout.ms": 1000,
                         "message.timeout.ms": 60000, "retry.backoff.ms": 10, **QUIET})
        _deliver(p, "slow", [b"warm-up"])
        c.inject_errors("Produce", [0], latency_ms=4000)
        delivered = _deliver(p, "slow", [b"once"])
        assert [(err, v) for err, v, _ in delivered] == [(None, b"once")]
        assert c.describe("slow").log_end_offset == 2  # appended once
        assert c.broker_request_counts(1)["Produce"] >= 3  # warm-up, the held one, the retry


@pytest.mark.interop
def test_librdkafka_consumer_and_kafka_python_consumer_retry_injected_fetch_errors() -> None:
    kafka = pytest.importorskip("kafka", reason="kafka-python is not installed")
    with MockCluster(brokers=1) as c:
        c.create_topic("f", 1)
        c.append("f", 0, [kcodec.records.NewRecord(f"m{i}".encode()) for i in range(10)])
        c.inject_errors("Fetch", [int(ErrorCode.NOT_LEADER_OR_FOLLOWER), int(ErrorCode.UNKNOWN_LEADER_EPOCH)])
        consumer = ck.Consumer({"bootstrap.servers": c.bootstrap, "group.id": "fg",
                                "auto.offset.reset": "earliest", **QUIET})
        try:
            consumer.assign([ck.TopicPartition("f", 0, 0)])
            got: list[Any] = []
            deadline = time.monotonic() + 30
            while len(got) < 10 and time.monotonic() < deadline:
                m = consumer.poll(0.2)
                if m is not None and not m.error():
                    got.append(m.value())
        finally:
            consumer.close()
        assert got == [f"m{i}".encode() for i in range(10)]
        c.inject_errors("Fetch", [int(ErrorCode.NOT_LEADER_OR_FOLLOWER)] * 2)
        kc = kafka.KafkaConsumer(bootstrap_servers=c.bootstrap, auto_offset_reset="earliest",
                                 consumer_timeout_ms=15000)
        try:
            kc.assign([kafka.TopicPartition("f", 0)])
            values = [m.value for _, m in zip(range(10), kc, strict=False)]
        finally:
            kc.close()
        assert values == [f"m{i}".encode() for i in range(10)]
        assert c.faults()["pending"] == {}


@pytest.mark.interop
def test_librdkafka_producer_when_its_leader_goes_down_and_leadership_moves() -> None:
    with MockCluster(brokers=3) as c:
        c.create_topic("dn", 1)  # leader: broker 1
        p = ck.Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True, "linger.ms": 5,
                         "retry.backoff.ms": 10, "topic.metadata.refresh.interval.ms": 500, **QUIET})
        assert all(e is None for e, _, _ in _deliver(p, "dn", [f"a{i}".encode() for i in range(10)]))
        c.set_broker_down(1)
        seen_while_down = c.broker_request_counts(1)
        c.move_leader("dn", 0, to=2)  # what the controller does when a leader dies
        delivered = _deliver(p, "dn", [f"b{i}".encode() for i in range(10)])
        assert all(err is None for err, _, _ in delivered)
        assert sorted(o for _, _, o in delivered) == list(range(10, 20))
        assert c.broker_request_counts(1) == seen_while_down  # nothing reached the broker while down
        c.set_broker_down(1, down=False)
        c.move_leader("dn", 0, to=1)
        assert all(e is None for e, _, _ in _deliver(p, "dn", [f"c{i}".encode() for i in range(10)]))
        info = c.describe("dn")
        assert (info.log_end_offset, info.leader, info.leader_epoch) == (30, 1, 2)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _stale_after_a_move(c: MockCluster, produce: Any) -> tuple[int, int]:
    """Move t's leader from broker 1 to 2, let the client learn it, then make every broker serve the
    leadership one change behind (broker 1, the previous epoch) and produce on: (Produce requests broker
    1 got while stale, Metadata requests answered stale)."""
    c.move_leader("kip232", 0, to=2)
    produce(3)
    before = c.broker_request_counts(1).get("Produce", 0)
    meta_before = sum(c.broker_request_counts(b).get("Metadata", 0) for b in (1, 2))
    c.stale_metadata(1)
    c.stale_metadata(2)
    produce(30)
    stale_answers = sum(c.broker_request_counts(b).get("Metadata", 0) for b in (1, 2)) - meta_before
    return c.broker_request_counts(1).get("Produce", 0) - before, stale_answers


@pytest.mark.interop
def test_librdkafka_refuses_metadata_an_epoch_behind_kip232() -> None:
    # librdkafka (2.1+) keeps each partition's leader epoch and ignores metadata with an older one, as the
    # Java client's Metadata.updateLatestMetadata does (KIP-232): with every broker answering Metadata a
    # leadership change behind, it goes on producing to the current leader.
    with MockCluster(brokers=2) as c:
        c.create_topic("kip232", 1)
        lines = _Lines()
        logger = logging.getLogger("kcodec-tests.librdkafka")
        logger.addHandler(lines)
        logger.setLevel(logging.DEBUG)
        p = ck.Producer({"bootstrap.servers": c.bootstrap, "topic.metadata.refresh.interval.ms": 100,
                         "debug": "metadata,topic", "logger": logger, "log_level": 7, "linger.ms": 0})

        def produce(n: int) -> None:
            for i in range(n):
                assert all(e is None for e, _, _ in _deliver(p, "kip232", [f"v{i}".encode()]))
                time.sleep(0.05)  # let metadata refreshes happen between sends (not a timing assertion)

        produce(3)
        to_old_leader, stale_answers = _stale_after_a_move(c, produce)
        assert stale_answers > 0, "the client asked for metadata while the brokers were stale"
        assert to_old_leader == 0, "librdkafka took the stale leader"
        assert any("older than our cached epoch" in line for line in lines.lines)
        logger.removeHandler(lines)


@pytest.mark.interop
def test_kafka_python_takes_metadata_an_epoch_behind() -> None:
    # The same scenario with kafka-python, which replaces its partition metadata with each response
    # (ClusterMetadata.update_metadata): it follows the stale leader, sends to broker 1, is told
    # NOT_LEADER_OR_FOLLOWER and retries. This is what the stale broker does to a client without KIP-232.
    kafka = pytest.importorskip("kafka", reason="kafka-python is not installed")
    with MockCluster(brokers=2) as c:
        c.create_topic("kip232", 1)
        p = kafka.KafkaProducer(bootstrap_servers=c.bootstrap, metadata_max_age_ms=100, retry_backoff_ms=50)
        try:
            def produce(n: int) -> None:
                for i in range(n):
                    p.send("kip232", value=f"v{i}".encode()).get(timeout=30)
                    time.sleep(0.05)

            produce(3)
            c.move_leader("kip232", 0, to=2)
            produce(3)
            before = c.broker_request_counts(1).get("Produce", 0)
            c.stale_metadata(1)
            c.stale_metadata(2)
            futures = [p.send("kip232", value=f"w{i}".encode()) for i in range(5)]
            deadline = time.monotonic() + 20
            while c.broker_request_counts(1).get("Produce", 0) == before and time.monotonic() < deadline:
                time.sleep(0.1)
                p.send("kip232", value=b"more")
            assert c.broker_request_counts(1).get("Produce", 0) > before, "kafka-python kept the newer leader"
            c.clear_faults()
            for f in futures:
                f.get(timeout=30)
        finally:
            p.close(5)
