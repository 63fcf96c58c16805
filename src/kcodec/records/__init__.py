"""Kafka record batches: read (``iter_batches``) and build (``build_batch``) the bytes of ``records``.

Magic 2 record batches (CRC32C-checked) and magic 0/1 message sets, uncompressed or compressed with
gzip, snappy (xerial framing), lz4 (frame format) or zstd::

    from kcodec.records import iter_batches, build_batch, NewRecord

    data = build_batch([NewRecord(b"v", key=b"k", headers=[("h", b"1")], timestamp=1700000000000)],
                       compression="zstd", base_offset=42)
    batches = iter_batches(data)          # lazy: headers only
    for batch in batches:
        for record in batch.records():    # decompress + parse on demand
            print(record.offset, record.key, record.value, record.headers)
    batches.truncated_bytes               # > 0 if the buffer ended inside a batch (Fetch max_bytes)

Errors are ``kcodec.protocol.errors.DecodeError`` subclasses from ``kcodec.records.errors``.
``records_to_json(data, values="base64"|"text")`` gives a JSON view of the batches and records (used by
``kcodec.to_json(..., records=...)`` and ``kcodec decode-capture --records``).
"""

from __future__ import annotations

from kcodec.records.base import DEFAULT_MAX_RECORDS, Batch
from kcodec.records.batch import RecordBatch, parse_control_record
from kcodec.records.builder import build_batch, build_control_batch
from kcodec.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from kcodec.records.errors import (
    CorruptRecordError,
    CrcMismatchError,
    DecompressedSizeError,
    DecompressionError,
    InvalidOffsetError,
    RecordLimitError,
    UnsupportedCompressionError,
)
from kcodec.records.jsonview import records_summary, records_to_json
from kcodec.records.legacy import LegacyBatch
from kcodec.records.model import (
    Compression,
    ControlRecord,
    ControlType,
    Header,
    NewRecord,
    Record,
    TimestampType,
)
from kcodec.records.reader import RecordBatches, iter_batches

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "DEFAULT_MAX_RECORDS",
    "Batch",
    "Compression",
    "ControlRecord",
    "ControlType",
    "CorruptRecordError",
    "CrcMismatchError",
    "DecompressedSizeError",
    "DecompressionError",
    "Header",
    "InvalidOffsetError",
    "LegacyBatch",
    "NewRecord",
    "Record",
    "RecordBatch",
    "RecordBatches",
    "RecordLimitError",
    "TimestampType",
    "UnsupportedCompressionError",
    "build_batch",
    "build_control_batch",
    "iter_batches",
    "parse_control_record",
    "records_summary",
    "records_to_json",
]
