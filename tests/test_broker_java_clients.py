"""Kafka's Java clients (KafkaProducer, KafkaConsumer from kafka-clients 4.4.0, driven by
tests/java_clients/KafkaClientDriver.java) against kcodec's mock broker: produce, consume in a group,
position validation through OffsetsForLeaderEpoch after a leader change (KIP-320), truncation after an
unclean election, and the validation of a committed offset when a consumer restarts, which the Java
consumer does and librdkafka and kafka-python do not. Work ends on counts; timeouts are safety nets.
Without java, javac or Maven these tests skip with one line (and fail when CI is set)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from java_driver import JavaRun, needs_java, records, run

from kcodec.broker import MockCluster
from kcodec.protocol.registry import api
from kcodec.records import NewRecord

pytestmark = pytest.mark.interop
POLLS = 300  # the driver's cap on polls (1 s each at most): a safety net, the runs end on counts


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    needs_java()
    with MockCluster(brokers=3) as c:
        yield c


RequestLog = list[tuple[str | None, str, list[tuple[str, int, int]]]]


def record_requests(cluster: MockCluster) -> RequestLog:
    """The requests every broker of ``cluster`` answers from now on, in order: (client id, API name,
    [(topic, partition, leader epoch)] for OffsetForLeaderEpoch and OffsetFetch)."""
    log: RequestLog = []

    def install() -> None:
        for server in cluster.inner.servers:
            handle = server._handle

            async def recorded(ctx: Any, key: int, body: Any, handle: Any = handle) -> Any:
                log.append((ctx.client_id, api(key).name, _partitions(api(key).name, body)))
                return await handle(ctx, key, body)

            server._handle = recorded  # type: ignore[method-assign]

    cluster.call(install)
    return log


def _partitions(name: str, body: Any) -> list[tuple[str, int, int]]:
    if name == "OffsetForLeaderEpoch":
        return [(t.topic, p.partition, p.leader_epoch) for t in body.topics for p in t.partitions]
    if name == "OffsetFetch":
        groups = getattr(body, "groups", None) or [body]
        return [(t.name, i, -1) for g in groups for t in (g.topics or []) for i in t.partition_indexes]
    return []


def _append(cluster: MockCluster, topic: str, values: list[str]) -> None:
    for v in values:  # one batch each, as a producer with no linger would write them
        cluster.append(topic, 0, [NewRecord(v.encode())])


# --- produce, consume in a group ----------------------------------------------------------------------


def test_java_producer_and_group_consumer_exactly_once_in_order(cluster: MockCluster) -> None:
    cluster.create_topic("jv", 3)
    produced = run("produce", cluster.bootstrap, "jv", 300, 3)
    assert produced[0]["produced"] == 300
    assert {p: sorted(o) for p, o in produced[0]["offsets"].items()} == {
        str(p): list(range(100)) for p in range(3)
    }
    events = run("consume", cluster.bootstrap, "jv", "jv-group", 300, "earliest", "subscribe", "true", POLLS)
    got = records(events)
    assert len(got) == 300 and len({v for *_, v in got}) == 300
    for p in range(3):  # exactly the partition's records, in offset order, at leader epoch 0
        mine = [(o, e, v) for q, o, e, v in got if q == p]
        assert mine == [(i, 0, f"m-{3 * i + p:05d}") for i in range(100)]
    committed = next(e["committed"] for e in events if "committed" in e)
    assert sorted(committed) == [[p, 100, 0] for p in range(3)]
    stored = cluster.call(lambda: cluster.state.groups.groups["jv-group"].offsets)
    assert {k: (v.offset, v.leader_epoch) for k, v in stored.items()} == {
        ("jv", p): (100, 0) for p in range(3)
    }
    used = cluster.request_counts()
    assert {
        "InitProducerId",
        "Produce",
        "FindCoordinator",
        "JoinGroup",
        "SyncGroup",
        "OffsetFetch",
        "Fetch",
        "OffsetCommit",
    } <= set(used)
    print("Java clients used:", used)


# --- KIP-320: validation after a leader change, truncation ----------------------------------------------


def test_java_consumer_validates_its_position_after_a_leader_change(cluster: MockCluster) -> None:
    cluster.create_topic("mv", 1)
    _append(cluster, "mv", [f"a-{i}" for i in range(20)])
    log = record_requests(cluster)
    r = JavaRun("consume", cluster.bootstrap, "mv", "mv-group", 40, "earliest", "subscribe", "true", POLLS)
    try:
        first = []
        for event in r.events():
            if "record" in event:
                first.append(event)
            if len(first) == 20:
                break
        moved_at = len(log)
        info = cluster.move_leader("mv", 0)
        assert info.leader_epoch == 1
        _append(cluster, "mv", [f"b-{i}" for i in range(20)])
        rest = r.finish()
    finally:
        r.stop()
    got = records(first) + records(rest)
    assert got == [(0, i, 0, f"a-{i}") for i in range(20)] + [(0, 20 + i, 1, f"b-{i}") for i in range(20)]
    # KafkaConsumer (SubscriptionState.maybeValidatePositionForCurrentLeader) validates position 20 of
    # epoch 0 with the new leader before fetching from it: OffsetsForLeaderEpoch(epoch 0) -> end offset 20
    after = [(name, parts) for _, name, parts in log[moved_at:]]
    assert ("OffsetForLeaderEpoch", [("mv", 0, 0)]) in after, after
    assert next(e["committed"] for e in rest if "committed" in e) == [[0, 40, 1]]


def _read_ten_then_unclean_election(cluster: MockCluster, reset: str, count: int) -> list[dict[str, Any]]:
    cluster.create_topic("u", 1)
    _append(cluster, "u", [f"old-{i}" for i in range(10)])
    r = JavaRun("consume", cluster.bootstrap, "u", "", count, reset, "assign", "false", POLLS)
    try:
        first = []
        for event in r.events():
            first.append(event)
            if len(records(first)) == 10:
                break
        info = cluster.unclean_election(
            "u", 0, truncate_to=5, records=[NewRecord(f"new-{i}".encode()) for i in range(3)]
        )
        assert (info.leader_epoch, info.log_end_offset) == (1, 8)
        return first + r.finish()
    finally:
        r.stop()


def test_java_consumer_raises_log_truncation_without_a_reset_policy(cluster: MockCluster) -> None:
    events = _read_ten_then_unclean_election(cluster, "none", 13)
    assert records(events) == [(0, i, 0, f"old-{i}") for i in range(10)]
    failure = next(e for e in events if "exception" in e)
    # LogTruncationException: position 10 (epoch 0) diverges; the leader's log has epoch 0 up to offset 5
    assert failure["exception"] == "LogTruncationException", failure
    assert (failure["fetch"], failure["divergent"]) == ([[0, 10]], [[0, 5, 0]])
    assert "OffsetForLeaderEpoch" in cluster.request_counts()


def test_java_consumer_with_a_reset_policy_seeks_to_the_divergence(cluster: MockCluster) -> None:
    # With auto.offset.reset set, KafkaConsumer 4.4 does not reset to earliest/latest on truncation:
    # SubscriptionState.maybeCompleteValidation seeks to the first offset known to diverge (5).
    events = _read_ten_then_unclean_election(cluster, "earliest", 13)
    assert not [e for e in events if "exception" in e]
    assert records(events) == [(0, i, 0, f"old-{i}") for i in range(10)] + [
        (0, 5 + i, 1, f"new-{i}") for i in range(3)
    ]


@pytest.mark.parametrize("reset", ["none", "earliest"])
def test_kafka_python_detects_the_same_truncation_in_flight(reset: str) -> None:
    # The comparison for the two tests above (librdkafka's: tests/test_broker_clients.py): kafka-python
    # (3.x, Fetcher.maybe_validate_positions) validates a position after a leader change too, raising
    # LogTruncationError (divergent offset 5, epoch 0) without a reset policy and reading on from 5 with.
    kafka = pytest.importorskip("kafka", reason="kafka-python is not installed")
    if not hasattr(kafka.errors, "LogTruncationError"):
        pytest.skip("this kafka-python does not validate positions (KIP-320)")
    with MockCluster(brokers=3) as cluster:
        cluster.create_topic("u", 1)
        _append(cluster, "u", [f"old-{i}" for i in range(10)])
        kp = kafka.KafkaConsumer(
            bootstrap_servers=cluster.bootstrap,
            auto_offset_reset=reset,
            enable_auto_commit=False,
            metadata_max_age_ms=1000,
        )
        tp = kafka.TopicPartition("u", 0)
        kp.assign([tp])
        kp.seek(tp, 0)
        got: list[tuple[int, int, bytes]] = []
        failure: Exception | None = None
        elected = False
        try:
            for _ in range(POLLS):  # a safety net: the loop ends on the count or the error
                if len(got) == 10 and not elected:
                    elected = True
                    info = cluster.unclean_election(
                        "u", 0, truncate_to=5, records=[NewRecord(f"new-{i}".encode()) for i in range(3)]
                    )
                    assert info.log_end_offset == 8
                if len(got) == 13:
                    break
                try:
                    batches = kp.poll(500)
                except kafka.errors.LogTruncationError as e:
                    failure = e
                    break
                got += [(r.offset, r.leader_epoch, r.value) for recs in batches.values() for r in recs]
        finally:
            kp.close()
        assert got[:10] == [(i, 0, f"old-{i}".encode()) for i in range(10)]
        if reset == "none":
            assert failure is not None and got[10:] == []
            assert "OffsetAndMetadata(offset=5, metadata='', leader_epoch=0)" in str(failure)
        else:
            assert failure is None and got[10:] == [(5 + i, 1, f"new-{i}".encode()) for i in range(3)]
        assert "OffsetForLeaderEpoch" in cluster.request_counts()


# --- a committed offset validated on restart: the Java consumer, not librdkafka nor kafka-python ---------


def _commit_ten_everywhere(cluster: MockCluster) -> None:
    """Offset 10 of "r"-0 committed with leader epoch 0 in three groups, each by its own client."""
    ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
    kafka = pytest.importorskip("kafka", reason="kafka-python is not installed")
    cluster.create_topic("r", 1)
    _append(cluster, "r", [f"old-{i}" for i in range(10)])
    events = run("consume", cluster.bootstrap, "r", "java", 10, "earliest", "subscribe", "true", POLLS)
    assert next(e["committed"] for e in events if "committed" in e) == [[0, 10, 0]]
    rd = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "rdkafka", "log_level": 0})
    rd.commit(offsets=[ck.TopicPartition("r", 0, 10, leader_epoch=0)], asynchronous=False)
    rd.close()
    kp = kafka.KafkaConsumer(
        bootstrap_servers=cluster.bootstrap, group_id="kafka-python", enable_auto_commit=False
    )
    kp.assign([kafka.TopicPartition("r", 0)])
    kp.commit({kafka.TopicPartition("r", 0): kafka.structs.OffsetAndMetadata(10, "", 0)})
    kp.close()


def _sequence(log: RequestLog, client: str) -> list[tuple[str, list[tuple[str, int, int]]]]:
    """What one client asked about its positions, in order (Metadata, heartbeats etc. left out)."""
    wanted = {"OffsetFetch", "OffsetForLeaderEpoch", "ListOffsets", "Fetch"}
    return [(name, parts) for who, name, parts in log if who and who.startswith(client) and name in wanted]


def test_only_the_java_consumer_validates_a_committed_offset_on_restart(cluster: MockCluster) -> None:
    ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
    kafka = pytest.importorskip("kafka", reason="kafka-python is not installed")
    _commit_ten_everywhere(cluster)
    stored = cluster.call(lambda: {g: s.offsets[("r", 0)] for g, s in cluster.state.groups.groups.items()})
    assert {g: (o.offset, o.leader_epoch) for g, o in stored.items()} == {
        g: (10, 0) for g in ("java", "rdkafka", "kafka-python")
    }
    # offsets 5-9 of epoch 0 are lost; the new leader writes new-0.. new-7 at offsets 5-12 in epoch 1
    info = cluster.unclean_election(
        "r", 0, truncate_to=5, records=[NewRecord(f"new-{i}".encode()) for i in range(8)]
    )
    assert (info.leader_epoch, info.log_end_offset, info.epochs) == (1, 13, ((0, 0), (1, 5)))
    log = record_requests(cluster)

    # The Java consumer validates the committed (10, epoch 0) before fetching: OffsetForLeaderEpoch right
    # after OffsetFetch (ConsumerUtils/SubscriptionState: a committed offset with an epoch is a position
    # awaiting validation); epoch 0 ends at 5 < 10, so without a reset policy: LogTruncationException.
    events = run("consume", cluster.bootstrap, "r", "java", 8, "none", "subscribe", "false", POLLS)
    failure = next(e for e in events if "exception" in e)
    assert (failure["exception"], failure["fetch"], failure["divergent"]) == (
        "LogTruncationException",
        [[0, 10]],
        [[0, 5, 0]],
    ), failure
    assert records(events) == []
    sequence = _sequence(log, "consumer-java-")
    names = [name for name, _ in sequence]
    first = names.index("OffsetForLeaderEpoch")
    assert sequence[first - 1 : first + 1] == [
        ("OffsetFetch", [("r", 0, -1)]),
        ("OffsetForLeaderEpoch", [("r", 0, 0)]),
    ], sequence
    assert set(names[:first]) == {"OffsetFetch"}, sequence
    assert "Fetch" not in [name for name, _ in sequence]  # nothing fetched from the diverged position
    # ... and with a reset policy it seeks to the divergence: every new record, none lost
    events = run("consume", cluster.bootstrap, "r", "java", 8, "earliest", "subscribe", "false", POLLS)
    assert records(events) == [(0, 5 + i, 1, f"new-{i}") for i in range(8)]

    # librdkafka fetches from the committed offset as it is: new-0 .. new-4 (offsets 5-9) are skipped
    rd = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "rdkafka",
            "client.id": "rd-restart",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    rd.subscribe(["r"])
    got: list[Any] = []
    deadline = time.monotonic() + 120  # a safety net: the loop ends on the count
    while len(got) < 3 and time.monotonic() < deadline:
        m = rd.poll(0.5)
        if m is not None and m.error() is None:
            got.append((m.offset(), m.leader_epoch(), m.value().decode()))
    rd.close()
    assert got == [(10 + i, 1, f"new-{5 + i}") for i in range(3)]
    # kafka-python too
    kp = kafka.KafkaConsumer(
        "r",
        bootstrap_servers=cluster.bootstrap,
        group_id="kafka-python",
        client_id="kp-restart",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=120_000,
    )
    kp_got = [(m.offset, m.value.decode()) for _, m in zip(range(3), kp, strict=False)]
    kp.close()
    assert kp_got == [(10 + i, f"new-{5 + i}") for i in range(3)]
    for client in ("rd-restart", "kp-restart"):
        sequence = _sequence(log, client)
        names = [name for name, _ in sequence]
        assert ("OffsetFetch", [("r", 0, -1)]) in sequence and "Fetch" in names, (client, sequence)
        assert names.index("OffsetFetch") < names.index("Fetch"), (client, sequence)
        assert "OffsetForLeaderEpoch" not in names, (client, sequence)


# --- a transactional copy with the Java clients ---------------------------------------------------------

COPY_MESSAGES = 10_000
COPY_PARTITIONS = 3
ABORT_EVERY = 4  # every 4th transaction is aborted by the application after its records are written


def test_java_transactional_copy_of_10000_messages_with_aborts_loses_and_duplicates_nothing(
    cluster: MockCluster,
) -> None:
    # The Java mirror of test_broker_transactions' librdkafka copy: KafkaConsumer (read_committed, a
    # group) -> KafkaProducer (transactional) -> sendOffsetsToTransaction -> commitTransaction, every
    # 4th transaction aborted after its records are written, the consumer rewound to the group's offsets.
    # Unlike the librdkafka copy, no transactional id is expired mid-copy: KafkaProducer 4.4 makes an
    # InvalidPidMappingException fatal (TransactionManager.maybeTransitionToErrorState, and
    # AddOffsetsToTxnHandler), against Apache Kafka as here, so there is nothing to recover from.
    from test_broker_transactions import assert_exact_copy

    c = cluster
    c.create_topic("src", COPY_PARTITIONS)
    c.create_topic("dst", COPY_PARTITIONS)
    assert run("produce", c.bootstrap, "src", COPY_MESSAGES, COPY_PARTITIONS)[0]["produced"] == COPY_MESSAGES
    events = run(
        "copy", c.bootstrap, "src", "dst", "copy-group", "copier", COPY_MESSAGES, ABORT_EVERY, 4 * POLLS
    )
    n = next(e["copy"] for e in events if "copy" in e)
    print("Java transactional copy:", n)
    assert n["committed"] == COPY_MESSAGES and n["recovered"] == 0, n
    assert n["aborted_by_app"] >= 3 and n["aborted_written"] > 0, n

    assert_exact_copy(c, n)


def test_java_producer_fails_fatally_when_the_coordinator_forgot_its_transactional_id(
    cluster: MockCluster,
) -> None:
    # Why the Java copy injects no expired id: the coordinator answers the next AddPartitionsToTxn with
    # INVALID_PRODUCER_ID_MAPPING (as Kafka's TransactionCoordinator does for an unknown id), and
    # KafkaProducer 4.4 ends in its fatal state (TransactionManager.maybeTransitionToErrorState makes an
    # InvalidPidMappingException fatal): the commit fails and even abortTransaction() fails.
    # librdkafka aborts and bumps instead (test_broker_transactions).
    from test_broker_transactions import read_to_end

    c = cluster
    c.create_topic("fg", 1)
    r = JavaRun("forgotten", c.bootstrap, "fg", "forgotten-tx")
    try:
        for event in r.events():
            if "paused" in event:
                assert c.call(lambda: c.state.transactions.expire("forgotten-tx"))
                r.send("go")
                break
        events = r.finish()
    finally:
        r.stop()
    assert events[:2] == [
        {"commit_failed": "InvalidPidMappingException"},
        {"abort_failed": "InvalidPidMappingException"},
    ], events
    assert [m.value() for m in read_to_end(c.bootstrap, "fg", 1, "read_committed")] == [b"first"]
