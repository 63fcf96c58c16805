"""ListOffsets (offsets by timestamp, with the leader epoch from v4) and OffsetsForLeaderEpoch (the
leader's end offset for an epoch, KIP-101/KIP-320), both fenced by the request's current leader epoch."""

from __future__ import annotations

from typing import Any

from kcodec.broker.handlers.common import RequestContext, cls, partition_error
from kcodec.broker.state import Partition
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    NO_LEADER_EPOCH,
    NO_TIMESTAMP,
)
from kcodec.records import iter_batches

#: ListOffsets v4+ and OffsetForLeaderEpoch v2+ carry CurrentLeaderEpoch (KIP-320).
LIST_OFFSETS_EPOCH_SINCE = 4
OFFSET_FOR_EPOCH_EPOCH_SINCE = 2
DEBUGGING_REPLICA_ID = -2
ISOLATION_LEVEL_SINCE = 2
READ_COMMITTED = 1


async def handle_list_offsets(ctx: RequestContext, req: Any) -> Any:
    v = ctx.version
    resp = cls("ListOffsetsResponse")
    topics = []
    for t in req.topics:
        topic = ctx.cluster.topics.get(t.name)
        parts = []
        for rp in t.partitions:
            epoch = rp.current_leader_epoch if v >= LIST_OFFSETS_EPOCH_SINCE else NO_LEADER_EPOCH
            leader_only = req.replica_id != DEBUGGING_REPLICA_ID
            p, error = partition_error(ctx, topic, rp.partition_index, epoch, require_leader=leader_only)
            out = resp.ListOffsetsPartitionResponse(partition_index=rp.partition_index, error_code=error)
            if p is not None and error is ErrorCode.NONE:
                committed = v >= ISOLATION_LEVEL_SINCE and req.isolation_level == READ_COMMITTED
                ts, offset, leader_epoch = _lookup(p, rp.timestamp, committed)
                out.timestamp, out.offset = ts, offset
                if v >= 4:
                    out.leader_epoch = leader_epoch
            else:
                out.timestamp, out.offset = NO_TIMESTAMP, -1
            parts.append(out)
        topics.append(resp.ListOffsetsTopicResponse(name=t.name, partitions=parts))
    return resp(topics=topics)


def _lookup(p: Partition, timestamp: int, committed: bool) -> tuple[int, int, int]:
    """(timestamp, offset, leader epoch) for a ListOffsets timestamp or sentinel. The last fetchable
    offset is the last stable one for ``read_committed``, else the high watermark; a lookup by
    timestamp finds only offsets below it (Partition.fetchOffsetForTimestamp)."""
    log = p.log
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        return NO_TIMESTAMP, log.log_start_offset, log.epoch_at(log.log_start_offset)
    fetchable = (
        p.txns.last_stable_offset(log.high_watermark, log.log_start_offset)
        if committed
        else log.high_watermark
    )
    if timestamp == LATEST_TIMESTAMP:
        return NO_TIMESTAMP, fetchable, log.latest_epoch
    if timestamp == LATEST_TIERED_TIMESTAMP:
        return NO_TIMESTAMP, -1, NO_LEADER_EPOCH  # no tiered storage
    if timestamp == MAX_TIMESTAMP:
        batch = log.max_timestamp_batch()
        target = batch.max_timestamp if batch is not None else None
    elif timestamp >= 0:
        batch = log.batch_for_timestamp(timestamp)
        target = timestamp
    else:
        return NO_TIMESTAMP, -1, NO_LEADER_EPOCH
    if batch is None or target is None:
        return NO_TIMESTAMP, -1, NO_LEADER_EPOCH
    for b in iter_batches(batch.data):
        for r in b.records():
            if r.timestamp >= target:
                return (
                    (r.timestamp, r.offset, batch.epoch)
                    if r.offset < fetchable
                    else (NO_TIMESTAMP, -1, NO_LEADER_EPOCH)
                )
    return NO_TIMESTAMP, -1, NO_LEADER_EPOCH


async def handle_offset_for_leader_epoch(ctx: RequestContext, req: Any) -> Any:
    v = ctx.version
    resp = cls("OffsetForLeaderEpochResponse")
    topics = []
    for t in req.topics:
        topic = ctx.cluster.topics.get(t.topic)
        parts = []
        for rp in t.partitions:
            epoch = rp.current_leader_epoch if v >= OFFSET_FOR_EPOCH_EPOCH_SINCE else NO_LEADER_EPOCH
            # ReplicaManager.lastOffsetForLeaderEpoch: only the leader answers, whatever the replica id
            p, error = partition_error(ctx, topic, rp.partition, epoch)
            out = resp.EpochEndOffset(
                error_code=error, partition=rp.partition, leader_epoch=-1, end_offset=-1
            )
            if p is not None and error is ErrorCode.NONE:
                answer = p.log.end_offset_for_epoch(rp.leader_epoch)
                out.end_offset = answer.end_offset
                if v >= 1:
                    out.leader_epoch = answer.leader_epoch
            parts.append(out)
        topics.append(resp.OffsetForLeaderTopicResult(topic=t.topic, partitions=parts))
    return resp(topics=topics)
