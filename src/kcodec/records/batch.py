"""Magic 2 record batches (``DefaultRecordBatch``): header, CRC32C check, lazy record parsing.

Layout (big-endian): baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8,
crc uint32 (CRC32C of everything after it), attributes int16, lastOffsetDelta int32, baseTimestamp
int64, maxTimestamp int64, producerId int64, producerEpoch int16, baseSequence int32, recordCount
int32, then the (possibly compressed) records.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import cast

import crc32c

from kcodec.protocol.errors import DecodeError
from kcodec.records.base import Batch, RecordBudget
from kcodec.records.compression import CodecError, SizeLimitError, decompress
from kcodec.records.errors import (
    CorruptRecordError,
    CrcMismatchError,
    DecompressedSizeError,
    DecompressionError,
    InvalidOffsetError,
    RecordLimitError,
    UnsupportedCompressionError,
)
from kcodec.records.model import Compression, ControlRecord, ControlType, Record, TimestampType
from kcodec.records.varint import read_varint, read_varlong

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
CRC_START = 21  # attributes: the CRC covers from here to the end of the batch
MIN_BATCH_LENGTH = HEADER_SIZE - 12
#: the smallest record: length, attributes, timestamp delta, offset delta, key and value lengths and
#: header count, one byte each
MIN_RECORD_SIZE = 7
_COUNT_AT = 57  # the record count field, from the batch start

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

_CONTROL_KEY = struct.Struct(">hh")
_TXN_MARKER_VALUE = struct.Struct(">hi")


class RecordBatch(Batch):
    """A magic 2 batch. See ``Batch`` for the common attributes."""

    __slots__ = (
        "_base_offset",
        "_base_timestamp",
        "_budget",
        "_buf",
        "_max_decompressed_size",
        "attributes",
        "last_offset_delta_",
        "record_count",
    )

    _base_offset: int
    _base_timestamp: int
    _buf: memoryview
    _budget: RecordBudget
    _max_decompressed_size: int
    last_offset_delta_: int
    attributes: int
    record_count: int
    """Records the header declares."""

    def __init__(
        self,
        buf: memoryview,
        pos: int,
        end: int,
        *,
        verify_crc: bool,
        max_decompressed_size: int,
        budget: RecordBudget,
    ):
        (
            base_offset,
            _length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            attributes,
            self.last_offset_delta_,
            self._base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.record_count,
        ) = HEADER.unpack_from(buf, pos)
        self._base_offset = base_offset
        self._buf = buf[pos:end]
        self.position = pos
        self.size = end - pos
        self._max_decompressed_size = max_decompressed_size
        self._budget = budget
        self.attributes = attributes
        if verify_crc:
            computed = crc32c.crc32c(self._buf[CRC_START:])
            if computed != self.crc:
                raise CrcMismatchError(
                    f"CRC32C mismatch (stored 0x{self.crc:08x}, computed 0x{computed:08x})",
                    pos + 17,
                    base_offset,
                )
        codec = Compression.from_id(attributes & ATTR_COMPRESSION_MASK)
        if codec is None:
            raise UnsupportedCompressionError(
                f"unknown compression codec id {attributes & ATTR_COMPRESSION_MASK}",
                pos + CRC_START,
                base_offset,
            )
        self.compression = codec
        self.timestamp_type = (
            TimestampType.LOG_APPEND_TIME if attributes & ATTR_TIMESTAMP_TYPE else TimestampType.CREATE_TIME
        )
        self.is_transactional = bool(attributes & ATTR_TRANSACTIONAL)
        self.is_control = bool(attributes & ATTR_CONTROL)
        if self.record_count < 0:
            count = self.record_count
            raise CorruptRecordError(f"negative record count {count}", pos + _COUNT_AT, base_offset)

    @property
    def base_offset(self) -> int:
        return self._base_offset

    @property
    def last_offset(self) -> int:
        return self._base_offset + self.last_offset_delta_

    @property
    def last_offset_delta(self) -> int:
        return self.last_offset_delta_

    @property
    def base_timestamp(self) -> int:
        """The first record's timestamp (or the delete horizon, see ``delete_horizon_ms``)."""
        return self._base_timestamp

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534: set on compacted batches holding tombstones (then base_timestamp is this)."""
        return self._base_timestamp if self.attributes & ATTR_DELETE_HORIZON else None

    def records(self) -> Iterator[Record]:
        """The records (see ``Batch.records``); the header's record count is first checked against
        what the bytes can hold and spent from the ``iter_batches`` call's records budget."""
        body = self._buf[HEADER_SIZE:]
        count = self.record_count
        if self.compression is Compression.NONE:
            self._check_fits(count, len(body), "")
        self._budget.take(count, self.position + _COUNT_AT, self._base_offset)
        if self.compression is Compression.NONE:
            data: bytes | bytearray = bytes(body)
            where = self.position + HEADER_SIZE
            compressed = False
        else:
            try:
                # the buffer decompressed into (a bytearray) is read in place: each record's key,
                # value and header values become bytes of their own, the buffer is never copied whole
                data = decompress(self.compression, body, self._max_decompressed_size)
            except SizeLimitError as e:
                raise DecompressedSizeError(
                    str(e), self.position + HEADER_SIZE + e.position, self._base_offset
                ) from None
            except CodecError as e:
                raise DecompressionError(
                    str(e), self.position + HEADER_SIZE + e.position, self._base_offset
                ) from None
            where = self.position + HEADER_SIZE
            compressed = True
            self._check_fits(count, len(data), "decompressed ")
        log_append_time = self.max_timestamp if self.timestamp_type is TimestampType.LOG_APPEND_TIME else None
        return _parse_records(
            # decompressed records are read through a view of their buffer (bytes are read as they
            # are): _parse_all copies out what the records keep
            data if type(data) is bytes else cast(bytes, memoryview(data)),
            self.record_count,
            self._base_offset,
            self._base_timestamp,
            log_append_time,
            where,
            compressed,
            self.last_offset_delta_,
        )

    def _check_fits(self, count: int, size: int, what: str) -> None:
        if count > size // MIN_RECORD_SIZE:
            raise RecordLimitError(
                f"record count {count} cannot fit in {size} {what}bytes (a record takes at least "
                f"{MIN_RECORD_SIZE})",
                self.position + _COUNT_AT,
                self._base_offset,
            )


def _unzigzag(zz: int) -> int:
    return (zz >> 1) ^ -(zz & 1)


_ZIGZAG: list[int] = [_unzigzag(v) for v in range(1 << 14)]


class _Slow(Exception):
    """The fast record parser met something it leaves to the careful one (not an error by itself)."""


def _parse_records(
    buf: bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    where: int,
    compressed: bool,
    last_delta: int,
) -> Iterator[Record]:
    """The ``count`` records in ``buf``; errors name byte ``where + pos`` (or the decompressed pos).

    The records are parsed up front; a corrupt record ends the list and its error is raised by the
    returned iterator after the records before it, as a lazy parser would.
    """
    records, error = _parse_all(
        buf, count, base_offset, base_timestamp, log_append_time, where, compressed, last_delta
    )
    if error is None:
        return iter(records)
    return _then_raise(records, error)


def _then_raise(records: list[Record], error: CorruptRecordError) -> Iterator[Record]:
    yield from records
    raise error


def _parse_all(
    buf: bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    where: int,
    compressed: bool,
    last_delta: int,
) -> tuple[list[Record], CorruptRecordError | None]:
    """Parse records in one pass: an inlined fast path for the common shapes (varints of 1-3 bytes,
    lengths in range, UTF-8 header keys) and, for any record it does not take, the careful
    ``_parse_one`` (longer varints, and every error with its exact reason and position).

    Offset deltas must increase and stay within ``last_delta`` (what every Kafka writer does, and
    compaction keeps): otherwise ``InvalidOffsetError``. A ``memoryview`` (of decompressed records) is
    read in place; what the records keep of it is copied out as ``bytes``."""
    out: list[Record] = []
    append = out.append
    new = object.__new__
    zz = _ZIGZAG  # zigzag-decoded value of every 1- and 2-byte varint payload (14 bits)
    n = len(buf)
    pos = 0
    fixed_ts = log_append_time
    prev = -1  # the previous record's offset delta
    owned = type(buf) is not bytes  # slices of a view are views: records get bytes of their own
    try:
        for i in range(count):
            try:
                # Each varint: one byte (< 0x80), else two (the second < 0x80), else 3 for the lengths
                # and the timestamp delta; anything else goes to the careful parser.  Lengths are not
                # checked here: a record whose fields do not end exactly at its end goes there too.
                b = buf[pos]
                if b < 0x80:
                    p = pos + 2  # past the length and the attributes byte (unused)
                    end = pos + 1 + zz[b]
                else:
                    c = buf[pos + 1]
                    if c < 0x80:
                        p = pos + 3
                        end = pos + 2 + zz[(b & 0x7F) | (c << 7)]
                    else:
                        d = buf[pos + 2]
                        if d >= 0x80:
                            raise _Slow
                        p = pos + 4
                        end = pos + 3 + _unzigzag((b & 0x7F) | ((c & 0x7F) << 7) | (d << 14))
                b = buf[p]
                if b < 0x80:
                    p += 1
                    ts_delta = zz[b]
                else:
                    c = buf[p + 1]
                    if c < 0x80:
                        p += 2
                        ts_delta = zz[(b & 0x7F) | (c << 7)]
                    else:
                        d = buf[p + 2]
                        if d >= 0x80:
                            raise _Slow
                        p += 3
                        ts_delta = _unzigzag((b & 0x7F) | ((c & 0x7F) << 7) | (d << 14))
                b = buf[p]
                if b < 0x80:
                    p += 1
                    off_delta = zz[b]
                else:
                    c = buf[p + 1]
                    if c >= 0x80:
                        raise _Slow
                    p += 2
                    off_delta = zz[(b & 0x7F) | (c << 7)]
                if off_delta <= prev or off_delta > last_delta:
                    raise _Slow
                b = buf[p]
                if b < 0x80:
                    p += 1
                    q = p + zz[b]
                else:
                    c = buf[p + 1]
                    if c >= 0x80:
                        raise _Slow
                    p += 2
                    q = p + zz[(b & 0x7F) | (c << 7)]
                if q >= p:
                    key: bytes | None = buf[p:q]
                    p = q
                elif q == p - 1:
                    key = None
                else:
                    raise _Slow
                b = buf[p]
                if b < 0x80:
                    p += 1
                    q = p + zz[b]
                else:
                    c = buf[p + 1]
                    if c < 0x80:
                        p += 2
                        q = p + zz[(b & 0x7F) | (c << 7)]
                    else:
                        d = buf[p + 2]
                        if d >= 0x80:
                            raise _Slow
                        p += 3
                        q = p + _unzigzag((b & 0x7F) | ((c & 0x7F) << 7) | (d << 14))
                if q >= p:
                    value: bytes | None = buf[p:q]
                    p = q
                elif q == p - 1:
                    value = None
                else:
                    raise _Slow
                b = buf[p]  # header count
                p += 1
                headers: list[tuple[str, bytes | None]] = []
                if b:
                    if b >= 0x80 or b & 1:  # > 63 headers, or a negative count
                        raise _Slow
                    hcount = b >> 1
                    while hcount:
                        hcount -= 1
                        b = buf[p]
                        if b >= 0x80 or b & 1:
                            raise _Slow
                        q = p + 1 + (b >> 1)
                        hkey = str(buf[p + 1 : q], "utf-8")
                        b = buf[q]
                        if b < 0x80:
                            p = q + 1
                            q = p + zz[b]
                        else:
                            c = buf[q + 1]
                            if c >= 0x80:
                                raise _Slow
                            p = q + 2
                            q = p + zz[(b & 0x7F) | (c << 7)]
                        if q >= p:
                            headers.append((hkey, buf[p:q]))
                            p = q
                        elif q == p - 1:
                            headers.append((hkey, None))
                        else:
                            raise _Slow
                if p != end or end > n:
                    raise _Slow
            except (_Slow, IndexError, UnicodeDecodeError):
                record, end = _parse_one(buf, pos, base_offset, base_timestamp, log_append_time)
                off_delta = record.offset - base_offset
                if off_delta <= prev or off_delta > last_delta:
                    note = f" (at decompressed byte {pos})" if compressed else ""
                    return out, InvalidOffsetError(
                        f"record {i}: offset delta {off_delta} after {prev} (deltas must increase, "
                        f"up to the last offset delta {last_delta}){note}",
                        where if compressed else where + pos,
                        base_offset,
                        f"records[{i}].offsetDelta",
                    )
                prev = off_delta
                append(_own(record) if owned else record)
                pos = end
                continue
            # Record(...) without the Python-level __init__ call: every field is set right here.
            record = new(Record)
            record.offset = base_offset + off_delta
            record.timestamp = base_timestamp + ts_delta if fixed_ts is None else fixed_ts
            record.key = key
            record.value = value
            record.headers = headers
            append(_own(record) if owned else record)
            prev = off_delta
            pos = end
        if pos != n:
            raise DecodeError(f"{n - pos} bytes left after the {count} records the header declares", pos)
    except (DecodeError, IndexError) as e:
        at = e.offset if isinstance(e, DecodeError) else pos
        reason = e.reason if isinstance(e, DecodeError) else "record runs past the end of the batch"
        if compressed:
            return out, CorruptRecordError(f"{reason} (at decompressed byte {at})", where, base_offset)
        return out, CorruptRecordError(reason, where + at, base_offset)
    return out, None



def _own(record: Record) -> Record:
    """``record`` with its key, value and header values as ``bytes`` (they were views)."""
    if record.key is not None:
        record.key = bytes(record.key)
    if record.value is not None:
        record.value = bytes(record.value)
    if record.headers:
        record.headers = [(k, None if v is None else bytes(v)) for k, v in record.headers]
    return record


def _read_nullable_bytes(buf: bytes, p: int, end: int, what: str) -> tuple[bytes | None, int]:
    """A record's key or value: varint length (-1 for null) and that many bytes, inside the record."""
    length, p = read_varint(buf, p)
    if length < 0:
        if length != -1:
            raise DecodeError(f"invalid {what} length {length}", p)
        return None, p
    if p + length > end:
        raise DecodeError(f"{what} length {length} runs past the end of the record", p)
    return buf[p : p + length], p + length

def _parse_one(
    buf: bytes, pos: int, base_offset: int, base_timestamp: int, log_append_time: int | None
) -> tuple[Record, int]:
    """The record at ``pos`` and where it ends, read with every check (raises DecodeError/IndexError)."""
    n = len(buf)
    length, pos = read_varint(buf, pos)
    end = pos + length
    if length < 0 or end > n:
        raise DecodeError(f"record length {length} runs past the end of the batch", pos)
    p = pos + 1  # attributes (unused)
    if p >= n:  # a record that ends here runs past the end of the batch
        raise IndexError(p)
    ts_delta, p = read_varlong(buf, p)
    off_delta, p = read_varint(buf, p)
    key, p = _read_nullable_bytes(buf, p, end, "key")
    value, p = _read_nullable_bytes(buf, p, end, "value")
    hcount, p = read_varint(buf, p)
    headers: list[tuple[str, bytes | None]] = []
    if hcount:
        if hcount < 0:
            raise DecodeError(f"invalid header count {hcount}", p)
        for _h in range(hcount):
            hklen, p = read_varint(buf, p)
            if hklen < 0 or p + hklen > end:
                raise DecodeError(f"invalid header key length {hklen}", p)
            try:
                hkey = str(buf[p : p + hklen], "utf-8")
            except UnicodeDecodeError:
                raise DecodeError("header key is not valid UTF-8", p) from None
            p += hklen
            hvlen, p = read_varint(buf, p)
            if hvlen < 0:
                if hvlen != -1:
                    raise DecodeError(f"invalid header value length {hvlen}", p)
                headers.append((hkey, None))
            else:
                if p + hvlen > end:
                    raise DecodeError(f"header value length {hvlen} runs past the end", p)
                headers.append((hkey, buf[p : p + hvlen]))
                p += hvlen
    if p != end:
        raise DecodeError(f"record length {length} does not match its content ({p - pos} bytes)", pos)
    timestamp = log_append_time if log_append_time is not None else base_timestamp + ts_delta
    return Record(base_offset + off_delta, timestamp, key, value, headers), end


def parse_control_record(record: Record) -> ControlRecord:
    """Read the marker in a control batch's record (key: version, type; value: version, epoch)."""
    if record.key is None or len(record.key) < 4:
        raise CorruptRecordError("control record key is missing or shorter than 4 bytes", 0, record.offset)
    version, ctype = _CONTROL_KEY.unpack_from(record.key)
    try:
        kind: ControlType | int = ControlType(ctype)
    except ValueError:
        kind = ctype
    epoch = -1
    if kind in (ControlType.ABORT, ControlType.COMMIT):
        if record.value is None or len(record.value) < 6:
            raise CorruptRecordError("transaction marker value is missing or too short", 0, record.offset)
        _v, epoch = _TXN_MARKER_VALUE.unpack_from(record.value)
    return ControlRecord(kind, epoch, version)
