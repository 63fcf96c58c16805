"""Metadata: brokers, controller and, per partition, leader and leader epoch (KIP-232, v7+); unknown
topics are created on request when auto-creation is on (v4+: if the client allows it)."""

from __future__ import annotations

from typing import Any

from kcodec.broker.errors import BrokerError
from kcodec.broker.handlers.common import RequestContext, cls
from kcodec.broker.state import Topic
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.model import Uuid

#: Kafka's "authorized operations not requested" value (INT32_MIN).
OPERATIONS_NOT_REQUESTED = -(2**31)
ZERO_UUID = bytes(16)


async def handle_metadata(ctx: RequestContext, req: Any) -> Any:
    v = ctx.version
    resp = cls("MetadataResponse")
    wanted = _wanted(ctx, req)
    topics = [_topic(ctx, name, topic_id, topic, error) for name, topic_id, topic, error in wanted]
    brokers = [
        resp.MetadataResponseBroker(node_id=n.node_id, host=n.host, port=n.port, rack=n.rack)
        for n in ctx.cluster.nodes
    ]
    out = resp(brokers=brokers, topics=topics)
    if v >= 1:
        out.controller_id = ctx.cluster.controller_id
    if v >= 2:
        out.cluster_id = ctx.cluster.config.cluster_id
    if 8 <= v <= 10:
        out.cluster_authorized_operations = OPERATIONS_NOT_REQUESTED
    return out


def _wanted(ctx: RequestContext, req: Any) -> list[tuple[str | None, bytes | None, Topic | None, ErrorCode]]:
    """(name, id, topic, error) per topic to describe; unknown names are created when allowed."""
    cluster, v = ctx.cluster, ctx.version
    if req.topics is None or (v == 0 and not req.topics):
        return [(t.name, bytes(t.topic_id), t, ErrorCode.NONE) for t in cluster.topics.values()]
    allow = cluster.config.auto_create_topics and (v < 4 or bool(req.allow_auto_topic_creation))
    out: list[tuple[str | None, bytes | None, Topic | None, ErrorCode]] = []
    for rt in req.topics:
        tid = bytes(rt.topic_id) if v >= 10 else ZERO_UUID
        if rt.name is None and tid != ZERO_UUID:
            found = cluster.topics_by_id.get(tid)
            error = ErrorCode.NONE if found is not None else ErrorCode.UNKNOWN_TOPIC_ID
            out.append((found.name if found else None, tid, found, error))
            continue
        name = rt.name
        topic = cluster.topics.get(name) if name is not None else None
        error = ErrorCode.NONE
        if topic is None:
            error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if allow and name is not None:
                try:
                    topic = cluster.create_topic(name)
                    error = ErrorCode.NONE
                except BrokerError as e:
                    error = e.code
        out.append((name, bytes(topic.topic_id) if topic else None, topic, error))
    return out


def _topic(
    ctx: RequestContext, name: str | None, topic_id: bytes | None, topic: Topic | None, error: ErrorCode
) -> Any:
    resp = cls("MetadataResponse")
    v = ctx.version
    t = resp.MetadataResponseTopic(error_code=error, name=name if name is not None or v >= 12 else "")
    if v >= 10:
        t.topic_id = Uuid(topic_id or ZERO_UUID)
    if v >= 8:
        t.topic_authorized_operations = OPERATIONS_NOT_REQUESTED
    if topic is None:
        return t
    parts = []
    behind = ctx.cluster.faults.stale.get(ctx.node_id, 0)
    for p in topic.partitions:
        leader, epoch, isr = p.leader, p.leader_epoch, tuple(p.isr)
        if behind and p.past_leaders:  # this broker's metadata lags: as it was `behind` changes ago
            leader, epoch, isr = p.past_leaders[-min(behind, len(p.past_leaders))]
        mp = resp.MetadataResponsePartition(
            error_code=ErrorCode.LEADER_NOT_AVAILABLE if leader < 0 else ErrorCode.NONE,
            partition_index=p.index,
            leader_id=leader,
            replica_nodes=list(p.replicas),
            isr_nodes=list(isr),
        )
        if v >= 7:
            mp.leader_epoch = epoch
        parts.append(mp)
    t.partitions = parts
    return t
