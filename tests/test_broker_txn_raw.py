"""Transactions in kcodec's mock broker with raw kcodec requests, each answer stated as Apache Kafka
gives it (TransactionCoordinator, TransactionMetadata, ProducerAppendInfo, AddPartitionsToTxnManager,
KafkaApis, Partition.fetchOffsetForTimestamp). Real clients: tests/test_broker_transactions.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import broker_requests as rq
import pytest
import txn_requests as tq

from kcodec.broker import MockCluster
from kcodec.broker.transactions import now_ms, offsets_partition_for
from kcodec.broker.txn_log import AbortedTxn, PartitionTxns
from kcodec.net.client import Connection
from kcodec.protocol.error_codes import ErrorCode
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
            req.generation_id_or_member_epoch, req.member_id = generation, member
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


def test_describe_and_list_transactions(cluster: MockCluster) -> None:
    cluster.create_topic("d", 2)
    with conn_to(cluster) as conn:
        p = Raw(cluster, conn, "tx-d")
        p.init()
        p.add("d", 1, 0)
        conn.request(tq.add_offsets_to_txn(p.tid, "my-group", p.pid, p.epoch), 3)
        req = rq.cls("DescribeTransactionsRequest")(transactional_ids=["tx-d", "nobody"])
        found, missing = conn.request(req, 0).body.transaction_states
        assert (found.error_code, found.transaction_state, found.producer_id, found.producer_epoch) == (
            0,
            "Ongoing",
            p.pid,
            0,
        )
        assert found.transaction_timeout_ms == 60000 and found.transaction_start_time_ms > 0
        assert {t.topic: list(t.partitions) for t in found.topics} == {
            "__consumer_offsets": [12],
            "d": [0, 1],
        }
        assert missing.error_code == E.TRANSACTIONAL_ID_NOT_FOUND

        def listed(states: list[str], pids: list[int], v: int = 1, duration: int = -1) -> Any:
            req = rq.cls("ListTransactionsRequest")(state_filters=states, producer_id_filters=pids)
            if v >= 1:
                req.duration_filter = duration
            return conn.request(req, v).body

        every = listed([], [])
        assert [(t.transactional_id, t.transaction_state) for t in every.transaction_states] == [
            ("tx-d", "Ongoing")
        ]
        assert listed(["CompleteCommit"], []).transaction_states == []
        assert listed([], [p.pid + 1]).transaction_states == []
        assert listed(["Ongoing", "Bogus"], [], v=0).unknown_state_filters == ["Bogus"]
        assert listed([], [], duration=3_600_000).transaction_states == []  # not open that long
        assert p.end(commit=True) == 0
        assert [t.transaction_state for t in listed(["CompleteCommit"], []).transaction_states] == [
            "CompleteCommit"
        ]
