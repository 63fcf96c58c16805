"""What every request handler shares: the request's context and the partition checks Kafka makes in
the same order for every partition-level request (topic, epoch (KIP-320), leadership)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from kcodec.broker.state import ClusterState, Node, Partition, Topic
from kcodec.fencing import check_leader_epoch
from kcodec.protocol.codec import message_class
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import NO_LEADER_EPOCH

#: Kafka answers the first version that names topics by id (Fetch v13+, Produce v13+) with this
#: for an id it does not know.
UNKNOWN_TOPIC_ID = ErrorCode.UNKNOWN_TOPIC_ID


@dataclass(slots=True)
class RequestContext:
    """One request as a handler sees it: the cluster, the broker it reached, the version it used."""

    cluster: ClusterState
    node_id: int
    version: int
    client_id: str | None

    @property
    def node(self) -> Node:
        found = self.cluster.node(self.node_id)
        assert found is not None
        return found


Handler = Callable[[RequestContext, Any], Awaitable[Any]]

#: Error messages written into responses are cut to this many characters: a message may quote what
#: the client sent (a 32,767-byte topic name), and must still fit the protocol's string limit.
MAX_ERROR_MESSAGE = 1000


def wire_message(message: str | None) -> str | None:
    """An error message as a response carries it: at most ``MAX_ERROR_MESSAGE`` characters."""
    if message is None or len(message) <= MAX_ERROR_MESSAGE:
        return message
    return message[: MAX_ERROR_MESSAGE - 1] + "…"


@cache
def cls(message_name: str) -> Any:
    """A generated message class, typed ``Any`` so handlers can use its nested struct classes."""
    return message_class(message_name)


def find_topic(cluster: ClusterState, name: str | None, topic_id: bytes | None, by_id: bool) -> Topic | None:
    """The topic a request names: by id when the version carries ids, else by name."""
    if by_id:
        return cluster.topics_by_id.get(bytes(topic_id)) if topic_id is not None else None
    return cluster.topics.get(name) if name is not None else None


def unknown_topic(by_id: bool) -> ErrorCode:
    return UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def partition_error(
    ctx: RequestContext,
    topic: Topic | None,
    index: int,
    current_leader_epoch: int = NO_LEADER_EPOCH,
    *,
    by_id: bool = False,
    require_leader: bool = True,
) -> tuple[Partition | None, ErrorCode]:
    """Kafka's order of partition checks (ReplicaManager.getPartitionOrError, then
    Partition.getLocalLog): the topic and partition exist; this broker hosts a replica (else
    NOT_LEADER_OR_FOLLOWER, whatever the epoch); the request's current leader epoch matches (KIP-320/359:
    74 older, 75 newer, -1 unchecked); this broker leads (when ``require_leader``; a replica of a partition
    without a leader is not its leader either)."""
    if topic is None:
        return None, unknown_topic(by_id)
    if not 0 <= index < len(topic.partitions):
        return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    p = topic.partitions[index]
    if ctx.node_id not in p.replicas:
        return p, ErrorCode.NOT_LEADER_OR_FOLLOWER
    error = check_leader_epoch(current_leader_epoch, p.leader_epoch)
    if error is not ErrorCode.NONE:
        return p, error
    if require_leader and p.leader != ctx.node_id:
        return p, ErrorCode.NOT_LEADER_OR_FOLLOWER
    return p, ErrorCode.NONE


def leader_hint_needed(error: ErrorCode) -> bool:
    """Errors after which Produce v10+/Fetch v16+ tell the client the current leader (KIP-951)."""
    return error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)


def node_endpoints(cluster: ClusterState, message_name: str, node_ids: set[int]) -> list[Any]:
    endpoint = cls(message_name).NodeEndpoint
    return [
        endpoint(node_id=n.node_id, host=n.host, port=n.port, rack=n.rack)
        for n in cluster.nodes
        if n.node_id in node_ids
    ]
