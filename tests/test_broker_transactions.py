"""Transactions in kcodec's mock broker with real clients: librdkafka's (confluent-kafka) and
kafka-python's transactional producers, read_committed and read_uncommitted consumers, zombie fencing,
KIP-360 recovery, and a transactional copy of 10,000 messages with injected aborts that loses and
duplicates nothing. Work is bounded by counts (end-of-partition events, message counts); timeouts are
only safety nets. Answers at the protocol level: tests/test_broker_txn_raw.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from kcodec.broker import MockCluster
from kcodec.records import NewRecord

pytestmark = pytest.mark.interop


# --- real clients: librdkafka (confluent-kafka) ------------------------------------------------------------

QUIET = {"log_level": 0}
SAFETY_S = 300.0  # a safety net only: every loop below ends on a count or on end-of-partition events
API_S = 120  # librdkafka API timeouts, safety nets too (the machine may be loaded)


def _ck() -> Any:
    return pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")


def read_to_end(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[Any]:
    """Every message a consumer with ``isolation`` gets from the start of each partition to its end (the
    LSO for read_committed): polls until each partition has reported end-of-partition."""
    ck = _ck()
    c = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{isolation}",
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "enable.auto.commit": False,
            **QUIET,
        }
    )
    c.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in range(partitions)])
    got: list[Any] = []
    ended: set[int] = set()
    deadline = time.monotonic() + SAFETY_S
    try:
        while len(ended) < partitions and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                if m.error() is None:
                    got.append(m)
                    ended.discard(m.partition())
                elif m.error().code() == ck.KafkaError._PARTITION_EOF:
                    ended.add(m.partition())
                else:
                    raise AssertionError(m.error())
    finally:
        c.close()
    assert len(ended) == partitions, f"only partitions {ended} reached their end"
    return got


def transactional_producer(bootstrap: str, tid: str, **conf: Any) -> Any:
    p = _ck().Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, **QUIET, **conf})
    p.init_transactions(API_S)
    return p


@pytest.fixture
def cluster3() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as c:
        yield c


def test_librdkafka_commit_abort_and_both_isolation_levels(cluster3: MockCluster) -> None:
    c = cluster3
    c.create_topic("rt", 3)
    p = transactional_producer(c.bootstrap, "rd-tx", **{"linger.ms": 5})
    p.begin_transaction()
    for i in range(30):
        p.produce("rt", key=b"k", value=b"c1-%d" % i, partition=i % 3)
    p.commit_transaction(API_S)
    p.begin_transaction()
    for i in range(20):
        p.produce("rt", key=b"k", value=b"a-%d" % i, partition=i % 3)
    assert p.flush(API_S) == 0  # written, then aborted (an abort purges what is still queued)
    p.abort_transaction(API_S)
    p.begin_transaction()
    for i in range(10):
        p.produce("rt", key=b"k", value=b"c2-%d" % i, partition=i % 3)
    p.commit_transaction(API_S)

    committed = read_to_end(c.bootstrap, "rt", 3, "read_committed")
    assert sorted(m.value() for m in committed) == sorted(
        [b"c1-%d" % i for i in range(30)] + [b"c2-%d" % i for i in range(10)]
    )
    everything = read_to_end(c.bootstrap, "rt", 3, "read_uncommitted")
    assert len(everything) == 60 and {m.value() for m in everything} >= {b"a-%d" % i for i in range(20)}
    # each partition: its data records plus one marker per transaction that wrote to it
    assert sum(c.describe("rt", i).log_end_offset for i in range(3)) == 60 + 3 * 3
    used = c.request_counts()
    assert {"InitProducerId", "AddPartitionsToTxn", "EndTxn"} <= set(used)
    print("librdkafka transactional producer used:", used)


def test_librdkafka_zombie_is_fenced_and_its_transaction_aborted(cluster3: MockCluster) -> None:
    ck = _ck()
    c = cluster3
    c.create_topic("zt", 1)
    old = transactional_producer(c.bootstrap, "zombie-tx")
    old.begin_transaction()
    old.produce("zt", value=b"from-the-zombie")
    assert old.flush(API_S) == 0
    new = transactional_producer(c.bootstrap, "zombie-tx")  # aborts the open transaction, fences `old`
    with pytest.raises(ck.KafkaException) as failed:
        old.commit_transaction(API_S)
    assert failed.value.args[0].fatal() and failed.value.args[0].code() == ck.KafkaError._FENCED
    new.begin_transaction()
    new.produce("zt", value=b"from-the-new-instance")
    new.commit_transaction(API_S)
    assert [m.value() for m in read_to_end(c.bootstrap, "zt", 1, "read_committed")] == [
        b"from-the-new-instance"
    ]
    assert len(read_to_end(c.bootstrap, "zt", 1, "read_uncommitted")) == 2


def test_librdkafka_recovers_from_an_abortable_error_with_an_epoch_bump(cluster3: MockCluster) -> None:
    # KIP-360: the coordinator forgot the transactional id (transactional.id.expiration.ms), so the next
    # AddPartitionsToTxn gets INVALID_PRODUCER_ID_MAPPING: an abortable error that needs a new epoch.
    # librdkafka aborts, sends InitProducerId with its current (producer id, epoch) and goes on.
    ck = _ck()
    c = cluster3
    c.create_topic("kt", 2)
    p = transactional_producer(c.bootstrap, "kip360-tx")
    p.begin_transaction()
    p.produce("kt", value=b"first", partition=0)
    p.commit_transaction(API_S)
    first_pid = c.call(lambda: c.state.transactional_ids["kip360-tx"].producer_id)
    assert c.call(lambda: c.state.transactions.expire("kip360-tx"))
    p.begin_transaction()
    p.produce("kt", value=b"lost", partition=1)
    p.flush(API_S)
    with pytest.raises(ck.KafkaException) as failed:
        p.commit_transaction(API_S)
    error = failed.value.args[0]
    assert error.txn_requires_abort() and not error.fatal()
    assert error.code() == ck.KafkaError.INVALID_PRODUCER_ID_MAPPING
    p.abort_transaction(API_S)
    p.begin_transaction()
    p.produce("kt", value=b"after-the-bump", partition=1)
    p.commit_transaction(API_S)
    state = c.call(lambda: c.state.transactional_ids["kip360-tx"])
    assert (
        state.producer_id != first_pid and state.producer_epoch == 0
    )  # an expired id gets a new producer id
    assert sorted(m.value() for m in read_to_end(c.bootstrap, "kt", 2, "read_committed")) == [
        b"after-the-bump",
        b"first",
    ]


def test_an_open_transaction_holds_back_later_commits_until_it_ends(cluster3: MockCluster) -> None:
    # The LSO is the first offset of the oldest open transaction: another producer's committed records
    # after it stay invisible to read_committed until it ends; its abort then shows up in the aborted list.
    c = cluster3
    c.create_topic("ilv", 1)
    slow = transactional_producer(c.bootstrap, "slow-tx")
    fast = transactional_producer(c.bootstrap, "fast-tx")
    slow.begin_transaction()
    for i in range(5):
        slow.produce("ilv", value=b"slow-%d" % i)
    assert slow.flush(API_S) == 0
    fast.begin_transaction()
    for i in range(5):
        fast.produce("ilv", value=b"fast-%d" % i)
    fast.commit_transaction(API_S)
    assert c.call(lambda: c.state.partition("ilv", 0).txns.last_stable_offset(11, 0)) == 0
    assert read_to_end(c.bootstrap, "ilv", 1, "read_committed") == []
    assert len(read_to_end(c.bootstrap, "ilv", 1, "read_uncommitted")) == 10
    slow.abort_transaction(API_S)
    assert [m.value() for m in read_to_end(c.bootstrap, "ilv", 1, "read_committed")] == [
        b"fast-%d" % i for i in range(5)
    ]


COPY_MESSAGES = 10_000
COPY_PARTITIONS = 3
ABORT_EVERY = 4  # every 4th transaction is aborted by the application after its records are written
EXPIRE_AFTER = 6  # after the 6th transaction the coordinator forgets the id: KIP-360 recovery mid-copy


def _rewind(consumer: Any) -> None:
    """Back to the group's committed offsets (the start when none), as after an aborted transaction."""
    ck = _ck()
    for tp in consumer.committed(consumer.assignment(), timeout=API_S):
        consumer.seek(
            ck.TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else ck.OFFSET_BEGINNING)
        )


def _copy(c: MockCluster, consumer: Any, producer: Any) -> dict[str, int]:
    """Consume from "src" in a group, produce to "dst" and commit the offsets in one transaction, until
    every message is committed once; aborts are injected. Returns what happened, counted."""
    ck = _ck()
    n = {"committed": 0, "aborted_by_app": 0, "aborted_written": 0, "recovered": 0, "transactions": 0}
    deadline = time.monotonic() + 4 * SAFETY_S
    while n["committed"] < COPY_MESSAGES and time.monotonic() < deadline:
        msgs = [m for m in consumer.consume(500, 1.0) if m.error() is None]
        if not msgs:
            continue
        n["transactions"] += 1
        ends: dict[int, int] = {}
        try:
            producer.begin_transaction()
            for m in msgs:
                producer.produce("dst", key=m.key(), value=m.value(), partition=m.partition())
                ends[m.partition()] = m.offset() + 1
            offsets = [ck.TopicPartition("src", part, end) for part, end in sorted(ends.items())]
            producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), API_S)
            if n["transactions"] % ABORT_EVERY == 0:
                assert producer.flush(API_S) == 0
                producer.abort_transaction(API_S)
                n["aborted_by_app"] += 1
                n["aborted_written"] += len(msgs)
                _rewind(consumer)
                continue
            producer.commit_transaction(API_S)
            n["committed"] += len(msgs)
        except ck.KafkaException as e:
            if not e.args[0].txn_requires_abort():
                raise
            producer.abort_transaction(API_S)  # KIP-360: librdkafka bumps the epoch as it aborts
            n["recovered"] += 1
            _rewind(consumer)
            continue
        if n["transactions"] == EXPIRE_AFTER:
            assert c.call(lambda: c.state.transactions.expire("copier"))
    return n


def test_transactional_copy_of_10000_messages_with_aborts_loses_and_duplicates_nothing(
    cluster3: MockCluster,
) -> None:
    ck = _ck()
    c = cluster3
    c.create_topic("src", COPY_PARTITIONS)
    c.create_topic("dst", COPY_PARTITIONS)
    source = ck.Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 20, **QUIET})
    for i in range(COPY_MESSAGES):
        source.produce("src", key=b"%d" % (i % 97), value=b"m-%05d" % i, partition=i % COPY_PARTITIONS)
    assert source.flush(API_S) == 0
    consumer = ck.Consumer(
        {
            "bootstrap.servers": c.bootstrap,
            "group.id": "copy-group",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **QUIET,
        }
    )
    consumer.subscribe(["src"])
    producer = transactional_producer(c.bootstrap, "copier", **{"linger.ms": 5})
    try:
        n = _copy(c, consumer, producer)
    finally:
        consumer.close()
    print("transactional copy:", n)
    assert n["committed"] == COPY_MESSAGES
    # The forgotten id fails the next transaction with INVALID_PRODUCER_ID_MAPPING. When AddOffsetsToTxn
    # reports it before any partition is registered, librdkafka aborts without EndTxn and without a new
    # epoch, so the transaction after it fails once more (AddPartitionsToTxn), and that abort bumps.
    assert n["aborted_by_app"] >= 3 and n["aborted_written"] > 0 and n["recovered"] >= 1

    assert_exact_copy(c, n)


# --- real clients: kafka-python ----------------------------------------------------------------------------


def test_kafka_python_transactional_producer_and_read_committed_consumer(cluster3: MockCluster) -> None:
    kafka = pytest.importorskip("kafka", reason="kafka-python is not installed")
    if not hasattr(kafka.KafkaProducer, "begin_transaction"):
        pytest.skip("this kafka-python has no transactions")
    c = cluster3
    c.create_topic("kpt", 2)
    p = kafka.KafkaProducer(bootstrap_servers=c.bootstrap, transactional_id="kp-tx")
    try:
        p.init_transactions()
        p.begin_transaction()
        for i in range(20):
            p.send("kpt", value=b"kept-%d" % i, partition=i % 2)
        p.commit_transaction()
        p.begin_transaction()
        for i in range(10):
            p.send("kpt", value=b"dropped-%d" % i, partition=i % 2)
        p.flush()
        p.abort_transaction()
        p.begin_transaction()
        p.send("kpt", value=b"last", partition=1)
        p.commit_transaction()
    finally:
        p.close(5)
    ends = {tp: c.describe("kpt", tp).log_end_offset for tp in range(2)}
    assert sum(ends.values()) == 31 + 2 + 2 + 1  # 31 records, a marker per transaction and partition
    expected = {b"kept-%d" % i for i in range(20)} | {b"last"}
    assert {m.value() for m in read_to_end(c.bootstrap, "kpt", 2, "read_committed")} == expected
    # kafka-python's own read_committed consumer, until its position passes every marker
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=c.bootstrap,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    tps = [kafka.TopicPartition("kpt", i) for i in range(2)]
    consumer.assign(tps)
    got: list[bytes] = []
    deadline = time.monotonic() + SAFETY_S
    try:
        while any(consumer.position(tp) < ends[tp.partition] for tp in tps) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend(r.value for r in records)
    finally:
        consumer.close()
    assert sorted(got) == sorted(expected)


KP_COPY = 600


def test_kafka_python_transactional_copy_with_an_abort(cluster3: MockCluster) -> None:
    """kafka-python consumes in a group and copies in transactions (send_offsets_to_transaction with
    the consumer's group metadata); one transaction is aborted and re-consumed from the committed
    offsets. Under read_committed the copy has every message once."""
    kafka = pytest.importorskip("kafka", reason="kafka-python is not installed")
    if not hasattr(kafka.KafkaProducer, "send_offsets_to_transaction"):
        pytest.skip("this kafka-python has no transactions")
    from kafka.structs import OffsetAndMetadata

    c = cluster3
    c.create_topic("kin", 2)
    c.create_topic("kout", 2)
    for i in range(KP_COPY):
        c.append("kin", i % 2, [NewRecord(b"k-%04d" % i)])
    consumer = kafka.KafkaConsumer(
        "kin",
        bootstrap_servers=c.bootstrap,
        group_id="kp-copy",
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=100,
    )
    producer = kafka.KafkaProducer(bootstrap_servers=c.bootstrap, transactional_id="kp-copier")
    producer.init_transactions()
    committed = aborted = transactions = 0
    deadline = time.monotonic() + SAFETY_S
    try:
        while committed < KP_COPY and time.monotonic() < deadline:
            batch = [r for records in consumer.poll(timeout_ms=500).values() for r in records]
            if not batch:
                continue
            transactions += 1
            producer.begin_transaction()
            ends: dict[Any, int] = {}
            for r in batch:
                producer.send("kout", value=r.value, partition=r.partition)
                ends[kafka.TopicPartition("kin", r.partition)] = r.offset + 1
            offsets = {tp: OffsetAndMetadata(end, "", -1) for tp, end in ends.items()}
            producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
            if transactions == 2:
                producer.flush()
                producer.abort_transaction()
                aborted += len(batch)
                for tp in consumer.assignment():
                    done = consumer.committed(tp)
                    consumer.seek(tp, done if done is not None else 0)
                continue
            producer.commit_transaction()
            committed += len(batch)
    finally:
        producer.close(5)
        consumer.close()
    assert committed == KP_COPY and aborted > 0
    copied = read_to_end(c.bootstrap, "kout", 2, "read_committed")
    assert sorted(m.value() for m in copied) == [b"k-%04d" % i for i in range(KP_COPY)]
    assert len(read_to_end(c.bootstrap, "kout", 2, "read_uncommitted")) == KP_COPY + aborted


def assert_exact_copy(c: Any, n: dict[str, int]) -> None:
    """The transactional copy of ``src`` to ``dst`` (``n``: the copier's counts) under read_committed:
    every message exactly once, in the source's order per partition; read_uncommitted also sees the
    aborted records (never the markers); the group's offsets, committed in the transactions, cover the
    whole source; the transactional APIs were used."""
    copied = read_to_end(c.bootstrap, "dst", COPY_PARTITIONS, "read_committed")
    values = [m.value() for m in copied]
    assert len(values) == COPY_MESSAGES, (len(values), n)
    assert set(values) == {b"m-%05d" % i for i in range(COPY_MESSAGES)}
    for part in range(COPY_PARTITIONS):  # each partition in the source's order
        seq = [int(m.value()[2:]) for m in copied if m.partition() == part]
        assert seq == list(range(part, COPY_MESSAGES, COPY_PARTITIONS))
    # read_uncommitted also sees the records of the aborted transactions (never the markers)
    uncommitted = len(read_to_end(c.bootstrap, "dst", COPY_PARTITIONS, "read_uncommitted"))
    assert uncommitted == COPY_MESSAGES + n["aborted_written"], (uncommitted, n)
    g = c.call(lambda: c.state.groups.groups["copy-group"].offsets)
    assert {k: v.offset for k, v in g.items()} == {
        ("src", p): c.describe("src", p).log_end_offset for p in range(COPY_PARTITIONS)
    }
    used = c.request_counts()
    assert {"AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn", "InitProducerId"} <= set(
        used
    )
    print("used:", used)
