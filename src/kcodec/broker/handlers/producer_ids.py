"""InitProducerId: producer ids and epochs as the transaction coordinator hands them out (KIP-98,
KIP-360 epoch bumps; the decision is kcodec.fencing.init_producer_id)."""

from __future__ import annotations

from typing import Any

from kcodec.broker.handlers.common import RequestContext, cls
from kcodec.broker.handlers.groups import not_coordinator
from kcodec.fencing import init_producer_id
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

#: Kafka's transaction.max.timeout.ms default (15 minutes).
MAX_TRANSACTION_TIMEOUT_MS = 15 * 60 * 1000
EPOCH_FIELDS_SINCE = 3


async def handle_init_producer_id(ctx: RequestContext, req: Any) -> Any:
    v = ctx.version
    resp = cls("InitProducerIdResponse")
    tid = req.transactional_id
    pid, epoch = (
        (req.producer_id, req.producer_epoch)
        if v >= EPOCH_FIELDS_SINCE
        else (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
    )
    if tid is not None:
        if not tid:
            return resp(error_code=ErrorCode.INVALID_REQUEST, producer_id=-1, producer_epoch=-1)
        if not_coordinator(ctx, tid):
            return resp(error_code=ErrorCode.NOT_COORDINATOR, producer_id=-1, producer_epoch=-1)
        full = len(ctx.cluster.transactional_ids) >= ctx.cluster.config.max_groups
        if full and tid not in ctx.cluster.transactional_ids:
            return resp(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, producer_id=-1, producer_epoch=-1)
        if not 0 < req.transaction_timeout_ms <= MAX_TRANSACTION_TIMEOUT_MS:
            return resp(error_code=ErrorCode.INVALID_TRANSACTION_TIMEOUT, producer_id=-1, producer_epoch=-1)
    cluster = ctx.cluster
    if tid is not None:  # an open transaction is aborted first (kcodec.broker.transactions)
        blocked = cluster.transactions.before_init_producer_id(tid, pid, epoch)
        if blocked is not None:
            error = (
                ErrorCode.INVALID_PRODUCER_EPOCH
                if blocked is ErrorCode.PRODUCER_FENCED and v < 4
                else blocked
            )
            return resp(error_code=error, producer_id=-1, producer_epoch=-1)
    state = cluster.transactional_ids.get(tid) if tid is not None else None
    candidate = cluster.peek_producer_id()
    decision = init_producer_id(tid, pid, epoch, state, candidate, api_version=v)
    if decision.error is not ErrorCode.NONE:
        return resp(error_code=decision.error, producer_id=-1, producer_epoch=-1)
    if decision.producer_id == candidate:
        cluster.new_producer_id()
    if tid is not None and decision.state is not None:
        cluster.transactional_ids[tid] = decision.state
    if tid is not None:
        cluster.transactions.after_init_producer_id(tid, req.transaction_timeout_ms)
    return resp(
        error_code=ErrorCode.NONE, producer_id=decision.producer_id, producer_epoch=decision.producer_epoch
    )
