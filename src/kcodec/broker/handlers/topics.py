"""CreateTopics and DeleteTopics."""

from __future__ import annotations

from typing import Any

from kcodec.broker.errors import BrokerError
from kcodec.broker.handlers.common import RequestContext, cls, wire_message
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.model import Uuid


async def handle_create_topics(ctx: RequestContext, req: Any) -> Any:
    v = ctx.version
    resp = cls("CreateTopicsResponse")
    results = []
    seen: set[str] = set()
    for t in req.topics:
        r = resp.CreatableTopicResult(name=t.name)
        error, message = ErrorCode.NONE, None
        if t.name in seen:
            error, message = ErrorCode.INVALID_REQUEST, "topic named twice in the request"
        else:
            seen.add(t.name)
            assignments = sorted(t.assignments, key=lambda a: a.partition_index)
            replicas = [list(a.broker_ids) for a in assignments] or None
            try:
                if req.validate_only:
                    _validate(ctx, t, replicas)
                else:
                    topic = ctx.cluster.create_topic(t.name, t.num_partitions, t.replication_factor, replicas)
                    if v >= 7:
                        r.topic_id = Uuid(topic.topic_id)
                    if v >= 5:
                        r.num_partitions = len(topic.partitions)
                        r.replication_factor = len(topic.partitions[0].replicas)
                        r.configs = []
            except BrokerError as e:
                error, message = e.code, str(e)
        r.error_code = error
        if v >= 1:
            r.error_message = wire_message(message)
        results.append(r)
    return resp(topics=results)


def _validate(ctx: RequestContext, t: Any, replicas: list[list[int]] | None) -> None:
    """validate_only: the checks of a creation without creating (done on a scratch name check)."""
    if t.name in ctx.cluster.topics:
        raise BrokerError(f"topic {t.name!r} already exists", ErrorCode.TOPIC_ALREADY_EXISTS)
    probe = ctx.cluster.create_topic(t.name, t.num_partitions, t.replication_factor, replicas)
    ctx.cluster.delete_topic(probe.name)


async def handle_delete_topics(ctx: RequestContext, req: Any) -> Any:
    v = ctx.version
    resp = cls("DeleteTopicsResponse")
    wanted: list[tuple[str | None, bytes | None]]
    if v >= 6:
        wanted = [(t.name, bytes(t.topic_id)) for t in req.topics]
    else:
        wanted = [(name, None) for name in req.topic_names]
    results = []
    for name, topic_id in wanted:
        topic = (
            ctx.cluster.topics.get(name)
            if name is not None
            else ctx.cluster.topics_by_id.get(topic_id or b"")
        )
        r = resp.DeletableTopicResult(name=name if name is not None or v >= 6 else "")
        if topic is None:
            r.error_code = (
                ErrorCode.UNKNOWN_TOPIC_ID if name is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
        else:
            ctx.cluster.delete_topic(topic.name)
            if v >= 6:
                r.name, r.topic_id = topic.name, Uuid(topic.topic_id)
        results.append(r)
    return resp(responses=results)
