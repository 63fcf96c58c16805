"""Leader-epoch checks a broker makes on requests (KIP-320, KIP-359, KIP-570)."""

from __future__ import annotations

from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import LEADER_EPOCH_DURING_DELETE, NO_LEADER_EPOCH


def check_leader_epoch(request_epoch: int, partition_epoch: int) -> ErrorCode:
    """A request's ``CurrentLeaderEpoch`` against the partition's leader epoch.

    KIP-320 (Fetch v9+, ListOffsets v4+, OffsetsForLeaderEpoch v2+) and KIP-359 (Produce; on the wire
    only in kcodec's proposal version): equal → ``NONE``; older than the partition's →
    ``FENCED_LEADER_EPOCH`` (74: the client's metadata is stale, it must refresh); newer →
    ``UNKNOWN_LEADER_EPOCH`` (75: this broker has not yet learnt of the epoch, the client retries);
    ``NO_LEADER_EPOCH`` (-1: older versions, or a client that opts out) → no check, ``NONE``.
    The broker checks the epoch before it checks leadership (a follower answers 74/75 too).
    """
    if request_epoch in (NO_LEADER_EPOCH, partition_epoch):
        return ErrorCode.NONE
    if request_epoch < partition_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    return ErrorCode.UNKNOWN_LEADER_EPOCH


def check_stop_replica_epoch(request_epoch: int, partition_epoch: int | None) -> ErrorCode:
    """KIP-570: StopReplica v3+'s per-partition ``LeaderEpoch`` against the replica's leader epoch.

    ``LEADER_EPOCH_DURING_DELETE`` (-2, the topic is being deleted) overrides any epoch and
    ``NO_LEADER_EPOCH`` (-1, absent: StopReplica v0-2) skips the check: both stop the replica. Otherwise
    the request's epoch must be at least the replica's (ReplicaManager.stopReplicas since Kafka 3.5,
    KAFKA-13972: an equal epoch is accepted, because a cancelled reassignment does not always bump the
    epoch; Kafka 2.6-3.4 wanted a newer one): an older one is ``FENCED_LEADER_EPOCH`` (74) and the
    replica is left alone. A replica the broker does not host (``partition_epoch`` None) is stopped
    without a check.
    """
    if request_epoch in (LEADER_EPOCH_DURING_DELETE, NO_LEADER_EPOCH) or partition_epoch is None:
        return ErrorCode.NONE
    if request_epoch >= partition_epoch:
        return ErrorCode.NONE
    return ErrorCode.FENCED_LEADER_EPOCH
