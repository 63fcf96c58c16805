"""What a broker checks in a produced ``records`` field before it appends it (Kafka's LogValidator and
ProduceRequest rules): one magic-2 batch (Produce v3+), an intact CRC, a record count that matches the
header and the records, no control batches from clients."""

from __future__ import annotations

from dataclasses import dataclass

from kcodec.error_codes import ErrorCode
from kcodec.errors import DecodeError
from kcodec.records import Compression, RecordBatch, iter_batches
from kcodec.records.errors import CrcMismatchError, UnsupportedCompressionError


@dataclass(frozen=True, slots=True)
class ValidBatch:
    batch: RecordBatch
    data: memoryview


@dataclass(frozen=True, slots=True)
class Invalid:
    error: ErrorCode
    message: str


#: Produce carries zstd batches from v7 on (KIP-110); older versions get UNSUPPORTED_COMPRESSION_TYPE.
ZSTD_SINCE = 7


def validate_produced(
    records: bytes | bytearray | memoryview | None, max_batch_bytes: int, version: int
) -> ValidBatch | Invalid:
    if records is None or len(records) == 0:
        return Invalid(ErrorCode.INVALID_RECORD, "Produce v3+ needs exactly one record batch, got none")
    if len(records) > max_batch_bytes:
        return Invalid(ErrorCode.MESSAGE_TOO_LARGE, f"{len(records)} bytes > {max_batch_bytes}")
    try:
        batches = list(iter_batches(records, allow_truncated=False))
        if len(batches) != 1 or not isinstance(batches[0], RecordBatch):
            return Invalid(ErrorCode.INVALID_RECORD, "Produce v3+ needs exactly one magic 2 record batch")
        batch = batches[0]
        if batch.compression is Compression.ZSTD and version < ZSTD_SINCE:
            return Invalid(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"zstd needs Produce v{ZSTD_SINCE}+")
        if batch.is_control:
            return Invalid(ErrorCode.INVALID_RECORD, "clients may not write control batches")
        if batch.record_count < 1 or batch.last_offset_delta != batch.record_count - 1:
            return Invalid(
                ErrorCode.INVALID_RECORD,
                f"record count {batch.record_count} vs last offset delta {batch.last_offset_delta}",
            )
        parsed = sum(1 for _ in batch.records())
        if parsed != batch.record_count:
            return Invalid(ErrorCode.INVALID_RECORD, f"{parsed} records, header says {batch.record_count}")
    except (CrcMismatchError, UnsupportedCompressionError, DecodeError) as e:
        return Invalid(ErrorCode.CORRUPT_MESSAGE, str(e))
    return ValidBatch(batch, memoryview(records))
