"""Zigzag varints and varlongs, as Kafka's record format (magic 2) writes them (``ByteUtils``).

Readers return ``(value, next_pos)``; writers append to a ``bytearray``.  A varint is at most 5 bytes
and must fit an int32, a varlong at most 10 bytes and must fit an int64 (Kafka rejects longer ones).
"""

from __future__ import annotations

from kcodec.protocol._wire import Buffer
from kcodec.protocol.errors import DecodeError, EncodeError

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


def _read_raw(buf: Buffer, pos: int, max_bytes: int, what: str) -> tuple[int, int]:
    value = 0
    shift = 0
    start = pos
    n = len(buf)
    for _ in range(max_bytes):
        if pos >= n:
            raise DecodeError(f"{what} runs past the end of the buffer", start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
    raise DecodeError(f"{what} is longer than {max_bytes} bytes", start)


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Read a zigzag varint (int32, 1-5 bytes) at ``pos``."""
    b = buf[pos] if pos < len(buf) else 0x80
    if b < 0x80:  # fast paths: one or two bytes
        return (b >> 1) ^ -(b & 1), pos + 1
    if pos + 1 < len(buf) and buf[pos + 1] < 0x80:
        zz = (b & 0x7F) | (buf[pos + 1] << 7)
        return (zz >> 1) ^ -(zz & 1), pos + 2
    value, end = _read_raw(buf, pos, 5, "varint")
    if not INT32_MIN <= value <= INT32_MAX:
        raise DecodeError("varint does not fit an int32", pos)
    return value, end


def read_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Read a zigzag varlong (int64, 1-10 bytes) at ``pos``."""
    b = buf[pos] if pos < len(buf) else 0x80
    if b < 0x80:  # fast paths: one or two bytes
        return (b >> 1) ^ -(b & 1), pos + 1
    if pos + 1 < len(buf) and buf[pos + 1] < 0x80:
        zz = (b & 0x7F) | (buf[pos + 1] << 7)
        return (zz >> 1) ^ -(zz & 1), pos + 2
    value, end = _read_raw(buf, pos, 10, "varlong")
    if not INT64_MIN <= value <= INT64_MAX:
        raise DecodeError("varlong does not fit an int64", pos)
    return value, end


def _write_raw(out: bytearray, zz: int) -> None:
    while zz >= 0x80:
        out.append((zz & 0x7F) | 0x80)
        zz >>= 7
    out.append(zz)


def write_varint(out: bytearray, value: int) -> None:
    """Append ``value`` (an int32) as a zigzag varint."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise EncodeError(f"{value} does not fit a varint (int32)")
    _write_raw(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(out: bytearray, value: int) -> None:
    """Append ``value`` (an int64) as a zigzag varlong."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise EncodeError(f"{value} does not fit a varlong (int64)")
    _write_raw(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def varint_size(value: int) -> int:
    """Bytes ``write_varint``/``write_varlong`` use for ``value``."""
    zz = (value << 1) ^ (value >> 63)
    zz &= 0xFFFFFFFFFFFFFFFF
    size = 1
    while zz >= 0x80:
        zz >>= 7
        size += 1
    return size
