"""A cluster's metadata as Kafka users look at it (``kcat -L``): brokers, controller, cluster id,
topics with their partitions, leaders, leader epochs, replicas, ISR and offline replicas.

:func:`fetch_metadata` asks one broker: the ApiVersions handshake picks the Metadata version both
sides support (newest first), then one MetadataRequest (all topics, or the ones named) is sent.
:func:`cluster_metadata` turns a decoded MetadataResponse of any version into a :class:`ClusterMetadata`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kcodec.net.client import Connection, ConnectionSettings, parse_host_port
from kcodec.net.client_errors import NoCommonVersionError
from kcodec.net.negotiation import handshake, negotiate
from kcodec.protocol.codec import message_class
from kcodec.protocol.error_codes import error_name
from kcodec.protocol.model import Message
from kcodec.protocol.sentinels import NO_LEADER_EPOCH

__all__ = [
    "BrokerInfo",
    "ClusterMetadata",
    "PartitionInfo",
    "TopicInfo",
    "cluster_metadata",
    "fetch_metadata",
    "metadata_request",
]

METADATA_KEY = 3
#: MetadataRequest v10-11 name topics by id too; v4 added AllowAutoTopicCreation; v8-10 could ask
#: for cluster authorized operations.
_NO_CONTROLLER = -1


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    partition: int
    leader: int
    leader_epoch: int  # NO_LEADER_EPOCH (-1) before Metadata v7 or when unknown
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error_code: int = 0

    @property
    def error(self) -> str | None:
        return None if self.error_code == 0 else error_name(self.error_code)


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str | None
    partitions: tuple[PartitionInfo, ...]
    topic_id: str | None = None  # Kafka's base64 UUID (Metadata v10+), None before
    internal: bool = False
    error_code: int = 0

    @property
    def error(self) -> str | None:
        return None if self.error_code == 0 else error_name(self.error_code)


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """What one broker said about the cluster (``source``: which broker, ``version``: Metadata version)."""

    source: str
    source_node_id: int | None
    version: int
    cluster_id: str | None
    controller_id: int | None
    brokers: tuple[BrokerInfo, ...]
    topics: tuple[TopicInfo, ...] = field(default=())
    notes: tuple[str, ...] = ()  # what lenient decoding tolerated (e.g. trailing bytes)

    def broker(self, node_id: int) -> BrokerInfo | None:
        return next((b for b in self.brokers if b.node_id == node_id), None)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, in the shape of ``kcat -L -J`` plus cluster id, leader epochs, offline
        replicas and error names."""
        return {
            "source": self.source,
            "source_node_id": self.source_node_id,
            "metadata_version": self.version,
            "cluster_id": self.cluster_id,
            "controllerid": self.controller_id,
            "notes": list(self.notes),
            "brokers": [
                {"id": b.node_id, "name": b.address, "host": b.host, "port": b.port, "rack": b.rack}
                for b in self.brokers
            ],
            "topics": [
                {
                    "topic": t.name,
                    "topic_id": t.topic_id,
                    "internal": t.internal,
                    "error_code": t.error_code,
                    "error": t.error,
                    "partitions": [
                        {
                            "partition": p.partition,
                            "leader": p.leader,
                            "leader_epoch": p.leader_epoch,
                            "replicas": [{"id": r} for r in p.replicas],
                            "isrs": [{"id": r} for r in p.isr],
                            "offline_replicas": [{"id": r} for r in p.offline_replicas],
                            "error_code": p.error_code,
                            "error": p.error,
                        }
                        for p in t.partitions
                    ],
                }
                for t in self.topics
            ],
        }


def metadata_request(version: int, topics: Sequence[str] | None = None) -> Message:
    """A MetadataRequest for ``topics`` (None: all topics) that does not create topics."""
    cls = message_class("MetadataRequest")
    wanted = None if topics is None else [cls.MetadataRequestTopic(name=t) for t in topics]  # type: ignore[attr-defined]
    if wanted is None and version == 0:
        wanted = []  # v0 has no null: an empty list means all topics
    return cls(topics=wanted, allow_auto_topic_creation=False)  # type: ignore[call-arg]


def cluster_metadata(
    response: Message, version: int, *, source: str = "", node_id: int | None = None
) -> ClusterMetadata:
    """A :class:`ClusterMetadata` from a decoded MetadataResponse at ``version``."""
    r: Any = response
    brokers = tuple(
        sorted((BrokerInfo(b.node_id, b.host, b.port, b.rack) for b in r.brokers), key=lambda b: b.node_id)
    )
    topics = []
    for t in r.topics:
        parts = tuple(
            sorted(
                (
                    PartitionInfo(
                        p.partition_index,
                        p.leader_id,
                        p.leader_epoch if version >= 7 else NO_LEADER_EPOCH,
                        tuple(p.replica_nodes),
                        tuple(p.isr_nodes),
                        tuple(p.offline_replicas) if version >= 5 else (),
                        p.error_code,
                    )
                    for p in t.partitions
                ),
                key=lambda p: p.partition,
            )
        )
        topic_id = str(t.topic_id) if version >= 10 and any(bytes(t.topic_id)) else None
        topics.append(TopicInfo(t.name, parts, topic_id, bool(t.is_internal), t.error_code))
    topics.sort(key=lambda t: t.name or "")
    controller = r.controller_id if version >= 1 and r.controller_id != _NO_CONTROLLER else None
    return ClusterMetadata(
        source=source,
        source_node_id=node_id,
        version=version,
        cluster_id=r.cluster_id if version >= 2 else None,
        controller_id=controller,
        brokers=brokers,
        topics=tuple(topics),
    )


def fetch_metadata(
    target: str | tuple[str, int] | Connection,
    *,
    topics: Sequence[str] | None = None,
    settings: ConnectionSettings | None = None,
    max_version: int | None = None,
) -> ClusterMetadata:
    """Ask one broker for the cluster's metadata (``"host:port"``, ``(host, port)`` or an open or
    unopened :class:`Connection`, which is then left open). Raises the client's errors
    (:mod:`kcodec.net.client_errors`) when the broker cannot be reached or answers badly."""
    own = not isinstance(target, Connection)
    if isinstance(target, Connection):
        conn = target
    else:
        host, port = parse_host_port(target) if isinstance(target, str) else target
        conn = (settings or ConnectionSettings()).connection(host, port)
    try:
        result = handshake(conn)
        if not result.ok:
            from kcodec.net.client_errors import NegotiationError

            last = result.attempts[-1] if result.attempts else None
            if last is not None and last.outcome in ("timeout", "connection_error", "protocol_error"):
                raise NegotiationError(last.detail, list(result.attempts))  # the failure, as it was
            where = f"{conn.host}:{conn.port}"
            reason = f"ApiVersions handshake with {where} failed: {result.error}"
            raise NegotiationError(reason, list(result.attempts))
        nego = negotiate(result)
        version = nego.version("Metadata")
        if max_version is not None:
            choice = nego.choice("Metadata")
            if choice.broker is None or max_version < choice.broker[0]:
                raise NoCommonVersionError(f"Metadata: the broker has no version at or below v{max_version}")
            version = min(version, max_version)
        # lenient like Kafka's clients: bytes after the body are noted, not fatal (librdkafka's mock
        # cluster writes one after MetadataResponse v13)
        frame = conn.request(metadata_request(version, topics), version, strict=False)
        source = f"{conn.host}:{conn.port}"
        node = next(
            (b.node_id for b in frame.body.brokers if b.host == conn.host and b.port == conn.port),  # type: ignore[attr-defined]
            None,
        )
        md = cluster_metadata(frame.body, version, source=source, node_id=node)
        return replace(md, notes=tuple(d.reason for d in frame.diagnostics))
    finally:
        if own:
            conn.close()
