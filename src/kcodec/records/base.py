"""``Batch``: what ``iter_batches`` yields, for every magic (magic 2 batches and legacy messages)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator

from kcodec.records.errors import RecordLimitError
from kcodec.records.model import Compression, Record, TimestampType

#: records one ``iter_batches`` call may build, all its batches together (``max_records``)
DEFAULT_MAX_RECORDS = 1 << 20


class RecordBudget:
    """How many more records the batches of one ``iter_batches`` call may build (each ``records()``
    call takes its records from it), so a small batch cannot make millions of objects."""

    __slots__ = ("left", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit

    def take(self, count: int, position: int, base_offset: int | None) -> None:
        """Spend ``count`` records, or raise ``RecordLimitError`` (nothing spent) if fewer are left."""
        if count > self.left:
            raise RecordLimitError(
                f"{count} records exceed the records budget ({self.left} of max_records={self.limit} left)",
                position,
                base_offset,
            )
        self.left -= count


class Batch(ABC):
    """One record batch (magic 2) or one shallow message / compressed wrapper (magic 0/1).

    Header fields are plain attributes, read when the batch is yielded; ``records()`` decompresses
    and parses the records on each call.  Magic 0/1 batches have no producer state, no partition
    leader epoch and no control/transactional flag: those read -1 / False, like Kafka's
    ``AbstractLegacyRecordBatch``.
    """

    __slots__ = (
        "base_sequence",
        "compression",
        "crc",
        "is_control",
        "is_transactional",
        "magic",
        "max_timestamp",
        "partition_leader_epoch",
        "position",
        "producer_epoch",
        "producer_id",
        "size",
        "timestamp_type",
    )

    magic: int
    compression: Compression
    is_control: bool
    is_transactional: bool
    producer_id: int
    producer_epoch: int
    base_sequence: int
    partition_leader_epoch: int
    timestamp_type: TimestampType
    crc: int
    max_timestamp: int
    position: int
    """Byte position of the batch in the buffer given to ``iter_batches``."""
    size: int
    """Bytes the batch takes in that buffer (offset and length fields included)."""

    @property
    @abstractmethod
    def base_offset(self) -> int:
        """Offset of the first record (magic 0/1 compressed wrappers: needs decompression)."""

    @property
    @abstractmethod
    def last_offset(self) -> int:
        """Offset of the last record (always known from the header)."""

    @property
    def last_offset_delta(self) -> int:
        return self.last_offset - self.base_offset

    @property
    @abstractmethod
    def base_timestamp(self) -> int: ...

    @abstractmethod
    def records(self) -> Iterator[Record]:
        """Decompress (if needed) and parse the records, in order."""

    def __iter__(self) -> Iterator[Record]:
        return self.records()

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} magic={self.magic} last_offset={self.last_offset} "
            f"compression={self.compression.value} position={self.position} size={self.size}>"
        )
