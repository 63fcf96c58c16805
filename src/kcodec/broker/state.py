"""The cluster's state, shared by all its brokers: nodes, topics, partitions (leader, leader epoch,
replicas, log), idempotent-producer state, and the control operations (create and delete topics, move
leadership, an unclean leader election that truncates and rewrites a partition)."""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections import deque
from dataclasses import dataclass, field

from kcodec.broker.config import BrokerConfig
from kcodec.broker.errors import BrokerError
from kcodec.broker.faults import Faults
from kcodec.broker.groups import GroupCoordinator
from kcodec.broker.log import AppendResult, PartitionLog
from kcodec.broker.transactions import TransactionCoordinator
from kcodec.broker.txn_log import PartitionTxns
from kcodec.fencing import TransactionalIdState
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.model import Uuid
from kcodec.protocol.sentinels import NO_PRODUCER_ID
from kcodec.records import NewRecord, build_batch, iter_batches

TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
#: Kafka keeps the metadata of the last five batches per producer and partition to spot retries.
PRODUCER_BATCHES_KEPT = 5
FIRST_PRODUCER_ID = 1000


@dataclass(slots=True)
class Node:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(slots=True)
class ProducerBatch:
    first_seq: int
    last_seq: int
    base_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    """Idempotence state of one producer id on one partition (KIP-98)."""

    epoch: int
    batches: deque[ProducerBatch] = field(default_factory=lambda: deque(maxlen=PRODUCER_BATCHES_KEPT))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


@dataclass(slots=True)
class Partition:
    topic: str
    index: int
    leader: int  # node id, -1 when there is none
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    log: PartitionLog
    producers: dict[int, ProducerEntry] = field(default_factory=dict)
    txns: PartitionTxns = field(default_factory=PartitionTxns)  # open and aborted transactions
    #: (leader, leader epoch, isr) before each leadership change, oldest first (the last few): what a
    #: broker whose metadata lags behind still shows (kcodec.broker.faults)
    past_leaders: deque[tuple[int, int, tuple[int, ...]]] = field(default_factory=lambda: deque(maxlen=16))


@dataclass(slots=True)
class Topic:
    name: str
    topic_id: Uuid
    partitions: list[Partition]


def producers_of_log(log: PartitionLog) -> dict[int, ProducerEntry]:
    """The idempotent-producer state a replica rebuilds from its log (Kafka's ProducerStateManager after
    a truncation): per producer id, its latest epoch and the last batches of that epoch in the log."""
    out: dict[int, ProducerEntry] = {}
    for stored in log.batches:
        for b in iter_batches(stored.data):
            if b.producer_id == NO_PRODUCER_ID or b.is_control:
                continue
            entry = out.get(b.producer_id)
            if entry is None or entry.epoch != b.producer_epoch:
                entry = out[b.producer_id] = ProducerEntry(b.producer_epoch)
            last_seq = b.base_sequence + b.last_offset_delta  # RecordBatch.lastSequence
            entry.batches.append(ProducerBatch(b.base_sequence, last_seq, b.base_offset, b.last_offset))
    return out


class ClusterState:
    """Everything the brokers of one mock cluster share. Not thread-safe: used from its event loop."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.nodes: list[Node] = []
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[bytes, Topic] = {}
        self.controller_epoch = config.controller_epoch
        self.broker_epoch = 1
        self.groups = GroupCoordinator(self)
        self.faults = Faults()
        self.transactional_ids: dict[str, TransactionalIdState] = {}
        self.transactions = TransactionCoordinator(self)
        self._next_producer_id = FIRST_PRODUCER_ID
        self._data_waiters: set[asyncio.Future[None]] = set()
        self.partition_count = 0

    # --- nodes and coordinators ------------------------------------------------------------------

    @property
    def controller_id(self) -> int:
        return self.nodes[0].node_id if self.nodes else -1

    def node(self, node_id: int) -> Node | None:
        return next((n for n in self.nodes if n.node_id == node_id), None)

    def coordinator_for(self, key: str) -> Node:
        """The broker coordinating a group or transactional id (a stable hash of the key)."""
        h = 0
        for ch in key.encode("utf-8", "surrogatepass"):
            h = (h * 31 + ch) & 0x7FFFFFFF
        return self.nodes[h % len(self.nodes)]

    def peek_producer_id(self) -> int:
        """The id :meth:`new_producer_id` would hand out next."""
        return self._next_producer_id

    def new_producer_id(self) -> int:
        pid = self._next_producer_id
        self._next_producer_id += 1
        return pid

    # --- topics --------------------------------------------------------------------------------------

    def topic(self, name: str) -> Topic | None:
        return self.topics.get(name)

    def partition(self, topic: str, index: int) -> Partition | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= index < len(t.partitions):
            return None
        return t.partitions[index]

    def create_topic(
        self,
        name: str,
        partitions: int | None = None,
        replication_factor: int | None = None,
        assignments: list[list[int]] | None = None,
    ) -> Topic:
        """Create a topic (leaders spread round-robin, or the replicas of ``assignments``; epoch 0);
        ``BrokerError`` with Kafka's code."""
        n = self.config.default_partitions if partitions in (None, -1) else partitions
        rf = self.config.replication_factor if replication_factor in (None, -1) else replication_factor
        assert n is not None and rf is not None
        if assignments:
            self._check_assignments(assignments)
            n, rf = len(assignments), len(assignments[0])
        if not TOPIC_NAME.fullmatch(name) or name in (".", ".."):
            raise BrokerError(f"invalid topic name {name!r}", ErrorCode.INVALID_TOPIC_EXCEPTION)
        if name in self.topics:
            raise BrokerError(f"topic {name!r} already exists", ErrorCode.TOPIC_ALREADY_EXISTS)
        if n < 1:
            raise BrokerError(f"{n} partitions", ErrorCode.INVALID_PARTITIONS)
        if not 1 <= rf <= len(self.nodes):
            raise BrokerError(
                f"replication factor {rf} with {len(self.nodes)} brokers",
                ErrorCode.INVALID_REPLICATION_FACTOR,
            )
        if self.partition_count + n > self.config.max_partitions:
            raise BrokerError(
                f"the cluster holds at most {self.config.max_partitions} partitions",
                ErrorCode.INVALID_PARTITIONS,
            )
        ids = [node.node_id for node in self.nodes]
        parts = []
        for i in range(n):
            replicas = list(assignments[i]) if assignments else [ids[(i + k) % len(ids)] for k in range(rf)]
            log = PartitionLog(self.config.partition_max_bytes)
            log.begin_epoch(0)
            parts.append(Partition(name, i, replicas[0], 0, replicas, list(replicas), log))
        topic_id = Uuid(os.urandom(16))
        topic = Topic(name, topic_id, parts)
        self.topics[name] = topic
        self.topics_by_id[bytes(topic_id)] = topic
        self.partition_count += n
        return topic

    def _check_assignments(self, assignments: list[list[int]]) -> None:
        ids = {node.node_id for node in self.nodes}
        width = len(assignments[0])
        for replicas in assignments:
            if (
                not replicas
                or len(replicas) != width
                or len(set(replicas)) != width
                or not set(replicas) <= ids
            ):
                raise BrokerError(f"replica assignment {replicas}", ErrorCode.INVALID_REPLICA_ASSIGNMENT)

    def delete_topic(self, name: str) -> Topic:
        topic = self.topics.pop(name, None)
        if topic is None:
            raise BrokerError(f"no topic {name!r}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        del self.topics_by_id[bytes(topic.topic_id)]
        self.partition_count -= len(topic.partitions)
        self.groups.forget_topic(name)
        self.notify_data()
        return topic

    # --- leadership (the control API) -------------------------------------------------------------

    def _existing(self, topic: str, partition: int) -> Partition:
        p = self.partition(topic, partition)
        if p is None:
            raise BrokerError(f"no partition {topic}-{partition}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return p

    def move_leader(self, topic: str, partition: int, to: int | None = None) -> Partition:
        """Clean leadership change: the next replica (or node ``to``, which must be a replica) leads,
        at the leader epoch + 1; the log is kept. Clients on the old epoch are fenced (74)."""
        p = self._existing(topic, partition)
        if not p.replicas:
            raise BrokerError(
                f"{topic}-{partition} has no replicas left: no broker can lead it",
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
            )
        if to is None:
            i = p.replicas.index(p.leader) if p.leader in p.replicas else -1
            to = p.replicas[(i + 1) % len(p.replicas)]
        elif to not in p.replicas:
            raise BrokerError(f"node {to} is not a replica of {topic}-{partition} ({p.replicas})")
        p.past_leaders.append((p.leader, p.leader_epoch, tuple(p.isr)))
        p.leader = to
        p.leader_epoch += 1
        if to not in p.isr:
            p.isr.append(to)
        p.log.begin_epoch(p.leader_epoch)
        self.notify_data()
        return p

    def unclean_election(
        self,
        topic: str,
        partition: int,
        truncate_to: int,
        *,
        to: int | None = None,
        records: list[NewRecord] | None = None,
    ) -> Partition:
        """An unclean leader election: an out-of-sync replica becomes leader at the leader epoch + 1 with
        a log that ends at ``truncate_to`` (what it had), then (optionally) writes ``records`` in its
        epoch. Consumers that read past ``truncate_to`` detect the truncation through
        OffsetsForLeaderEpoch (KIP-320)."""
        p = self._existing(topic, partition)
        if not p.replicas:
            raise BrokerError(
                f"{topic}-{partition} has no replicas left: no broker can lead it",
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
            )
        start, end = p.log.log_start_offset, p.log.log_end_offset
        if not start <= truncate_to <= end:
            raise BrokerError(
                f"truncate_to {truncate_to} is outside the log [{start}, {end}]",
                ErrorCode.OFFSET_OUT_OF_RANGE,
            )
        p.log.truncate(truncate_to)
        p.txns.truncate(p.log.log_end_offset)
        p.producers = producers_of_log(p.log)
        self.move_leader(topic, partition, to)
        if records:
            self.append_records(topic, partition, records)
        return p

    def append_records(
        self, topic: str, partition: int, records: list[NewRecord], compression: str = "none"
    ) -> AppendResult:
        """Write ``records`` as one batch from the current leader (control API, not a client)."""
        p = self._existing(topic, partition)
        now = int(time.time() * 1000)
        recs = [r if r.timestamp >= 0 else NewRecord(r.value, r.key, r.headers, now) for r in records]
        data = build_batch(recs, compression=compression)
        result = p.log.append(data, len(recs), max(r.timestamp for r in recs), p.leader_epoch)
        self.notify_data()
        return result

    # --- long polls ----------------------------------------------------------------------------------

    def notify_data(self) -> None:
        """Wake every Fetch waiting for data (called after appends and leadership changes)."""
        waiters, self._data_waiters = self._data_waiters, set()
        for w in waiters:
            if not w.done():
                w.set_result(None)

    async def wait_for_data(self, timeout: float) -> None:
        """Return after the next append (or leadership change), or after ``timeout`` seconds."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._data_waiters.add(fut)
        try:
            await asyncio.wait_for(asyncio.shield(fut), timeout)
        except TimeoutError:
            pass
        finally:
            self._data_waiters.discard(fut)
