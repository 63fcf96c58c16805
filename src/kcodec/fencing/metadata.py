"""KIP-232: a client refuses metadata older than what it has seen, by leader epoch.

A client caches each partition's leader epoch from MetadataResponse v7+. A new response is *stale* for
a partition when it carries a lower leader epoch than the cached one (a broker whose metadata lags
behind answered), or when it lists a topic the client caches without one of the partitions the client
knows. A client keeps its cached entry for stale partitions and asks again; epochs of -1 (responses
before v7, or a broker that does not know) cannot be compared and are accepted.

KIP-516 topic ids (MetadataResponse v10+) take precedence, as in the Java client
(``Metadata.updateLatestMetadata``): when a response names a topic with a (non-zero) id other than
the one cached for it, the topic was deleted and re-created, its leader epochs started again from 0,
and the response is accepted whatever its epochs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from kcodec.protocol.sentinels import NO_LEADER_EPOCH

PartitionKey = tuple[str, int]
#: The all-zero topic id: a response without topic ids (before v10), never a change of id.
ZERO_TOPIC_ID = bytes(16)


class StaleReason(StrEnum):
    OLDER_EPOCH = "older_epoch"
    MISSING = "missing"


class StalePartition(NamedTuple):
    topic: str
    partition: int
    reason: StaleReason
    cached_epoch: int
    incoming_epoch: int | None  # None when the partition is missing


@dataclass(frozen=True, slots=True)
class MetadataVerdict:
    """What :func:`metadata_staleness` found: the stale partitions (if any) and the epochs to cache
    afterwards (incoming epochs where they are not stale, cached ones where they are)."""

    stale_partitions: tuple[StalePartition, ...]
    epochs: dict[PartitionKey, int] = field(default_factory=dict)
    #: The topic ids to cache afterwards (the cached ones updated with the response's non-zero ids).
    topic_ids: dict[str, bytes] = field(default_factory=dict)
    #: Topics whose id changed (re-created): accepted whatever their epochs.
    recreated: tuple[str, ...] = ()

    @property
    def stale(self) -> bool:
        return bool(self.stale_partitions)


def metadata_staleness(
    cached: Mapping[PartitionKey, int],
    incoming: Mapping[PartitionKey, int],
    *,
    cached_topic_ids: Mapping[str, bytes] | None = None,
    incoming_topic_ids: Mapping[str, bytes] | None = None,
) -> MetadataVerdict:
    """KIP-232: compare a MetadataResponse's partition leader epochs (``incoming``, e.g. from
    :func:`partition_epochs`) with the client's cache (``cached``); both map (topic, partition) to a
    leader epoch. ``incoming_topic_ids`` (e.g. from :func:`topic_ids`) and ``cached_topic_ids`` map topic
    names to 16-byte ids: a topic whose incoming id is non-zero and differs from the cached one (or has
    none cached, as the Java client does when it lost track of the id) is taken as re-created and
    accepted, its cached epochs replaced."""
    old_ids = {t: bytes(i) for t, i in (cached_topic_ids or {}).items()}
    new_ids = {t: bytes(i) for t, i in (incoming_topic_ids or {}).items() if bytes(i) != ZERO_TOPIC_ID}
    recreated = {t for t, i in new_ids.items() if old_ids.get(t) != i}
    stale: list[StalePartition] = []
    merged = {k: e for k, e in cached.items() if k[0] not in recreated}
    topics_in_response = {topic for topic, _ in incoming}
    for key, new_epoch in incoming.items():
        old_epoch = merged.get(key)
        if old_epoch is not None and NO_LEADER_EPOCH not in (old_epoch, new_epoch) and new_epoch < old_epoch:
            stale.append(StalePartition(key[0], key[1], StaleReason.OLDER_EPOCH, old_epoch, new_epoch))
            continue
        merged[key] = new_epoch
    for key, old_epoch in cached.items():
        if key[0] in topics_in_response and key[0] not in recreated and key not in incoming:
            stale.append(StalePartition(key[0], key[1], StaleReason.MISSING, old_epoch, None))
    stale.sort(key=lambda s: (s.topic, s.partition))
    return MetadataVerdict(tuple(stale), merged, {**old_ids, **new_ids}, tuple(sorted(recreated)))


def topic_ids(response: Any) -> dict[str, bytes]:
    """topic name -> topic id (16 bytes) from a decoded MetadataResponse; empty before v10 (no ids),
    topics without a name or with the zero id skipped."""
    out: dict[str, bytes] = {}
    for topic in response.topics:
        tid = getattr(topic, "topic_id", None)
        if topic.name is None or tid is None or bytes(tid) == ZERO_TOPIC_ID:
            continue
        out[str(topic.name)] = bytes(tid)
    return out


def partition_epochs(response: Any) -> dict[PartitionKey, int]:
    """(topic, partition) → leader epoch from a decoded MetadataResponse (any version; before v7 every
    epoch is -1). Topics answered with an error code and topics without a name are skipped."""
    out: dict[PartitionKey, int] = {}
    for topic in response.topics:
        if topic.error_code != 0 or topic.name is None:
            continue
        for p in topic.partitions:
            out[(str(topic.name), int(p.partition_index))] = int(p.leader_epoch)
    return out
