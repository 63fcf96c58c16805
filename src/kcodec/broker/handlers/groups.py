"""FindCoordinator and the classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup. The
group logic is in kcodec.broker.groups; these handlers translate versions and check that the request
reached the group's coordinator (else NOT_COORDINATOR)."""

from __future__ import annotations

from typing import Any

from kcodec.broker.handlers.common import RequestContext, cls
from kcodec.protocol.error_codes import ErrorCode

GROUP_KEY, TRANSACTION_KEY = 0, 1
BATCHED_LOOKUP_SINCE = 4  # FindCoordinator v4+: CoordinatorKeys (KIP-699)


def not_coordinator(ctx: RequestContext, key: str) -> bool:
    return ctx.cluster.coordinator_for(key).node_id != ctx.node_id


async def handle_find_coordinator(ctx: RequestContext, req: Any) -> Any:
    v = ctx.version
    resp = cls("FindCoordinatorResponse")
    key_type = req.key_type if v >= 1 else GROUP_KEY
    if v >= BATCHED_LOOKUP_SINCE:
        coordinators = []
        for key in req.coordinator_keys:
            c = resp.Coordinator(key=key)
            _fill(ctx, c, key, key_type)
            coordinators.append(c)
        return resp(coordinators=coordinators)
    out = resp()
    _fill(ctx, out, req.key, key_type)
    if v == 0:
        out.error_message = None
    return out


def _fill(ctx: RequestContext, out: Any, key: str, key_type: int) -> None:
    if key_type not in (GROUP_KEY, TRANSACTION_KEY) or not key:
        out.error_code, out.error_message = (
            ErrorCode.INVALID_REQUEST,
            f"no coordinator for key type {key_type}",
        )
        out.node_id, out.host, out.port = -1, "", -1
        return
    node = ctx.cluster.coordinator_for(key)
    out.error_code, out.node_id, out.host, out.port = ErrorCode.NONE, node.node_id, node.host, node.port
    if ctx.version >= 1:
        out.error_message = None


async def handle_join_group(ctx: RequestContext, req: Any) -> Any:
    v = ctx.version
    resp = cls("JoinGroupResponse")
    if not_coordinator(ctx, req.group_id):
        return _join_error(v, ErrorCode.NOT_COORDINATOR, req.member_id)
    rebalance_timeout = req.rebalance_timeout_ms if v >= 1 else req.session_timeout_ms
    result = await ctx.cluster.groups.join(
        req.group_id,
        req.member_id,
        req.group_instance_id if v >= 5 else None,
        ctx.client_id or "",
        req.session_timeout_ms,
        rebalance_timeout,
        req.protocol_type,
        [(p.name, bytes(p.metadata)) for p in req.protocols],
        v,
    )
    if result.error is not ErrorCode.NONE:
        return _join_error(v, result.error, result.member_id or req.member_id)
    members = [
        resp.JoinGroupResponseMember(member_id=mid, group_instance_id=iid if v >= 5 else None, metadata=meta)
        for mid, iid, meta in result.members
    ]
    out = resp(
        generation_id=result.generation,
        protocol_name=result.protocol_name,
        leader=result.leader,
        member_id=result.member_id,
        members=members,
    )
    if v >= 7:
        out.protocol_type = result.protocol_type
    return out


def _join_error(v: int, error: ErrorCode, member_id: str) -> Any:
    out = cls("JoinGroupResponse")(error_code=error, generation_id=-1, leader="", member_id=member_id)
    out.protocol_name = None if v >= 7 else ""
    return out


async def handle_sync_group(ctx: RequestContext, req: Any) -> Any:
    v = ctx.version
    resp = cls("SyncGroupResponse")
    if not_coordinator(ctx, req.group_id):
        return resp(error_code=ErrorCode.NOT_COORDINATOR, assignment=b"")
    assignments = {a.member_id: bytes(a.assignment) for a in req.assignments}
    result = await ctx.cluster.groups.sync(
        req.group_id,
        req.generation_id,
        req.member_id,
        req.protocol_type if v >= 5 else None,
        req.protocol_name if v >= 5 else None,
        assignments,
    )
    out = resp(error_code=result.error, assignment=result.assignment)
    if v >= 5:
        out.protocol_type, out.protocol_name = result.protocol_type, result.protocol_name
    return out


async def handle_heartbeat(ctx: RequestContext, req: Any) -> Any:
    resp = cls("HeartbeatResponse")
    if not_coordinator(ctx, req.group_id):
        return resp(error_code=ErrorCode.NOT_COORDINATOR)
    return resp(error_code=ctx.cluster.groups.heartbeat(req.group_id, req.generation_id, req.member_id))


async def handle_leave_group(ctx: RequestContext, req: Any) -> Any:
    v = ctx.version
    resp = cls("LeaveGroupResponse")
    if not_coordinator(ctx, req.group_id):
        return resp(error_code=ErrorCode.NOT_COORDINATOR)
    if v < 3:
        top, _ = ctx.cluster.groups.leave(req.group_id, [req.member_id])
        return resp(error_code=top)
    ids = [m.member_id for m in req.members]
    _, errors = ctx.cluster.groups.leave(req.group_id, ids)
    members = [
        resp.MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=e)
        for m, e in zip(req.members, errors, strict=True)
    ]
    return resp(error_code=ErrorCode.NONE, members=members)
