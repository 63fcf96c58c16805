"""The LZ4 frame format as Kafka uses it (``KafkaLZ4BlockOutputStream`` / ``KafkaLZ4BlockInputStream``).

Writing: independent 64 KiB blocks, no block/content checksums, no content size (Kafka's layout);
blocks that do not shrink are stored raw.  For magic 0 the header checksum is computed Kafka's broken
pre-0.10 way (over the magic number too, KAFKA-3160), as Kafka itself still writes it for magic 0.

Reading verifies every checksum the frame's flags announce (xxHash32, seed 0):

* the header checksum (second byte of xxh32 over the frame descriptor).  For magic 0 and 1 the
  KAFKA-3160 value (xxh32 over magic number + descriptor, as Kafka < 0.10 and old clients wrote it)
  is accepted too; magic 2 needs the correct one.  (Kafka's own reader skips this check for magic 0
  and checks it strictly from magic 1.)
* block checksums (over each block's stored bytes) and the content checksum (over the whole
  decompressed content), which Kafka's reader skips: a mismatch here means the producer's bytes are
  corrupt even if the batch CRC (computed over them) matches.
* the content size, when present.

Frames with independent blocks are decompressed block by block (so the size limit stops a bomb
early); frames with linked blocks (e.g. python-lz4's default) go to cramjam's frame decoder whole
(after our own checks, with the checksum flags removed) and are checked afterwards.  Errors are
``Lz4FrameError`` with ``position``: the byte offset in the frame of the faulty part.
"""

from __future__ import annotations

import struct

import cramjam
from xxhash import xxh32_intdigest

from kcodec.protocol._wire import Buffer

MAGIC = 0x184D2204
_MAGIC_BYTES = struct.pack("<I", MAGIC)
_BLOCK_SIZES = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}
_WRITE_BLOCK_SIZE = 64 * 1024
_FLG_INDEPENDENT = 0x20
_FLG_BLOCK_CHECKSUM = 0x10
_FLG_CONTENT_SIZE = 0x08
_FLG_CONTENT_CHECKSUM = 0x04
_FLG_DICT_ID = 0x01
_U32 = struct.Struct("<I")


class Lz4FrameError(Exception):
    """Malformed LZ4 frame (converted to a DecodeError by the caller).

    ``position`` is the byte offset in the frame where the problem is (0 if not more precise).
    """

    def __init__(self, message: str, position: int = 0) -> None:
        super().__init__(message)
        self.position = position


class Lz4SizeError(Lz4FrameError):
    """The frame decompresses to more than the allowed size."""


class Lz4ChecksumError(Lz4FrameError):
    """A header, block or content checksum does not match."""


def xxh32(data: Buffer, seed: int = 0) -> int:
    """XXH32 of ``data`` (the ``xxhash`` package)."""
    return xxh32_intdigest(data, seed)


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


def _checksum_mismatch(what: str, stored: int, computed: int, position: int) -> Lz4ChecksumError:
    return Lz4ChecksumError(
        f"LZ4 {what} checksum mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})", position
    )


def decompress(data: Buffer, max_size: int, *, magic: int = 2) -> bytearray:
    """Decompress one LZ4 frame of a batch of ``magic`` (0/1: the KAFKA-3160 header checksum is
    accepted too).  Bytes after the end mark (and content checksum) are ignored, as Kafka does."""
    mv = memoryview(data)
    n = len(mv)
    if n < 7 or _U32.unpack_from(mv, 0)[0] != MAGIC:
        raise Lz4FrameError("not an LZ4 frame (bad magic number)")
    flg, bd = mv[4], mv[5]
    if flg >> 6 != 1:
        raise Lz4FrameError(f"unsupported LZ4 frame version {flg >> 6}", 4)
    block_max = _BLOCK_SIZES.get((bd >> 4) & 7)
    if block_max is None:
        raise Lz4FrameError(f"invalid LZ4 block maximum size code {(bd >> 4) & 7}", 5)
    pos = 6
    content_size: int | None = None
    if flg & _FLG_CONTENT_SIZE:
        if n < pos + 8:
            raise Lz4FrameError("LZ4 frame header is truncated", n)
        content_size = struct.unpack_from("<Q", mv, pos)[0]
        pos += 8
    if flg & _FLG_DICT_ID:
        pos += 4
    if n < pos + 1:
        raise Lz4FrameError("LZ4 frame header is truncated", n)
    descriptor = bytes(mv[4:pos])
    hc = mv[pos]
    correct = _header_checksum(descriptor, False)
    if hc != correct and not (magic < 2 and hc == _header_checksum(descriptor, True)):
        raise Lz4ChecksumError(
            f"LZ4 header checksum mismatch (stored 0x{hc:02x}, computed 0x{correct:02x})", pos
        )
    pos += 1
    if content_size is not None and content_size > max_size:
        raise Lz4SizeError(f"LZ4 frame declares {content_size} bytes", 6)
    if not flg & _FLG_INDEPENDENT:
        out = _decompress_linked(mv, pos, flg, block_max, max_size)
    else:
        out, pos = _decompress_independent(mv, pos, flg, block_max, max_size)
        if flg & _FLG_CONTENT_CHECKSUM:
            _check_content(out, mv, pos)
    if content_size is not None and len(out) != content_size:
        raise Lz4FrameError(f"LZ4 frame declares {content_size} bytes but holds {len(out)}", 6)
    return out


def _check_content(out: Buffer, mv: memoryview, pos: int) -> None:
    """Verify the content checksum stored at ``pos`` (just after the end mark)."""
    if len(mv) < pos + 4:
        raise Lz4FrameError("LZ4 frame is truncated (no content checksum)", len(mv))
    (stored,) = _U32.unpack_from(mv, pos)
    computed = xxh32(out)
    if stored != computed:
        raise _checksum_mismatch("content", stored, computed, pos)


#: LZ4 writes at most 255 bytes per input byte (a run of 255-valued length bytes) plus a short tail
LZ4_MAX_RATIO = 255
_MIB = 1 << 20


def _block_room(size: int, block_max: int, left: int) -> int:
    """Output room for one compressed block of ``size`` bytes: no more than the frame's block maximum,
    the size limit left, LZ4's maximal expansion, and, until the block proves it needs more,
    8·size + 1 MiB (the frame's block-size code alone is not trusted)."""
    return max(0, min(block_max, left + 1, LZ4_MAX_RATIO * size + 64, 8 * size + _MIB))


def _block_into(block: memoryview, room: int, cap: int, limited: bool, pos: int) -> tuple[bytearray, int]:
    """Decompress one block into a buffer of ``room`` bytes, or of ``cap`` once it has filled that
    (``limited``: ``cap`` is what the size limit leaves, so not fitting there means too large)."""
    while True:
        out = bytearray(room)
        try:
            return out, int(cramjam.lz4.decompress_block_into(block, out))
        except cramjam.DecompressionError as e:
            del out
            if room >= cap:
                if limited:
                    raise Lz4SizeError(
                        f"LZ4 frame decompresses to more than the limit (or its block is corrupt: {e})", pos
                    ) from None
                raise Lz4FrameError(f"corrupt LZ4 block: {e}", pos) from None
            room = cap  # cramjam cannot tell "too small" from corrupt: one retry with all the room


def _decompress_independent(
    mv: memoryview, pos: int, flg: int, block_max: int, max_size: int
) -> tuple[bytearray, int]:
    """Decompress the blocks from ``pos``; returns the content and the position after the end mark."""
    n = len(mv)
    block_checksum = bool(flg & _FLG_BLOCK_CHECKSUM)
    tail = 4 if block_checksum else 0
    content = bytearray()
    while True:
        if n < pos + 4:
            raise Lz4FrameError("LZ4 frame is truncated (no end mark)", n)
        (size,) = _U32.unpack_from(mv, pos)
        if size == 0:
            return content, pos + 4
        raw = size & 0x80000000
        size &= 0x7FFFFFFF
        if size > block_max or n < pos + 4 + size + tail:
            raise Lz4FrameError("LZ4 block length is invalid or runs past the end", pos)
        block = mv[pos + 4 : pos + 4 + size]
        if block_checksum:
            (stored,) = _U32.unpack_from(mv, pos + 4 + size)
            computed = xxh32(block)
            if stored != computed:
                raise _checksum_mismatch("block", stored, computed, pos + 4 + size)
        left = max_size - len(content)
        if raw:
            if size > left:
                raise Lz4SizeError(f"LZ4 frame decompresses to more than {max_size} bytes", pos)
            content += block
        else:
            natural = min(block_max, LZ4_MAX_RATIO * size + 64)
            cap = max(0, min(natural, left + 1))
            out, written = _block_into(block, _block_room(size, block_max, left), cap, cap < natural, pos)
            if written > left:
                raise Lz4SizeError(f"LZ4 frame decompresses to more than {max_size} bytes", pos)
            content += memoryview(out)[:written]
            del out
        pos += 4 + size + tail


def _decompress_linked(mv: memoryview, pos: int, flg: int, block_max: int, max_size: int) -> bytearray:
    """Linked blocks: check sizes and block checksums, then let cramjam decode a checksum-free copy."""
    n = len(mv)
    block_checksum = bool(flg & _FLG_BLOCK_CHECKSUM)
    tail = 4 if block_checksum else 0
    # The copy for cramjam: same descriptor without the checksum flags, blocks without checksums.
    descriptor = bytes((flg & ~(_FLG_BLOCK_CHECKSUM | _FLG_CONTENT_CHECKSUM),)) + bytes(mv[5 : pos - 1])
    frame = bytearray(_MAGIC_BYTES)
    frame += descriptor
    frame.append(_header_checksum(descriptor, False))
    blocks = 0
    while True:
        if n < pos + 4:
            raise Lz4FrameError("LZ4 frame is truncated (no end mark)", n)
        (size,) = _U32.unpack_from(mv, pos)
        if size == 0:
            break
        stored_size = size & 0x7FFFFFFF
        if stored_size > block_max or n < pos + 4 + stored_size + tail:
            raise Lz4FrameError("LZ4 block length is invalid or runs past the end", pos)
        if block_checksum:
            (stored,) = _U32.unpack_from(mv, pos + 4 + stored_size)
            computed = xxh32(mv[pos + 4 : pos + 4 + stored_size])
            if stored != computed:
                raise _checksum_mismatch("block", stored, computed, pos + 4 + stored_size)
        frame += mv[pos : pos + 4 + stored_size]
        pos += 4 + stored_size + tail
        blocks += 1
    frame += b"\x00\x00\x00\x00"
    # Decompress into a bounded buffer (never more than max_size, nor more than the blocks can hold),
    # grown from a guess, so that a bomb cannot allocate past the limit.
    cap = min(max_size, blocks * block_max, LZ4_MAX_RATIO * len(frame) + 64)
    size = min(cap, 8 * len(frame) + _MIB)
    while True:
        buf = bytearray(size)
        try:
            written = int(cramjam.lz4.decompress_into(frame, buf))
        except cramjam.DecompressionError as e:
            del buf
            if "failed to write whole buffer" not in str(e):
                raise Lz4FrameError(f"corrupt LZ4 frame: {e}") from None
            if size >= cap:
                if cap == max_size:
                    raise Lz4SizeError(f"LZ4 frame decompresses to more than {max_size} bytes") from None
                raise Lz4FrameError("LZ4 frame holds more than its blocks can") from None
            size = min(cap, size * 4)  # the data has filled `size` bytes: it may grow
            continue
        del buf[written:]
        out = buf
        break
    if flg & _FLG_CONTENT_CHECKSUM:
        _check_content(out, mv, pos + 4)
    return out
