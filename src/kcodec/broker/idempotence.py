"""Idempotent-producer checks on append (KIP-98, as Kafka's ProducerAppendInfo makes them): the
producer epoch may not go back, a new epoch starts at sequence 0, sequences follow on without gaps,
and a retry of one of the last five batches is answered with the offsets it got the first time. A
producer the partition has no state for (a new one, or one whose batches are no longer in the log)
may start at any sequence."""

from __future__ import annotations

from dataclasses import dataclass

from kcodec.broker.state import Partition, ProducerBatch, ProducerEntry
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import NO_PRODUCER_ID

INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class SequenceCheck:
    error: ErrorCode
    duplicate: ProducerBatch | None = None  # a retry: answer with these offsets, append nothing


def next_sequence(last_seq: int) -> int:
    """Sequences wrap from INT32_MAX to 0."""
    return 0 if last_seq == INT32_MAX else last_seq + 1


def check_sequence(
    p: Partition, producer_id: int, epoch: int, first_seq: int, last_seq: int
) -> SequenceCheck:
    if producer_id == NO_PRODUCER_ID:
        return SequenceCheck(ErrorCode.NONE)
    entry = p.producers.get(producer_id)
    if entry is None:
        # ProducerAppendInfo.checkSequence: with no entry the current epoch is NO_PRODUCER_EPOCH, and a
        # batch is then accepted whatever its sequence
        return SequenceCheck(ErrorCode.NONE)
    if epoch < entry.epoch:
        return SequenceCheck(ErrorCode.INVALID_PRODUCER_EPOCH)
    if epoch > entry.epoch:
        ok = first_seq == 0
        return SequenceCheck(ErrorCode.NONE if ok else ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    for b in entry.batches:
        if (b.first_seq, b.last_seq) == (first_seq, last_seq):
            return SequenceCheck(ErrorCode.NONE, b)
    if first_seq != next_sequence(entry.last_seq):
        return SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    return SequenceCheck(ErrorCode.NONE)


def record_append(
    p: Partition, producer_id: int, epoch: int, first_seq: int, last_seq: int, base: int, last: int
) -> None:
    if producer_id == NO_PRODUCER_ID:
        return
    entry = p.producers.get(producer_id)
    if entry is None or entry.epoch != epoch:
        entry = p.producers[producer_id] = ProducerEntry(epoch)
    entry.batches.append(ProducerBatch(first_seq, last_seq, base, last))
