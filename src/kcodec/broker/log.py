"""One partition's log in memory: record batches stored as the producer sent them, with Kafka's offset
assignment (the batch's base offset and partition leader epoch rewritten in place: neither is covered by
the CRC), a leader-epoch cache (kcodec.fencing) and a byte budget that drops the oldest batches."""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass

from kcodec.fencing import (
    EpochEndOffset,
    EpochEntry,
    advance_start,
    assign_epoch,
    end_offset_for_epoch,
    truncate_epochs,
)
from kcodec.protocol.sentinels import NO_LEADER_EPOCH, NO_TIMESTAMP

_BASE_OFFSET = struct.Struct(">q")
_EPOCH_AT = 12  # partitionLeaderEpoch: int32 after baseOffset (int64) and batchLength (int32)
_EPOCH = struct.Struct(">i")


@dataclass(slots=True)
class StoredBatch:
    """A batch in the log: its bytes (offsets assigned) and what reads need without parsing it."""

    base_offset: int
    last_offset: int
    epoch: int
    max_timestamp: int
    data: bytes | bytearray  # not changed after it is stored


@dataclass(frozen=True, slots=True)
class AppendResult:
    base_offset: int
    last_offset: int
    log_start_offset: int


class PartitionLog:
    """The log of one partition. Offsets are dense from ``log_start_offset`` to ``log_end_offset``
    (exclusive); the high watermark is the log end (every replica of the mock is in sync)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.batches: list[StoredBatch] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.size_bytes = 0
        self.epochs: tuple[EpochEntry, ...] = ()

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    @property
    def latest_epoch(self) -> int:
        return self.epochs[-1].epoch if self.epochs else NO_LEADER_EPOCH

    def begin_epoch(self, epoch: int) -> None:
        """A leader of ``epoch`` takes over: its epoch starts at the log end (KIP-101)."""
        self.epochs = assign_epoch(self.epochs, epoch, self.log_end_offset)

    def append(
        self, batch: bytes | bytearray | memoryview, record_count: int, max_timestamp: int, epoch: int
    ) -> AppendResult:
        """Store one validated magic-2 batch of ``record_count`` records at the log end, written by the
        leader of ``epoch``; returns the offsets it was given."""
        data = bytearray(batch)
        base = self.log_end_offset
        _BASE_OFFSET.pack_into(data, 0, base)
        _EPOCH.pack_into(data, _EPOCH_AT, epoch)
        last = base + record_count - 1
        self.epochs = assign_epoch(self.epochs, epoch, base)
        self.batches.append(StoredBatch(base, last, epoch, max_timestamp, data))
        self._bases.append(base)
        self.log_end_offset = last + 1
        self.size_bytes += len(data)
        self._enforce_budget()
        return AppendResult(base, last, self.log_start_offset)

    def _enforce_budget(self) -> None:
        """Drop the oldest batches (never the newest) while the log is over its byte budget."""
        drop = 0
        while self.size_bytes > self.max_bytes and drop < len(self.batches) - 1:
            self.size_bytes -= len(self.batches[drop].data)
            drop += 1
        if drop:
            del self.batches[:drop]
            del self._bases[:drop]
            self.log_start_offset = self.batches[0].base_offset
            self.epochs = advance_start(self.epochs, self.log_start_offset)

    def read(
        self, offset: int, max_bytes: int, *, at_least_one: bool, end: int | None = None
    ) -> list[bytes | bytearray]:
        """Whole batches from the one holding ``offset`` on, up to ``max_bytes`` (KIP-74: the first
        batch even if larger, when ``at_least_one``), none starting at or after ``end`` (the last stable
        offset of a ``read_committed`` Fetch)."""
        i = bisect.bisect_right(self._bases, offset) - 1
        if i < 0:
            i = 0
        out: list[bytes | bytearray] = []
        total = 0
        for b in self.batches[i:]:
            if b.last_offset < offset:
                continue
            if end is not None and b.base_offset >= end:
                break
            if total + len(b.data) > max_bytes and (out or not at_least_one):
                break
            out.append(b.data)
            total += len(b.data)
        return out

    def truncate(self, end_offset: int) -> int:
        """Truncate the log to ``end_offset`` (exclusive; batches that start at or after it are dropped,
        a batch that straddles it is dropped whole). Returns the new log end offset."""
        keep = bisect.bisect_left(self._bases, end_offset)
        while keep > 0 and self.batches[keep - 1].last_offset >= end_offset:
            keep -= 1
        new_end = self.batches[keep].base_offset if keep < len(self.batches) else end_offset
        new_end = max(self.log_start_offset, min(new_end, self.log_end_offset))
        for b in self.batches[keep:]:
            self.size_bytes -= len(b.data)
        del self.batches[keep:]
        del self._bases[keep:]
        self.log_end_offset = new_end
        self.epochs = truncate_epochs(self.epochs, new_end)
        return new_end

    def end_offset_for_epoch(self, epoch: int) -> EpochEndOffset:
        """The OffsetsForLeaderEpoch answer of this log (kcodec.fencing.end_offset_for_epoch)."""
        return end_offset_for_epoch(self.epochs, epoch, self.log_end_offset)

    def epoch_at(self, offset: int) -> int:
        """The leader epoch of the batch holding ``offset`` (NO_LEADER_EPOCH if the cache has none)."""
        epoch = NO_LEADER_EPOCH
        for e in self.epochs:
            if e.start_offset > offset:
                break
            epoch = e.epoch
        return epoch

    def batch_for_timestamp(self, timestamp: int) -> StoredBatch | None:
        """The first batch whose max timestamp is at or after ``timestamp``."""
        return next((b for b in self.batches if b.max_timestamp >= timestamp), None)

    def max_timestamp_batch(self) -> StoredBatch | None:
        best: StoredBatch | None = None
        for b in self.batches:
            if b.max_timestamp != NO_TIMESTAMP and (best is None or b.max_timestamp > best.max_timestamp):
                best = b
        return best
