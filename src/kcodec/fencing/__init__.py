"""Leader-epoch fencing as executable rules: pure functions, no I/O, each citing the KIP it comes from.

- :mod:`~kcodec.fencing.epochs` — KIP-320/KIP-359: a request's current leader epoch against the
  partition's (:func:`check_leader_epoch`); KIP-570: StopReplica's per-partition epoch
  (:func:`check_stop_replica_epoch`).
- :mod:`~kcodec.fencing.epoch_cache` — KIP-101/KIP-279/KIP-320: the leader-epoch cache of a log and the
  leader's answer to OffsetsForLeaderEpoch (:func:`end_offset_for_epoch`), Fetch v12+'s DivergingEpoch
  (:func:`diverging_epoch`) and the leader's whole last-fetched-epoch check (:func:`check_fetch_epoch`).
- :mod:`~kcodec.fencing.truncation` — KIP-320: a consumer's log-truncation check from its position and
  the leader's answer (:func:`detect_truncation`).
- :mod:`~kcodec.fencing.metadata` — KIP-232: whether a MetadataResponse is stale for what a client caches
  (:func:`metadata_staleness`; a changed topic id, KIP-516, means a re-created topic: accepted).
- :mod:`~kcodec.fencing.producer_ids` — KIP-98/KIP-360: the coordinator's InitProducerId decision
  (:func:`init_producer_id`).

Error codes come from :class:`kcodec.protocol.error_codes.ErrorCode` (FENCED_LEADER_EPOCH = 74,
UNKNOWN_LEADER_EPOCH = 75) and sentinels from :mod:`kcodec.protocol.sentinels`.
"""

from __future__ import annotations

from kcodec.fencing.epoch_cache import (
    EpochEndOffset,
    EpochEntry,
    FetchEpochCheck,
    advance_start,
    assign_epoch,
    check_fetch_epoch,
    diverging_epoch,
    end_offset_for_epoch,
    epochs_of_log,
    truncate_epochs,
)
from kcodec.fencing.epochs import check_leader_epoch, check_stop_replica_epoch
from kcodec.fencing.metadata import (
    MetadataVerdict,
    StalePartition,
    metadata_staleness,
    partition_epochs,
    topic_ids,
)
from kcodec.fencing.producer_ids import (
    InitOutcome,
    InitProducerIdDecision,
    TransactionalIdState,
    init_producer_id,
    is_epoch_exhausted,
)
from kcodec.fencing.truncation import FetchPosition, Truncation, TruncationCheck, detect_truncation

__all__ = [
    "EpochEndOffset",
    "EpochEntry",
    "FetchEpochCheck",
    "FetchPosition",
    "InitOutcome",
    "InitProducerIdDecision",
    "MetadataVerdict",
    "StalePartition",
    "TransactionalIdState",
    "Truncation",
    "TruncationCheck",
    "advance_start",
    "assign_epoch",
    "check_fetch_epoch",
    "check_leader_epoch",
    "check_stop_replica_epoch",
    "detect_truncation",
    "diverging_epoch",
    "end_offset_for_epoch",
    "epochs_of_log",
    "init_producer_id",
    "is_epoch_exhausted",
    "metadata_staleness",
    "partition_epochs",
    "topic_ids",
    "truncate_epochs",
]
