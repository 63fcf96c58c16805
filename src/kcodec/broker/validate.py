"""What a broker checks in a produced ``records`` field before it appends it (Kafka's LogValidator and
ProduceRequest rules): one magic-2 batch (Produce v3+), an intact CRC, a record count that matches the
header and the records, no control batches from clients.

Record offsets and counts are bounded as well: offset deltas that do not run 0..count-1, and more
records than an uncompressed batch of ``max_batch_bytes`` could hold (a compressed record-count bomb),
get INVALID_RECORD (the error of LogValidator.validateBatch's offset/count checks) before any record
is built, so one Produce costs bounded work. Kafka itself rewrites a compressed batch whose inner
offsets are not consecutive (LogValidator.validateMessagesAndAssignOffsetsCompressed) and has no
record limit: the mock broker refuses both instead."""

from __future__ import annotations

from dataclasses import dataclass

from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.errors import DecodeError
from kcodec.records import Compression, RecordBatch, iter_batches
from kcodec.records.batch import MIN_RECORD_SIZE
from kcodec.records.errors import (
    CrcMismatchError,
    InvalidOffsetError,
    RecordLimitError,
    UnsupportedCompressionError,
)


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
        max_records = max_batch_bytes // MIN_RECORD_SIZE
        batches = list(iter_batches(records, allow_truncated=False, max_records=max_records))
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
    except (InvalidOffsetError, RecordLimitError) as e:
        return Invalid(ErrorCode.INVALID_RECORD, str(e))
    except (CrcMismatchError, UnsupportedCompressionError, DecodeError) as e:
        return Invalid(ErrorCode.CORRUPT_MESSAGE, str(e))
    return ValidBatch(batch, memoryview(records))
