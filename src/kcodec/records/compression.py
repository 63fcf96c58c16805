"""Compress/decompress the records section of a batch (gzip, snappy, lz4, zstd) with ``cramjam``.

* gzip: a gzip stream (any number of members).
* snappy: written in snappy-java's xerial framing (``\\x82SNAPPY\\x00``, version 1, compatible 1, then
  int32-length-prefixed raw snappy blocks of 32 KiB input each), like Kafka's Java client; read
  accepts xerial framing and a plain raw snappy block.
* lz4: the LZ4 frame format, see ``lz4frame`` (header, block and content checksums verified).
* zstd: a zstd frame.

Every decompression is bounded by ``max_size`` (decompression-bomb guard): snappy and lz4 know sizes
before/per block; gzip and zstd decompress into a bounded buffer grown from a size hint (gzip ISIZE,
zstd frame content size), so no more than ``max_size`` bytes are ever allocated for output.
Failures raise ``CodecError``/``SizeLimitError`` (plain messages); the batch readers turn them into
``DecodeError``s naming the batch and byte position.
"""

from __future__ import annotations

import struct

import cramjam

from kcodec._wire import Buffer
from kcodec.errors import InvalidArgumentError, KcodecError
from kcodec.records import lz4frame
from kcodec.records.model import Compression

DEFAULT_MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_TOO_SMALL = "failed to write whole buffer"


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
) -> bytes:
    """Decompress ``data``; raise ``SizeLimitError`` past ``max_size`` bytes, ``CodecError`` if corrupt.

    ``magic``: the batch's magic (lz4 accepts the KAFKA-3160 header checksum for magic 0 and 1)."""
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


def snappy_decompress(data: Buffer, max_size: int) -> bytes:
    mv = memoryview(data)
    if mv[:8] != XERIAL_MAGIC:
        return _snappy_raw(mv, max_size)
    if len(mv) < 16:
        raise CodecError("snappy xerial header is truncated")
    blocks: list[memoryview] = []
    pos = 16
    total = 0
    while pos < len(mv):
        if pos + 4 > len(mv):
            raise CodecError("snappy xerial block length is truncated")
        (size,) = struct.unpack_from(">i", mv, pos)
        pos += 4
        if size < 0 or pos + size > len(mv):
            raise CodecError("snappy xerial block runs past the end")
        blocks.append(mv[pos : pos + size])
        pos += size
        total += _snappy_len(blocks[-1])
        if total > max_size:
            raise SizeLimitError(f"snappy data decompresses to more than {max_size} bytes")
    out = bytearray(total)
    view = memoryview(out)
    at = 0
    for block in blocks:
        try:
            at += cramjam.snappy.decompress_raw_into(block, view[at:])
        except cramjam.DecompressionError as e:
            raise CodecError(f"corrupt snappy block: {e}") from None
    if at != total:
        raise CodecError("snappy block length mismatch")
    return bytes(out)


def _snappy_len(block: memoryview) -> int:
    try:
        return int(cramjam.snappy.decompress_raw_len(block))
    except cramjam.DecompressionError as e:
        raise CodecError(f"corrupt snappy block: {e}") from None


def _snappy_raw(mv: memoryview, max_size: int) -> bytes:
    size = _snappy_len(mv)
    if size > max_size:
        raise SizeLimitError(f"snappy data declares {size} bytes, more than {max_size}")
    try:
        return bytes(cramjam.snappy.decompress_raw(mv))
    except cramjam.DecompressionError as e:
        raise CodecError(f"corrupt snappy data: {e}") from None


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


def _bounded(into: object, data: Buffer, hint: int | None, max_size: int, name: str) -> bytes:
    """Decompress with ``into(data, out)`` into a buffer of at most ``max_size`` bytes, growing it."""
    if hint is not None and hint > max_size and name == "zstd":  # zstd's content size is exact
        raise SizeLimitError(f"zstd frame declares {hint} bytes, more than {max_size}")
    guess = hint if hint is not None and hint > 0 else 4 * len(data)
    size = min(max_size, max(guess, 64 * 1024))
    while True:
        out = bytearray(size)
        try:
            n = into(data, out)  # type: ignore[operator]
        except cramjam.DecompressionError as e:
            if _TOO_SMALL not in str(e):
                raise CodecError(f"corrupt {name} data: {e}") from None
            if size >= max_size:
                raise SizeLimitError(f"{name} data decompresses to more than {max_size} bytes") from None
            size = min(max_size, size * 4)
            continue
        return bytes(memoryview(out)[: int(n)])
