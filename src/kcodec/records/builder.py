"""Build record batches (magic 2) and message sets (magic 0/1), like Kafka's ``MemoryRecordsBuilder``.

Uncompressed output is byte-identical to Kafka's; compressed output decompresses to Kafka's bytes
(compressed bytes depend on the codec library).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable

import crc32c

from kcodec.protocol.errors import EncodeError, InvalidArgumentError, WrongTypeError
from kcodec.records import batch as _v2
from kcodec.records.compression import compress
from kcodec.records.model import (
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    Compression,
    ControlType,
    NewRecord,
    Record,
    TimestampType,
)
from kcodec.records.varint import write_varint, write_varlong

_V2_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes .. record count
_V2_BEFORE_CRC = struct.Struct(">qiib")  # base offset, length, partition leader epoch, magic
_LEGACY_HEAD = struct.Struct(">qiI")  # offset, size, crc
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")

AnyRecord = Record | NewRecord


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    write_varint(out, value)
    return bytes(out)


_SMALL_VARINTS: list[bytes] = [_varint_bytes(v) for v in range(-8192, 8192)]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_ints(records: list[AnyRecord], compression_level: int | None, timestamp_type: object) -> None:
    if compression_level is not None and not _is_int(compression_level):
        kind = type(compression_level).__name__
        raise WrongTypeError(f"compression_level must be an int or None, not {kind}")
    if not _is_int(timestamp_type) or timestamp_type not in {t.value for t in TimestampType}:
        raise InvalidArgumentError(f"unknown timestamp type {timestamp_type!r}")
    for r in records:
        if not _is_int(r.timestamp):
            raise WrongTypeError(f"record timestamp must be an int, not {type(r.timestamp).__name__}")
        if r.offset is not None and not _is_int(r.offset):
            raise WrongTypeError(f"record offset must be an int or None, not {type(r.offset).__name__}")


def _offsets(records: list[AnyRecord], base_offset: int) -> list[int]:
    offsets: list[int] = []
    prev: int | None = None
    for r in records:
        off = r.offset if r.offset is not None else (base_offset if prev is None else prev + 1)
        if prev is not None and off <= prev:
            raise EncodeError(f"offset {off} does not follow the previous offset {prev}")
        if off < base_offset:
            raise EncodeError(f"offset {off} is below the base offset {base_offset}")
        offsets.append(off)
        prev = off
    return offsets


def _check_bytes(value: object, what: str) -> None:
    if value is not None and not isinstance(value, bytes | bytearray | memoryview):
        raise EncodeError(f"record {what} must be bytes or None, not {type(value).__name__}")


def _compression(value: Compression | str) -> Compression:
    try:
        return Compression(value)
    except ValueError:
        known = ", ".join(c.value for c in Compression)
        raise InvalidArgumentError(f"unknown compression {value!r} (kcodec knows {known})") from None


def build_batch(
    records: Iterable[AnyRecord],
    *,
    magic: int = 2,
    compression: Compression | str = Compression.NONE,
    base_offset: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int | None = None,
    compression_level: int | None = None,
) -> bytes:
    """Encode ``records`` as one batch (magic 2) or one message set (magic 0/1) and return its bytes.

    ``records`` are ``NewRecord``s (``offset=None``: the next offset) or ``Record``s (their offset
    is used); offsets must increase and be >= ``base_offset``.  ``timestamp_type=LOG_APPEND_TIME``
    needs ``log_append_time`` (it becomes the max timestamp, as the broker writes it).  Magic 0/1:
    uncompressed records become one message each; compressed ones one wrapper message (magic 1:
    relative inner offsets); no headers, producer state, transactions or control batches (Kafka
    refuses them too) and no zstd.
    """
    codec = _compression(compression)
    recs = list(records)
    if not recs:
        raise EncodeError("a batch needs at least one record")
    for r in recs:
        _check_bytes(r.key, "key")
        _check_bytes(r.value, "value")
    _check_ints(recs, compression_level, timestamp_type)
    timestamp_type = TimestampType(timestamp_type)
    if timestamp_type is TimestampType.LOG_APPEND_TIME and log_append_time is None:
        raise EncodeError("timestamp_type LOG_APPEND_TIME needs log_append_time")
    offsets = _offsets(recs, base_offset)
    if magic == 2:
        return _build_v2(
            recs,
            offsets,
            codec,
            base_offset,
            producer_id,
            producer_epoch,
            base_sequence,
            transactional,
            control,
            partition_leader_epoch,
            timestamp_type,
            log_append_time,
            compression_level,
        )
    if magic not in (0, 1):
        raise EncodeError(f"unknown magic {magic}")
    if codec is Compression.ZSTD:
        raise EncodeError("zstd needs magic 2")
    if control or transactional or producer_id != NO_PRODUCER_ID or base_sequence != NO_SEQUENCE:
        raise EncodeError(f"magic {magic} has no control batches, transactions or producer state")
    if any(r.headers for r in recs):
        raise EncodeError(f"magic {magic} records cannot have headers")
    return _build_legacy(
        recs, offsets, codec, magic, base_offset, timestamp_type, log_append_time, compression_level
    )


def _build_v2(
    recs: list[AnyRecord],
    offsets: list[int],
    codec: Compression,
    base_offset: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool,
    control: bool,
    partition_leader_epoch: int,
    timestamp_type: TimestampType,
    log_append_time: int | None,
    level: int | None,
) -> bytes:
    base_ts = recs[0].timestamp
    max_ts = NO_TIMESTAMP
    body = bytearray()
    rec = bytearray()
    small = _SMALL_VARINTS  # varint bytes of -8192..8191 (1-2 bytes), indexed by value + 8192
    for r, off in zip(recs, offsets, strict=True):
        ts = r.timestamp
        if ts > max_ts:
            max_ts = ts
        rec.clear()
        rec.append(0)  # attributes
        d = ts - base_ts
        if -8192 <= d < 8192:
            rec += small[d + 8192]
        else:
            write_varlong(rec, d)
        d = off - base_offset
        if d < 8192:
            rec += small[d + 8192]
        else:
            write_varint(rec, d)
        key, value = r.key, r.value
        if key is None:
            rec.append(1)  # zigzag(-1)
        else:
            d = len(key)
            if d < 8192:
                rec += small[d + 8192]
            else:
                write_varint(rec, d)
            rec += key
        if value is None:
            rec.append(1)
        else:
            d = len(value)
            if d < 8192:
                rec += small[d + 8192]
            else:
                write_varint(rec, d)
            rec += value
        headers = r.headers
        write_varint(rec, len(headers))
        for hkey, hvalue in headers:
            if not isinstance(hkey, str):
                raise EncodeError(f"header key must be a str, not {type(hkey).__name__}")
            _check_bytes(hvalue, "header value")
            kb = hkey.encode("utf-8")
            d = len(kb)
            if d < 8192:
                rec += small[d + 8192]
            else:
                write_varint(rec, d)
            rec += kb
            if hvalue is None:
                rec.append(1)
            else:
                d = len(hvalue)
                if d < 8192:
                    rec += small[d + 8192]
                else:
                    write_varint(rec, d)
                rec += hvalue
        d = len(rec)
        if d < 8192:
            body += small[d + 8192]
        else:
            write_varint(body, d)
        body += rec
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        assert log_append_time is not None
        max_ts = log_append_time
    records_bytes = compress(codec, body, level=level) if codec is not Compression.NONE else bytes(body)
    attributes = codec.id
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= _v2.ATTR_TIMESTAMP_TYPE
    if transactional:
        attributes |= _v2.ATTR_TRANSACTIONAL
    if control:
        attributes |= _v2.ATTR_CONTROL
    try:
        after_crc = _V2_AFTER_CRC.pack(
            attributes,
            offsets[-1] - base_offset,
            base_ts,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            len(recs),
        )
        length = _v2.HEADER_SIZE - 12 + len(records_bytes)
        head = _V2_BEFORE_CRC.pack(base_offset, length, partition_leader_epoch, 2)
    except struct.error as e:
        raise EncodeError(f"batch header field out of range: {e}") from None
    crc = crc32c.crc32c(records_bytes, crc32c.crc32c(after_crc))
    return b"".join((head, crc.to_bytes(4, "big"), after_crc, records_bytes))


def _legacy_message(
    offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    body = bytearray((magic, attributes))
    if magic == 1:
        body += _INT64.pack(timestamp)
    for part in (key, value):
        if part is None:
            body += b"\xff\xff\xff\xff"
        else:
            body += _INT32.pack(len(part))
            body += part
    return _LEGACY_HEAD.pack(offset, len(body) + 4, zlib.crc32(body)) + body


def _build_legacy(
    recs: list[AnyRecord],
    offsets: list[int],
    codec: Compression,
    magic: int,
    base_offset: int,
    timestamp_type: TimestampType,
    log_append_time: int | None,
    level: int | None,
) -> bytes:
    ts_attr = _legacy_ts_attr(magic, timestamp_type)
    try:
        if codec is Compression.NONE:
            return b"".join(
                _legacy_message(off, magic, ts_attr, r.timestamp, _b(r.key), _b(r.value))
                for r, off in zip(recs, offsets, strict=True)
            )
        inner = b"".join(
            _legacy_message(
                off if magic == 0 else off - base_offset, magic, ts_attr, r.timestamp, _b(r.key), _b(r.value)
            )
            for r, off in zip(recs, offsets, strict=True)
        )
        if timestamp_type is TimestampType.LOG_APPEND_TIME:
            assert log_append_time is not None
            wrapper_ts = log_append_time
        else:
            wrapper_ts = max([NO_TIMESTAMP, *(r.timestamp for r in recs)])
        value = compress(codec, inner, magic=magic, level=level)
        return _legacy_message(offsets[-1], magic, codec.id | ts_attr, wrapper_ts, None, value)
    except struct.error as e:
        raise EncodeError(f"message field out of range: {e}") from None


def _legacy_ts_attr(magic: int, timestamp_type: TimestampType) -> int:
    return 0x08 if magic == 1 and timestamp_type is TimestampType.LOG_APPEND_TIME else 0


def _b(value: bytes | bytearray | memoryview | None) -> bytes | None:
    return None if value is None else bytes(value)


def build_control_batch(
    control_type: ControlType | int,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    timestamp: int = NO_TIMESTAMP,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A transaction marker batch (COMMIT/ABORT), like ``MemoryRecords.withEndTransactionMarker``."""
    key = struct.pack(">hh", 0, int(control_type))
    value = struct.pack(">hi", 0, coordinator_epoch)
    return build_batch(
        [NewRecord(value, key=key, timestamp=timestamp)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
        control=True,
        partition_leader_epoch=partition_leader_epoch,
    )
