"""KIP-232: a client refuses metadata older than what it has seen, by leader epoch.

A client caches each partition's leader epoch from MetadataResponse v7+. A new response is *stale* for
a partition when it carries a lower leader epoch than the cached one (a broker whose metadata lags
behind answered), or when it lists a topic the client caches without one of the partitions the client
knows. A client keeps its cached entry for stale partitions and asks again; epochs of -1 (responses
before v7, or a broker that does not know) cannot be compared and are accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from kcodec.sentinels import NO_LEADER_EPOCH

PartitionKey = tuple[str, int]


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

    @property
    def stale(self) -> bool:
        return bool(self.stale_partitions)


def metadata_staleness(
    cached: Mapping[PartitionKey, int], incoming: Mapping[PartitionKey, int]
) -> MetadataVerdict:
    """KIP-232: compare a MetadataResponse's partition leader epochs (``incoming``, e.g. from
    :func:`partition_epochs`) with the client's cache (``cached``); both map (topic, partition) to a
    leader epoch."""
    stale: list[StalePartition] = []
    merged = dict(cached)
    topics_in_response = {topic for topic, _ in incoming}
    for key, new_epoch in incoming.items():
        old_epoch = cached.get(key)
        if old_epoch is not None and NO_LEADER_EPOCH not in (old_epoch, new_epoch) and new_epoch < old_epoch:
            stale.append(StalePartition(key[0], key[1], StaleReason.OLDER_EPOCH, old_epoch, new_epoch))
            continue
        merged[key] = new_epoch
    for key, old_epoch in cached.items():
        if key[0] in topics_in_response and key not in incoming:
            stale.append(StalePartition(key[0], key[1], StaleReason.MISSING, old_epoch, None))
    stale.sort(key=lambda s: (s.topic, s.partition))
    return MetadataVerdict(tuple(stale), merged)


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
