"""Magic 0/1 message sets (``LegacyRecord`` / ``AbstractLegacyRecordBatch``).

A message: offset int64, size int32, crc uint32 (CRC32 IEEE from magic to the end), magic int8,
attributes int8 (low 3 bits: codec 0-3; bit 3: LOG_APPEND_TIME, magic 1), timestamp int64 (magic 1
only), key bytes (int32 length, -1 = null), value bytes.  A compressed message (a "wrapper") holds a
compressed message set in its value; for magic 1 the inner offsets are relative (the wrapper's offset
is the last record's absolute offset) and a LOG_APPEND_TIME wrapper's timestamp overrides the inner
ones.  Each shallow message becomes one ``LegacyBatch``.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

from kcodec.records.base import Batch, RecordBudget
from kcodec.records.compression import CodecError, SizeLimitError, decompress
from kcodec.records.errors import (
    CorruptRecordError,
    CrcMismatchError,
    DecompressedSizeError,
    DecompressionError,
    InvalidOffsetError,
    UnsupportedCompressionError,
)
from kcodec.records.model import (
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    Compression,
    Record,
    TimestampType,
)

_PREFIX = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
CRC_START = 16  # the magic byte
MIN_SIZE = {0: 14, 1: 22}  # size field value: crc + magic + attributes (+ timestamp) + 2 lengths
ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
LEGACY_CODECS = (Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4)


class _Message:
    """One parsed legacy message (positions of key/value in its buffer)."""

    __slots__ = ("attributes", "crc", "key", "magic", "offset", "timestamp", "value", "value_pos")

    def __init__(self, buf: memoryview, pos: int, end: int, base_offset: int | None, where: int) -> None:
        """Parse the message in ``buf[pos:end]``; errors name byte ``where + pos``."""
        self.offset, _size, self.crc, self.magic, self.attributes = _PREFIX.unpack_from(buf, pos)
        eb = self.offset if base_offset is None else base_offset
        if self.magic not in (0, 1):
            raise CorruptRecordError(f"invalid magic {self.magic} in a legacy message", where + pos + 16, eb)
        p = pos + 18
        if self.magic == 1:
            if p + 8 > end:
                raise CorruptRecordError("message too short for its timestamp", where + p, eb)
            (self.timestamp,) = _INT64.unpack_from(buf, p)
            p += 8
        else:
            self.timestamp = NO_TIMESTAMP
        self.key, p = self._bytes(buf, p, end, "key", eb, where)
        self.value_pos = p + 4  # where the value's bytes start in buf
        self.value, p = self._bytes(buf, p, end, "value", eb, where)
        if p != end:
            raise CorruptRecordError(f"message size leaves {end - p} unread bytes", where + p, eb)

    @staticmethod
    def _bytes(
        buf: memoryview, p: int, end: int, what: str, eb: int, where: int
    ) -> tuple[memoryview | None, int]:
        if p + 4 > end:
            raise CorruptRecordError(f"message too short for its {what} length", where + p, eb)
        (n,) = _INT32.unpack_from(buf, p)
        p += 4
        if n == -1:
            return None, p
        if n < -1 or p + n > end:
            raise CorruptRecordError(
                f"{what} length {n} is invalid or runs past the message", where + p - 4, eb
            )
        return buf[p : p + n], p + n

    def codec(self, where: int, eb: int) -> Compression:
        codec_id = self.attributes & ATTR_COMPRESSION_MASK
        codec = Compression.from_id(codec_id)
        if codec is None or codec not in LEGACY_CODECS:
            raise UnsupportedCompressionError(
                f"compression codec id {codec_id} is not valid for magic {self.magic}", where, eb
            )
        return codec


def _crc_check(buf: memoryview, pos: int, end: int, stored: int, where: int, eb: int) -> None:
    computed = zlib.crc32(buf[pos + CRC_START : end])
    if computed != stored:
        raise CrcMismatchError(
            f"CRC32 mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})", where + pos + 12, eb
        )


class LegacyBatch(Batch):
    """A magic 0/1 shallow message: one record, or a compressed wrapper of inner messages."""

    __slots__ = (
        "_budget",
        "_inner",
        "_max_decompressed_size",
        "_message",
        "_verify_crc",
        "attributes",
        "timestamp",
    )

    attributes: int
    timestamp: int
    """The message's own timestamp (-1 for magic 0)."""

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
        msg = _Message(buf, pos, end, None, 0)
        if verify_crc:
            _crc_check(buf, pos, end, msg.crc, 0, msg.offset)
        self._message = msg
        self._verify_crc = verify_crc
        self._max_decompressed_size = max_decompressed_size
        self._budget = budget
        self._inner: list[Record] | None = None
        self.position = pos
        self.size = end - pos
        self.magic = msg.magic
        self.attributes = msg.attributes
        self.crc = msg.crc
        self.compression = msg.codec(pos + 17, msg.offset)
        self.timestamp = msg.timestamp
        if msg.magic == 0:
            self.timestamp_type = TimestampType.NO_TIMESTAMP_TYPE
        elif msg.attributes & ATTR_TIMESTAMP_TYPE:
            self.timestamp_type = TimestampType.LOG_APPEND_TIME
        else:
            self.timestamp_type = TimestampType.CREATE_TIME
        self.max_timestamp = msg.timestamp
        self.is_control = False
        self.is_transactional = False
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.base_sequence = NO_SEQUENCE
        self.partition_leader_epoch = NO_PARTITION_LEADER_EPOCH
        if self.compression is not Compression.NONE and msg.value is None:
            raise CorruptRecordError("compressed message has a null value", pos + 12, msg.offset)

    @property
    def last_offset(self) -> int:
        return int(self._message.offset)

    @property
    def base_offset(self) -> int:
        if self.compression is Compression.NONE:
            return int(self._message.offset)
        inner = self._records()
        return inner[0].offset if inner else int(self._message.offset)

    @property
    def base_timestamp(self) -> int:
        return int(self.timestamp)

    def records(self) -> Iterator[Record]:
        return iter(self._records())

    def _records(self) -> list[Record]:
        if self._inner is not None:
            return self._inner
        msg = self._message
        if self.compression is Compression.NONE:
            self._budget.take(1, self.position, msg.offset)
            key = None if msg.key is None else bytes(msg.key)
            value = None if msg.value is None else bytes(msg.value)
            self._inner = [Record(msg.offset, msg.timestamp, key, value, [])]
            return self._inner
        self._inner = self._deep_records()
        return self._inner

    def _deep_records(self) -> list[Record]:
        msg = self._message
        eb = msg.offset
        where = self.position + 12
        assert msg.value is not None
        try:
            data = decompress(self.compression, msg.value, self._max_decompressed_size, magic=msg.magic)
        except SizeLimitError as e:
            raise DecompressedSizeError(str(e), msg.value_pos + e.position, eb) from None
        except CodecError as e:
            raise DecompressionError(str(e), msg.value_pos + e.position, eb) from None
        out = self._read_inner(memoryview(data), where, eb)
        if msg.magic > 0:  # magic 1: inner offsets are relative, the wrapper's is the last record's
            shift = msg.offset - out[-1].offset
            for record in out:
                record.offset += shift
        return out

    def _read_inner(self, buf: memoryview, where: int, eb: int) -> list[Record]:
        """The decompressed inner messages as records (their own offsets), each built as it is read
        (no parsed message is kept): at most the records budget of them."""
        msg = self._message
        log_append = self.timestamp_type is TimestampType.LOG_APPEND_TIME
        out: list[Record] = []
        pos = 0
        n = len(buf)
        budget = self._budget
        try:
            while pos < n:
                if len(out) == budget.left:  # one more would exceed the budget
                    budget.take(len(out) + 1, where, eb)
                if n - pos < 17:
                    raise CorruptRecordError(
                        f"{n - pos} trailing bytes in the decompressed message set", where, eb
                    )
                (size,) = _INT32.unpack_from(buf, pos + 8)
                magic = buf[pos + 16]
                if magic not in MIN_SIZE or size < MIN_SIZE[magic] or pos + 12 + size > n:
                    raise CorruptRecordError(
                        f"inner message at decompressed byte {pos}: invalid magic {magic} or size {size}",
                        where,
                        eb,
                    )
                end = pos + 12 + size
                m = _Message(buf, pos, end, eb, 0)
                if self._verify_crc:
                    _crc_check(buf, pos, end, m.crc, 0, eb)
                if m.attributes & ATTR_COMPRESSION_MASK:
                    raise CorruptRecordError("inner message is itself compressed", where, eb)
                if out and m.offset <= out[-1].offset:
                    raise InvalidOffsetError(
                        f"inner message {len(out)}: offset {m.offset} after {out[-1].offset} (inner "
                        f"offsets must increase) (at decompressed byte {pos})",
                        where,
                        eb,
                        f"records[{len(out)}].offset",
                    )
                ts = NO_TIMESTAMP if m.magic == 0 else msg.timestamp if log_append else m.timestamp
                key = None if m.key is None else bytes(m.key)
                out.append(Record(m.offset, ts, key, None if m.value is None else bytes(m.value), []))
                pos = end
        except CorruptRecordError as e:
            if e.offset != where:  # positions inside decompressed data: point at the wrapper value
                err = CorruptRecordError(f"{e.reason} (at decompressed byte {e.offset})", where)
                err.base_offset = eb
                raise err from None
            raise
        if not out:
            raise CorruptRecordError("compressed message holds no messages", where, eb)
        budget.take(len(out), where, eb)
        return out
