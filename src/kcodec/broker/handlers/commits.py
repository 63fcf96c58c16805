"""OffsetCommit and OffsetFetch: committed offsets with their leader epochs (KIP-320: v6+/v5+), so a
consumer that restarts can validate its committed position against the leader's log."""

from __future__ import annotations

from typing import Any

from kcodec.broker.groups import CommittedOffset
from kcodec.broker.handlers.common import RequestContext, cls
from kcodec.broker.handlers.groups import not_coordinator
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import NO_LEADER_EPOCH

COMMIT_EPOCH_SINCE = 6
FETCH_EPOCH_SINCE = 5
GROUPS_BATCH_SINCE = 8  # OffsetFetch v8+: several groups per request (KIP-709)
REQUIRE_STABLE_SINCE = 7  # KIP-447: offsets of an open transaction are UNSTABLE_OFFSET_COMMIT
UNSTABLE = CommittedOffset(-1, NO_LEADER_EPOCH, "")


async def handle_offset_commit(ctx: RequestContext, req: Any) -> Any:
    v = ctx.version
    resp = cls("OffsetCommitResponse")
    groups = ctx.cluster.groups
    if not_coordinator(ctx, req.group_id):
        common = ErrorCode.NOT_COORDINATOR
    else:
        common = groups.commit_check(req.group_id, req.generation_id_or_member_epoch, req.member_id)
    topics = []
    for t in req.topics:
        parts = []
        for rp in t.partitions:
            error = common
            if error is ErrorCode.NONE:
                epoch = rp.committed_leader_epoch if v >= COMMIT_EPOCH_SINCE else NO_LEADER_EPOCH
                error = groups.commit(
                    req.group_id,
                    t.name,
                    rp.partition_index,
                    rp.committed_offset,
                    epoch,
                    rp.committed_metadata,
                )
            parts.append(
                resp.OffsetCommitResponsePartition(partition_index=rp.partition_index, error_code=error)
            )
        topics.append(resp.OffsetCommitResponseTopic(name=t.name, partitions=parts))
    return resp(topics=topics)


async def handle_offset_fetch(ctx: RequestContext, req: Any) -> Any:
    v = ctx.version
    resp = cls("OffsetFetchResponse")
    if v >= GROUPS_BATCH_SINCE:
        groups = []
        for g in req.groups:
            wanted = None if g.topics is None else [(t.name, list(t.partition_indexes)) for t in g.topics]
            error, topics = _fetch(
                ctx,
                g.group_id,
                wanted,
                resp.OffsetFetchResponseTopics,
                resp.OffsetFetchResponsePartitions,
                require_stable=req.require_stable,
            )
            groups.append(resp.OffsetFetchResponseGroup(group_id=g.group_id, topics=topics, error_code=error))
        return resp(groups=groups)
    wanted = None if req.topics is None else [(t.name, list(t.partition_indexes)) for t in req.topics]
    error, topics = _fetch(
        ctx,
        req.group_id,
        wanted,
        resp.OffsetFetchResponseTopic,
        resp.OffsetFetchResponsePartition,
        require_stable=v >= REQUIRE_STABLE_SINCE and req.require_stable,
    )
    if v < 2 and error is not ErrorCode.NONE:
        for t in topics:
            for p in t.partitions:
                p.error_code = error
    out = resp(topics=topics)
    if v >= 2:
        out.error_code = error
    return out


def _fetch(
    ctx: RequestContext,
    group_id: str,
    wanted: list[tuple[str, list[int]]] | None,
    topic_cls: Any,
    part_cls: Any,
    *,
    require_stable: bool = False,
) -> tuple[ErrorCode, list[Any]]:
    v = ctx.version
    if not_coordinator(ctx, group_id):
        return ErrorCode.NOT_COORDINATOR, []
    coordinator = ctx.cluster.groups
    if wanted is None:
        wanted = list(coordinator.committed_topics(group_id).items())
    topics = []
    for name, indexes in wanted:
        parts = []
        for i in indexes:
            unstable = require_stable and ctx.cluster.transactions.has_pending_offsets(group_id, name, i)
            c = UNSTABLE if unstable else coordinator.committed(group_id, name, i)
            part = part_cls(partition_index=i, committed_offset=c.offset, metadata=c.metadata)
            if unstable:
                part.error_code = ErrorCode.UNSTABLE_OFFSET_COMMIT
            if v >= FETCH_EPOCH_SINCE:
                part.committed_leader_epoch = c.leader_epoch
            parts.append(part)
        topics.append(topic_cls(name=name, partitions=parts))
    return ErrorCode.NONE, topics
