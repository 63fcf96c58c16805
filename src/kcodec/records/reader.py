"""``iter_batches``: split a ``records`` buffer (Fetch/Produce) into batches of any magic.

Framing follows Kafka's ``ByteBufferLogInputStream``: every batch starts with offset int64, length
int32; the magic byte sits at byte 16.  A batch whose bytes do not all fit in the buffer ends the
iteration (a Fetch response cut at ``max_bytes``); ``RecordBatches.truncated_bytes`` tells how many
bytes were left over.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from kcodec.protocol._wire import Buffer, byte_view
from kcodec.records import batch as _v2
from kcodec.records import legacy as _legacy
from kcodec.records.base import DEFAULT_MAX_RECORDS, Batch, RecordBudget
from kcodec.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from kcodec.records.errors import CorruptRecordError

LOG_OVERHEAD = 12  # offset + length
HEADER_SIZE_UP_TO_MAGIC = 17
_MIN_LENGTH = {0: _legacy.MIN_SIZE[0], 1: _legacy.MIN_SIZE[1], 2: _v2.MIN_BATCH_LENGTH}
_OFFSET_LENGTH = struct.Struct(">qi")


def next_batch_end(buf: memoryview, pos: int) -> int | None:
    """End position of the batch starting at ``pos``, or ``None`` if it is not complete in ``buf``.

    Raises ``CorruptRecordError`` for a length below the minimum or an unknown magic.
    """
    remaining = len(buf) - pos
    if remaining < LOG_OVERHEAD:
        return None
    base_offset: int
    length: int
    base_offset, length = _OFFSET_LENGTH.unpack_from(buf, pos)
    if length < _MIN_LENGTH[0]:
        raise CorruptRecordError(f"batch length {length} is below the minimum", pos + 8, base_offset)
    if remaining < HEADER_SIZE_UP_TO_MAGIC:
        return None
    magic = buf[pos + 16]
    min_length = _MIN_LENGTH.get(magic)
    if min_length is None:
        raise CorruptRecordError(f"unknown magic {magic}", pos + 16, base_offset)
    if length < min_length:
        raise CorruptRecordError(
            f"batch length {length} is below the minimum {min_length} for magic {magic}", pos + 8, base_offset
        )
    if remaining < LOG_OVERHEAD + length:
        return None
    return pos + LOG_OVERHEAD + length


class RecordBatches(Iterator[Batch]):
    """Iterator over the batches of a ``records`` buffer (see ``iter_batches``)."""

    def __init__(
        self,
        data: Buffer,
        *,
        verify_crc: bool = True,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
        allow_truncated: bool = True,
        max_records: int = DEFAULT_MAX_RECORDS,
    ) -> None:
        self._buf = byte_view(data)
        self._budget = RecordBudget(max_records)
        self._pos = 0
        self._verify_crc = verify_crc
        self._max = max_decompressed_size
        self._allow_truncated = allow_truncated
        self._truncated_at: int | None = None
        self._scanned = False

    def __iter__(self) -> RecordBatches:
        return self

    def __next__(self) -> Batch:
        buf = self._buf
        pos = self._pos
        if pos >= len(buf):
            raise StopIteration
        end = next_batch_end(buf, pos)
        if end is None:
            self._truncated_at = pos
            self._scanned = True
            self._pos = len(buf)
            if not self._allow_truncated:
                raise CorruptRecordError(f"the last batch is truncated ({len(buf) - pos} bytes)", pos)
            raise StopIteration
        self._pos = end
        cls: type[_v2.RecordBatch] | type[_legacy.LegacyBatch]
        cls = _v2.RecordBatch if buf[pos + 16] == 2 else _legacy.LegacyBatch
        return cls(
            buf, pos, end, verify_crc=self._verify_crc, max_decompressed_size=self._max, budget=self._budget
        )

    def _scan(self) -> None:
        if self._scanned:
            return
        buf = self._buf
        pos = self._pos
        while pos < len(buf):
            end = next_batch_end(buf, pos)
            if end is None:
                self._truncated_at = pos
                break
            pos = end
        self._scanned = True

    @property
    def truncated_at(self) -> int | None:
        """Byte position where an incomplete trailing batch starts, or ``None`` if there is none."""
        self._scan()
        return self._truncated_at

    @property
    def truncated_bytes(self) -> int:
        """Bytes at the end of the buffer that belong to an incomplete batch (0 if none).

        Known before iterating (a cheap scan of the length fields, which may raise for a corrupt
        length further on); never counts bytes of complete batches.
        """
        at = self.truncated_at
        return 0 if at is None else len(self._buf) - at


def iter_batches(
    data: Buffer,
    *,
    verify_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    allow_truncated: bool = True,
    max_records: int = DEFAULT_MAX_RECORDS,
) -> RecordBatches:
    """Iterate over the record batches in ``data`` (a ``records`` field: bytes, bytearray or memoryview).

    Yields ``RecordBatch`` (magic 2) and ``LegacyBatch`` (magic 0/1, one per shallow message) objects,
    both ``Batch``: only the header is read (and the CRC checked, if ``verify_crc``) when a batch is
    yielded; ``batch.records()`` decompresses (at most ``max_decompressed_size`` bytes, else
    ``DecompressedSizeError``) and parses on demand.

    A trailing batch that is not complete (Fetch responses cut at ``max_bytes``) ends the iteration
    without error; the returned ``RecordBatches`` reports it as ``truncated_bytes`` /
    ``truncated_at``.  With ``allow_truncated=False`` it raises ``CorruptRecordError`` instead.
    Corruption raises ``DecodeError`` subclasses (``kcodec.records.errors``) naming the batch's base
    offset and the byte position in ``data``; records whose offsets do not increase raise
    ``InvalidOffsetError``.

    Record-count bombs are bounded: the records of all the batches together count against
    ``max_records`` (each ``records()`` call spends what it builds; over it: ``RecordLimitError``,
    raised before the batch is decompressed when its header declares too many), and a batch declaring
    more records than its (decompressed) bytes can hold is refused before any record is built.
    """
    return RecordBatches(
        data,
        verify_crc=verify_crc,
        max_decompressed_size=max_decompressed_size,
        allow_truncated=allow_truncated,
        max_records=max_records,
    )
