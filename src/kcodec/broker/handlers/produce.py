"""Produce: batches validated and stored as received (offsets assigned), idempotent sequence checks,
and KIP-359 leader-epoch fencing for kcodec's proposal version (v14: PartitionProduceData carries
CurrentLeaderEpoch)."""

from __future__ import annotations

from typing import Any

from kcodec.broker.handlers.common import (
    RequestContext,
    cls,
    find_topic,
    leader_hint_needed,
    node_endpoints,
    partition_error,
    wire_message,
)
from kcodec.broker.idempotence import check_sequence, record_append
from kcodec.broker.transactions import has_transactional_records
from kcodec.broker.validate import Invalid, validate_produced
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import NO_LEADER_EPOCH

TOPIC_IDS_SINCE = 13
LEADER_HINTS_SINCE = 10  # KIP-951: CurrentLeader and NodeEndpoints in ProduceResponse
ACKS = (-1, 0, 1)
#: Kafka's default message.max.bytes: the largest batch a produce may carry.
MAX_BATCH_BYTES = 1_048_588


async def handle_produce(ctx: RequestContext, req: Any) -> Any | None:
    v = ctx.version
    resp = cls("ProduceResponse")
    by_id = v >= TOPIC_IDS_SINCE
    hinted: set[int] = set()
    topics = []
    if req.transactional_id is None and has_transactional_records(req):
        # KafkaApis: transactional records need a transactional id, else the whole request is refused
        return (
            None
            if req.acks == 0
            else _refuse_all(req, by_id, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        )
    for td in req.topic_data:
        topic = find_topic(ctx.cluster, td.name, td.topic_id, by_id)
        parts = []
        for pd in td.partition_data:
            pr = _append(ctx, req, topic, pd, by_id)
            if v >= LEADER_HINTS_SINCE and leader_hint_needed(ErrorCode(pr.error_code)) and topic is not None:
                p = topic.partitions[pd.index]
                pr.current_leader = resp.LeaderIdAndEpoch(leader_id=p.leader, leader_epoch=p.leader_epoch)
                hinted.add(p.leader)
            parts.append(pr)
        tr = resp.TopicProduceResponse(partition_responses=parts)
        if by_id:
            tr.topic_id = td.topic_id
        else:
            tr.name = td.name
        topics.append(tr)
    if req.acks == 0:
        return None
    out = resp(responses=topics)
    if hinted and v >= LEADER_HINTS_SINCE:
        out.node_endpoints = node_endpoints(ctx.cluster, "ProduceResponse", hinted)
    return out


def _append(ctx: RequestContext, req: Any, topic: Any, pd: Any, by_id: bool) -> Any:
    v = ctx.version
    resp = cls("ProduceResponse")
    pr = resp.PartitionProduceResponse(index=pd.index, base_offset=-1)
    epoch = pd.current_leader_epoch if ctx.cluster.config.proposals else NO_LEADER_EPOCH
    p, error = partition_error(ctx, topic, pd.index, epoch, by_id=by_id)
    message: str | None = None
    if error is ErrorCode.NONE and req.acks not in ACKS:
        error = ErrorCode.INVALID_REQUIRED_ACKS
    if error is ErrorCode.NONE and p is not None:
        checked = validate_produced(pd.records, MAX_BATCH_BYTES, v)
        if isinstance(checked, Invalid):
            error, message = checked.error, checked.message
        else:
            b = checked.batch
            txns = ctx.cluster.transactions
            error, message = txns.check_produce(p, req.transactional_id, b, v)
            if error is ErrorCode.NONE:
                last_seq = b.base_sequence + b.record_count - 1
                seq = check_sequence(p, b.producer_id, b.producer_epoch, b.base_sequence, last_seq)
                error = seq.error
                if seq.duplicate is not None:
                    pr.base_offset = seq.duplicate.base_offset
                elif error is ErrorCode.NONE:
                    appended = p.log.append(checked.data, b.record_count, b.max_timestamp, p.leader_epoch)
                    record_append(
                        p,
                        b.producer_id,
                        b.producer_epoch,
                        b.base_sequence,
                        last_seq,
                        appended.base_offset,
                        appended.last_offset,
                    )
                    txns.note_append(p, b, appended.base_offset)
                    pr.base_offset = appended.base_offset
                    ctx.cluster.notify_data()
    pr.error_code = error
    if v >= 5:
        pr.log_start_offset = p.log.log_start_offset if p is not None and error is ErrorCode.NONE else -1
    if v >= 8:
        pr.error_message = wire_message(message)
    return pr


def _refuse_all(req: Any, by_id: bool, error: ErrorCode) -> Any:
    resp = cls("ProduceResponse")
    topics = []
    for td in req.topic_data:
        parts = [
            resp.PartitionProduceResponse(index=pd.index, error_code=error, base_offset=-1)
            for pd in td.partition_data
        ]
        tr = resp.TopicProduceResponse(partition_responses=parts)
        if by_id:
            tr.topic_id = td.topic_id
        else:
            tr.name = td.name
        topics.append(tr)
    return resp(responses=topics)
