"""The transactional state of one partition's log, as Kafka's ProducerStateManager and transaction
index keep it: the transactions still open on the partition (producer id -> offset of its first
record), the aborted ones (producer id, first offset, marker offset) that a ``read_committed`` Fetch
lists, and the last stable offset (LSO) derived from them."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """An aborted transaction on one partition: its producer, its first data offset and the offset of
    its ABORT marker (Kafka's AbortedTxn without the LSO it recorded)."""

    producer_id: int
    first_offset: int
    last_offset: int


@dataclass(slots=True)
class PartitionTxns:
    """Open and aborted transactions of one partition."""

    ongoing: dict[int, int] = field(default_factory=dict)  # producer id -> first offset of its open txn
    aborted: list[AbortedTxn] = field(default_factory=list)  # in marker (last offset) order
    _lasts: list[int] = field(default_factory=list)  # the aborted transactions' marker offsets

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest transaction still open here (None: none is)."""
        return min(self.ongoing.values()) if self.ongoing else None

    def last_stable_offset(self, high_watermark: int, log_start_offset: int) -> int:
        """Kafka's LSO: the first offset of the oldest open transaction, never above the high watermark
        nor below the log start."""
        first = self.first_unstable_offset()
        lso = high_watermark if first is None else min(first, high_watermark)
        return max(lso, log_start_offset)

    def begin(self, producer_id: int, first_offset: int) -> None:
        """A transactional batch was appended: the producer's transaction starts here unless it is open."""
        self.ongoing.setdefault(producer_id, first_offset)

    def complete(self, producer_id: int, marker_offset: int, *, aborted: bool) -> int | None:
        """A COMMIT/ABORT marker was appended at ``marker_offset``: the producer's open transaction (if any
        had data here) ends; an aborted one is recorded. Returns its first offset (None: it had none)."""
        first = self.ongoing.pop(producer_id, None)
        if first is not None and aborted:
            self.aborted.append(AbortedTxn(producer_id, first, marker_offset))
            self._lasts.append(marker_offset)
        return first

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """The aborted transactions a Fetch of offsets [start, end) must list: those whose marker is at
        or after ``start`` and whose first offset is before ``end`` (Kafka's collectAbortedTxns)."""
        i = bisect.bisect_left(self._lasts, start)
        return [a for a in self.aborted[i:] if a.first_offset < end]

    def truncate(self, end_offset: int) -> None:
        """The log was truncated to ``end_offset``: transactions that started at or after it are gone, and
        so are aborted transactions whose marker was cut off. (Kafka rebuilds its producer state from the
        log and would see such a transaction open again, with no coordinator left to end it: a hanging
        transaction. The mock drops it instead, so the LSO does not stall.)"""
        self._drop(bisect.bisect_left(self._lasts, end_offset), len(self._lasts))
        self.ongoing = {pid: first for pid, first in self.ongoing.items() if first < end_offset}

    def forget_before(self, log_start_offset: int) -> None:
        """Drop aborted transactions wholly before the log start (their batches are gone)."""
        self._drop(0, bisect.bisect_left(self._lasts, log_start_offset))

    def _drop(self, cut_from: int, cut_to: int) -> None:
        """Remove the aborted transactions at positions [cut_from, cut_to)."""
        del self.aborted[cut_from:cut_to]
        del self._lasts[cut_from:cut_to]
