"""StopReplica (a controller's request): stop this broker's replica of partitions, with KIP-570's
per-partition leader epochs (v3+) checked by kcodec.fencing.check_stop_replica_epoch."""

from __future__ import annotations

from typing import Any

from kcodec.broker.handlers.common import RequestContext, cls
from kcodec.broker.state import Partition
from kcodec.fencing import check_stop_replica_epoch
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import NO_LEADER_EPOCH

PARTITION_STATES_SINCE = 3
NO_BROKER_EPOCH = -1


async def handle_stop_replica(ctx: RequestContext, req: Any) -> Any:
    v = ctx.version
    resp = cls("StopReplicaResponse")
    cluster = ctx.cluster
    if req.controller_epoch < cluster.controller_epoch:
        return resp(error_code=ErrorCode.STALE_CONTROLLER_EPOCH, partition_errors=[])
    if v >= 1 and req.broker_epoch != NO_BROKER_EPOCH and req.broker_epoch < cluster.broker_epoch:
        return resp(error_code=ErrorCode.STALE_BROKER_EPOCH, partition_errors=[])
    cluster.controller_epoch = req.controller_epoch
    errors = []
    for topic, index, epoch, delete in _partitions(req, v):
        p = cluster.partition(topic, index)
        hosted = p is not None and ctx.node_id in p.replicas
        error = check_stop_replica_epoch(epoch, p.leader_epoch if p is not None and hosted else None)
        if error is ErrorCode.NONE and p is not None and hosted:
            _stop(ctx, p, delete)
        errors.append(
            resp.StopReplicaPartitionError(topic_name=topic, partition_index=index, error_code=error)
        )
    return resp(error_code=ErrorCode.NONE, partition_errors=errors)


def _partitions(req: Any, v: int) -> list[tuple[str, int, int, bool]]:
    """(topic, partition, leader epoch, delete) per partition, whatever the version's layout."""
    if v >= PARTITION_STATES_SINCE:
        return [
            (t.topic_name, s.partition_index, s.leader_epoch, bool(s.delete_partition))
            for t in req.topic_states
            for s in t.partition_states
        ]
    delete = bool(req.delete_partitions)
    if v == 0:
        return [(p.topic_name, p.partition_index, NO_LEADER_EPOCH, delete) for p in req.ungrouped_partitions]
    return [(t.name, i, NO_LEADER_EPOCH, delete) for t in req.topics for i in t.partition_indexes]


def _stop(ctx: RequestContext, p: Partition, delete: bool) -> None:
    """This broker no longer hosts the replica; if it led, the next in-sync replica takes over (as the
    controller would decide) at a new epoch, or the partition is left without a leader."""
    node = ctx.node_id
    p.replicas = [r for r in p.replicas if r != node]
    p.isr = [r for r in p.isr if r != node]
    if p.leader == node:
        if p.isr:
            ctx.cluster.move_leader(p.topic, p.index, p.isr[0])
        else:
            p.leader = -1
            ctx.cluster.notify_data()
    if delete and not p.replicas:
        p.log.truncate(p.log.log_start_offset)
