"""Leader-epoch fencing, differential: one scenario run against Apache Kafka (a 3-node KRaft cluster of
the newest 4.x release, tests/apache_kafka.py) and against ``kcodec broker`` (3 brokers), whose outcomes
must be equal.

The scenario: a topic with one partition on replicas (1, 2) (node 3 hosts no replica); three records at
leader epoch 0 on node 1, leadership moved to node 2 (epoch 1) and two records, moved back to node 1
(epoch 2) and one record. Apache Kafka's leadership is moved through its Admin API
(AlterPartitionReassignments to put the new leader first, then ElectLeaders with the preferred
election), the mock's through its control API. Then, raw requests:

- Metadata from every node: leader, leader epoch, replicas;
- Fetch (v12 and v16), ListOffsets (v7) and OffsetsForLeaderEpoch (v4) to the leader, the follower and
  the node without a replica, with the current leader epoch older, equal, newer, -1 and -2: error codes
  (and Fetch v16's current-leader hint, ListOffsets' offset and epoch, on the leader);
- OffsetsForLeaderEpoch end offsets on the leader for epochs 0 to 3;
- Fetch v12 with a last fetched epoch: the DivergingEpoch of a fetcher that read past epoch 0's end,
  and the answer to a last fetched epoch newer than every epoch the leader knows.

Not compared here (Kafka cannot be driven there or needs more than raw requests): an unclean leader
election (it needs a leader stopped and a topic configured for it), StopReplica (KRaft brokers do not
serve it), Produce's KIP-359 epochs (a kcodec proposal, not in Kafka).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import broker_requests as rq
import pytest
from apache_kafka import KafkaCluster

from kcodec.broker import MockCluster
from kcodec.client import Connection
from kcodec.error_codes import ErrorCode

pytestmark = pytest.mark.apache_kafka

REPLICAS = (1, 2)
NON_REPLICA = 3
#: Metadata polls while waiting for every node to see a leadership change (paced by POLL_S; a count,
#: not a time budget: the loop ends after this many answers).
POLLS = 600
POLL_S = 0.1
Outcome = dict[str, Any]


class Target(Protocol):
    name: str

    def address(self, node: int) -> tuple[str, int]: ...

    def move_leader(self, topic: str, to: int) -> None: ...


def cls(name: str) -> Any:
    return rq.cls(name)


def _connect(target: Target, node: int) -> Connection:
    return Connection(*target.address(node), timeout=30)


def _metadata(target: Target, node: int, topic: str) -> Any:
    with _connect(target, node) as conn:
        body = conn.request(rq.metadata([topic], 12), 12).body
    return body.topics[0]


def wait_for_leader(target: Target, topic: str, leader: int, epoch: int) -> None:
    """Poll every node's Metadata until each shows ``leader`` at ``epoch`` (at most POLLS answers)."""
    for _ in range(POLLS):
        seen = []
        for node in (1, 2, 3):
            t = _metadata(target, node, topic)
            parts = t.partitions or []
            seen.append((parts[0].leader_id, parts[0].leader_epoch) if t.error_code == 0 and parts else None)
        if all(s == (leader, epoch) for s in seen):
            return
        time.sleep(POLL_S)
    raise AssertionError(f"{target.name}: {topic} never showed leader {leader} at epoch {epoch}: {seen}")


class KafkaTarget:
    name = "Apache Kafka"

    def __init__(self, cluster: KafkaCluster) -> None:
        self.cluster = cluster

    def address(self, node: int) -> tuple[str, int]:
        return self.cluster.nodes[node].address

    def move_leader(self, topic: str, to: int) -> None:
        """The Admin API way: reorder the replicas so that ``to`` is preferred, then elect it."""
        order = [to, *(r for r in REPLICAS if r != to)]
        r = cls("AlterPartitionReassignmentsRequest")
        reassign = r(timeout_ms=30000, topics=[r.ReassignableTopic(name=topic, partitions=[
            r.ReassignablePartition(partition_index=0, replicas=order)])])
        with _connect(self, 1) as conn:
            body = conn.request(reassign, 0).body
            assert body.error_code == 0 and body.responses[0].partitions[0].error_code == 0, body
            for _ in range(POLLS):  # the reordering is done when every node lists the new order
                nodes = [list(_metadata(self, n, topic).partitions[0].replica_nodes) for n in (1, 2, 3)]
                if nodes == [order] * 3:
                    break
                time.sleep(POLL_S)
            e = cls("ElectLeadersRequest")
            elect = e(election_type=0, timeout_ms=30000,
                      topic_partitions=[e.TopicPartitions(topic=topic, partitions=[0])])
            body = conn.request(elect, 2).body
            assert body.error_code == 0, body
            result = body.replica_election_results[0].partition_result[0]
            assert result.error_code == 0, result


class MockTarget:
    name = "kcodec broker"

    def __init__(self, cluster: MockCluster) -> None:
        self.cluster = cluster

    def address(self, node: int) -> tuple[str, int]:
        return self.cluster.addresses[node - 1]

    def move_leader(self, topic: str, to: int) -> None:
        self.cluster.move_leader(topic, 0, to=to)


def create_topic(target: Target, topic: str) -> None:
    c = cls("CreateTopicsRequest")
    create = c(timeout_ms=30000, topics=[c.CreatableTopic(
        name=topic, num_partitions=-1, replication_factor=-1,
        assignments=[c.CreatableReplicaAssignment(partition_index=0, broker_ids=list(REPLICAS))])])
    with _connect(target, 1) as conn:
        body = conn.request(create, 7).body
    assert body.topics[0].error_code == 0, body
    wait_for_leader(target, topic, REPLICAS[0], 0)


def produce(target: Target, topic: str, leader: int, values: list[bytes]) -> None:
    with _connect(target, leader) as conn:
        for v in values:  # one batch per record: the epoch boundaries fall between batches
            got = conn.request(rq.produce(topic, None, 9, rq.batch(v)), 9).body  # type: ignore[arg-type]
            part = got.responses[0].partition_responses[0]
            assert part.error_code == 0, (target.name, part)


def scenario(target: Target) -> Outcome:
    """Run the scenario on ``target`` and return what it answered (node ids and epochs, no topic ids)."""
    topic = f"fence-{uuid.uuid4().hex[:8]}"
    create_topic(target, topic)
    produce(target, topic, 1, [b"e0-0", b"e0-1", b"e0-2"])
    target.move_leader(topic, 2)
    wait_for_leader(target, topic, 2, 1)
    produce(target, topic, 2, [b"e1-0", b"e1-1"])
    target.move_leader(topic, 1)
    wait_for_leader(target, topic, 1, 2)
    produce(target, topic, 1, [b"e2-0"])
    out: Outcome = {"metadata": {}}
    for node in (1, 2, 3):
        t = _metadata(target, node, topic)
        p = t.partitions[0]
        replicas = tuple(p.replica_nodes)
        out["metadata"][node] = (t.error_code, p.error_code, p.leader_id, p.leader_epoch, replicas)
    topic_id = _metadata(target, 1, topic).topic_id
    roles = {"leader": 1, "follower": 2, "non-replica": NON_REPLICA}
    for role, node in roles.items():
        with _connect(target, node) as conn:
            out[role] = _fenced_requests(conn, topic, topic_id, leader=role == "leader")
    with _connect(target, 1) as conn:
        out["end_offsets"] = {
            epoch: _pair(conn.request(rq.offset_for_leader_epoch(topic, 4, epoch, 2), 4).body)
            for epoch in (0, 1, 2, 3)
        }
        diverged = _part(conn.request(rq.fetch(topic, topic_id, 12, 5, 2, last_fetched_epoch=0), 12).body)
        div = diverged.diverging_epoch
        out["diverging"] = (diverged.error_code, div.epoch, div.end_offset)
        newer = _part(conn.request(rq.fetch(topic, topic_id, 12, 6, 2, last_fetched_epoch=7), 12).body)
        out["last_fetched_newer"] = (newer.error_code, newer.diverging_epoch.epoch, newer.high_watermark)
    return out


def _part(body: Any) -> Any:
    topics = getattr(body, "responses", None) or body.topics
    parts = getattr(topics[0], "partitions", None) or topics[0].partition_responses
    return parts[0]


def _pair(body: Any) -> tuple[int, int, int]:
    p = _part(body)
    return p.error_code, p.leader_epoch, p.end_offset


def _fenced_requests(conn: Connection, topic: str, topic_id: Any, *, leader: bool) -> Outcome:
    """Fetch, ListOffsets and OffsetsForLeaderEpoch with the current leader epoch older (1), equal (2),
    newer (3), -1 and -2 than the partition's (2)."""
    out: Outcome = {}
    for epoch in (1, 2, 3, -1, -2):
        for v in (12, 16):
            p = _part(conn.request(rq.fetch(topic, topic_id, v, 6, epoch), v).body)
            hint = (p.current_leader.leader_id, p.current_leader.leader_epoch)
            out[f"fetch v{v} epoch {epoch}"] = (p.error_code, hint)
        p = _part(conn.request(rq.list_offsets(topic, 7, current_leader_epoch=epoch), 7).body)
        answer = (p.error_code, p.offset, p.leader_epoch)
        out[f"list_offsets epoch {epoch}"] = answer if leader else p.error_code
        p = _part(conn.request(rq.offset_for_leader_epoch(topic, 4, 1, epoch), 4).body)
        out[f"offsets_for_leader_epoch epoch {epoch}"] = (p.error_code, p.leader_epoch, p.end_offset)
    return out


# --- the two targets ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mock_cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as c:
        yield c


@pytest.fixture(scope="module")
def outcomes(apache_kafka_cluster: KafkaCluster, mock_cluster: MockCluster) -> dict[str, Outcome]:
    return {"kafka": scenario(KafkaTarget(apache_kafka_cluster)), "mock": scenario(MockTarget(mock_cluster))}


def _same(outcomes: dict[str, Outcome], pick: Callable[[Outcome], Any]) -> Any:
    kafka, mock = pick(outcomes["kafka"]), pick(outcomes["mock"])
    assert mock == kafka, f"\nApache Kafka:  {kafka}\nkcodec broker: {mock}"
    return kafka


def test_metadata_leader_epochs_across_moves(outcomes: dict[str, Outcome]) -> None:
    got = _same(outcomes, lambda o: o["metadata"])
    assert got[1][2:4] == (1, 2)  # leader 1 at epoch 2 after two moves, on every node


@pytest.mark.parametrize("role", ["leader", "follower", "non-replica"])
def test_fencing_on_fetch_list_offsets_offsets_for_leader_epoch(
    outcomes: dict[str, Outcome], role: str
) -> None:
    got = _same(outcomes, lambda o: o[role])
    if role == "leader":
        assert got["fetch v12 epoch 1"][0] == ErrorCode.FENCED_LEADER_EPOCH
        assert got["fetch v12 epoch 3"][0] == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_offsets_for_leader_epoch_end_offsets_after_the_moves(outcomes: dict[str, Outcome]) -> None:
    got = _same(outcomes, lambda o: o["end_offsets"])
    assert got[0] == (0, 0, 3)


def test_diverging_epoch_and_a_last_fetched_epoch_newer_than_the_leader_knows(
    outcomes: dict[str, Outcome],
) -> None:
    assert _same(outcomes, lambda o: o["diverging"]) == (0, 0, 3)
    assert _same(outcomes, lambda o: o["last_fetched_newer"])[0] == ErrorCode.OFFSET_OUT_OF_RANGE
