"""The transaction coordinator of the mock cluster (KIP-98, as Kafka's TransactionCoordinator and
TransactionMetadata run it): a state per transactional id (Empty, Ongoing, PrepareCommit, PrepareAbort,
CompleteCommit, CompleteAbort), the partitions in its transaction, transactional offset commits held
back until the commit, and EndTxn writing COMMIT/ABORT markers to every partition of the transaction.

The producer id and epoch of a transactional id stay where InitProducerId keeps them
(``ClusterState.transactional_ids``, decided by kcodec.fencing); this module adds the transaction
around them. Kafka answers EndTxn once PrepareCommit/PrepareAbort is logged and writes the markers
afterwards; the mock writes them before answering, so it never sits in a Prepare state.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from kcodec.broker.groups import CommittedOffset, Group, GroupState
from kcodec.fencing import TransactionalIdState
from kcodec.fencing.producer_ids import MAX_PRODUCER_EPOCH, is_epoch_exhausted
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from kcodec.records import ControlType, RecordBatch, build_control_batch

if TYPE_CHECKING:
    from kcodec.broker.state import ClusterState, Partition

#: The offsets topic and its default partition count (offsets.topic.num.partitions): AddOffsetsToTxn
#: adds the group's partition of it to the transaction, as Kafka does.
OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_TOPIC_PARTITIONS = 50
#: Produce v11+ and TxnOffsetCommit v4+ understand TRANSACTION_ABORTABLE (KIP-890); older versions get
#: INVALID_TXN_STATE for a partition that is not in the transaction.
PRODUCE_ABORTABLE_SINCE = 11
TXN_OFFSET_COMMIT_ABORTABLE_SINCE = 4
TIMEOUT_CHECK_INTERVAL_S = 0.1
OFFSET_METADATA_MAX_BYTES = 4096

TopicPartition = tuple[str, int]


class TxnState(StrEnum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"


PREPARING = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)


@dataclass(slots=True)
class TxnMetadata:
    """The transaction of one transactional id (Kafka's TransactionMetadata without the ids)."""

    transactional_id: str
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units), as a signed int32."""
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def offsets_partition_for(group_id: str) -> int:
    """The offsets-topic partition of a group: Utils.abs(groupId.hashCode) % partitions."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % OFFSETS_TOPIC_PARTITIONS


def now_ms() -> int:
    return int(time.time() * 1000)


class TransactionCoordinator:
    """The transactions of every transactional id of the cluster (each is answered by the broker that
    FindCoordinator names for it)."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.txns: dict[str, TxnMetadata] = {}
        #: group id -> producer id -> offsets committed in that producer's open transaction
        self.pending_offsets: dict[str, dict[int, dict[TopicPartition, CommittedOffset]]] = {}

    def _ids(self, tid: str) -> TransactionalIdState | None:
        return self.cluster.transactional_ids.get(tid)

    def _check(self, tid: str, producer_id: int, epoch: int) -> tuple[ErrorCode, TxnMetadata | None]:
        """TransactionCoordinator's common checks: the id is known with this producer id and epoch."""
        ids, meta = self._ids(tid), self.txns.get(tid)
        if ids is None or meta is None or ids.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if ids.producer_epoch != epoch:
            return ErrorCode.PRODUCER_FENCED, None
        return ErrorCode.NONE, meta

    # --- InitProducerId -------------------------------------------------------------------------

    def before_init_producer_id(self, tid: str, producer_id: int, epoch: int) -> ErrorCode | None:
        """What InitProducerId answers because of the transaction, before its epoch rules apply (None:
        nothing). A transaction still open is aborted with the epoch bumped (fencing its producer), and
        the client is told CONCURRENT_TRANSACTIONS so that it retries (handleInitProducerId,
        prepareFenceProducerEpoch): the retry of a new instance then gets the epoch bumped once more,
        while the retry with the old (producer id, epoch) is fenced, since the fence cleared the last
        epoch."""
        ids, meta = self._ids(tid), self.txns.get(tid)
        if ids is None or meta is None or meta.state not in (TxnState.ONGOING, *PREPARING):
            return None  # no transaction in the way: kcodec.fencing's epoch rules decide
        if producer_id != NO_PRODUCER_ID and not _valid_producer_id(producer_id, epoch, ids):
            return ErrorCode.PRODUCER_FENCED
        if meta.state is TxnState.ONGOING:
            self._fence_and_abort(tid, meta, ids)
        return ErrorCode.CONCURRENT_TRANSACTIONS

    def after_init_producer_id(self, tid: str, timeout_ms: int) -> None:
        """InitProducerId handed out a producer id and epoch: the transactional id has no transaction."""
        meta = self.txns.get(tid)
        if meta is None:
            meta = self.txns[tid] = TxnMetadata(tid, timeout_ms)
        meta.state, meta.partitions, meta.timeout_ms = TxnState.EMPTY, set(), timeout_ms
        meta.start_ms, meta.last_update_ms = -1, now_ms()

    def _fence_and_abort(self, tid: str, meta: TxnMetadata, ids: TransactionalIdState) -> None:
        """Bump the epoch without telling the producer (the last epoch is cleared) and abort with it."""
        if ids.producer_epoch >= MAX_PRODUCER_EPOCH:
            return
        fenced = dataclasses.replace(
            ids, producer_epoch=ids.producer_epoch + 1, last_producer_epoch=NO_PRODUCER_EPOCH
        )
        self.cluster.transactional_ids[tid] = fenced
        self._complete(meta, fenced.producer_id, fenced.producer_epoch, commit=False)

    # --- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------------------

    def add_partitions(
        self, tid: str, producer_id: int, epoch: int, partitions: set[TopicPartition]
    ) -> ErrorCode:
        """handleAddPartitionsToTransaction: the partitions join the transaction, which is Ongoing."""
        error, meta = self._check(tid, producer_id, epoch)
        if meta is None:
            return error
        if meta.state in PREPARING:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if meta.state is TxnState.ONGOING and partitions <= meta.partitions:
            return ErrorCode.NONE
        now = now_ms()
        if meta.state is not TxnState.ONGOING:
            meta.start_ms = now
        meta.state = TxnState.ONGOING
        meta.partitions |= partitions
        meta.last_update_ms = now
        return ErrorCode.NONE

    def verify_partitions(
        self, tid: str, producer_id: int, epoch: int, partitions: set[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        """handleVerifyPartitionsInTransaction (AddPartitionsToTxn v4+ VerifyOnly, and the check a
        transactional Produce or TxnOffsetCommit gets): TRANSACTION_ABORTABLE for a partition that is not
        in the transaction."""
        error, meta = self._check(tid, producer_id, epoch)
        if meta is not None and meta.state in PREPARING:
            error, meta = ErrorCode.CONCURRENT_TRANSACTIONS, None
        if meta is None:
            return dict.fromkeys(partitions, error)
        return {
            tp: ErrorCode.NONE if tp in meta.partitions else ErrorCode.TRANSACTION_ABORTABLE
            for tp in partitions
        }

    # --- EndTxn -------------------------------------------------------------------------------------

    def end_txn(self, tid: str, producer_id: int, epoch: int, commit: bool) -> ErrorCode:
        """handleEndTransaction from a client: commit or abort the Ongoing transaction (markers written
        to all its partitions); a repeated EndTxn of a completed one is answered NONE."""
        error, meta = self._check(tid, producer_id, epoch)
        if meta is None:
            return error
        state = meta.state
        if state is TxnState.ONGOING:
            self._complete(meta, producer_id, epoch, commit=commit)
            return ErrorCode.NONE
        same = {
            TxnState.COMPLETE_COMMIT: commit,
            TxnState.COMPLETE_ABORT: not commit,
            TxnState.PREPARE_COMMIT: commit,
            TxnState.PREPARE_ABORT: not commit,
        }.get(state, False)
        if not same:
            return ErrorCode.INVALID_TXN_STATE
        return ErrorCode.CONCURRENT_TRANSACTIONS if state in PREPARING else ErrorCode.NONE

    def _complete(self, meta: TxnMetadata, producer_id: int, epoch: int, *, commit: bool) -> None:
        """PrepareCommit/PrepareAbort, the markers, then CompleteCommit/CompleteAbort."""
        meta.state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        now = now_ms()
        for topic, index in sorted(meta.partitions):
            if topic == OFFSETS_TOPIC:
                self._complete_offsets(index, producer_id, commit)
                continue
            p = self.cluster.partition(topic, index)
            if p is not None:  # a deleted topic gets no marker (Kafka drops it too)
                write_marker(p, producer_id, epoch, commit=commit, timestamp=now)
        meta.state = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        meta.partitions = set()
        meta.last_update_ms = now
        self.cluster.notify_data()

    # --- transactional offset commits ---------------------------------------------------------------

    def txn_offset_commit(
        self,
        group_id: str,
        tid: str,
        producer_id: int,
        epoch: int,
        member: tuple[str, str | None, int],
        offsets: dict[TopicPartition, CommittedOffset],
        version: int,
    ) -> dict[TopicPartition, ErrorCode]:
        """GroupCoordinator.handleTxnCommitOffsets: verified against the transaction (the group's offsets
        partition must have been added by AddOffsetsToTxn), validated against the group's members, then
        held back until the transaction commits (OffsetFetch with RequireStable sees
        UNSTABLE_OFFSET_COMMIT meanwhile)."""
        tp = (OFFSETS_TOPIC, offsets_partition_for(group_id))
        error = self.verify_partitions(tid, producer_id, epoch, {tp})[tp]
        error = _client_error(error, version >= TXN_OFFSET_COMMIT_ABORTABLE_SINCE)
        if error is ErrorCode.NONE:
            error = self._validate_member(group_id, *member)
        if error is not ErrorCode.NONE:
            return dict.fromkeys(offsets, error)
        out: dict[TopicPartition, ErrorCode] = {}
        pending = self.pending_offsets.setdefault(group_id, {}).setdefault(producer_id, {})
        for key, committed in offsets.items():
            metadata = committed.metadata
            if metadata is not None and len(metadata.encode()) > OFFSET_METADATA_MAX_BYTES:
                out[key] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                pending[key] = committed
                out[key] = ErrorCode.NONE
        return out

    def _validate_member(
        self, group_id: str, member_id: str, instance_id: str | None, generation: int
    ) -> ErrorCode:
        """validateOffsetCommit for a transactional commit (no member needed when none is named)."""
        groups = self.cluster.groups
        g = groups.groups.get(group_id)
        if g is None:
            if len(groups.groups) >= self.cluster.config.max_groups:
                return ErrorCode.COORDINATOR_NOT_AVAILABLE
            g = groups.groups[group_id] = Group(group_id)
        if generation < 0 and g.state is GroupState.EMPTY:
            return ErrorCode.NONE
        if generation < 0 and not member_id and instance_id is None:
            return ErrorCode.NONE
        owner = next(
            (m.member_id for m in g.members.values() if instance_id and m.group_instance_id == instance_id),
            None,
        )
        if owner is not None and owner != member_id:
            return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in g.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE if generation == g.generation else ErrorCode.ILLEGAL_GENERATION

    def _complete_offsets(self, offsets_partition: int, producer_id: int, commit: bool) -> None:
        """The marker on an offsets partition: the producer's pending offsets of every group on that
        partition become committed (or are dropped)."""
        for group_id in [g for g in self.pending_offsets if offsets_partition_for(g) == offsets_partition]:
            by_producer = self.pending_offsets[group_id]
            offsets = by_producer.pop(producer_id, None)
            if not by_producer:
                del self.pending_offsets[group_id]
            if offsets and commit:
                g = self.cluster.groups.groups.get(group_id)
                if g is None:
                    g = self.cluster.groups.groups[group_id] = Group(group_id)
                g.offsets.update(offsets)

    def has_pending_offsets(self, group_id: str, topic: str, partition: int) -> bool:
        """Whether an open transaction holds an offset of this group and partition."""
        return any((topic, partition) in o for o in self.pending_offsets.get(group_id, {}).values())

    # --- Produce ------------------------------------------------------------------------------------

    def check_produce(
        self, p: Partition, transactional_id: str | None, batch: RecordBatch, version: int
    ) -> tuple[ErrorCode, str | None]:
        """Kafka's checks of a produced batch against the transaction (before the sequence checks): a
        non-transactional batch from a producer with a transaction open here is INVALID_TXN_STATE; the
        first transactional batch of a transaction on a partition is verified with the coordinator
        (KIP-890 part 1, ReplicaManager/AddPartitionsToTxnManager), later ones are not."""
        pid = batch.producer_id
        if not batch.is_transactional:
            if pid != NO_PRODUCER_ID and pid in p.txns.ongoing:
                return ErrorCode.INVALID_TXN_STATE, f"expected a transactional write from producer {pid}"
            return ErrorCode.NONE, None
        if transactional_id is None:
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
        if pid in p.txns.ongoing:
            return ErrorCode.NONE, None
        tp = (p.topic, p.index)
        error = self.verify_partitions(transactional_id, pid, batch.producer_epoch, {tp})[tp]
        if error in (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NOT_COORDINATOR):
            # retriable for the coordinator, which older producers may not retry: Kafka's substitute
            return (
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"unable to verify the partition is in the transaction ({error.name})",
            )
        error = _client_error(error, version >= PRODUCE_ABORTABLE_SINCE)
        if error is ErrorCode.INVALID_TXN_STATE:
            return error, "Partition was not added to the transaction"
        return error, None

    @staticmethod
    def note_append(p: Partition, batch: RecordBatch, base_offset: int) -> None:
        """A data batch was appended at ``base_offset``: a transactional one opens its transaction here."""
        if batch.is_transactional:
            p.txns.begin(batch.producer_id, base_offset)

    # --- transaction timeouts and expiry -------------------------------------------------------------

    def expire(self, tid: str) -> bool:
        """Forget a transactional id as Kafka does once it has been idle for
        ``transactional.id.expiration.ms`` (only without an open transaction). Its producer's next
        request gets INVALID_PRODUCER_ID_MAPPING, and KIP-360 lets it recover with InitProducerId.
        Returns whether it was forgotten."""
        meta = self.txns.get(tid)
        if meta is None or meta.state is TxnState.ONGOING or meta.state in PREPARING:
            return False
        del self.txns[tid]
        self.cluster.transactional_ids.pop(tid, None)
        return True

    def abort_timed_out(self, now: int | None = None) -> list[str]:
        """abortTimedOutTransactions: an Ongoing transaction older than its timeout is aborted with the
        producer's epoch bumped (fencing it). Returns the transactional ids aborted."""
        now = now_ms() if now is None else now
        aborted = []
        for tid, meta in list(self.txns.items()):
            ids = self._ids(tid)
            if ids is not None and meta.state is TxnState.ONGOING and meta.start_ms + meta.timeout_ms < now:
                self._fence_and_abort(tid, meta, ids)
                aborted.append(tid)
        return aborted

    async def run_sweeper(self) -> None:
        while True:
            await asyncio.sleep(TIMEOUT_CHECK_INTERVAL_S)
            self.abort_timed_out()


#: A magic-2 batch header: magic at byte 16, attributes (int16) at byte 21; bit 4 marks a transaction.
_MAGIC_AT, _ATTRIBUTES_AT, _TRANSACTIONAL = 16, 21, 0x10


def has_transactional_records(req: Any) -> bool:
    """RequestUtils.hasTransactionalRecords: a Produce whose first batch of some partition is
    transactional."""
    for td in req.topic_data:
        for pd in td.partition_data:
            r = pd.records
            if (
                r is not None
                and len(r) > _ATTRIBUTES_AT + 1
                and r[_MAGIC_AT] == 2
                and r[_ATTRIBUTES_AT + 1] & _TRANSACTIONAL
            ):
                return True
    return False


def _valid_producer_id(producer_id: int, epoch: int, ids: TransactionalIdState) -> bool:
    """TransactionCoordinator.isValidProducerId (KIP-360)."""
    return (
        ids.producer_epoch == NO_PRODUCER_EPOCH
        or producer_id == ids.producer_id
        or (producer_id == ids.last_producer_id and is_epoch_exhausted(epoch))
    )


def _client_error(error: ErrorCode, abortable_known: bool) -> ErrorCode:
    """AddPartitionsToTxnManager's translation of a verification error for the client."""
    if error is ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if error is ErrorCode.TRANSACTION_ABORTABLE and not abortable_known:
        return ErrorCode.INVALID_TXN_STATE
    return error


def write_marker(p: Partition, producer_id: int, epoch: int, *, commit: bool, timestamp: int) -> int:
    """Append a COMMIT/ABORT control batch to ``p`` as its leader (WriteTxnMarkers): the producer's open
    transaction there ends, its producer state takes the marker's epoch. Returns the marker's offset."""
    kind = ControlType.COMMIT if commit else ControlType.ABORT
    data = build_control_batch(
        kind,
        producer_id=producer_id,
        producer_epoch=epoch,
        timestamp=timestamp,
        partition_leader_epoch=p.leader_epoch,
    )
    offset = p.log.append(data, 1, timestamp, p.leader_epoch).base_offset
    p.txns.complete(producer_id, offset, aborted=not commit)
    p.txns.forget_before(p.log.log_start_offset)
    from kcodec.broker.state import ProducerEntry  # state imports this module

    entry = p.producers.get(producer_id)
    if entry is None:
        p.producers[producer_id] = ProducerEntry(epoch)
    else:
        entry.epoch = epoch
    return offset
