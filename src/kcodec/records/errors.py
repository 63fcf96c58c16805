"""Errors raised while reading record batches. All are ``kcodec.protocol.errors.DecodeError`` subclasses.

``offset`` (from ``DecodeError``) is the byte position in the buffer given to ``iter_batches``;
``base_offset`` is the Kafka offset of the batch (for magic 0/1: the offset field of the shallow
message), or ``None`` when it could not be read.
"""

from __future__ import annotations

from kcodec.protocol.errors import DecodeError


class CorruptRecordError(DecodeError):
    """A batch or record is malformed: bad length, unknown magic, bad varint, bad inner message."""

    def __init__(self, reason: str, offset: int, base_offset: int | None = None) -> None:
        self.base_offset = base_offset
        if base_offset is not None:
            reason = f"batch at offset {base_offset}: {reason}"
        super().__init__(reason, offset, "records")


class CrcMismatchError(CorruptRecordError):
    """The stored CRC (CRC32C for magic 2, CRC32 for magic 0/1) does not match the bytes."""


class UnsupportedCompressionError(CorruptRecordError):
    """The attributes name a compression codec that does not exist (or not at this magic)."""


class DecompressionError(CorruptRecordError):
    """The compressed records are corrupt (the codec refused them)."""


class DecompressedSizeError(DecompressionError):
    """Decompressed records would exceed ``max_decompressed_size`` (decompression-bomb guard)."""


class InvalidOffsetError(CorruptRecordError):
    """Record offsets out of order: a magic 2 offset delta that does not increase, or exceeds the
    batch's last offset delta; a legacy inner offset that does not increase. Kafka's writers
    (``MemoryRecordsBuilder.appendWithOffset``) never write these. ``path`` names the record field."""

    def __init__(self, reason: str, offset: int, base_offset: int | None, path: str) -> None:
        super().__init__(reason, offset, base_offset)
        self._segments = [path]


class RecordLimitError(CorruptRecordError):
    """A batch declares (or holds) more records than its bytes can hold, or than the records budget
    of the ``iter_batches`` call (``max_records``) has left: the guard against record-count bombs."""
