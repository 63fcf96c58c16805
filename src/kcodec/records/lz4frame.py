"""The LZ4 frame format as Kafka uses it (``KafkaLZ4BlockOutputStream`` / ``KafkaLZ4BlockInputStream``).

Writing: independent 64 KiB blocks, no block/content checksums, no content size (Kafka's layout);
blocks that do not shrink are stored raw.  For magic 0 the header checksum is computed Kafka's broken
pre-0.10 way (over the magic number too, KAFKA-3160), as Kafka itself still writes it for magic 0.

Reading is lenient: the header checksum may be either the correct one or the KAFKA-3160 one (any
magic), block checksums and the content checksum are skipped, not verified.  Frames with independent
blocks are decompressed block by block (so the size limit stops a bomb early); frames with linked
blocks (e.g. python-lz4's default) go to cramjam's frame decoder whole and are checked afterwards.
"""

from __future__ import annotations

import struct

import cramjam

Buffer = bytes | bytearray | memoryview

MAGIC = 0x184D2204
_MAGIC_BYTES = struct.pack("<I", MAGIC)
_BLOCK_SIZES = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}
_WRITE_BLOCK_SIZE = 64 * 1024
_FLG_INDEPENDENT = 0x20
_FLG_BLOCK_CHECKSUM = 0x10
_FLG_CONTENT_SIZE = 0x08
_FLG_CONTENT_CHECKSUM = 0x04
_FLG_DICT_ID = 0x01

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


class Lz4FrameError(Exception):
    """Malformed LZ4 frame (converted to a DecodeError by the caller)."""


class Lz4SizeError(Lz4FrameError):
    """The frame decompresses to more than the allowed size."""


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 (pure Python; used only for the few bytes of a frame header)."""
    n = len(data)
    pos = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while pos + 16 <= n:
            a, b, c, d = struct.unpack_from("<4I", data, pos)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            pos += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (k,) = struct.unpack_from("<I", data, pos)
        h = (_rotl((h + k * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def _header_checksum(descriptor: bytes, broken: bool) -> int:
    return (xxh32(_MAGIC_BYTES + descriptor if broken else descriptor) >> 8) & 0xFF


def compress(data: Buffer, *, broken_header_checksum: bool = False) -> bytes:
    """An LZ4 frame as Kafka writes it (``broken_header_checksum=True`` for magic 0)."""
    descriptor = bytes((0x40 | _FLG_INDEPENDENT, 4 << 4))
    out = bytearray(_MAGIC_BYTES)
    out += descriptor
    out.append(_header_checksum(descriptor, broken_header_checksum))
    mv = memoryview(data)
    for start in range(0, len(mv), _WRITE_BLOCK_SIZE):
        chunk = mv[start : start + _WRITE_BLOCK_SIZE]
        block = cramjam.lz4.compress_block(chunk, store_size=False)
        if len(block) < len(chunk):
            out += struct.pack("<I", len(block))
            out += memoryview(block)
        else:
            out += struct.pack("<I", len(chunk) | 0x80000000)
            out += chunk
    out += b"\x00\x00\x00\x00"  # end mark
    return bytes(out)


def decompress(data: Buffer, max_size: int) -> bytes:
    """Decompress one LZ4 frame (trailing bytes after the end mark are ignored, as Kafka does)."""
    mv = memoryview(data)
    n = len(mv)
    if n < 7 or struct.unpack_from("<I", mv, 0)[0] != MAGIC:
        raise Lz4FrameError("not an LZ4 frame (bad magic number)")
    flg, bd = mv[4], mv[5]
    if flg >> 6 != 1:
        raise Lz4FrameError(f"unsupported LZ4 frame version {flg >> 6}")
    block_max = _BLOCK_SIZES.get((bd >> 4) & 7)
    if block_max is None:
        raise Lz4FrameError(f"invalid LZ4 block maximum size code {(bd >> 4) & 7}")
    pos = 6
    content_size: int | None = None
    if flg & _FLG_CONTENT_SIZE:
        if n < pos + 8:
            raise Lz4FrameError("LZ4 frame header is truncated")
        content_size = struct.unpack_from("<Q", mv, pos)[0]
        pos += 8
    if flg & _FLG_DICT_ID:
        pos += 4
    if n < pos + 1:
        raise Lz4FrameError("LZ4 frame header is truncated")
    descriptor = bytes(mv[4:pos])
    hc = mv[pos]
    if hc not in (_header_checksum(descriptor, False), _header_checksum(descriptor, True)):
        raise Lz4FrameError("LZ4 frame header checksum mismatch")
    pos += 1
    if content_size is not None and content_size > max_size:
        raise Lz4SizeError(f"LZ4 frame declares {content_size} bytes")
    if not flg & _FLG_INDEPENDENT:
        return _decompress_linked(mv, pos, descriptor, max_size)
    block_checksum = 4 if flg & _FLG_BLOCK_CHECKSUM else 0
    parts: list[bytes | memoryview] = []
    total = 0
    while True:
        if n < pos + 4:
            raise Lz4FrameError("LZ4 frame is truncated (no end mark)")
        (size,) = struct.unpack_from("<I", mv, pos)
        pos += 4
        if size == 0:
            break
        raw = size & 0x80000000
        size &= 0x7FFFFFFF
        if size > block_max or n < pos + size + block_checksum:
            raise Lz4FrameError("LZ4 block length is invalid or runs past the end")
        block = mv[pos : pos + size]
        pos += size + block_checksum
        if raw:
            parts.append(block)
            total += size
        else:
            out = bytearray(block_max)
            try:
                written = int(cramjam.lz4.decompress_block_into(block, out))
            except cramjam.DecompressionError as e:
                raise Lz4FrameError(f"corrupt LZ4 block: {e}") from None
            parts.append(memoryview(out)[:written])
            total += written
        if total > max_size:
            raise Lz4SizeError(f"LZ4 frame decompresses to more than {max_size} bytes")
    return b"".join(parts)


def _decompress_linked(mv: memoryview, pos: int, descriptor: bytes, max_size: int) -> bytes:
    # Upper bound from the block count before decompressing anything.
    n = len(mv)
    flg = descriptor[0]
    block_checksum = 4 if flg & _FLG_BLOCK_CHECKSUM else 0
    block_max = _BLOCK_SIZES[(descriptor[1] >> 4) & 7]
    blocks = 0
    p = pos
    while True:
        if n < p + 4:
            raise Lz4FrameError("LZ4 frame is truncated (no end mark)")
        (size,) = struct.unpack_from("<I", mv, p)
        p += 4
        if size == 0:
            break
        p += (size & 0x7FFFFFFF) + block_checksum
        blocks += 1
    if flg & _FLG_CONTENT_CHECKSUM:
        p += 4
    frame = bytearray(mv[:p])
    frame[pos - 1] = _header_checksum(descriptor, False)  # cramjam verifies it: give it the correct one
    try:
        out = bytes(cramjam.lz4.decompress(frame))
    except cramjam.DecompressionError as e:
        raise Lz4FrameError(f"corrupt LZ4 frame: {e}") from None
    if len(out) > max_size or len(out) > blocks * block_max:
        raise Lz4SizeError(f"LZ4 frame decompresses to more than {max_size} bytes")
    return out
