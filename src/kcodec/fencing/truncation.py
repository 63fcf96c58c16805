"""KIP-320: how a consumer decides whether the log it read was truncated under it (an unclean leader
election), from its position and the leader's OffsetsForLeaderEpoch answer."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from kcodec.fencing.epoch_cache import EpochEndOffset


class FetchPosition(NamedTuple):
    """A consumer's position: the next offset to fetch and the leader epoch of the last record it
    consumed (the batch's partition leader epoch, or the committed leader epoch, KIP-320)."""

    offset: int
    last_fetched_epoch: int


class Truncation(StrEnum):
    NONE = "none"  # the leader's log has everything the consumer read: the position is valid
    TRUNCATED = "truncated"  # the log diverged before the position: records the consumer read are gone
    UNDEFINED = "undefined"  # the leader knows no epoch at or below the consumer's: reset by policy


@dataclass(frozen=True, slots=True)
class TruncationCheck:
    """The outcome of :func:`detect_truncation`. For ``TRUNCATED``, ``divergent_offset`` is where the logs
    part (the consumer's new position when it resets to the divergence) and ``divergent_epoch`` the
    last epoch both logs share."""

    verdict: Truncation
    position: FetchPosition
    divergent_offset: int | None = None
    divergent_epoch: int | None = None

    @property
    def truncated(self) -> bool:
        return self.verdict is Truncation.TRUNCATED

    @property
    def records_lost(self) -> int:
        """How many offsets the consumer read that the leader's log no longer has."""
        if self.divergent_offset is None:
            return 0
        return max(0, self.position.offset - self.divergent_offset)


def detect_truncation(position: FetchPosition, answer: EpochEndOffset) -> TruncationCheck:
    """KIP-320 (the Java consumer's ``SubscriptionState.maybeCompleteValidation``): the leader answered
    OffsetsForLeaderEpoch for ``position.last_fetched_epoch`` with ``answer``.

    - an undefined answer (epoch or end offset -1) → ``UNDEFINED``: the consumer resets its offset by its
      reset policy (or fails when it has none);
    - the epoch ends before the position → ``TRUNCATED`` at ``answer.end_offset``;
    - otherwise → ``NONE``: the position is validated.
    """
    if answer.undefined:
        return TruncationCheck(Truncation.UNDEFINED, position)
    if answer.end_offset < position.offset:
        return TruncationCheck(Truncation.TRUNCATED, position, answer.end_offset, answer.leader_epoch)
    return TruncationCheck(Truncation.NONE, position)
