"""The mock broker (kcodec.broker) answered with raw kcodec requests over 127.0.0.1: every API at every
version it advertises, leader-epoch fencing with 74/75 (KIP-320), KIP-359 Produce v14, StopReplica
(KIP-570), DivergingEpoch, idempotent produce, InitProducerId (KIP-360), and malformed input that closes
a connection without hurting the broker."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Iterator
from typing import Any

import broker_requests as rq
import pytest
import txn_requests as tq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kcodec
from kcodec.broker import AsyncMockCluster, BrokerConfig, MockCluster
from kcodec.broker.errors import BrokerError
from kcodec.broker.handlers import ROUTES, served_versions
from kcodec.broker.server import BrokerServer, Close
from kcodec.net.client import Connection
from kcodec.net.client_errors import ConnectionClosedError
from kcodec.net.negotiation import handshake, negotiate
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import LEADER_EPOCH_DURING_DELETE, NO_LEADER_EPOCH
from kcodec.records import NewRecord, iter_batches

FENCED, UNKNOWN = ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(BrokerConfig(brokers=1)) as c:
        c.create_topic("t", 1)
        yield c


def conn_to(c: MockCluster, node: int = 0) -> Connection:
    host, port = c.addresses[node]
    return Connection(host, port, timeout=10)


def topic_id(c: MockCluster, name: str) -> Any:
    return c.call(lambda: c.state.topics[name].topic_id)


def partition_of(resp: Any) -> Any:
    """The single partition entry of a response's single topic, whatever the API."""
    for attr in ("responses", "topics"):
        topics = getattr(resp, attr, None)
        if topics:
            t = topics[0]
            for pattr in ("partitions", "partition_responses"):
                parts = getattr(t, pattr, None)
                if parts:
                    return parts[0]
    raise AssertionError(f"no partition in {resp!r}")


# --- every API, every version ----------------------------------------------------------------------


def sample(key: int, v: int, c: MockCluster, tag: str) -> Any:
    """A valid request of API ``key`` at version ``v`` (errors in the answer are fine; the answer
    must arrive and decode)."""
    tid = topic_id(c, "t")
    group = f"g-{tag}"
    samples = {
        0: lambda: rq.produce("t", tid, v, rq.batch(b"a", b"b", compression="zstd" if v >= 7 else "lz4")),
        1: lambda: rq.fetch("t", tid, v),
        2: lambda: rq.list_offsets("t", v, timestamp=1_700_000_000_000 if v >= 1 else -1),
        3: lambda: rq.metadata(["t", f"auto-{tag}"], v),
        5: lambda: rq.stop_replica(v, "nope", 5),
        8: lambda: rq.cls("OffsetCommitRequest")(group_id=group, generation_id_or_member_epoch=-1, topics=[
            rq.cls("OffsetCommitRequest").OffsetCommitRequestTopic(name="t", partitions=[
                rq.cls("OffsetCommitRequest").OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]),
        9: lambda: (rq.cls("OffsetFetchRequest")(groups=[rq.cls("OffsetFetchRequest").OffsetFetchRequestGroup(
            group_id=group, topics=None)]) if v >= 8 else rq.cls("OffsetFetchRequest")(group_id=group, topics=[
                rq.cls("OffsetFetchRequest").OffsetFetchRequestTopic(name="t", partition_indexes=[0])])),
        10: lambda: (rq.cls("FindCoordinatorRequest")(coordinator_keys=[group]) if v >= 4
                     else rq.cls("FindCoordinatorRequest")(key=group)),
        11: lambda: rq.cls("JoinGroupRequest")(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                               member_id="", protocol_type="consumer", protocols=[
            rq.cls("JoinGroupRequest").JoinGroupRequestProtocol(name="range", metadata=b"\x00")]),
        12: lambda: rq.cls("HeartbeatRequest")(group_id=group, generation_id=1, member_id="nobody"),
        13: lambda: (rq.cls("LeaveGroupRequest")(group_id=group, members=[
            rq.cls("LeaveGroupRequest").MemberIdentity(member_id="nobody")]) if v >= 3
                     else rq.cls("LeaveGroupRequest")(group_id=group, member_id="nobody")),
        14: lambda: rq.cls("SyncGroupRequest")(group_id=group, generation_id=1, member_id="nobody", assignments=[]),
        18: lambda: rq.cls("ApiVersionsRequest")(client_software_name="kcodec-tests", client_software_version="1"),
        19: lambda: rq.cls("CreateTopicsRequest")(timeout_ms=1000, topics=[
            rq.cls("CreateTopicsRequest").CreatableTopic(name=f"new-{tag}", num_partitions=2, replication_factor=1)]),
        20: lambda: (rq.cls("DeleteTopicsRequest")(topics=[rq.cls("DeleteTopicsRequest").DeleteTopicState(
            name=f"new-{tag}")]) if v >= 6 else rq.cls("DeleteTopicsRequest")(topic_names=[f"new-{tag}"])),
        22: lambda: rq.init_producer_id(v),
        23: lambda: rq.offset_for_leader_epoch("t", v, 0, 0),
        24: lambda: tq.add_partitions_to_txn(v, f"tx-{tag}", "t"),
        25: lambda: tq.add_offsets_to_txn(f"tx-{tag}", group),
        26: lambda: tq.end_txn(f"tx-{tag}", commit=True),
        28: lambda: tq.txn_offset_commit(f"tx-{tag}", group, "t"),
        65: lambda: rq.cls("DescribeTransactionsRequest")(transactional_ids=[f"tx-{tag}"]),
        66: lambda: rq.cls("ListTransactionsRequest")(state_filters=["Ongoing"], producer_id_filters=[]),
    }
    return samples[key]()


CASES = [(key, v) for key, r in sorted(ROUTES.items()) for v in range(r.min_version, r.max_version + 1)]


@pytest.mark.parametrize(("key", "version"), CASES, ids=[f"{kcodec.api(k).name}-v{v}" for k, v in CASES])
def test_every_api_answers_at_every_version_it_advertises(cluster: MockCluster, key: int, version: int) -> None:
    tag = f"{key}-{version}"
    if key == 20:  # DeleteTopics deletes what CreateTopics made
        cluster.create_topic(f"new-{tag}", 1)
    with conn_to(cluster) as conn:
        frame = conn.request(sample(key, version, cluster, tag), version)
    body = frame.body
    if key in (0, 1, 2, 23):
        assert partition_of(body).error_code == ErrorCode.NONE, body
    if key == 19:
        assert body.topics[0].error_code == ErrorCode.NONE
    if key == 11:
        assert body.error_code in (ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED)


def test_advertised_versions_match_the_routes(cluster: MockCluster) -> None:
    with conn_to(cluster) as conn:
        result = handshake(conn)
    assert result.broker_ranges == served_versions(False)
    assert result.broker_ranges[0] == (3, 13)  # no proposal version unless enabled
    assert negotiate(result).version("Produce") == 13


# --- KIP-320: fencing with 74 / 75 ---------------------------------------------------------------------


def test_fetch_list_offsets_and_offset_for_leader_epoch_are_fenced() -> None:
    with MockCluster(brokers=2) as c:
        c.create_topic("f", 1)
        c.append("f", 0, [NewRecord(b"x")])
        info = c.move_leader("f", 0)  # leader epoch 0 -> 1, leadership to the second broker
        assert info.leader_epoch == 1
        tid = topic_id(c, "f")
        node = [a for a in c.state.nodes].index(c.state.node(info.leader))  # the leader's index
        with conn_to(c, node) as conn:
            for epoch, want in ((0, FENCED), (2, UNKNOWN), (1, ErrorCode.NONE), (NO_LEADER_EPOCH, ErrorCode.NONE)):
                for v in (9, 12, 15, 16, 17):
                    got = partition_of(conn.request(rq.fetch("f", tid, v, current_leader_epoch=epoch), v).body)
                    assert got.error_code == want, (v, epoch)
                    hint = (got.current_leader.leader_id, got.current_leader.leader_epoch)
                    # KafkaApis.handleFetchRequest fills CurrentLeader only from v16 (KIP-951), though the
                    # field is in the schema from v12
                    assert hint == ((info.leader, 1) if v >= 16 and want == FENCED else (-1, -1)), (v, epoch)
                for v in (4, 11):
                    req = rq.list_offsets("f", v, current_leader_epoch=epoch)
                    assert partition_of(conn.request(req, v).body).error_code == want
                for v in (2, 4):
                    req = rq.offset_for_leader_epoch("f", v, 0, current_leader_epoch=epoch)
                    assert partition_of(conn.request(req, v).body).error_code == want
        with conn_to(c, 1 - node) as follower:  # right epoch, a follower
            # FetchParams.fetchOnlyLeader: a consumer's Fetch v11+ carries client metadata (KIP-392) and
            # any replica serves it; before v11 only the leader does
            got = partition_of(follower.request(rq.fetch("f", tid, 10, current_leader_epoch=1), 10).body)
            assert got.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            got = partition_of(follower.request(rq.fetch("f", tid, 12, current_leader_epoch=1), 12).body)
            assert got.error_code == ErrorCode.NONE and got.high_watermark == 1
            stale = partition_of(follower.request(rq.fetch("f", tid, 12, current_leader_epoch=0), 12).body)
            assert stale.error_code == FENCED  # the epoch is checked before leadership
            for v in (10, 12):
                replica = rq.fetch("f", tid, v, current_leader_epoch=1)
                replica.replica_id = 3  # a broker's fetch: the leader only, whatever the version
                got = partition_of(follower.request(replica, v).body)
                assert got.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_negative_epochs_other_than_minus_one() -> None:
    # FetchRequest.optionalEpoch turns any negative current leader epoch into "none" (no check), while
    # ReplicaManager's ListOffsets (UNKNOWN_EPOCH) and lastOffsetForLeaderEpoch (NO_PARTITION_LEADER_EPOCH)
    # take only -1 as none: -2 is an epoch there, older than any, so FENCED_LEADER_EPOCH.
    with MockCluster(brokers=1) as c:
        c.create_topic("n", 1)
        c.move_leader("n", 0)  # epoch 1
        tid = topic_id(c, "n")
        with conn_to(c) as conn:
            for epoch in (-2, -5, -(2**31)):
                for v in (9, 12, 17):
                    req = rq.fetch("n", tid, v, current_leader_epoch=epoch)
                    assert partition_of(conn.request(req, v).body).error_code == ErrorCode.NONE, (v, epoch)
                got = partition_of(conn.request(rq.list_offsets("n", 4, current_leader_epoch=epoch), 4).body)
                assert got.error_code == FENCED
                got = partition_of(conn.request(rq.offset_for_leader_epoch("n", 4, 0, epoch), 4).body)
                assert got.error_code == FENCED


def test_a_broker_that_is_not_a_replica_answers_not_leader_or_follower() -> None:
    # ReplicaManager.getPartitionOrError: a partition this broker does not host (HostedPartition.None) that
    # the metadata knows is NOT_LEADER_OR_FOLLOWER, before any epoch check (Partition.checkCurrentLeaderEpoch
    # runs only on a hosted partition).
    with MockCluster(brokers=3) as c:
        c.create_topic("r", 1, replication_factor=1)
        leader = c.describe("r").leader
        other = next(i for i, n in enumerate(c.state.nodes) if n.node_id != leader)
        tid = topic_id(c, "r")
        with conn_to(c, other) as conn:
            for epoch in (-1, 0, 1, 5):  # equal, newer: never 74/75 from a non-replica
                got = partition_of(conn.request(rq.fetch("r", tid, 12, current_leader_epoch=epoch), 12).body)
                assert got.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER, epoch
                got = partition_of(conn.request(rq.list_offsets("r", 4, current_leader_epoch=epoch), 4).body)
                assert got.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER, epoch
                got = partition_of(conn.request(rq.offset_for_leader_epoch("r", 4, 0, epoch), 4).body)
                assert got.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER, epoch
            produced = partition_of(conn.request(rq.produce("r", tid, 9, rq.batch(b"v")), 9).body)
            assert produced.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_follower_refuses_offsets_for_leader_epoch_even_for_replica_id_minus_two() -> None:
    # ReplicaManager.lastOffsetForLeaderEpoch calls Partition.lastOffsetForLeaderEpoch with
    # fetchOnlyFromLeader = true whatever the request's replica id (ListOffsets is the API where -2, the
    # debugging consumer, may read from a follower).
    with MockCluster(brokers=2) as c:
        c.create_topic("o", 1)  # replicas (1, 2): node 2 is a follower
        c.append("o", 0, [NewRecord(b"x")])
        with conn_to(c, 1) as follower:
            for replica_id in (-1, -2):
                req = rq.offset_for_leader_epoch("o", 3, 0, 0)
                req.replica_id = replica_id
                got = partition_of(follower.request(req, 3).body)
                assert (got.error_code, got.end_offset) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1), replica_id
            debug = rq.list_offsets("o", 4, current_leader_epoch=0)
            debug.replica_id = -2
            got = partition_of(follower.request(debug, 4).body)
            assert (got.error_code, got.offset) == (ErrorCode.NONE, 1)  # ListOffsets: allowed


def test_offsets_for_leader_epoch_and_diverging_epoch_after_an_unclean_election() -> None:
    with MockCluster(brokers=1) as c:
        c.create_topic("u", 1)
        for i in range(10):
            c.append("u", 0, [NewRecord(f"old-{i}".encode())])
        info = c.unclean_election("u", 0, truncate_to=5, records=[NewRecord(b"new-0"), NewRecord(b"new-1")])
        assert (info.leader_epoch, info.log_end_offset, info.epochs) == (1, 7, ((0, 0), (1, 5)))
        tid = topic_id(c, "u")
        with conn_to(c) as conn:
            answer = partition_of(conn.request(rq.offset_for_leader_epoch("u", 4, 0, 1), 4).body)
            assert (answer.leader_epoch, answer.end_offset) == (0, 5)  # epoch 0 now ends at 5
            latest = partition_of(conn.request(rq.offset_for_leader_epoch("u", 4, 1, 1), 4).body)
            assert (latest.leader_epoch, latest.end_offset) == (1, 7)
            unknown = partition_of(conn.request(rq.offset_for_leader_epoch("u", 4, 3, 1), 4).body)
            assert (unknown.leader_epoch, unknown.end_offset) == (-1, -1)
            # a fetcher that read offsets 0-9 in epoch 0 asks for offset 10: its log diverged at 5
            div = partition_of(conn.request(rq.fetch("u", tid, 12, 10, 1, last_fetched_epoch=0), 12).body)
            assert div.error_code == ErrorCode.NONE and bytes(div.records or b"") == b""
            assert (div.diverging_epoch.epoch, div.diverging_epoch.end_offset) == (0, 5)
            ok = partition_of(conn.request(rq.fetch("u", tid, 12, 5, 1, last_fetched_epoch=0), 12).body)
            assert ok.diverging_epoch.epoch == -1 and ok.high_watermark == 7
            values = [r.value for b in iter_batches(ok.records) for r in b.records()]
            assert values == [b"new-0", b"new-1"]
            # Partition.readRecords: a last fetched epoch newer than every epoch the leader knows has no
            # defined end: OFFSET_OUT_OF_RANGE, not DivergingEpoch(-1, -1)
            newer = partition_of(conn.request(rq.fetch("u", tid, 12, 7, 1, last_fetched_epoch=5), 12).body)
            assert newer.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
            assert newer.diverging_epoch.epoch == -1 and bytes(newer.records or b"") == b""


# --- KIP-359 on the wire: Produce v14 --------------------------------------------------------------


def test_kip359_produce_v14_is_fenced_when_enabled() -> None:
    with MockCluster(brokers=1, proposals=True) as c:
        c.create_topic("p", 1)
        c.move_leader("p", 0)
        c.move_leader("p", 0)  # epoch 2 (one broker: it stays the leader)
        tid = topic_id(c, "p")
        with conn_to(c) as conn:
            result = handshake(conn)
            assert result.broker_ranges[0] == (3, 14)
            assert negotiate(result).version("Produce") == 13  # opt-in on the client side too
            n = negotiate(result, proposals=True)
            assert n.version("Produce") == 14 and n.fencing()["KIP-359"] is True
            for epoch, want in ((1, FENCED), (3, UNKNOWN), (2, ErrorCode.NONE), (NO_LEADER_EPOCH, ErrorCode.NONE)):
                got = partition_of(conn.request(rq.produce("p", tid, 14, rq.batch(b"v"), current_leader_epoch=epoch), 14).body)
                assert got.error_code == want, epoch
                assert (got.base_offset >= 0) == (want == ErrorCode.NONE)
        assert c.describe("p").log_end_offset == 2


def test_produce_v14_is_refused_without_the_flag(cluster: MockCluster) -> None:
    tid = topic_id(cluster, "t")
    with conn_to(cluster) as conn, pytest.raises(ConnectionClosedError):
        conn.request(rq.produce("t", tid, 14, rq.batch(b"v"), current_leader_epoch=0), 14)


# --- KIP-570: StopReplica ----------------------------------------------------------------------------


def test_stop_replica_leader_epochs() -> None:
    with MockCluster(brokers=2) as c:
        c.create_topic("s", 1)  # replicas (1, 2), leader 1, epoch 0
        c.move_leader("s", 0, to=1)  # epoch 1
        with conn_to(c, 1) as conn:  # node 2, a follower
            def stop(v: int, epoch: int, controller_epoch: int = 1) -> Any:
                return conn.request(rq.stop_replica(v, "s", epoch, controller_epoch), v).body
            # ReplicaManager.stopReplicas (Kafka 3.5+, KAFKA-13972): older is fenced, equal is accepted
            got = stop(3, 0)
            assert got.error_code == 0 and got.partition_errors[0].error_code == FENCED
            assert c.describe("s").replicas == (1, 2)
            assert stop(3, 5, controller_epoch=0).error_code == ErrorCode.STALE_CONTROLLER_EPOCH
            assert stop(3, 1).partition_errors[0].error_code == 0  # equal epoch: stopped
            assert c.describe("s").replicas == (1,)
            assert stop(4, LEADER_EPOCH_DURING_DELETE).partition_errors[0].error_code == 0  # -2 overrides
            assert stop(4, 0).partition_errors[0].error_code == 0  # no longer hosted here: nothing to check
        with conn_to(c, 0) as leader:  # v0-2 carry no epoch (-1): stopped without a check
            got = leader.request(rq.stop_replica(2, "s", NO_LEADER_EPOCH), 2).body
            assert got.partition_errors[0].error_code == 0
        info = c.describe("s")
        assert (info.replicas, info.leader) == ((), -1)


# --- idempotent produce and InitProducerId (KIP-98, KIP-360) ----------------------------------------


def test_idempotent_produce_sequences(cluster: MockCluster) -> None:
    cluster.create_topic("idem", 1)
    tid = topic_id(cluster, "idem")
    with conn_to(cluster) as conn:
        init = conn.request(rq.init_producer_id(4), 4).body
        pid, epoch = init.producer_id, init.producer_epoch
        assert init.error_code == 0 and epoch == 0

        def send(seq: int, ep: int, *values: bytes) -> Any:
            records = rq.batch(*values, producer_id=pid, producer_epoch=ep, base_sequence=seq)
            return partition_of(conn.request(rq.produce("idem", tid, 9, records), 9).body)

        first = send(0, 0, b"a", b"b")
        assert (first.error_code, first.base_offset) == (0, 0)
        retry = send(0, 0, b"a", b"b")  # a retry of the same batch: same offsets, nothing appended
        assert (retry.error_code, retry.base_offset) == (0, 0)
        assert send(5, 0, b"c").error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert send(2, 0, b"c").base_offset == 2
        assert send(0, 1, b"d").base_offset == 3  # a new epoch starts at sequence 0
        assert send(3, 0, b"e").error_code == ErrorCode.INVALID_PRODUCER_EPOCH
        assert send(1, 2, b"f").error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert cluster.describe("idem").log_end_offset == 4


def test_an_unknown_producer_may_start_at_any_sequence(cluster: MockCluster) -> None:
    # ProducerAppendInfo.checkSequence: a producer id the partition has no entry for has the current epoch
    # NO_PRODUCER_EPOCH, and "if there is no current producer epoch ... accept writes with any sequence
    # number" (Kafka 2.5+, KIP-360; before it, UNKNOWN_PRODUCER_ID). Then the sequence must follow on.
    cluster.create_topic("unknown-pid", 1)
    tid = topic_id(cluster, "unknown-pid")
    with conn_to(cluster) as conn:
        def send(pid: int, seq: int, ep: int = 0) -> Any:
            records = rq.batch(b"v", producer_id=pid, producer_epoch=ep, base_sequence=seq)
            return partition_of(conn.request(rq.produce("unknown-pid", tid, 9, records), 9).body)

        assert (send(4242, 7).error_code, send(4242, 8).error_code) == (0, 0)
        assert send(4242, 10).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # known now: a gap
        assert send(4243, 2**31 - 1).error_code == 0 and send(4243, 0).error_code == 0  # wraps to 0


def test_an_unclean_election_keeps_the_producer_state_of_the_kept_log() -> None:
    # The new leader's producer state is what its own log holds (ProducerStateManager, rebuilt on
    # truncation): a producer whose batches are all gone is unknown (any sequence, see above); one whose
    # earlier batches were kept must go on from them.
    with MockCluster(brokers=1) as c:
        c.create_topic("ue", 1)
        c.append("ue", 0, [NewRecord(b"other")])  # offset 0, no producer id
        tid = topic_id(c, "ue")
        with conn_to(c) as conn:
            def send(pid: int, seq: int) -> Any:
                records = rq.batch(b"a", b"b", producer_id=pid, producer_epoch=0, base_sequence=seq)
                return partition_of(conn.request(rq.produce("ue", tid, 9, records), 9).body)

            assert [send(1, 0).base_offset, send(2, 0).base_offset, send(1, 2).base_offset] == [1, 3, 5]
            c.unclean_election("ue", 0, truncate_to=3)  # keeps offsets 0-2: producer 1's first batch
            assert send(2, 2).error_code == 0  # producer 2 has no batch left: unknown, accepted
            assert send(1, 4).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # 2-3 were lost
            assert send(1, 2).error_code == 0  # on from sequence 1, its last kept one
            retry = send(1, 0)  # a retry of the kept batch is still recognised
            assert (retry.error_code, retry.base_offset) == (0, 1)


def test_control_leadership_on_a_partition_without_replicas_is_a_control_error() -> None:
    with MockCluster(brokers=1) as c:
        c.create_topic("gone", 1)
        with conn_to(c) as conn:
            got = conn.request(rq.stop_replica(3, "gone", LEADER_EPOCH_DURING_DELETE), 3).body
            assert got.partition_errors[0].error_code == 0
        assert c.describe("gone").replicas == ()
        for op in (lambda: c.move_leader("gone", 0), lambda: c.unclean_election("gone", 0, truncate_to=0)):
            with pytest.raises(BrokerError, match="no replicas"):
                op()
        assert c.describe("gone").leader_epoch == 0  # nothing changed


def test_init_producer_id_kip360(cluster: MockCluster) -> None:
    txn = "tx-kip360"
    coordinator = cluster.call(lambda: cluster.state.coordinator_for(txn).node_id)
    assert coordinator == 1
    with conn_to(cluster) as conn:
        def init(v: int, pid: int = -1, epoch: int = -1) -> Any:
            return conn.request(rq.init_producer_id(v, txn, pid, epoch), v).body
        first = init(4)
        pid = first.producer_id
        assert (first.error_code, first.producer_epoch) == (0, 0)
        bumped = init(4, pid, 0)
        assert (bumped.producer_id, bumped.producer_epoch) == (pid, 1)
        retry = init(4, pid, 0)  # the answer to the bump was lost: the same epoch again
        assert (retry.producer_id, retry.producer_epoch) == (pid, 1)
        assert init(4, pid, 1).producer_epoch == 2
        assert init(4, pid, 0).error_code == ErrorCode.PRODUCER_FENCED
        assert init(3, pid, 0).error_code == ErrorCode.INVALID_PRODUCER_EPOCH  # before KIP-588
        assert init(4, pid, -1).error_code == ErrorCode.INVALID_REQUEST
        plain = conn.request(rq.init_producer_id(4, None, pid, 2), 4).body  # no transactional id
        assert plain.producer_id not in (-1, pid) and plain.producer_epoch == 0


def test_init_producer_id_a_new_instance_fences_the_old_one(cluster: MockCluster) -> None:
    # KIP-360 (TransactionMetadata.prepareIncrementProducerEpoch): instance A has (pid, 0); instance B's
    # InitProducerId(-1, -1) bumps to (pid, 1) and clears the last epoch; A's InitProducerId(pid, 0) is then
    # PRODUCER_FENCED (90) at v4+ and INVALID_PRODUCER_EPOCH (47) below (KafkaApis, KIP-588).
    txn = "tx-zombie"
    with conn_to(cluster) as conn:
        def init(v: int, pid: int = -1, epoch: int = -1) -> Any:
            return conn.request(rq.init_producer_id(v, txn, pid, epoch), v).body
        a = init(4)
        b = init(4)
        assert (b.error_code, b.producer_id, b.producer_epoch) == (0, a.producer_id, 1)
        for v, error in ((3, ErrorCode.INVALID_PRODUCER_EPOCH), (4, ErrorCode.PRODUCER_FENCED),
                         (5, ErrorCode.PRODUCER_FENCED)):
            got = init(v, a.producer_id, 0)
            assert (got.error_code, got.producer_id, got.producer_epoch) == (error, -1, -1), v
        assert init(4, a.producer_id, 1).producer_epoch == 2  # B recovers: bumped


# --- records stored as received ---------------------------------------------------------------------


def test_produced_batches_come_back_byte_for_byte(cluster: MockCluster) -> None:
    cluster.create_topic("bytes", 1)
    tid = topic_id(cluster, "bytes")
    sent = [rq.batch(b"one", b"two", compression=codec) for codec in ("none", "gzip", "snappy", "lz4", "zstd")]
    with conn_to(cluster) as conn:
        for data in sent:
            assert partition_of(conn.request(rq.produce("bytes", tid, 12, data), 12).body).error_code == 0
        got = partition_of(conn.request(rq.fetch("bytes", tid, 16), 16).body)
    stored = bytes(got.records)
    offset = 0
    for i, data in enumerate(sent):
        chunk = stored[offset:offset + len(data)]
        base, epoch = struct.unpack_from(">q", chunk)[0], struct.unpack_from(">i", chunk, 12)[0]
        assert (base, epoch) == (2 * i, 0)  # offsets assigned, the leader's epoch written in
        assert chunk[8:12] == data[8:12] and chunk[16:] == data[16:]  # everything else as received
        offset += len(data)
    batches = list(iter_batches(stored))  # CRCs still valid: offset and epoch are outside the CRC
    assert [r.value for b in batches for r in b.records()] == [b"one", b"two"] * 5


def test_error_messages_quoting_a_huge_name_still_fit_the_response(cluster: MockCluster) -> None:
    # Found by `kcodec fuzz` against kcodec broker: a 32,767-byte topic name quoted in the error
    # message made the response unencodable and the connection closed.
    create = rq.cls("CreateTopicsRequest")
    name = "n" * 32767
    req = create(timeout_ms=1000, topics=[create.CreatableTopic(name=name, num_partitions=1, replication_factor=1)])
    with conn_to(cluster) as conn:
        result = conn.request(req, 6).body.topics[0]
    assert result.name == name and result.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert 0 < len(result.error_message) <= 1000 and result.error_message.endswith("…")


def test_produce_errors(cluster: MockCluster) -> None:
    tid = topic_id(cluster, "t")
    good = rq.batch(b"x")
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF
    with conn_to(cluster) as conn:
        def err(records: bytes, v: int = 9, **kw: Any) -> int:
            return int(partition_of(conn.request(rq.produce("t", tid, v, records, **kw), v).body).error_code)
        assert err(bytes(corrupt)) == ErrorCode.CORRUPT_MESSAGE
        assert err(good + good) == ErrorCode.INVALID_RECORD  # v3+: exactly one batch
        assert err(b"") == ErrorCode.INVALID_RECORD
        assert err(rq.batch(b"z", compression="zstd"), v=6) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        assert err(good, acks=2) == ErrorCode.INVALID_REQUIRED_ACKS
        assert err(good, partition=7) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # acks=0: no response at all; the next request is answered normally
        conn.send(rq.produce("t", tid, 9, good, acks=0), 9)
        assert conn.request(rq.cls("ApiVersionsRequest")(), 0).body.error_code == 0


# --- malformed input: the connection closes, the broker keeps serving ------------------------------


def raw_exchange(address: tuple[str, int], data: bytes) -> bytes:
    """Send ``data``, then read until the broker closes the connection (or 5 s pass)."""
    with socket.create_connection(address, timeout=5) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def frame_of(key: int, version: int, body: bytes, correlation_id: int = 9) -> bytes:
    header = struct.pack(">hhih", key, version, correlation_id, -1)
    return struct.pack(">i", len(header) + len(body)) + header + body


@pytest.mark.parametrize(
    "data",
    [
        struct.pack(">i", -5),  # negative size
        struct.pack(">i", 1 << 30) + b"x" * 10,  # larger than max_request_bytes
        struct.pack(">i", 3) + b"abc",  # shorter than a header
        frame_of(999, 0, b""),  # unknown api key
        frame_of(1, 3, b""),  # Fetch v3: below what is served
        frame_of(3, 12, b"\x07\x00\x00"),  # Metadata v12 whose body does not decode
        frame_of(0, 9, b"\xff" * 64),  # Produce garbage
        frame_of(11, 5, b"\x00\x05group\x00\x00"),  # JoinGroup cut short
        b"\x00\x00\x00\x10" + b"\x00" * 6,  # a frame that never completes (EOF)
    ],
    ids=["negative-size", "too-large", "no-header", "unknown-api", "old-version", "bad-body", "garbage",
         "truncated-body", "eof-mid-frame"],
)
def test_malformed_requests_close_the_connection(cluster: MockCluster, data: bytes) -> None:
    address = cluster.addresses[0]
    assert raw_exchange(address, data) == b""
    with conn_to(cluster) as conn:  # the broker is fine
        assert conn.request(rq.cls("ApiVersionsRequest")(), 0).body.error_code == 0


def test_api_versions_above_the_maximum_gets_kip511_reply(cluster: MockCluster) -> None:
    reply = raw_exchange(cluster.addresses[0], frame_of(18, 99, b"\x00\x00\x00"))
    frame = kcodec.decode_response(reply, 18, 0)
    assert frame.correlation_id == 9 and frame.body.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in frame.body.api_keys] == [(18, 0, 4)]


# Bodies of random bytes for every served API and version: each is answered (with a response that
# decodes) or closes its connection; nothing hangs, nothing escapes the broker.
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(CASES), st.binary(max_size=200), st.data())
def test_random_bodies_never_hurt_the_broker(fuzz: Any, case: tuple[int, int], body: bytes, data: Any) -> None:
    loop, server = fuzz
    key, version = case
    if data.draw(st.booleans()):  # a valid request with random bytes appended or some cut off
        valid = kcodec.encode_request(sample(key, version, MockClusterView(server), "fz"), version, correlation_id=1)
        cut = data.draw(st.integers(4, len(valid)))
        frame_bytes = valid[:cut] + body
        frame_bytes = struct.pack(">i", len(frame_bytes) - 4) + frame_bytes[4:]
    else:
        frame_bytes = frame_of(key, version, body)
    try:
        reply = loop.run_until_complete(asyncio.wait_for(server.process(frame_bytes), 5))
    except Close:
        return
    if reply is None:
        return
    # The random bytes may have rewritten the header: answer what the frame says, not what was drawn.
    sent_key, sent_version, sent_corr = struct.unpack_from(">hhi", frame_bytes, 4)
    if sent_key == 18 and sent_version > kcodec.api(18).max_version:
        # Kafka's rule (KIP-511): an ApiVersions version it does not know is answered in v0 with 35
        resp = kcodec.decode_response(b"".join(reply), sent_key, 0)
        assert resp.body.error_code == ErrorCode.UNSUPPORTED_VERSION
    else:
        resp = kcodec.decode_response(b"".join(reply), sent_key, sent_version)
    assert resp.correlation_id == sent_corr


class MockClusterView:
    """What ``sample`` needs from a cluster, for a server driven without sockets."""

    def __init__(self, server: BrokerServer) -> None:
        self.state = server.cluster

    def call(self, fn: Any) -> Any:
        return fn()


@pytest.fixture(scope="module")
def fuzz() -> Iterator[tuple[asyncio.AbstractEventLoop, BrokerServer]]:
    loop = asyncio.new_event_loop()
    cluster = AsyncMockCluster(BrokerConfig(max_wait_ms=20, max_request_bytes=1 << 16))
    loop.run_until_complete(cluster.start())
    cluster.create_topic("t", 1)
    try:
        yield loop, cluster.servers[0]
    finally:
        loop.run_until_complete(cluster.stop())
        loop.close()


def test_a_failed_fetch_reports_no_high_watermark_or_log_start() -> None:
    # ReplicaManager.readFromLog: a partition whose read fails (not the leader, fenced, out of range) is
    # answered from createLogReadResult(e): high watermark, log start and last stable offset all -1.
    with MockCluster(brokers=1) as c:
        c.create_topic("hw", 1)
        c.append("hw", 0, [NewRecord(b"x"), NewRecord(b"y")])
        c.move_leader("hw", 0)  # epoch 1
        tid = topic_id(c, "hw")
        with conn_to(c) as conn:
            for kwargs in ({"offset": 7, "current_leader_epoch": 1}, {"offset": 0, "current_leader_epoch": 0},
                           {"offset": 2, "current_leader_epoch": 1, "last_fetched_epoch": 4}):
                got = partition_of(conn.request(rq.fetch("hw", tid, 12, **kwargs), 12).body)
                assert got.error_code != 0 and (got.high_watermark, got.log_start_offset) == (-1, -1), kwargs
                assert got.last_stable_offset == -1
            ok = partition_of(conn.request(rq.fetch("hw", tid, 12, 2, 1), 12).body)
            got_ok = (ok.error_code, ok.high_watermark, ok.log_start_offset, ok.last_stable_offset)
            assert got_ok == (0, 2, 0, 2)
