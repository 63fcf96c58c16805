"""A log's leader-epoch cache and the leader's answers built on it (KIP-101, KIP-279, KIP-320).

The cache is a list of :class:`EpochEntry` (epoch, start offset): the first offset the leader of each
epoch wrote, epochs and start offsets both strictly increasing. Every function here is pure: it takes
a cache (any sequence of entries, oldest first) and returns a new tuple or an answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import NO_LEADER_EPOCH, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET


class EpochEntry(NamedTuple):
    """One epoch of a log: ``epoch`` began at ``start_offset``."""

    epoch: int
    start_offset: int


class EpochEndOffset(NamedTuple):
    """An OffsetsForLeaderEpoch answer (or Fetch's DivergingEpoch): the largest epoch at or below the one
    asked for and the offset where it ends; ``(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)`` if unknown."""

    leader_epoch: int
    end_offset: int

    @property
    def undefined(self) -> bool:
        return self.leader_epoch == UNDEFINED_EPOCH or self.end_offset == UNDEFINED_EPOCH_OFFSET


UNDEFINED = EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


def assign_epoch(cache: Sequence[EpochEntry], epoch: int, start_offset: int) -> tuple[EpochEntry, ...]:
    """KIP-101: record that ``epoch`` starts at ``start_offset`` (a leader taking over at its log end, or
    the first batch of an epoch). Re-assigning the latest epoch at a later offset changes nothing;
    otherwise entries that conflict (an epoch at or above ``epoch``, or a start at or after
    ``start_offset``) are dropped so that epochs and offsets stay strictly increasing."""
    if epoch < 0:
        raise ValueError(f"cannot assign the negative epoch {epoch}")
    if cache and cache[-1].epoch == epoch and start_offset >= cache[-1].start_offset:
        return tuple(cache)
    kept = [e for e in cache if e.epoch < epoch and e.start_offset < start_offset]
    return (*kept, EpochEntry(epoch, start_offset))


def truncate_epochs(cache: Sequence[EpochEntry], end_offset: int) -> tuple[EpochEntry, ...]:
    """KIP-101: the cache after the log is truncated to ``end_offset`` (exclusive): epochs that start at
    or after it are gone."""
    return tuple(e for e in cache if e.start_offset < end_offset)


def advance_start(cache: Sequence[EpochEntry], log_start_offset: int) -> tuple[EpochEntry, ...]:
    """The cache after the log's start moved to ``log_start_offset`` (retention): epochs that ended
    before it are dropped; the epoch the new start falls in now starts there."""
    older = [e for e in cache if e.start_offset <= log_start_offset]
    newer = [e for e in cache if e.start_offset > log_start_offset]
    head = (EpochEntry(older[-1].epoch, log_start_offset),) if older else ()
    return (*head, *newer)


def epochs_of_log(batches: Iterable[tuple[int, int]]) -> tuple[EpochEntry, ...]:
    """The cache of a log given as ``(base offset, partition leader epoch)`` per batch, oldest first
    (batches written without an epoch, ``NO_LEADER_EPOCH``, start no epoch)."""
    cache: tuple[EpochEntry, ...] = ()
    for offset, epoch in batches:
        if epoch != NO_LEADER_EPOCH and (not cache or cache[-1].epoch != epoch):
            cache = assign_epoch(cache, epoch, offset)
    return cache


def end_offset_for_epoch(
    cache: Sequence[EpochEntry], requested_epoch: int, log_end_offset: int
) -> EpochEndOffset:
    """KIP-101/KIP-320: the leader's OffsetsForLeaderEpoch answer for ``requested_epoch``.

    - ``UNDEFINED_EPOCH`` asked, or an epoch above every epoch the leader knows → undefined (-1, -1);
    - the leader's latest epoch → (that epoch, the log end offset);
    - an epoch below every known one → (the epoch asked, the start of the first known epoch);
    - otherwise → (the largest known epoch at or below the one asked, the start of the next epoch).
    """
    if requested_epoch == UNDEFINED_EPOCH or not cache:
        return UNDEFINED
    if cache[-1].epoch == requested_epoch:
        return EpochEndOffset(requested_epoch, log_end_offset)
    higher = next((e for e in cache if e.epoch > requested_epoch), None)
    if higher is None:
        return UNDEFINED
    floor = [e for e in cache if e.epoch <= requested_epoch]
    if not floor:
        return EpochEndOffset(requested_epoch, higher.start_offset)
    return EpochEndOffset(floor[-1].epoch, higher.start_offset)


def diverging_epoch(
    cache: Sequence[EpochEntry], log_end_offset: int, fetch_offset: int, last_fetched_epoch: int
) -> EpochEndOffset | None:
    """KIP-320/KIP-595: the leader's end of ``last_fetched_epoch`` when a fetch at ``fetch_offset`` whose
    previous batch had that epoch cannot go on: the epoch ended before the fetch offset, or the leader's
    largest epoch at or below it is older. None when the fetcher's log agrees with the leader's (or it
    sent no epoch, any negative one). An undefined answer (-1, -1: an epoch newer than every one the
    leader knows) is returned as is: it is no divergence, Kafka fails such a fetch with
    OFFSET_OUT_OF_RANGE (see :func:`check_fetch_epoch`, which a broker uses)."""
    if last_fetched_epoch < 0:
        return None
    answer = end_offset_for_epoch(cache, last_fetched_epoch, log_end_offset)
    if answer.undefined or answer.leader_epoch < last_fetched_epoch or answer.end_offset < fetch_offset:
        return answer
    return None


class FetchEpochCheck(NamedTuple):
    """What a leader does with a Fetch v12+ partition given its last fetched epoch: ``error`` (NONE or
    OFFSET_OUT_OF_RANGE) and, with NONE, the ``diverging`` epoch to answer with instead of records."""

    error: ErrorCode
    diverging: EpochEndOffset | None = None


def check_fetch_epoch(
    cache: Sequence[EpochEntry],
    log_start_offset: int,
    log_end_offset: int,
    fetch_offset: int,
    last_fetched_epoch: int,
) -> FetchEpochCheck:
    """Kafka's order in ``Partition.readRecords`` when a fetch carries a last fetched epoch (any
    negative one: none, ``FetchRequest``'s optionalEpoch):

    1. the leader's end of that epoch is undefined (the epoch is newer than every one in its cache) →
       OFFSET_OUT_OF_RANGE ("Could not determine the end offset of the last fetched epoch");
    2. the fetch offset is below the log start → OFFSET_OUT_OF_RANGE, whether the epochs diverge or not;
    3. the logs diverge → DivergingEpoch (the leader's epoch and end offset), no records;
    4. otherwise the read goes on (and is checked against the log end like any other).

    An epoch older than every known one is not undefined: it ends where the first known epoch starts
    (``LeaderEpochFileCache.endOffsetFor``), so the fetcher truncates there."""
    if last_fetched_epoch < 0:
        return FetchEpochCheck(ErrorCode.NONE)
    answer = end_offset_for_epoch(cache, last_fetched_epoch, log_end_offset)
    if answer.undefined or fetch_offset < log_start_offset:
        return FetchEpochCheck(ErrorCode.OFFSET_OUT_OF_RANGE)
    if answer.leader_epoch < last_fetched_epoch or answer.end_offset < fetch_offset:
        return FetchEpochCheck(ErrorCode.NONE, answer)
    return FetchEpochCheck(ErrorCode.NONE)
