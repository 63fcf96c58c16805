"""Transactions in kcodec's mock broker, as Apache Kafka runs them (TransactionCoordinator,
TransactionMetadata, ProducerAppendInfo, KafkaApis, Partition.fetchOffsetForTimestamp, KafkaApis'
read_committed Fetch). First with raw kcodec requests, stating Kafka's answers; then with real clients:
librdkafka's (confluent-kafka) and kafka-python's transactional producers, read_committed and
read_uncommitted consumers, zombie fencing, KIP-360 recovery, and a transactional copy of 10,000
messages with injected aborts that loses and duplicates nothing. Work is bounded by counts; timeouts
are only safety nets."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import broker_requests as rq
import pytest
import txn_requests as tq

from kcodec.broker import MockCluster
from kcodec.broker.transactions import now_ms, offsets_partition_for
from kcodec.broker.txn_log import AbortedTxn, PartitionTxns
from kcodec.client import Connection
from kcodec.error_codes import ErrorCode
from kcodec.records import ControlType, NewRecord, build_batch, iter_batches, parse_control_record

E = ErrorCode
TXN_PRODUCE_V = 9  # before KIP-890's TRANSACTION_ABORTABLE (Produce v11)


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=1) as c:
        yield c


def conn_to(c: MockCluster, node: int = 0) -> Connection:
    host, port = c.addresses[node]
    return Connection(host, port, timeout=10)


class Raw:
    """A transactional producer spoken to the broker request by request."""

    def __init__(self, c: MockCluster, conn: Connection, tid: str, timeout_ms: int = 60000) -> None:
        self.c, self.conn, self.tid = c, conn, tid
        self.pid, self.epoch, self.seq = -1, -1, 0
        self.timeout_ms = timeout_ms

    def init(self, v: int = 4, pid: int = -1, epoch: int = -1) -> Any:
        req = rq.init_producer_id(v, self.tid, pid, epoch)
        req.transaction_timeout_ms = self.timeout_ms
        body = self.conn.request(req, v).body
        if body.error_code == 0:
            self.pid, self.epoch, self.seq = body.producer_id, body.producer_epoch, 0
        return body

    def add(
        self, topic: str, *partitions: int, v: int = 3, epoch: int | None = None
    ) -> dict[tuple[str, int], int]:
        req = tq.add_partitions_to_txn(
            v, self.tid, topic, partitions, self.pid, self.epoch if epoch is None else epoch
        )
        body = self.conn.request(req, v).body
        results = (
            body.results_by_transaction[0].topic_results if v >= 4 else body.results_by_topic_v3_and_below
        )
        return {
            (t.name, p.partition_index): p.partition_error_code
            for t in results
            for p in t.results_by_partition
        }

    def produce(
        self,
        topic: str,
        *values: bytes,
        v: int = TXN_PRODUCE_V,
        partition: int = 0,
        epoch: int | None = None,
        transactional: bool = True,
        tid: str | None = "same",
    ) -> Any:
        data = build_batch(
            [NewRecord(x, timestamp=1_700_000_000_000) for x in values],
            producer_id=self.pid,
            producer_epoch=self.epoch if epoch is None else epoch,
            base_sequence=self.seq,
            transactional=transactional,
        )
        req = rq.produce(topic, self.c.call(lambda: self.c.state.topics[topic].topic_id), v, data, partition)
        req.transactional_id = self.tid if tid == "same" else tid
        part = req_partition(self.conn.request(req, v).body)
        if part.error_code == 0:
            self.seq += len(values)
        return part

    def end(self, commit: bool, v: int = 3, epoch: int | None = None) -> int:
        req = tq.end_txn(self.tid, commit, self.pid, self.epoch if epoch is None else epoch)
        return int(self.conn.request(req, v).body.error_code)


def req_partition(body: Any) -> Any:
    return body.responses[0].partition_responses[0]


def fetch(
    c: MockCluster, conn: Connection, topic: str, offset: int = 0, *, committed: bool, v: int = 11
) -> Any:
    req = rq.fetch(topic, c.call(lambda: c.state.topics[topic].topic_id), v, offset)
    req.isolation_level = 1 if committed else 0
    return conn.request(req, v).body.responses[0].partitions[0]


def list_latest(conn: Connection, topic: str, *, committed: bool, timestamp: int = -1) -> int:
    req = rq.list_offsets(topic, 7, timestamp=timestamp)
    req.isolation_level = 1 if committed else 0
    return int(conn.request(req, 7).body.topics[0].partitions[0].offset)


def offset_fetch(conn: Connection, group: str, topic: str, *, require_stable: bool) -> tuple[int, int]:
    r = rq.cls("OffsetFetchRequest")
    req = r(
        group_id=group,
        topics=[r.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])],
        require_stable=require_stable,
    )
    part = conn.request(req, 7).body.topics[0].partitions[0]
    return int(part.committed_offset), int(part.error_code)


def batches_of(data: bytes) -> list[Any]:
    return list(iter_batches(data))


# --- the partition's transactional state ------------------------------------------------------------


def test_last_stable_offset_and_aborted_ranges() -> None:
    t = PartitionTxns()
    assert t.last_stable_offset(10, 0) == 10
    t.begin(7, 3)
    t.begin(8, 5)
    t.begin(7, 6)  # already open at 3
    assert t.last_stable_offset(10, 0) == 3 and t.last_stable_offset(2, 0) == 2
    assert t.complete(7, 9, aborted=True) == 3
    assert t.last_stable_offset(12, 0) == 5
    assert t.complete(8, 10, aborted=False) == 5 and t.last_stable_offset(12, 0) == 12
    assert t.complete(9, 11, aborted=True) is None  # a marker without data here: nothing recorded
    assert t.aborted == [AbortedTxn(7, 3, 9)]
    # TransactionIndex.collectAbortedTxns: marker at or after the start, first offset before the end
    assert t.aborted_between(0, 3) == [] and t.aborted_between(0, 4) == [AbortedTxn(7, 3, 9)]
    assert t.aborted_between(9, 20) == [AbortedTxn(7, 3, 9)] and t.aborted_between(10, 20) == []
    t.begin(5, 20)
    t.truncate(9)  # the marker and the later transaction are gone
    assert t.aborted == [] and t.ongoing == {}


def test_offsets_partition_is_kafkas() -> None:
    # GroupMetadataManager.partitionFor: Utils.abs(groupId.hashCode) % 50 (Java's String.hashCode)
    # (values from Java 17: "my-group".hashCode() == -1906497762, "grüße".hashCode() == 98768023)
    assert offsets_partition_for("") == 0
    assert offsets_partition_for("a") == 97 % 50
    assert offsets_partition_for("my-group") == 12
    assert offsets_partition_for("copy-group") == 45
    assert offsets_partition_for("grüße") == 23


# --- markers, the last stable offset, read_committed Fetch and ListOffsets ---------------------------


def test_commit_and_abort_write_control_records_and_move_the_lso(cluster: MockCluster) -> None:
    cluster.create_topic("m", 1)
    with conn_to(cluster) as conn:
        p = Raw(cluster, conn, "tx-m")
        assert p.init().error_code == 0 and p.epoch == 0
        assert p.add("m", 0) == {("m", 0): 0}
        assert p.produce("m", b"a", b"b").base_offset == 0
        open_ = fetch(cluster, conn, "m", committed=False)
        assert (open_.high_watermark, open_.last_stable_offset, open_.aborted_transactions) == (2, 0, None)
        assert len(batches_of(open_.records)) == 1
        held = fetch(cluster, conn, "m", committed=True)  # read_committed stops at the LSO
        assert (held.high_watermark, held.last_stable_offset, held.aborted_transactions) == (2, 0, [])
        assert bytes(held.records) == b""
        assert (list_latest(conn, "m", committed=False), list_latest(conn, "m", committed=True)) == (2, 0)
        assert p.end(commit=True) == 0

        done = fetch(cluster, conn, "m", committed=True)
        assert (done.high_watermark, done.last_stable_offset) == (3, 3)
        data, marker = batches_of(done.records)
        assert data.is_transactional and not data.is_control and data.producer_id == p.pid
        assert marker.is_control and marker.is_transactional and marker.base_offset == 2
        assert (marker.producer_id, marker.producer_epoch, marker.record_count) == (p.pid, 0, 1)
        (record,) = list(marker.records())
        # the control record's key (version 0, type COMMIT) and value (version 0, coordinator epoch)
        assert (record.key, record.value) == (b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")
        assert parse_control_record(record).type is ControlType.COMMIT

        assert p.add("m", 0) == {("m", 0): 0}
        assert p.produce("m", b"c").base_offset == 3
        assert p.end(commit=False) == 0  # ABORT marker at 4
        plain = build_batch([NewRecord(b"d")])
        req = rq.produce("m", cluster.call(lambda: cluster.state.topics["m"].topic_id), 9, plain)
        assert req_partition(conn.request(req, 9).body).base_offset == 5

        committed = fetch(cluster, conn, "m", committed=True)
        assert committed.last_stable_offset == 6
        assert [(a.producer_id, a.first_offset) for a in committed.aborted_transactions] == [(p.pid, 3)]
        kinds = [
            parse_control_record(next(b.records())).type
            for b in batches_of(committed.records)
            if b.is_control
        ]
        assert kinds == [ControlType.COMMIT, ControlType.ABORT]
        assert fetch(cluster, conn, "m", 5, committed=True).aborted_transactions == []  # marker at 4 < 5
        assert fetch(cluster, conn, "m", 5, committed=False).aborted_transactions is None

        assert p.end(commit=False) == 0  # EndTxn repeated after the abort: NONE
        assert p.end(commit=True) == E.INVALID_TXN_STATE  # CompleteAbort cannot commit


def test_list_offsets_by_timestamp_stops_at_the_last_fetchable_offset(cluster: MockCluster) -> None:
    cluster.create_topic("ts", 1)
    with conn_to(cluster) as conn:
        p = Raw(cluster, conn, "tx-ts")
        p.init()
        p.add("ts", 0)
        p.produce("ts", b"x")
        since = 0  # every record's timestamp is after it
        # Partition.fetchOffsetForTimestamp: an offset at or past the LSO is not found for read_committed
        assert list_latest(conn, "ts", committed=False, timestamp=since) == 0
        assert list_latest(conn, "ts", committed=True, timestamp=since) == -1
        assert p.end(commit=True) == 0
        assert list_latest(conn, "ts", committed=True, timestamp=since) == 0


# --- coordinator errors ---------------------------------------------------------------------------------


def test_coordinator_answers_as_kafka(cluster: MockCluster) -> None:
    cluster.create_topic("c", 2)
    with conn_to(cluster) as conn:
        p = Raw(cluster, conn, "tx-c")
        # no InitProducerId yet: the coordinator has no mapping for the id
        p.pid, p.epoch = 4242, 0
        assert p.add("c", 0) == {("c", 0): E.INVALID_PRODUCER_ID_MAPPING}
        assert p.end(commit=True) == E.INVALID_PRODUCER_ID_MAPPING
        p.init()
        assert p.end(commit=True) == E.INVALID_TXN_STATE  # Empty: nothing to end
        # a stale epoch: PRODUCER_FENCED from v2 (KIP-588), INVALID_PRODUCER_EPOCH before
        assert p.add("c", 0, v=2, epoch=5) == {("c", 0): E.PRODUCER_FENCED}
        assert p.add("c", 0, v=1, epoch=5) == {("c", 0): E.INVALID_PRODUCER_EPOCH}
        # one unknown partition fails the request: the others are OPERATION_NOT_ATTEMPTED
        assert p.add("c", 0, 7) == {
            ("c", 0): E.OPERATION_NOT_ATTEMPTED,
            ("c", 7): E.UNKNOWN_TOPIC_OR_PARTITION,
        }
        # v4+ VerifyOnly (KIP-890): TRANSACTION_ABORTABLE for a partition not in the transaction
        assert p.add("c", 0, 1, v=4) == {("c", 0): 0, ("c", 1): 0}
        p.end(commit=False)
        assert p.add("c", 1, v=5) == {("c", 1): 0}
        verify = tq.add_partitions_to_txn(5, p.tid, "c", (0, 1), p.pid, p.epoch, verify_only=True)
        result = conn.request(verify, 5).body.results_by_transaction[0].topic_results[0].results_by_partition
        assert {r.partition_index: r.partition_error_code for r in result} == {
            0: E.TRANSACTION_ABORTABLE,
            1: 0,
        }
        assert p.end(commit=True, v=1, epoch=9) == E.INVALID_PRODUCER_EPOCH
        assert p.end(commit=True, v=2, epoch=9) == E.PRODUCER_FENCED
        assert p.end(commit=True) == 0
        assert p.end(commit=False) == E.INVALID_TXN_STATE  # CompleteCommit cannot abort
        empty = tq.end_txn("", True)
        assert conn.request(empty, 3).body.error_code == E.INVALID_REQUEST


def test_requests_for_another_coordinator_get_not_coordinator() -> None:
    with MockCluster(brokers=3) as c:
        c.create_topic("nc", 1)
        tid = next(
            f"tx-{i}"
            for i in range(100)
            if c.call(lambda i=i: c.state.coordinator_for(f"tx-{i}").node_id) == 2
        )
        with conn_to(c, 0) as conn:  # node 1
            assert conn.request(tq.end_txn(tid, True), 3).body.error_code == E.NOT_COORDINATOR
            add = conn.request(tq.add_partitions_to_txn(3, tid, "nc"), 3).body
            assert (
                add.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
                == E.NOT_COORDINATOR
            )
            offsets = conn.request(tq.add_offsets_to_txn(tid, "g"), 3).body
            assert offsets.error_code == E.NOT_COORDINATOR


# --- transactional Produce --------------------------------------------------------------------------


def test_transactional_produce_is_verified_against_the_transaction(cluster: MockCluster) -> None:
    cluster.create_topic("v", 2)
    with conn_to(cluster) as conn:
        p = Raw(cluster, conn, "tx-v")
        p.pid, p.epoch = 77, 0
        assert p.produce("v", b"x").error_code == E.INVALID_PRODUCER_ID_MAPPING  # no such mapping
        p.init()
        # KafkaApis: transactional records without a transactional id refuse the whole request
        assert p.produce("v", b"x", tid=None).error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        # ReplicaManager: a partition not added to the transaction (AddPartitionsToTxnManager: Produce v11+
        # understands TRANSACTION_ABORTABLE, older versions get INVALID_TXN_STATE)
        not_added = p.produce("v", b"x", v=10)
        assert (not_added.error_code, not_added.error_message) == (
            E.INVALID_TXN_STATE,
            "Partition was not added to the transaction",
        )
        assert p.produce("v", b"x", v=11).error_code == E.TRANSACTION_ABORTABLE
        p.add("v", 0)
        assert (
            p.produce("v", b"x", epoch=3).error_code == E.INVALID_PRODUCER_EPOCH
        )  # PRODUCER_FENCED, translated
        assert p.produce("v", b"a").error_code == 0
        assert p.produce("v", b"b", partition=1).error_code == E.INVALID_TXN_STATE  # partition 1 never added
        # ProducerAppendInfo: a non-transactional write while the producer's transaction is open here
        assert p.produce("v", b"c", transactional=False).error_code == E.INVALID_TXN_STATE
        assert p.produce("v", b"d").error_code == 0
        assert p.end(commit=True) == 0
        assert cluster.describe("v", 0).log_end_offset == 3  # a, d, COMMIT


# --- InitProducerId and open transactions (KIP-360) --------------------------------------------------


def test_init_producer_id_aborts_an_open_transaction_with_a_fenced_epoch(cluster: MockCluster) -> None:
    # TransactionCoordinatorTest.shouldAbortTransactionOnHandleInitPidWhenExistingTransactionInOngoingState
    cluster.create_topic("f", 1)
    with conn_to(cluster) as conn:
        old = Raw(cluster, conn, "tx-f")
        old.init()
        pid = old.pid
        old.add("f", 0)
        assert old.produce("f", b"zombie").base_offset == 0
        new = Raw(cluster, conn, "tx-f")
        assert new.init().error_code == E.CONCURRENT_TRANSACTIONS  # the open transaction is aborted first
        marker = batches_of(fetch(cluster, conn, "f", committed=False).records)[-1]
        assert marker.is_control and (marker.producer_id, marker.producer_epoch) == (pid, 1)
        assert parse_control_record(next(marker.records())).type is ControlType.ABORT
        retry = new.init()
        assert (retry.error_code, retry.producer_id, retry.producer_epoch) == (0, pid, 2)
        # the old instance is fenced everywhere
        assert old.produce("f", b"late").error_code == E.INVALID_PRODUCER_EPOCH
        assert old.end(commit=True) == E.PRODUCER_FENCED
        assert old.init(4, pid, 0).error_code == E.PRODUCER_FENCED
        committed = fetch(cluster, conn, "f", committed=True)
        assert [(a.producer_id, a.first_offset) for a in committed.aborted_transactions] == [(pid, 0)]


def test_init_producer_id_with_the_current_epoch_during_a_transaction(cluster: MockCluster) -> None:
    # handleInitProducerId with the expected (producer id, epoch) while Ongoing: the transaction is aborted
    # at epoch + 1 with the last epoch cleared, CONCURRENT_TRANSACTIONS is answered, and the retry with
    # the same (producer id, epoch) is then fenced (prepareIncrementProducerEpoch).
    cluster.create_topic("b", 1)
    with conn_to(cluster) as conn:
        p = Raw(cluster, conn, "tx-b")
        p.init()
        pid = p.pid
        p.add("b", 0)
        p.produce("b", b"x")
        assert p.init(4, pid, 0).error_code == E.CONCURRENT_TRANSACTIONS
        assert p.init(4, pid, 0).error_code == E.PRODUCER_FENCED
        assert p.init(3, pid, 0).error_code == E.INVALID_PRODUCER_EPOCH  # before KIP-588


def test_client_driven_bump_after_an_abort(cluster: MockCluster) -> None:
    # KIP-360 as librdkafka and the Java client do it after an abortable error: EndTxn(ABORT), then
    # InitProducerId with the current (producer id, epoch): the same id at epoch + 1, sequences from 0.
    cluster.create_topic("k", 1)
    with conn_to(cluster) as conn:
        p = Raw(cluster, conn, "tx-k")
        p.init()
        pid = p.pid
        p.add("k", 0)
        p.produce("k", b"a", b"b")
        assert p.end(commit=False) == 0
        bumped = p.init(4, pid, 0)
        assert (bumped.error_code, bumped.producer_id, bumped.producer_epoch) == (0, pid, 1)
        p.add("k", 0)
        assert p.produce("k", b"c").base_offset == 3 and p.end(commit=True) == 0
        assert [b.producer_epoch for b in batches_of(fetch(cluster, conn, "k", committed=True).records)] == [
            0,
            0,
            1,
            1,
        ]


def test_a_timed_out_transaction_is_aborted_and_its_producer_fenced(cluster: MockCluster) -> None:
    cluster.create_topic("to", 1)
    with conn_to(cluster) as conn:
        p = Raw(cluster, conn, "tx-to", timeout_ms=1000)
        p.init()
        p.add("to", 0)
        p.produce("to", b"x")
        # TransactionCoordinator.abortTimedOutTransactions, run as if the timeout had passed
        assert cluster.call(lambda: cluster.state.transactions.abort_timed_out(now_ms() + 2000)) == ["tx-to"]
        assert p.end(commit=True) == E.PRODUCER_FENCED
        done = fetch(cluster, conn, "to", committed=True)
        assert done.last_stable_offset == 2 and [a.first_offset for a in done.aborted_transactions] == [0]


# --- transactional offset commits ------------------------------------------------------------------------


def test_txn_offset_commit_is_held_until_the_transaction_commits(cluster: MockCluster) -> None:
    cluster.create_topic("o", 1)
    with conn_to(cluster) as conn:
        p = Raw(cluster, conn, "tx-o")
        p.init()

        def commit_offset(offset: int, v: int = 3, generation: int = -1, member: str = "") -> int:
            req = tq.txn_offset_commit(p.tid, "grp", "o", offset, p.pid, p.epoch)
            req.generation_id, req.member_id = generation, member
            return int(conn.request(req, v).body.topics[0].partitions[0].error_code)

        # the group's offsets partition is not in the transaction (KIP-890 verification)
        assert commit_offset(7) == E.INVALID_TXN_STATE
        assert commit_offset(7, v=4) == E.TRANSACTION_ABORTABLE
        assert conn.request(tq.add_offsets_to_txn(p.tid, "grp", p.pid, p.epoch), 3).body.error_code == 0
        assert commit_offset(7, generation=3, member="nobody") == E.UNKNOWN_MEMBER_ID
        assert commit_offset(7) == 0
        # KIP-447: an offset of an open transaction is UNSTABLE_OFFSET_COMMIT for RequireStable
        assert offset_fetch(conn, "grp", "o", require_stable=True) == (-1, E.UNSTABLE_OFFSET_COMMIT)
        assert offset_fetch(conn, "grp", "o", require_stable=False) == (-1, 0)
        assert p.end(commit=True) == 0
        assert offset_fetch(conn, "grp", "o", require_stable=True) == (7, 0)
        conn.request(tq.add_offsets_to_txn(p.tid, "grp", p.pid, p.epoch), 3)
        assert commit_offset(9) == 0
        assert p.end(commit=False) == 0
        assert offset_fetch(conn, "grp", "o", require_stable=True) == (7, 0)  # the aborted 9 is dropped


# --- real clients: librdkafka (confluent-kafka) ------------------------------------------------------------

QUIET = {"log_level": 0}
SAFETY_S = 120.0  # a safety net only: every loop below ends on a count or on end-of-partition events


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
    p.init_transactions(30)
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
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(20):
        p.produce("rt", key=b"k", value=b"a-%d" % i, partition=i % 3)
    assert p.flush(30) == 0  # written, then aborted (an abort purges what is still queued)
    p.abort_transaction(30)
    p.begin_transaction()
    for i in range(10):
        p.produce("rt", key=b"k", value=b"c2-%d" % i, partition=i % 3)
    p.commit_transaction(30)

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
    assert old.flush(30) == 0
    new = transactional_producer(c.bootstrap, "zombie-tx")  # aborts the open transaction, fences `old`
    with pytest.raises(ck.KafkaException) as failed:
        old.commit_transaction(30)
    assert failed.value.args[0].fatal() and failed.value.args[0].code() == ck.KafkaError._FENCED
    new.begin_transaction()
    new.produce("zt", value=b"from-the-new-instance")
    new.commit_transaction(30)
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
    p.commit_transaction(30)
    first_pid = c.call(lambda: c.state.transactional_ids["kip360-tx"].producer_id)
    assert c.call(lambda: c.state.transactions.expire("kip360-tx"))
    p.begin_transaction()
    p.produce("kt", value=b"lost", partition=1)
    p.flush(30)
    with pytest.raises(ck.KafkaException) as failed:
        p.commit_transaction(30)
    error = failed.value.args[0]
    assert error.txn_requires_abort() and not error.fatal()
    assert error.code() == ck.KafkaError.INVALID_PRODUCER_ID_MAPPING
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce("kt", value=b"after-the-bump", partition=1)
    p.commit_transaction(30)
    state = c.call(lambda: c.state.transactional_ids["kip360-tx"])
    assert (
        state.producer_id != first_pid and state.producer_epoch == 0
    )  # an expired id gets a new producer id
    assert sorted(m.value() for m in read_to_end(c.bootstrap, "kt", 2, "read_committed")) == [
        b"after-the-bump",
        b"first",
    ]


COPY_MESSAGES = 10_000
COPY_PARTITIONS = 3
ABORT_EVERY = 4  # every 4th transaction is aborted by the application after its records are written
EXPIRE_AFTER = 6  # after the 6th transaction the coordinator forgets the id: KIP-360 recovery mid-copy


def _rewind(consumer: Any) -> None:
    """Back to the group's committed offsets (the start when none), as after an aborted transaction."""
    ck = _ck()
    for tp in consumer.committed(consumer.assignment(), timeout=30):
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
            producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
            if n["transactions"] % ABORT_EVERY == 0:
                assert producer.flush(30) == 0
                producer.abort_transaction(30)
                n["aborted_by_app"] += 1
                n["aborted_written"] += len(msgs)
                _rewind(consumer)
                continue
            producer.commit_transaction(30)
            n["committed"] += len(msgs)
        except ck.KafkaException as e:
            if not e.args[0].txn_requires_abort():
                raise
            producer.abort_transaction(30)  # KIP-360: librdkafka bumps the epoch as it aborts
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
    assert source.flush(60) == 0
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
    # the forgotten id fails the next transaction (INVALID_PRODUCER_ID_MAPPING); librdkafka may report it
    # once more for a request of that transaction still on its way, each time recovered by an abort
    assert n["aborted_by_app"] >= 3 and n["aborted_written"] > 0 and n["recovered"] >= 1

    copied = read_to_end(c.bootstrap, "dst", COPY_PARTITIONS, "read_committed")
    values = [m.value() for m in copied]
    assert len(values) == COPY_MESSAGES and set(values) == {b"m-%05d" % i for i in range(COPY_MESSAGES)}
    for part in range(COPY_PARTITIONS):  # each partition in the source's order
        seq = [int(m.value()[2:]) for m in copied if m.partition() == part]
        assert seq == sorted(seq) == list(range(part, COPY_MESSAGES, COPY_PARTITIONS))
    # read_uncommitted also sees the records of the aborted transactions (never the markers)
    assert len(read_to_end(c.bootstrap, "dst", COPY_PARTITIONS, "read_uncommitted")) == (
        COPY_MESSAGES + n["aborted_written"]
    )
    # the group's offsets were committed in the transactions: the whole source
    g = c.call(lambda: c.state.groups.groups["copy-group"].offsets)
    assert {k: v.offset for k, v in g.items()} == {
        ("src", p): c.describe("src", p).log_end_offset for p in range(COPY_PARTITIONS)
    }
    used = c.request_counts()
    assert {"AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn", "InitProducerId"} <= set(
        used
    )
    print("used:", used)


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
