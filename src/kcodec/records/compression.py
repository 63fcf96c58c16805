"""Compress/decompress the records section of a batch (gzip, snappy, lz4, zstd) with ``cramjam``.

* gzip: a gzip stream (any number of members).
* snappy: written in snappy-java's xerial framing (``\\x82SNAPPY\\x00``, version 1, compatible 1, then
  int32-length-prefixed raw snappy blocks of 32 KiB input each), like Kafka's Java client; read
  accepts xerial framing and a plain raw snappy block.
* lz4: the LZ4 frame format, see ``lz4frame`` (header, block and content checksums verified).
* zstd: a zstd frame.

Every decompression is bounded (decompression-bomb guard), and sizes that compressed data declares
are not trusted before the data has shown them:

* **Before the data proves itself**, input of N bytes costs at most ``unproven_budget(N)`` =
  8·N + 1 MiB of output buffer, whatever a gzip ISIZE trailer, a zstd frame content size, a snappy
  length preamble or an lz4 block-size code claims. A buffer only grows past that once the data has
  filled it (then by 4x, each time released before the next one is allocated, and decompression
  restarts), so a short input that claims 60 MiB costs ~1 MiB, not 60.
* **The peak is the limit**: no output buffer is ever larger than ``max_size``, and the buffer the
  data was decompressed into is what is returned (trimmed in place, never copied once more), so a
  bomb is stopped having held at most ``max_size`` bytes.
* Snappy can expand a block at most ~21.3x (a 3-byte copy writes at most 64 bytes): a block whose
  length preamble claims more than that is corrupt and refused without allocating.

Failures raise ``CodecError``/``SizeLimitError`` (plain messages); the batch readers turn them into
``DecodeError``s naming the batch and byte position.
"""

from __future__ import annotations

import struct

import cramjam

from kcodec.protocol._wire import Buffer
from kcodec.protocol.errors import InvalidArgumentError, KcodecError
from kcodec.records import lz4frame
from kcodec.records.model import Compression

DEFAULT_MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_TOO_SMALL = "failed to write whole buffer"
_MIB = 1 << 20
#: the most a raw snappy block can expand: a 3-byte copy op writes at most 64 bytes (64/3 < 22)
SNAPPY_MAX_RATIO = 22


def unproven_budget(compressed_size: int) -> int:
    """The most output buffer decompressing ``compressed_size`` bytes may allocate before the data has
    produced that much output: 8·N + 1 MiB (sizes the compressed data merely declares do not count)."""
    return 8 * compressed_size + _MIB


class CodecError(KcodecError):
    """The compressed bytes are corrupt; ``position``: where in them, as far as known (else 0)."""

    def __init__(self, message: str, position: int = 0) -> None:
        super().__init__(message)
        self.position = position


class SizeLimitError(CodecError):
    """The decompressed data would exceed the size limit."""


def compress(codec: Compression, data: Buffer, *, magic: int = 2, level: int | None = None) -> bytes:
    """Compress ``data`` for a batch of ``magic`` (magic 0 matters for lz4: KAFKA-3160 checksum)."""
    if codec is Compression.GZIP:
        return bytes(cramjam.gzip.compress(data, level=level))
    if codec is Compression.SNAPPY:
        return xerial_compress(data)
    if codec is Compression.LZ4:
        return lz4frame.compress(data, broken_header_checksum=magic == 0)
    if codec is Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=level))
    if codec is Compression.NONE:
        return bytes(data)
    raise InvalidArgumentError(f"unknown codec {codec!r}")


def decompress(
    codec: Compression, data: Buffer, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE, *, magic: int = 2
) -> bytes | bytearray:
    """Decompress ``data``; raise ``SizeLimitError`` past ``max_size`` bytes, ``CodecError`` if corrupt.

    Returns the buffer the data was decompressed into (a ``bytearray``; ``bytes`` for ``NONE``), so
    that the peak is the output itself. ``magic``: the batch's magic (lz4 accepts the KAFKA-3160
    header checksum for magic 0 and 1)."""
    if codec is Compression.GZIP:
        return _bounded(cramjam.gzip.decompress_into, data, _gzip_hint(data), max_size, "gzip")
    if codec is Compression.SNAPPY:
        return snappy_decompress(data, max_size)
    if codec is Compression.LZ4:
        try:
            return lz4frame.decompress(data, max_size, magic=magic)
        except lz4frame.Lz4SizeError as e:
            raise SizeLimitError(str(e), e.position) from None
        except lz4frame.Lz4FrameError as e:
            raise CodecError(str(e), e.position) from None
    if codec is Compression.ZSTD:
        return _bounded(cramjam.zstd.decompress_into, data, _zstd_hint(data), max_size, "zstd")
    if codec is Compression.NONE:
        return bytes(data)
    raise InvalidArgumentError(f"unknown codec {codec!r}")


def xerial_compress(data: Buffer) -> bytes:
    mv = memoryview(data)
    out = bytearray(_XERIAL_HEADER)
    for start in range(0, len(mv), _XERIAL_BLOCK):
        block = cramjam.snappy.compress_raw(mv[start : start + _XERIAL_BLOCK])
        out += struct.pack(">i", len(block))
        out += memoryview(block)
    return bytes(out)


def snappy_decompress(data: Buffer, max_size: int) -> bytearray:
    mv = memoryview(data)
    if mv[:8] != XERIAL_MAGIC:
        return _snappy_raw(mv, max_size)
    if len(mv) < 16:
        raise CodecError("snappy xerial header is truncated")
    blocks: list[tuple[memoryview, int]] = []  # (raw snappy block, the length its preamble declares)
    pos = 16
    total = 0
    while pos < len(mv):
        if pos + 4 > len(mv):
            raise CodecError("snappy xerial block length is truncated", pos)
        (size,) = struct.unpack_from(">i", mv, pos)
        pos += 4
        if size < 0 or pos + size > len(mv):
            raise CodecError("snappy xerial block runs past the end", pos - 4)
        block = mv[pos : pos + size]
        declared = _snappy_len(block, pos)
        blocks.append((block, declared))
        pos += size
        total += declared
        if total > max_size:
            raise SizeLimitError(f"snappy data decompresses to more than {max_size} bytes", pos - size)
    if total <= unproven_budget(len(mv)):  # the usual case: one buffer of the exact size
        out = bytearray(total)
        view = memoryview(out)
        at = 0
        for block, declared in blocks:
            _snappy_block_into(block, view[at : at + declared])
            at += declared
        return out
    # Very compressible data: each block proves itself (is decompressed) before the next is allocated.
    out = bytearray()
    for block, declared in blocks:
        part = bytearray(declared)
        _snappy_block_into(block, part)
        out += part
        del part
    return out


def _snappy_block_into(block: memoryview, out: memoryview | bytearray) -> None:
    try:
        written = int(cramjam.snappy.decompress_raw_into(block, out))
    except cramjam.DecompressionError as e:
        raise CodecError(f"corrupt snappy block: {e}") from None
    if written != len(out):
        raise CodecError("snappy block length mismatch")


def _snappy_len(block: memoryview, position: int = 0) -> int:
    """The length a raw snappy block's preamble declares, refused if the block could not hold it."""
    try:
        declared = int(cramjam.snappy.decompress_raw_len(block))
    except cramjam.DecompressionError as e:
        raise CodecError(f"corrupt snappy block: {e}", position) from None
    if declared > SNAPPY_MAX_RATIO * len(block):
        raise CodecError(
            f"snappy block of {len(block)} bytes declares {declared} bytes, more than snappy can expand to",
            position,
        )
    return declared


def _snappy_raw(mv: memoryview, max_size: int) -> bytearray:
    size = _snappy_len(mv)
    if size > max_size:
        raise SizeLimitError(f"snappy data declares {size} bytes, more than {max_size}")
    out = bytearray(size)  # at most 22x the input (checked above): the data's own size class
    try:
        written = int(cramjam.snappy.decompress_raw_into(mv, out))
    except cramjam.DecompressionError as e:
        raise CodecError(f"corrupt snappy data: {e}") from None
    if written != size:
        raise CodecError("snappy data is shorter than its length preamble")
    return out


def _gzip_hint(data: Buffer) -> int | None:
    # ISIZE: the uncompressed size mod 2**32 of the last member (a hint only; checked by cramjam).
    return struct.unpack_from("<I", data, len(data) - 4)[0] if len(data) >= 18 else None


def _zstd_hint(data: Buffer) -> int | None:
    """Frame_Content_Size from the first zstd frame header, if present."""
    mv = memoryview(data)
    if len(mv) < 6 or bytes(mv[:4]) != b"\x28\xb5\x2f\xfd":
        return None
    fhd = mv[4]
    fcs_flag, single_segment, dict_flag = fhd >> 6, (fhd >> 5) & 1, fhd & 3
    fcs_size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if fcs_size == 0:
        return None
    pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_flag]
    if len(mv) < pos + fcs_size:
        return None
    value = int.from_bytes(mv[pos : pos + fcs_size], "little")
    return value + 256 if fcs_size == 2 else value


def _bounded(into: object, data: Buffer, hint: int | None, max_size: int, name: str) -> bytearray:
    """Decompress with ``into(data, out)`` (which fails when ``out`` is too small) into a buffer that
    starts within ``unproven_budget(len(data))`` (or at ``hint``, a size the header declares, if that
    is smaller) and grows 4x only after the data has filled it, never past ``max_size``. The old
    buffer is released before the next is allocated; the one that fits is trimmed in place and
    returned."""
    if hint is not None and hint > max_size and name == "zstd":  # zstd's content size is exact
        raise SizeLimitError(f"zstd frame declares {hint} bytes, more than {max_size}")
    size = min(max_size, unproven_budget(len(data)))
    if hint is not None and 0 < hint < size:
        size = hint
    while True:
        out = bytearray(size)
        try:
            n = int(into(data, out))  # type: ignore[operator]
        except cramjam.DecompressionError as e:
            del out
            if _TOO_SMALL not in str(e):
                raise CodecError(f"corrupt {name} data: {e}") from None
            if size >= max_size:
                raise SizeLimitError(f"{name} data decompresses to more than {max_size} bytes") from None
            # The data has now produced `size` bytes: it may have 4x that (or exactly what it declared).
            grown = min(max_size, size * 4)
            size = hint if hint is not None and size < hint <= grown else grown
            continue
        del out[n:]
        return out
