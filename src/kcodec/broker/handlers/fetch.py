"""Fetch: stored batches from the fetch offset on, with KIP-320 epoch fencing, high watermark, log
start offset and, from v12, DivergingEpoch when the fetcher's last fetched epoch shows its log has
diverged from the leader's (an unclean election). Waits up to MaxWaitMs for MinBytes."""

from __future__ import annotations

import struct
import time
from typing import Any

from kcodec.broker.handlers.common import (
    RequestContext,
    cls,
    find_topic,
    leader_hint_needed,
    node_endpoints,
    partition_error,
)
from kcodec.fencing import check_fetch_epoch
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import NO_LEADER_EPOCH

TOPIC_IDS_SINCE = 13
DIVERGING_EPOCH_SINCE = 12
#: KafkaApis.handleFetchRequest fills CurrentLeader (in the schema since v12) and NodeEndpoints only from
#: v16 (KIP-951), for NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH.
LEADER_HINTS_SINCE = 16
SESSIONS_SINCE = 7
FOLLOWER_FETCH_SINCE = 11  # KIP-392: consumers may fetch from a follower
REPLICA_STATE_SINCE = 15  # the replica id moved into ReplicaState
NO_SESSION = 0
READ_COMMITTED = 1  # IsolationLevel (Fetch v4+)
_BASE_AND_DELTA = struct.Struct(">q15xi")  # a batch's baseOffset ... lastOffsetDelta


async def handle_fetch(ctx: RequestContext, req: Any) -> Any:
    v = ctx.version
    resp = cls("FetchResponse")
    if v >= SESSIONS_SINCE and req.session_id != NO_SESSION:
        # incremental fetch sessions (KIP-227) are not kept: the client falls back to full fetches
        return resp(error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND, session_id=NO_SESSION)
    cap = ctx.cluster.config.max_wait_ms
    deadline = time.monotonic() + min(max(req.max_wait_ms, 0), cap) / 1000
    while True:
        out, total, errors = _read(ctx, req)
        remaining = deadline - time.monotonic()
        if total >= req.min_bytes or errors or remaining <= 0:
            return out
        await ctx.cluster.wait_for_data(remaining)


def _read(ctx: RequestContext, req: Any) -> tuple[Any, int, bool]:
    v = ctx.version
    resp = cls("FetchResponse")
    by_id = v >= TOPIC_IDS_SINCE
    budget = req.max_bytes if v >= 3 else 2**31 - 1
    committed = v >= 4 and req.isolation_level == READ_COMMITTED
    total = 0
    errors = False
    hinted: set[int] = set()
    leader_only = _fetch_only_leader(req, v)
    topics = []
    for ft in req.topics:
        topic = find_topic(ctx.cluster, ft.topic, ft.topic_id, by_id)
        parts = []
        for fp in ft.partitions:
            # FetchRequest.optionalEpoch: any negative epoch is "none" (ListOffsets and
            # OffsetsForLeaderEpoch take only -1 as none)
            epoch = fp.current_leader_epoch if v >= 9 and fp.current_leader_epoch >= 0 else NO_LEADER_EPOCH
            p, error = partition_error(
                ctx, topic, fp.partition, epoch, by_id=by_id, require_leader=leader_only
            )
            pd = resp.PartitionData(partition_index=fp.partition, error_code=error, high_watermark=-1)
            if p is not None and error is ErrorCode.NONE:
                total += _fill(
                    ctx,
                    pd,
                    p,
                    fp,
                    min(fp.partition_max_bytes, budget - total),
                    at_least_one=total == 0,
                    committed=committed,
                )
                errors = errors or pd.error_code != ErrorCode.NONE
            elif error is not ErrorCode.NONE:
                errors = True
                if p is not None and v >= LEADER_HINTS_SINCE and leader_hint_needed(error):
                    pd.current_leader = resp.LeaderIdAndEpoch(leader_id=p.leader, leader_epoch=p.leader_epoch)
                    hinted.add(p.leader)
            if v >= 4 and not (p is not None and error is ErrorCode.NONE):
                pd.last_stable_offset = -1
                pd.aborted_transactions = None
            if v >= 5:
                failed = p is None or pd.error_code != ErrorCode.NONE  # no log start, as in Kafka
                pd.log_start_offset = -1 if failed or p is None else p.log.log_start_offset
            parts.append(pd)
        tr = resp.FetchableTopicResponse(partitions=parts)
        if by_id:
            tr.topic_id = ft.topic_id
        else:
            tr.topic = ft.topic
        topics.append(tr)
    out = resp(responses=topics)
    if v >= SESSIONS_SINCE:
        out.session_id = NO_SESSION
    if hinted and v >= LEADER_HINTS_SINCE:
        out.node_endpoints = node_endpoints(ctx.cluster, "FetchResponse", hinted)
    return out, total, errors


def _fetch_only_leader(req: Any, v: int) -> bool:
    """FetchParams.fetchOnlyLeader: a consumer's Fetch v11+ carries client metadata (KIP-392), so any
    replica serves it from its own log; older consumer fetches and a replica's fetches need the leader."""
    replica_id = req.replica_state.replica_id if v >= REPLICA_STATE_SINCE else req.replica_id
    return v < FOLLOWER_FETCH_SINCE or replica_id >= 0


def _fill(
    ctx: RequestContext, pd: Any, p: Any, fp: Any, max_bytes: int, *, at_least_one: bool, committed: bool
) -> int:
    """One partition's data; returns the bytes of records added. ``read_committed`` reads up to the
    last stable offset and lists the aborted transactions of what it returns. A failed read reports
    no high watermark, log start or last stable offset (ReplicaManager.createLogReadResult)."""
    v = ctx.version
    log = p.log
    pd.high_watermark = log.high_watermark
    lso = p.txns.last_stable_offset(log.high_watermark, log.log_start_offset)
    if v >= 4:
        pd.last_stable_offset = lso
        pd.aborted_transactions = [] if committed else None
    if v >= DIVERGING_EPOCH_SINCE:
        check = check_fetch_epoch(
            log.epochs, log.log_start_offset, log.log_end_offset, fp.fetch_offset, fp.last_fetched_epoch
        )
        if check.error is not ErrorCode.NONE:
            pd.error_code, pd.high_watermark = check.error, -1
            if v >= 4:
                pd.last_stable_offset, pd.aborted_transactions = -1, None
            return 0
        if check.diverging is not None:
            pd.diverging_epoch = cls("FetchResponse").EpochEndOffset(
                epoch=check.diverging.leader_epoch, end_offset=check.diverging.end_offset
            )
            pd.records = b""
            return 0
    if not log.log_start_offset <= fp.fetch_offset <= log.log_end_offset:
        # ReplicaManager.createLogReadResult(e): a failed read reports no high watermark or log start
        pd.error_code, pd.high_watermark = ErrorCode.OFFSET_OUT_OF_RANGE, -1
        if v >= 4:
            pd.last_stable_offset, pd.aborted_transactions = -1, None
        return 0
    end = lso if committed else None
    batches = log.read(fp.fetch_offset, max(max_bytes, 0), at_least_one=at_least_one, end=end)
    data = b"".join(batches)
    pd.records = data
    if committed and batches:
        pd.aborted_transactions = _aborted(p, fp.fetch_offset, batches[-1])
    if v >= 11:
        pd.preferred_read_replica = -1
    return len(data)


def _aborted(p: Any, start: int, last_batch: bytes | bytearray) -> list[Any]:
    """The aborted transactions overlapping the returned offsets [start, end of the last batch]."""
    base, delta = _BASE_AND_DELTA.unpack_from(last_batch)
    entry = cls("FetchResponse").AbortedTransaction
    return [
        entry(producer_id=a.producer_id, first_offset=a.first_offset)
        for a in p.txns.aborted_between(start, base + delta + 1)
    ]
