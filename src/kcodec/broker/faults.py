"""Faults a test injects into a running mock cluster (the control API): per-request errors and latency,
brokers taken down and brought back, brokers whose metadata lags behind.

- :meth:`Faults.inject` queues answers for the next requests of one API (on one broker, or on whichever
  broker gets them first): each waits ``latency_ms`` and is then answered with its error instead of being
  served (nothing is appended, committed or changed), or served as usual when the error is NONE. The
  error goes where Kafka puts it for that API: every partition of a Produce, Fetch, ListOffsets,
  OffsetsForLeaderEpoch or OffsetCommit, every topic of a Metadata or CreateTopics/DeleteTopics, every
  key of a batched FindCoordinator, else the response's top-level error code.
- :meth:`Faults.set_down`: a broker that is down drops its connections and closes every new one at once
  (clients see it as unreachable); it stays in Metadata and keeps its leaderships, as a broker that just
  died would until the controller notices (move leaders with the control API to model that).
- :meth:`Faults.set_stale`: a broker whose metadata is ``behind`` leadership changes behind: its
  Metadata answers show each partition's leader, leader epoch and ISR as they were that many changes
  ago (KIP-232: a client must keep the newer epoch it has seen).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from kcodec.broker.errors import BrokerError
from kcodec.protocol.error_codes import ErrorCode

#: At most this many injected answers wait per (broker, API): a test's queue, not a workload.
MAX_QUEUED = 10_000
#: The longest latency one answer may be given (ms).
MAX_LATENCY_MS = 300_000
ANY_BROKER = -1


@dataclass(frozen=True, slots=True)
class InjectedAnswer:
    """One queued fault: wait ``latency_ms``, then answer with ``error`` (NONE: serve as usual)."""

    error: ErrorCode
    latency_ms: int = 0


class Faults:
    """The faults of one cluster. Used from the cluster's event loop only."""

    def __init__(self) -> None:
        self._queues: dict[tuple[int, int], deque[InjectedAnswer]] = {}
        self.down: set[int] = set()
        self.stale: dict[int, int] = {}  # node id -> leadership changes behind

    def inject(
        self, api_key: int, errors: list[int], *, broker: int | None = None, latency_ms: int = 0
    ) -> int:
        """Queue one answer per entry of ``errors`` (Kafka error codes, 0 for latency only) for the next
        requests of ``api_key`` to ``broker`` (None: any broker). Returns how many wait now."""
        if not errors:
            raise BrokerError("errors must list at least one error code (0: latency only)")
        if not 0 <= latency_ms <= MAX_LATENCY_MS:
            raise BrokerError(f"latency_ms {latency_ms} is outside [0, {MAX_LATENCY_MS}]")
        codes = []
        for e in errors:
            try:
                codes.append(ErrorCode(e))
            except ValueError:
                raise BrokerError(f"{e} is not a Kafka error code") from None
        queue = self._queues.setdefault((ANY_BROKER if broker is None else broker, api_key), deque())
        if len(queue) + len(codes) > MAX_QUEUED:
            raise BrokerError(f"at most {MAX_QUEUED} injected answers may wait per broker and API")
        queue.extend(InjectedAnswer(c, latency_ms) for c in codes)
        return len(queue)

    def take(self, node_id: int, api_key: int) -> InjectedAnswer | None:
        """The next injected answer for a request of ``api_key`` reaching ``node_id`` (this broker's own
        queue first), removed from its queue; None when nothing was injected."""
        for key in ((node_id, api_key), (ANY_BROKER, api_key)):
            queue = self._queues.get(key)
            if queue:
                return queue.popleft()
        return None

    def pending(self) -> dict[str, int]:
        """Injected answers still waiting: ``{"<broker or any>/<api key>": count}``."""
        return {
            f"{'any' if node == ANY_BROKER else node}/{key}": len(q)
            for (node, key), q in sorted(self._queues.items())
            if q
        }

    def clear(self) -> None:
        """Drop every queued answer, bring every broker up and every stale broker up to date."""
        self._queues.clear()
        self.down.clear()
        self.stale.clear()

    def set_down(self, node_id: int, down: bool) -> None:
        (self.down.add if down else self.down.discard)(node_id)

    def set_stale(self, node_id: int, behind: int) -> None:
        if behind < 0:
            raise BrokerError(f"behind must be 0 or more, not {behind}")
        if behind:
            self.stale[node_id] = behind
        else:
            self.stale.pop(node_id, None)


def error_response(key: int, version: int, request: Any, error: ErrorCode, message_class: Any) -> Any:
    """The response to ``request`` (API ``key`` at ``version``) that fails it with ``error`` everywhere
    Kafka's own error responses put one; ``message_class`` is the response's generated class."""
    resp = message_class
    builder = _BUILDERS.get(key)
    if builder is not None:
        return builder(resp, version, request, error)
    if "error_code" not in resp._fields_:  # (compiled classes have no __slots__)
        raise BrokerError(f"errors cannot be injected into api key {key}: its response has no error code")
    return resp(error_code=error)


def can_inject(key: int, message_class: Any) -> bool:
    return key in _BUILDERS or "error_code" in message_class._fields_


def _produce(resp: Any, v: int, req: Any, error: ErrorCode) -> Any:
    topics = []
    for td in req.topic_data:
        parts = [
            resp.PartitionProduceResponse(index=pd.index, error_code=error, base_offset=-1)
            for pd in td.partition_data
        ]
        tr = resp.TopicProduceResponse(partition_responses=parts)
        if v >= 13:
            tr.topic_id = td.topic_id
        else:
            tr.name = td.name
        topics.append(tr)
    return resp(responses=topics)


def _fetch(resp: Any, v: int, req: Any, error: ErrorCode) -> Any:
    topics = []
    for ft in req.topics:
        parts = [
            resp.PartitionData(partition_index=fp.partition, error_code=error, high_watermark=-1)
            for fp in ft.partitions
        ]
        tr = resp.FetchableTopicResponse(partitions=parts)
        if v >= 13:
            tr.topic_id = ft.topic_id
        else:
            tr.topic = ft.topic
        topics.append(tr)
    out = resp(responses=topics)
    if v >= 7:
        out.session_id = 0
    return out


def _list_offsets(resp: Any, v: int, req: Any, error: ErrorCode) -> Any:
    return resp(
        topics=[
            resp.ListOffsetsTopicResponse(
                name=t.name,
                partitions=[
                    resp.ListOffsetsPartitionResponse(
                        partition_index=p.partition_index, error_code=error, timestamp=-1, offset=-1
                    )
                    for p in t.partitions
                ],
            )
            for t in req.topics
        ]
    )


def _offset_for_leader_epoch(resp: Any, v: int, req: Any, error: ErrorCode) -> Any:
    return resp(
        topics=[
            resp.OffsetForLeaderTopicResult(
                topic=t.topic,
                partitions=[
                    resp.EpochEndOffset(
                        error_code=error, partition=p.partition, leader_epoch=-1, end_offset=-1
                    )
                    for p in t.partitions
                ],
            )
            for t in req.topics
        ]
    )


def _offset_commit(resp: Any, v: int, req: Any, error: ErrorCode) -> Any:
    return resp(
        topics=[
            resp.OffsetCommitResponseTopic(
                name=t.name,
                partitions=[
                    resp.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=error)
                    for p in t.partitions
                ],
            )
            for t in req.topics
        ]
    )


def _metadata(resp: Any, v: int, req: Any, error: ErrorCode) -> Any:
    names = [t.name for t in req.topics or [] if t.name is not None]
    out = resp(brokers=[], topics=[resp.MetadataResponseTopic(error_code=error, name=n) for n in names])
    if v >= 1:
        out.controller_id = -1
    return out


def _create_topics(resp: Any, v: int, req: Any, error: ErrorCode) -> Any:
    return resp(topics=[resp.CreatableTopicResult(name=t.name, error_code=error) for t in req.topics])


def _delete_topics(resp: Any, v: int, req: Any, error: ErrorCode) -> Any:
    names = [t.name for t in req.topics] if v >= 6 else list(req.topic_names)
    return resp(responses=[resp.DeletableTopicResult(name=n, error_code=error) for n in names])


def _find_coordinator(resp: Any, v: int, req: Any, error: ErrorCode) -> Any:
    if v >= 4:
        return resp(
            coordinators=[
                resp.Coordinator(key=k, node_id=-1, host="", port=-1, error_code=error)
                for k in req.coordinator_keys
            ]
        )
    return resp(error_code=error, node_id=-1, host="", port=-1)


def _offset_fetch(resp: Any, v: int, req: Any, error: ErrorCode) -> Any:
    if v >= 8:
        group = resp.OffsetFetchResponseGroup
        return resp(groups=[group(group_id=g.group_id, topics=[], error_code=error) for g in req.groups])
    if v >= 2:
        return resp(error_code=error, topics=[])
    return resp(  # v0-1: per partition only
        topics=[
            resp.OffsetFetchResponseTopic(
                name=t.name,
                partitions=[
                    resp.OffsetFetchResponsePartition(
                        partition_index=i, committed_offset=-1, metadata="", error_code=error
                    )
                    for i in t.partition_indexes
                ],
            )
            for t in req.topics or []
        ]
    )


def _add_partitions_to_txn(resp: Any, v: int, req: Any, error: ErrorCode) -> Any:
    if v >= 4:  # a top-level error; before, one per partition
        return resp(error_code=error, results_by_transaction=[])
    return resp(
        results_by_topic_v3_and_below=[
            resp.AddPartitionsToTxnTopicResult(
                name=t.name,
                results_by_partition=[
                    resp.AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=error)
                    for p in t.partitions
                ],
            )
            for t in req.v3_and_below_topics
        ]
    )


def _txn_offset_commit(resp: Any, v: int, req: Any, error: ErrorCode) -> Any:
    return resp(
        topics=[
            resp.TxnOffsetCommitResponseTopic(
                name=t.name,
                topic_id=t.topic_id,
                partitions=[
                    resp.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=error)
                    for p in t.partitions
                ],
            )
            for t in req.topics
        ]
    )


def _describe_transactions(resp: Any, v: int, req: Any, error: ErrorCode) -> Any:
    state = resp.TransactionState
    return resp(
        transaction_states=[
            state(error_code=error, transactional_id=tid, producer_id=-1, producer_epoch=-1)
            for tid in req.transactional_ids
        ]
    )


def _join_group(resp: Any, v: int, req: Any, error: ErrorCode) -> Any:
    return resp(error_code=error, generation_id=-1, leader="", member_id=req.member_id, members=[])


_BUILDERS = {
    0: _produce,
    1: _fetch,
    2: _list_offsets,
    3: _metadata,
    8: _offset_commit,
    9: _offset_fetch,
    10: _find_coordinator,
    11: _join_group,
    19: _create_topics,
    20: _delete_topics,
    23: _offset_for_leader_epoch,
    24: _add_partitions_to_txn,
    28: _txn_offset_commit,
    65: _describe_transactions,
}
