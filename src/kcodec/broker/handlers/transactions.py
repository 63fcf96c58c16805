"""AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn, translated between request versions
and the transaction coordinator (kcodec.broker.transactions), with KafkaApis' checks: the request
reached the coordinator, the topics exist, and PRODUCER_FENCED (KIP-588) becomes INVALID_PRODUCER_EPOCH
for the versions that predate it."""

from __future__ import annotations

from typing import Any

from kcodec.broker.groups import CommittedOffset
from kcodec.broker.handlers.common import RequestContext, cls
from kcodec.broker.handlers.groups import not_coordinator
from kcodec.broker.transactions import OFFSETS_TOPIC, TopicPartition, TxnState, now_ms, offsets_partition_for
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import NO_LEADER_EPOCH

#: The first version of each API that knows PRODUCER_FENCED; older ones get INVALID_PRODUCER_EPOCH.
PRODUCER_FENCED_SINCE = 2
BATCHED_SINCE = 4  # AddPartitionsToTxn v4+: several transactions, VerifyOnly (KIP-890)
TXN_OFFSET_MEMBER_SINCE = 3  # TxnOffsetCommit v3+: generation, member id, group instance id (KIP-447)
TXN_OFFSET_EPOCH_SINCE = 2


def _fenced(error: ErrorCode, version: int) -> ErrorCode:
    if error is ErrorCode.PRODUCER_FENCED and version < PRODUCER_FENCED_SINCE:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


def _coordinator_error(ctx: RequestContext, tid: str | None) -> ErrorCode:
    """INVALID_REQUEST for a missing transactional id, NOT_COORDINATOR on the wrong broker."""
    if not tid:
        return ErrorCode.INVALID_REQUEST
    return ErrorCode.NOT_COORDINATOR if not_coordinator(ctx, tid) else ErrorCode.NONE


# --- AddPartitionsToTxn ---------------------------------------------------------------------------------


async def handle_add_partitions_to_txn(ctx: RequestContext, req: Any) -> Any:
    v = ctx.version
    resp = cls("AddPartitionsToTxnResponse")
    if v < BATCHED_SINCE:
        topics = [(t.name, list(t.partitions)) for t in req.v3_and_below_topics]
        results = _add_one(
            ctx,
            req.v3_and_below_transactional_id,
            req.v3_and_below_producer_id,
            req.v3_and_below_producer_epoch,
            topics,
            verify_only=False,
        )
        return resp(results_by_topic_v3_and_below=_topic_results(results))
    out = []
    for txn in req.transactions:
        topics = [(t.name, list(t.partitions)) for t in txn.topics]
        results = _add_one(
            ctx,
            txn.transactional_id,
            txn.producer_id,
            txn.producer_epoch,
            topics,
            verify_only=txn.verify_only,
        )
        out.append(
            resp.AddPartitionsToTxnResult(
                transactional_id=txn.transactional_id, topic_results=_topic_results(results)
            )
        )
    return resp(error_code=ErrorCode.NONE, results_by_transaction=out)


def _add_one(
    ctx: RequestContext,
    tid: str,
    producer_id: int,
    epoch: int,
    topics: list[tuple[str, list[int]]],
    *,
    verify_only: bool,
) -> dict[TopicPartition, ErrorCode]:
    """One transaction's partitions and their errors (KafkaApis.handleAddPartitionsToTxnRequest)."""
    wanted = [(name, i) for name, indexes in topics for i in indexes]
    unknown = {tp for tp in wanted if ctx.cluster.partition(*tp) is None}
    if unknown:  # one unknown partition fails the whole transaction's request
        return {
            tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
            for tp in wanted
        }
    error = _coordinator_error(ctx, tid)
    if error is not ErrorCode.NONE:
        return dict.fromkeys(wanted, error)
    coordinator = ctx.cluster.transactions
    if verify_only:
        return coordinator.verify_partitions(tid, producer_id, epoch, set(wanted))
    error = coordinator.add_partitions(tid, producer_id, epoch, set(wanted))
    return dict.fromkeys(wanted, _fenced(error, ctx.version))


def _topic_results(results: dict[TopicPartition, ErrorCode]) -> list[Any]:
    resp = cls("AddPartitionsToTxnResponse")
    by_topic: dict[str, list[Any]] = {}
    for (name, index), error in results.items():
        by_topic.setdefault(name, []).append(
            resp.AddPartitionsToTxnPartitionResult(partition_index=index, partition_error_code=error)
        )
    return [
        resp.AddPartitionsToTxnTopicResult(name=n, results_by_partition=parts)
        for n, parts in by_topic.items()
    ]


# --- AddOffsetsToTxn, EndTxn --------------------------------------------------------------------------


async def handle_add_offsets_to_txn(ctx: RequestContext, req: Any) -> Any:
    """The group's offsets-topic partition joins the transaction (handleAddOffsetsToTxnRequest)."""
    error = _coordinator_error(ctx, req.transactional_id)
    if error is ErrorCode.NONE:
        tp = (OFFSETS_TOPIC, offsets_partition_for(req.group_id))
        error = ctx.cluster.transactions.add_partitions(
            req.transactional_id, req.producer_id, req.producer_epoch, {tp}
        )
    return cls("AddOffsetsToTxnResponse")(error_code=_fenced(error, ctx.version))


async def handle_end_txn(ctx: RequestContext, req: Any) -> Any:
    error = _coordinator_error(ctx, req.transactional_id)
    if error is ErrorCode.NONE:
        error = ctx.cluster.transactions.end_txn(
            req.transactional_id, req.producer_id, req.producer_epoch, bool(req.committed)
        )
    return cls("EndTxnResponse")(error_code=_fenced(error, ctx.version))


# --- TxnOffsetCommit ------------------------------------------------------------------------------------


async def handle_txn_offset_commit(ctx: RequestContext, req: Any) -> Any:
    """Offsets committed in the transaction (KafkaApis.handleTxnOffsetCommitRequest): unknown topics and
    partitions are refused one by one, the rest go to the group coordinator."""
    v = ctx.version
    known: dict[TopicPartition, CommittedOffset] = {}
    errors: dict[TopicPartition, ErrorCode] = {}
    for t in req.topics:
        for rp in t.partitions:
            tp = (t.name, rp.partition_index)
            if ctx.cluster.partition(*tp) is None:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            epoch = rp.committed_leader_epoch if v >= TXN_OFFSET_EPOCH_SINCE else NO_LEADER_EPOCH
            known[tp] = CommittedOffset(rp.committed_offset, epoch, rp.committed_metadata)
    if known:
        errors.update(_commit(ctx, req, known))
    return _txn_offset_response(req, errors)


def _commit(
    ctx: RequestContext, req: Any, offsets: dict[TopicPartition, CommittedOffset]
) -> dict[TopicPartition, ErrorCode]:
    v = ctx.version
    group_id = req.group_id
    if not group_id:
        return dict.fromkeys(offsets, ErrorCode.INVALID_GROUP_ID)
    if not_coordinator(ctx, group_id):
        return dict.fromkeys(offsets, ErrorCode.NOT_COORDINATOR)
    if v >= TXN_OFFSET_MEMBER_SINCE:
        member = (req.member_id, req.group_instance_id, req.generation_id_or_member_epoch)
    else:
        member = ("", None, -1)
    return ctx.cluster.transactions.txn_offset_commit(
        group_id, req.transactional_id, req.producer_id, req.producer_epoch, member, offsets, v
    )


def _txn_offset_response(req: Any, errors: dict[TopicPartition, ErrorCode]) -> Any:
    resp = cls("TxnOffsetCommitResponse")
    topics = []
    for t in req.topics:
        parts = [
            resp.TxnOffsetCommitResponsePartition(
                partition_index=rp.partition_index, error_code=errors[(t.name, rp.partition_index)]
            )
            for rp in t.partitions
        ]
        topics.append(resp.TxnOffsetCommitResponseTopic(name=t.name, partitions=parts))
    return resp(topics=topics)


# --- DescribeTransactions, ListTransactions (KIP-664) ---------------------------------------------------


async def handle_describe_transactions(ctx: RequestContext, req: Any) -> Any:
    """Each transactional id's state, from its coordinator (TransactionCoordinator.handleDescribeTransactions:
    NOT_COORDINATOR elsewhere, TRANSACTIONAL_ID_NOT_FOUND for an unknown id)."""
    resp = cls("DescribeTransactionsResponse")
    coordinator = ctx.cluster.transactions
    states = []
    for tid in req.transactional_ids:
        out = resp.TransactionState(
            transactional_id=tid,
            transaction_state="",
            transaction_timeout_ms=0,
            transaction_start_time_ms=-1,
            producer_id=-1,
            producer_epoch=-1,
            topics=[],
        )
        error = _coordinator_error(ctx, tid)
        meta, ids = coordinator.txns.get(tid), ctx.cluster.transactional_ids.get(tid)
        if error is ErrorCode.NONE and (meta is None or ids is None):
            error = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        out.error_code = error
        if error is ErrorCode.NONE and meta is not None and ids is not None:
            out.transaction_state, out.transaction_timeout_ms = str(meta.state), meta.timeout_ms
            out.transaction_start_time_ms = meta.start_ms
            out.producer_id, out.producer_epoch = ids.producer_id, ids.producer_epoch
            by_topic: dict[str, list[int]] = {}
            for topic, index in sorted(meta.partitions):
                by_topic.setdefault(topic, []).append(index)
            out.topics = [resp.TopicData(topic=t, partitions=parts) for t, parts in by_topic.items()]
        states.append(out)
    return resp(transaction_states=states)


async def handle_list_transactions(ctx: RequestContext, req: Any) -> Any:
    """The transactions this broker coordinates, filtered by state, producer id and (v1+) duration
    (TransactionStateManager.listTransactionStates)."""
    resp = cls("ListTransactionsResponse")
    known = {str(s) for s in TxnState}
    wanted_states = set(req.state_filters)
    wanted_pids = set(req.producer_id_filters)
    min_duration = req.duration_filter if ctx.version >= 1 else -1
    now = now_ms()
    states = []
    for tid, meta in sorted(ctx.cluster.transactions.txns.items()):
        ids = ctx.cluster.transactional_ids.get(tid)
        if ids is None or not_coordinator(ctx, tid):
            continue
        if (wanted_pids and ids.producer_id not in wanted_pids) or (
            wanted_states and str(meta.state) not in wanted_states
        ):
            continue
        if min_duration >= 0 and now - meta.start_ms <= min_duration:
            continue
        states.append(
            resp.TransactionState(
                transactional_id=tid, producer_id=ids.producer_id, transaction_state=str(meta.state)
            )
        )
    unknown = sorted(wanted_states - known)
    return resp(error_code=ErrorCode.NONE, unknown_state_filters=unknown, transaction_states=states)
