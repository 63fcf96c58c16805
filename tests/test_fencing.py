"""kcodec.fencing: the leader-epoch rules, case by case (each KIP's table) and as properties against
brute-force models of a replicated log."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcodec.fencing import (
    EpochEndOffset,
    EpochEntry,
    FetchEpochCheck,
    FetchPosition,
    InitOutcome,
    TransactionalIdState,
    Truncation,
    advance_start,
    assign_epoch,
    check_fetch_epoch,
    check_leader_epoch,
    check_stop_replica_epoch,
    detect_truncation,
    diverging_epoch,
    end_offset_for_epoch,
    epochs_of_log,
    init_producer_id,
    is_epoch_exhausted,
    metadata_staleness,
    partition_epochs,
    topic_ids,
    truncate_epochs,
)
from kcodec.fencing.metadata import StaleReason
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import (
    LEADER_EPOCH_DURING_DELETE,
    NO_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
)

# --- KIP-320 / KIP-359: current leader epoch ------------------------------------------------------


def test_leader_epoch_check_table() -> None:
    assert ErrorCode.FENCED_LEADER_EPOCH == 74 and ErrorCode.UNKNOWN_LEADER_EPOCH == 75
    assert check_leader_epoch(5, 5) is ErrorCode.NONE
    assert check_leader_epoch(4, 5) is ErrorCode.FENCED_LEADER_EPOCH
    assert check_leader_epoch(6, 5) is ErrorCode.UNKNOWN_LEADER_EPOCH
    assert check_leader_epoch(NO_LEADER_EPOCH, 5) is ErrorCode.NONE
    assert check_leader_epoch(0, 0) is ErrorCode.NONE


@given(st.integers(-1, 1000), st.integers(0, 1000))
def test_leader_epoch_check_is_a_trichotomy(request_epoch: int, partition_epoch: int) -> None:
    got = check_leader_epoch(request_epoch, partition_epoch)
    if request_epoch in (NO_LEADER_EPOCH, partition_epoch):
        assert got is ErrorCode.NONE
    elif request_epoch < partition_epoch:
        assert got is ErrorCode.FENCED_LEADER_EPOCH and got.retriable
    else:
        assert got is ErrorCode.UNKNOWN_LEADER_EPOCH and got.retriable


# --- KIP-570: StopReplica -----------------------------------------------------------------------------


def test_stop_replica_epoch_table() -> None:
    # ReplicaManager.stopReplicas (Kafka 3.5+, KAFKA-13972, commit 653e284): the partition is stopped when
    # the request's epoch is -2 (EPOCH_DURING_DELETE), -1 (NO_EPOCH) or >= the replica's; only an older
    # epoch is FENCED_LEADER_EPOCH. (Kafka 2.6-3.4 compared with '>' and fenced an equal epoch.)
    assert check_stop_replica_epoch(6, 5) is ErrorCode.NONE
    assert check_stop_replica_epoch(5, 5) is ErrorCode.NONE  # equal: accepted since Kafka 3.5
    assert check_stop_replica_epoch(4, 5) is ErrorCode.FENCED_LEADER_EPOCH
    assert check_stop_replica_epoch(0, 5) is ErrorCode.FENCED_LEADER_EPOCH
    assert check_stop_replica_epoch(LEADER_EPOCH_DURING_DELETE, 5) is ErrorCode.NONE  # -2 overrides
    assert check_stop_replica_epoch(NO_LEADER_EPOCH, 5) is ErrorCode.NONE  # -1: absent, no check
    assert check_stop_replica_epoch(0, None) is ErrorCode.NONE  # a replica this broker does not host


# --- KIP-101 / KIP-320: the epoch cache and OffsetsForLeaderEpoch ----------------------------------


def test_epoch_cache_maintenance() -> None:
    cache = assign_epoch((), 0, 0)
    cache = assign_epoch(cache, 0, 5)  # same epoch later on: unchanged
    assert cache == (EpochEntry(0, 0),)
    cache = assign_epoch(cache, 2, 10)
    cache = assign_epoch(cache, 3, 10)  # a new leader took over before writing: epoch 2 had no records
    assert cache == (EpochEntry(0, 0), EpochEntry(3, 10))
    assert truncate_epochs(cache, 10) == (EpochEntry(0, 0),)
    assert advance_start(cache, 4) == (EpochEntry(0, 4), EpochEntry(3, 10))
    assert advance_start(cache, 12) == (EpochEntry(3, 12),)
    with pytest.raises(ValueError):
        assign_epoch(cache, -1, 0)


def test_end_offset_for_epoch_table() -> None:
    cache = (EpochEntry(1, 0), EpochEntry(3, 10), EpochEntry(5, 20))
    assert end_offset_for_epoch(cache, 5, 27) == (5, 27)  # the latest epoch ends at the log end
    assert end_offset_for_epoch(cache, 3, 27) == (3, 20)
    assert end_offset_for_epoch(cache, 4, 27) == (3, 20)  # unknown epoch: the largest one below
    assert end_offset_for_epoch(cache, 0, 27) == (0, 0)  # below all: the first epoch's start
    assert end_offset_for_epoch(cache, 6, 27) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    assert end_offset_for_epoch(cache, UNDEFINED_EPOCH, 27).undefined
    assert end_offset_for_epoch((), 0, 0).undefined


def test_diverging_epoch() -> None:
    cache = (EpochEntry(1, 0), EpochEntry(3, 10))
    assert diverging_epoch(cache, 15, 8, 1) is None  # epoch 1 ends at 10, the fetcher is at 8: fine
    assert diverging_epoch(cache, 15, 12, 1) == EpochEndOffset(1, 10)  # read 10-11 in epoch 1: gone
    assert diverging_epoch(cache, 15, 12, 2) == EpochEndOffset(1, 10)  # epoch 2 never wrote here
    assert diverging_epoch(cache, 15, 12, NO_LEADER_EPOCH) is None
    assert diverging_epoch(cache, 15, 12, -5) is None  # any negative epoch: none sent


def test_fetch_with_a_last_fetched_epoch_newer_than_the_leader_knows_is_out_of_range() -> None:
    # Partition.readRecords (Kafka 2.7+, KIP-595's Fetch v12): the end of the last fetched epoch comes from
    # lastOffsetForLeaderEpoch; if it is undefined (UNDEFINED_EPOCH_OFFSET or UNDEFINED_EPOCH) the fetch
    # fails with OffsetOutOfRangeException, "Could not determine the end offset of the last fetched
    # epoch". It is never answered with DivergingEpoch(-1, -1).
    cache = (EpochEntry(0, 0), EpochEntry(1, 5))
    assert end_offset_for_epoch(cache, 5, 9).undefined  # epoch 5 is above every cached epoch
    got = check_fetch_epoch(cache, 0, 9, 9, 5)
    assert got == FetchEpochCheck(ErrorCode.OFFSET_OUT_OF_RANGE, None)


def test_fetch_with_a_last_fetched_epoch_older_than_the_cache_diverges_at_its_first_start() -> None:
    # LeaderEpochFileCache.endOffsetFor: an epoch below every cached one has no floor entry and is answered
    # with (the epoch asked, the start offset of the first cached epoch): defined, so the fetcher is told
    # to truncate there (DivergingEpoch), not failed.
    cache = (EpochEntry(2, 10), EpochEntry(3, 20))
    assert end_offset_for_epoch(cache, 1, 25) == EpochEndOffset(1, 10)
    got = check_fetch_epoch(cache, 10, 25, 15, 1)
    assert got == FetchEpochCheck(ErrorCode.NONE, EpochEndOffset(1, 10))


def test_fetch_epoch_check_order() -> None:
    # Partition.readRecords: undefined end -> OFFSET_OUT_OF_RANGE; then a fetch offset below the log
    # start -> OFFSET_OUT_OF_RANGE "regardless of whether epochs are diverging"; then DivergingEpoch.
    cache = (EpochEntry(0, 5), EpochEntry(1, 10))
    assert check_fetch_epoch(cache, 5, 12, 3, 0).error is ErrorCode.OFFSET_OUT_OF_RANGE  # diverging too
    assert check_fetch_epoch(cache, 5, 12, 11, 0) == FetchEpochCheck(ErrorCode.NONE, EpochEndOffset(0, 10))
    assert check_fetch_epoch(cache, 5, 12, 10, 0) == FetchEpochCheck(ErrorCode.NONE, None)
    assert check_fetch_epoch(cache, 5, 12, 12, 1) == FetchEpochCheck(ErrorCode.NONE, None)
    # FetchRequest.optionalEpoch: a negative last fetched epoch is none: no check at all
    assert check_fetch_epoch(cache, 5, 12, 3, -1) == FetchEpochCheck(ErrorCode.NONE, None)
    assert check_fetch_epoch(cache, 5, 12, 3, -7) == FetchEpochCheck(ErrorCode.NONE, None)


# A log as the leader epoch of each offset (non-decreasing). An unclean election: the new leader kept a
# prefix of the old leader's log and wrote on at epochs above any the old leader used.
@st.composite
def diverged_logs(draw: st.DrawFn) -> tuple[list[int], tuple[EpochEntry, ...], int, int]:
    """(old leader's log, new leader's epoch cache, offsets kept, new leader's log end offset)."""
    steps = draw(st.lists(st.integers(0, 2), min_size=1, max_size=30))
    old: list[int] = []
    epoch = draw(st.integers(0, 3))
    for s in steps:
        epoch += s
        old.append(epoch)
    keep = draw(st.integers(0, len(old)))
    new_epoch = max(old) + draw(st.integers(1, 3))
    # taking over, the new leader starts its epoch at its log end (KIP-101), then writes on
    cache = assign_epoch(cache_of(old[:keep]), new_epoch, keep)
    end = keep
    for s in draw(st.lists(st.integers(0, 1), max_size=10)):
        new_epoch += s
        cache = assign_epoch(cache, new_epoch, end)
        end += 1
    return old, cache, keep, end


def cache_of(log: list[int]) -> tuple[EpochEntry, ...]:
    return epochs_of_log(enumerate(log))


@settings(max_examples=300)
@given(diverged_logs(), st.data())
def test_truncation_found_exactly_where_the_logs_part(
    case: tuple[list[int], tuple[EpochEntry, ...], int, int], data: st.DataObject
) -> None:
    old, cache, keep, end = case
    position = data.draw(st.integers(1, len(old)))  # the consumer read old[0:position]
    pos = FetchPosition(position, old[position - 1])
    answer = end_offset_for_epoch(cache, pos.last_fetched_epoch, end)
    check = detect_truncation(pos, answer)
    if position <= keep:  # everything the consumer read is still in the leader's log
        assert check.verdict is Truncation.NONE and check.records_lost == 0
        assert diverging_epoch(cache, end, position, pos.last_fetched_epoch) is None
    else:
        assert check.verdict is Truncation.TRUNCATED
        assert check.divergent_offset == keep and check.records_lost == position - keep
        div = diverging_epoch(cache, end, position, pos.last_fetched_epoch)
        assert div is not None and div.end_offset == keep


@given(st.lists(st.integers(0, 3), min_size=1, max_size=40), st.integers(0, 12))
def test_end_offset_matches_a_scan_of_the_log(steps: list[int], asked: int) -> None:
    log: list[int] = []
    epoch = 0
    for s in steps:
        epoch += s
        log.append(epoch)
    got = end_offset_for_epoch(cache_of(log), asked, len(log))
    if asked > log[-1]:
        assert got.undefined
    elif asked < log[0]:
        assert got == (asked, 0)
    else:
        # the largest epoch present at or below the one asked, and the first offset of a higher epoch
        assert got.leader_epoch == max(e for e in log if e <= asked)
        assert got.end_offset == next((i for i, e in enumerate(log) if e > asked), len(log))


def test_detect_truncation_undefined() -> None:
    check = detect_truncation(FetchPosition(5, 7), EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET))
    assert check.verdict is Truncation.UNDEFINED and not check.truncated


# --- KIP-232: stale metadata ------------------------------------------------------------------------


def test_metadata_staleness() -> None:
    cached = {("t", 0): 5, ("t", 1): 3, ("u", 0): 1}
    fresh = metadata_staleness(cached, {("t", 0): 6, ("t", 1): 3})
    assert not fresh.stale and fresh.epochs == {("t", 0): 6, ("t", 1): 3, ("u", 0): 1}
    older = metadata_staleness(cached, {("t", 0): 4, ("t", 1): 3})
    assert older.stale
    assert [(s.partition, s.reason) for s in older.stale_partitions] == [(0, StaleReason.OLDER_EPOCH)]
    assert older.epochs[("t", 0)] == 5  # the cached epoch is kept
    missing = metadata_staleness(cached, {("t", 0): 5})
    got = [(s.topic, s.partition, s.reason) for s in missing.stale_partitions]
    assert got == [("t", 1, StaleReason.MISSING)]
    assert not metadata_staleness(cached, {("t", 0): NO_LEADER_EPOCH, ("t", 1): 3}).stale  # v0-6


def test_partition_epochs_from_a_decoded_response() -> None:
    import kcodec

    cls = kcodec.message_class("MetadataResponse")
    t = cls.MetadataResponseTopic  # type: ignore[attr-defined]
    p = cls.MetadataResponsePartition  # type: ignore[attr-defined]
    resp = cls(topics=[
        t(name="a", partitions=[p(partition_index=0, leader_epoch=4), p(partition_index=1, leader_epoch=2)]),
        t(name="b", error_code=3, partitions=[]),
    ])
    data = kcodec.encode(resp, 12)
    assert partition_epochs(kcodec.decode("MetadataResponse", 12, data)) == {("a", 0): 4, ("a", 1): 2}


def test_a_recreated_topic_is_accepted_whatever_its_epochs() -> None:
    # Metadata.updateLatestMetadata (Java client, KIP-516): "If the new topic ID is valid and different
    # from the last seen topic ID, update the metadata" - a topic deleted and re-created starts again at
    # leader epoch 0 under a new id; comparing epochs alone would call it stale forever.
    old_id, new_id = b"\x01" * 16, b"\x02" * 16
    cached = {("t", 0): 7, ("t", 1): 7, ("u", 0): 3}
    same = metadata_staleness(
        cached, {("t", 0): 0}, cached_topic_ids={"t": old_id}, incoming_topic_ids={"t": old_id}
    )
    assert same.stale and same.recreated == ()  # same id, lower epoch: stale, as before
    u_id = b"\x03" * 16
    got = metadata_staleness(
        cached, {("t", 0): 0}, cached_topic_ids={"t": old_id, "u": u_id}, incoming_topic_ids={"t": new_id}
    )
    assert not got.stale and got.recreated == ("t",)
    assert got.epochs == {("t", 0): 0, ("u", 0): 3}  # the old topic's partitions are gone with it
    assert got.topic_ids == {"t": new_id, "u": u_id}
    # the client lost track of the id between delete and re-create (oldTopicId null): accepted too
    lost = metadata_staleness(cached, {("t", 0): 0, ("t", 1): 0}, incoming_topic_ids={"t": new_id})
    assert not lost.stale and lost.recreated == ("t",)
    # a zero id (MetadataResponse before v10) says nothing: epochs decide
    zero = metadata_staleness(
        cached, {("t", 0): 0}, cached_topic_ids={"t": old_id}, incoming_topic_ids={"t": bytes(16)}
    )
    assert zero.stale and zero.topic_ids == {"t": old_id}


def test_topic_ids_from_a_decoded_response() -> None:
    import kcodec
    from kcodec.protocol.model import Uuid

    cls = kcodec.message_class("MetadataResponse")
    t = cls.MetadataResponseTopic  # type: ignore[attr-defined]
    resp = cls(topics=[t(name="a", topic_id=Uuid(b"\x05" * 16), partitions=[]), t(name="b", partitions=[])])
    decoded = kcodec.decode("MetadataResponse", 12, kcodec.encode(resp, 12))
    assert topic_ids(decoded) == {"a": b"\x05" * 16}  # b has the zero id: skipped


# --- KIP-360: InitProducerId -------------------------------------------------------------------------


def test_init_producer_id_without_transactional_id_always_gets_a_new_id() -> None:
    d = init_producer_id(None, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, None, 1000)
    assert (d.outcome, d.producer_id, d.producer_epoch) == (InitOutcome.NEW_PRODUCER, 1000, 0)
    d = init_producer_id(None, 1000, 3, None, 1001)
    assert (d.outcome, d.producer_id, d.producer_epoch) == (InitOutcome.NEW_PRODUCER, 1001, 0)
    assert init_producer_id(None, 1000, NO_PRODUCER_EPOCH, None, 1).error is ErrorCode.INVALID_REQUEST


def test_init_producer_id_transactional_state_machine() -> None:
    new = init_producer_id("tx", NO_PRODUCER_ID, NO_PRODUCER_EPOCH, None, 7)
    assert (new.outcome, new.producer_id, new.producer_epoch) == (InitOutcome.NEW_PRODUCER, 7, 0)
    state = new.state
    assert state is not None
    restart = init_producer_id("tx", NO_PRODUCER_ID, NO_PRODUCER_EPOCH, state, 99)  # a new instance
    assert (restart.outcome, restart.producer_epoch) == (InitOutcome.BUMP, 1)
    assert restart.state == TransactionalIdState(7, 1, 7, NO_PRODUCER_EPOCH)  # no last epoch: see below
    bump = init_producer_id("tx", 7, 0, state, 99)  # KIP-360: the producer recovers with its epoch
    assert (bump.outcome, bump.producer_id, bump.producer_epoch) == (InitOutcome.BUMP, 7, 1)
    assert bump.state == TransactionalIdState(7, 1, 7, 0)
    retry = init_producer_id("tx", 7, 0, bump.state, 99)  # the answer to the bump was lost
    assert (retry.outcome, retry.producer_epoch) == (InitOutcome.RETRY_OF_BUMP, 1)
    zombie = init_producer_id("tx", 7, 0, TransactionalIdState(7, 3, 7, 2), 99)
    assert (zombie.outcome, zombie.error) == (InitOutcome.FENCED, ErrorCode.PRODUCER_FENCED)
    old_version = init_producer_id("tx", 7, 0, TransactionalIdState(7, 3, 7, 2), 99, api_version=3)
    assert old_version.error is ErrorCode.INVALID_PRODUCER_EPOCH
    other_id = init_producer_id("tx", 8, 3, TransactionalIdState(7, 3, 7, 2), 99)
    assert other_id.outcome is InitOutcome.FENCED
    expired = init_producer_id("tx", 7, 5, None, 42)
    assert (expired.outcome, expired.producer_id) == (InitOutcome.NEW_ID_EXPIRED, 42)
    assert expired.producer_epoch == 0


def test_a_new_instance_fences_the_one_it_replaces() -> None:
    # TransactionMetadata.prepareIncrementProducerEpoch: with no expected epoch (a new instance,
    # InitProducerId(-1, -1)) the epoch is bumped and the last epoch set to NO_PRODUCER_EPOCH ("If no
    # expected epoch was provided by the producer, bump the current epoch and set the last epoch to -1"),
    # so the old instance's InitProducerId(pid, old epoch) matches neither the current nor the last epoch:
    # PRODUCER_FENCED, which KafkaApis.handleInitProducerIdRequest turns into INVALID_PRODUCER_EPOCH below
    # v4 (KIP-588).
    a = init_producer_id("tx", NO_PRODUCER_ID, NO_PRODUCER_EPOCH, None, 7)  # instance A: (7, 0)
    assert (a.producer_id, a.producer_epoch) == (7, 0) and a.state is not None
    b = init_producer_id("tx", NO_PRODUCER_ID, NO_PRODUCER_EPOCH, a.state, 99)  # instance B: (7, 1)
    assert (b.producer_id, b.producer_epoch) == (7, 1) and b.state is not None
    for version, error in ((4, ErrorCode.PRODUCER_FENCED), (5, ErrorCode.PRODUCER_FENCED),
                           (3, ErrorCode.INVALID_PRODUCER_EPOCH)):
        zombie = init_producer_id("tx", 7, 0, b.state, 99, api_version=version)  # A recovers
        assert (zombie.outcome, zombie.error, zombie.state) == (InitOutcome.FENCED, error, None)
    # B itself may still recover with its epoch, and retry that bump
    again = init_producer_id("tx", 7, 1, b.state, 99)
    assert (again.outcome, again.producer_epoch) == (InitOutcome.BUMP, 2) and again.state is not None
    assert init_producer_id("tx", 7, 1, again.state, 99).outcome is InitOutcome.RETRY_OF_BUMP


def test_init_producer_id_epoch_exhaustion() -> None:
    assert is_epoch_exhausted(32766) and not is_epoch_exhausted(32765)
    state = TransactionalIdState(7, 32766, 7, 32765)
    d = init_producer_id("tx", 7, 32766, state, 50)
    assert (d.outcome, d.producer_id, d.producer_epoch) == (InitOutcome.NEW_ID_EXHAUSTED, 50, 0)
    assert d.state == TransactionalIdState(50, 0, 7, 32766)
    # the rotation's answer was lost: the old id at its exhausted epoch is still recognised
    again = init_producer_id("tx", 7, 32766, d.state, 51)
    assert (again.outcome, again.producer_id, again.producer_epoch) == (InitOutcome.RETRY_OF_BUMP, 50, 0)


def test_a_rotation_by_a_new_instance_does_not_hand_the_old_one_the_new_id() -> None:
    # TransactionMetadata.prepareProducerIdRotation(recordLastEpoch = expectedProducerIdAndEpoch.isDefined):
    # a new instance (no id, no epoch) rotates the exhausted id without recording the last epoch. The old
    # instance then recovers with (old id, exhausted epoch): isValidProducerId lets the previous id with an
    # exhausted epoch through, but prepareIncrementProducerEpoch finds neither the current epoch (0) nor a
    # last epoch: PRODUCER_FENCED. It must not be answered with the new id.
    state = TransactionalIdState(7, 32766, 7, 32765)
    b = init_producer_id("tx", NO_PRODUCER_ID, NO_PRODUCER_EPOCH, state, 50)
    assert (b.outcome, b.producer_id, b.producer_epoch) == (InitOutcome.NEW_ID_EXHAUSTED, 50, 0)
    assert b.state == TransactionalIdState(50, 0, 7, NO_PRODUCER_EPOCH)
    a = init_producer_id("tx", 7, 32766, b.state, 51)
    assert (a.outcome, a.error, a.producer_id) == (InitOutcome.FENCED, ErrorCode.PRODUCER_FENCED, -1)
    old = init_producer_id("tx", 7, 32766, b.state, 51, api_version=3)
    assert old.error is ErrorCode.INVALID_PRODUCER_EPOCH


def test_retrying_the_bump_that_exhausted_the_epoch_fails_as_in_kafka() -> None:
    # TransactionCoordinator.prepareInitProducerIdTransit rotates the id only when the expected epoch is
    # the (exhausted) current one; otherwise it calls TransactionMetadata.prepareIncrementProducerEpoch,
    # which throws IllegalStateException("Cannot allocate any more producer epochs") for an exhausted
    # epoch before looking at the last epoch: KafkaApis answers UNKNOWN_SERVER_ERROR (Kafka 2.5 to 4.x).
    state = TransactionalIdState(7, 32766, 7, 32765)  # the bump 32765 -> 32766 succeeded
    retry = init_producer_id("tx", 7, 32765, state, 50)  # ... but its answer was lost
    assert (retry.outcome, retry.error, retry.state) == (
        InitOutcome.EPOCH_EXHAUSTED, ErrorCode.UNKNOWN_SERVER_ERROR, None)
    assert init_producer_id("tx", 7, 3, state, 50).error is ErrorCode.UNKNOWN_SERVER_ERROR
    assert init_producer_id("tx", 8, 3, state, 50).outcome is InitOutcome.FENCED  # the id is checked first


@given(st.integers(0, 32765), st.integers(-1, 32766))
def test_init_producer_id_never_goes_backwards(current: int, asked: int) -> None:
    state = TransactionalIdState(7, current, 7, current - 1 if current > 0 else NO_PRODUCER_EPOCH)
    pid = NO_PRODUCER_ID if asked == NO_PRODUCER_EPOCH else 7
    d = init_producer_id("tx", pid, asked, state, 99)
    if d.error is ErrorCode.NONE:
        assert d.producer_id == 7 and d.producer_epoch >= current
    else:
        assert d.outcome is InitOutcome.FENCED and asked not in (current, state.last_producer_epoch)
