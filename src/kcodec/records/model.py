"""Value types shared by the readers and the builder: records, codecs, timestamp and control types."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum

Header = tuple[str, bytes | None]

NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1


class Compression(StrEnum):
    """Codec names; the value is the codec id Kafka stores in the low 3 attribute bits."""

    NONE = "none"
    GZIP = "gzip"
    SNAPPY = "snappy"
    LZ4 = "lz4"
    ZSTD = "zstd"

    @property
    def id(self) -> int:
        return _CODEC_IDS[self]

    @classmethod
    def from_id(cls, codec_id: int) -> Compression | None:
        return _CODECS_BY_ID.get(codec_id)


_CODEC_IDS = {
    Compression.NONE: 0,
    Compression.GZIP: 1,
    Compression.SNAPPY: 2,
    Compression.LZ4: 3,
    Compression.ZSTD: 4,
}
_CODECS_BY_ID = {v: k for k, v in _CODEC_IDS.items()}


class TimestampType(IntEnum):
    """Kafka's ``TimestampType``: magic 0 batches have NO_TIMESTAMP_TYPE."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlType(IntEnum):
    """Control record types (the int16 after the version in a control record's key)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(slots=True)
class Record:
    """A decoded record. ``offset`` and ``timestamp`` are absolute; ``headers`` keep duplicates/order.

    Also accepted by the builder, which then writes ``offset`` (relative to its ``base_offset``).
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header] = field(default_factory=list)


@dataclass(slots=True)
class NewRecord:
    """A record to build. ``offset=None`` means "the next offset" (previous + 1, first = base_offset);
    ``timestamp`` defaults to -1 (no timestamp).
    """

    value: bytes | None
    key: bytes | None = None
    headers: Sequence[Header] = ()
    timestamp: int = NO_TIMESTAMP
    offset: int | None = None


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A control record: its type and, for transaction markers (ABORT/COMMIT), the coordinator epoch
    (-1 for other types)."""

    type: ControlType | int
    coordinator_epoch: int
    version: int = 0
