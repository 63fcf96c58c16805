"""Runtime helpers of the generated codecs: the repeated mechanics a generated function calls instead
of printing them again (tagged-field sections; strings and bytes of the messages outside the hot set,
whose codecs trade a call per value for a line per value).

Every helper raises the ``DecodeError`` the inline code it replaces raised, at the same offset and
without a path: the generated function's own error handling adds the field, exactly as before.
Encoders' helpers raise what the inline code raised, for the generated function to name the field.
Callers of the tagged-field helpers test the common case inline first (an empty section is one 0
byte), so those run only for the rarer case.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from types import FunctionType
from typing import TYPE_CHECKING, Any

from kcodec.protocol._wire import (
    Buffer,
    bad_length,
    null_error,
    null_value,
    read_uvarint,
    short,
    tag_order,
    too_long,
)
from kcodec.protocol._wire import write_uvarint as _wuv
from kcodec.protocol.blobs import blob
from kcodec.protocol.chunked import CHUNK_BYTES, ChunkedOut
from kcodec.protocol.errors import DecodeError

if TYPE_CHECKING:
    from mypy_extensions import i64 as i64
else:  # the compiled codecs' byte offsets: native integers to mypyc (this module is never compiled), ints
    # to a compiled codec's source run interpreted
    i64 = int

__all__ = [
    "at_version",
    "read_blob",
    "read_count",
    "read_nullable_blob",
    "read_nullable_string",
    "read_string",
    "read_tags",
    "skip_blob",
    "skip_tags",
    "write_blob",
    "write_length",
    "write_string",
]

_LENGTH = {2: struct.Struct(">h"), 4: struct.Struct(">i")}
_I32 = _LENGTH[4].unpack_from
_MAX_STRING = 32767  # compact string lengths above it are refused (Kafka's readString)


def at_version(fn: Callable[..., Any], *last: object) -> Callable[..., Any]:
    """A versioned module's root decoder or encoder (``kcodec.codegen.vmerge``) at one version: the same
    code, its last parameters (the version; decoders: the lazy flag) given by ``last`` as defaults.
    A call of it is a plain call of a Python function, where ``functools.partial`` would add a layer of
    C calls to every decoded or encoded body."""
    bound = FunctionType(fn.__code__, fn.__globals__, fn.__name__, last, fn.__closure__)
    bound.__qualname__ = fn.__qualname__
    bound.__doc__ = fn.__doc__
    return bound


def _end_of_buffer(pos: int) -> DecodeError:
    return DecodeError("unexpected end of buffer", pos)


def read_tags(buf: Buffer, pos: int, blen: int) -> tuple[list[tuple[int, bytes]] | None, int]:
    """Read a tagged-field section of a struct that defines no tagged fields (KIP-482): every field
    kept raw as ``(tag, bytes)``, in the strictly ascending order the section must have. Returns
    (the fields, or None for an empty section; the position after the section)."""
    if pos >= len(buf):
        raise _end_of_buffer(pos)
    count, pos = read_uvarint(buf, pos)
    if not count:
        return None, pos
    unknown: list[tuple[int, bytes]] = []
    prev = -1
    for _ in range(count):
        start = pos
        tag, pos = read_uvarint(buf, pos)
        if tag <= prev:
            raise tag_order(start, tag, prev)
        prev = tag
        size, pos = read_uvarint(buf, pos)
        end = pos + size
        if end > blen:
            raise short(pos, size, blen)
        unknown.append((tag, bytes(buf[pos:end])))
        pos = end
    return unknown, pos


def skip_tags(buf: Buffer, pos: int, blen: int) -> int:
    """Check a tagged-field section as ``read_tags`` does, keeping nothing; return the position after it."""
    if pos >= len(buf):
        raise _end_of_buffer(pos)
    count, pos = read_uvarint(buf, pos)
    prev = -1
    for _ in range(count):
        start = pos
        tag, pos = read_uvarint(buf, pos)
        if tag <= prev:
            raise tag_order(start, tag, prev)
        prev = tag
        size, pos = read_uvarint(buf, pos)
        end = pos + size
        if end > blen:
            raise short(pos, size, blen)
        pos = end
    return pos


def _length(buf: Buffer, pos: int, width: int) -> tuple[int, int]:
    """A length prefix: an unsigned varint of n + 1 (``width`` 0) or an int16/int32. Returns (n, the
    position after the prefix); -1 is null."""
    if width:
        try:
            return _LENGTH[width].unpack_from(buf, pos)[0], pos + width
        except struct.error:
            raise _end_of_buffer(pos) from None
    if pos >= len(buf):
        raise _end_of_buffer(pos)
    n, pos = read_uvarint(buf, pos)
    return n - 1, pos


# The readers below first try the common case in place (a one-byte compact length, or a short int16
# string length, whose value fits the body and, for text, is valid UTF-8): one call per value, where
# the general path (which raises every error) takes five. Anything else goes the general way.


def read_count(buf: Buffer, pos: int, blen: int, width: int, nullable: bool) -> tuple[int, int]:
    """An array's count (``width``: 0 compact, 4 int32); returns (it, or -1 for null; next pos)."""
    if not width:
        if pos < len(buf):
            n = buf[pos] - 1
            if 0 <= n < 127:
                return n, pos + 1
    elif width == 4 and pos + 4 <= len(buf):
        n = _I32(buf, pos)[0]
        if n >= 0:
            return n, pos + 4
    return _count(buf, pos, width, nullable)


def _count(buf: Buffer, pos: int, width: int, nullable: bool) -> tuple[int, int]:
    n, pos = _length(buf, pos, width)
    if n < 0:
        if not nullable:
            raise null_error(pos, n)
        if width and n < -1:
            raise bad_length(pos, n)
        return -1, pos
    return n, pos


def _short_text(buf: Buffer, pos: int, blen: int, width: int) -> tuple[str, int] | None:
    """A string whose length prefix at ``pos`` is short (a one-byte compact length, or an int16 below
    128), whose bytes fit before ``blen`` and are valid UTF-8, and the position after it; None for
    anything else (null included), which the general path reads."""
    if pos + 1 < blen:
        if not width:
            n = buf[pos] - 1  # (a one-byte varint: below 128; 0 is null)
            start = pos + 1
            if not 0 <= n < 127:
                return None
        elif width == 2 and not buf[pos] and buf[pos + 1] < 128:
            n = buf[pos + 1]
            start = pos + 2
        else:
            return None
        if start + n <= blen:
            try:
                return str(buf[start : start + n], "utf-8"), start + n
            except UnicodeDecodeError:
                return None  # (the general path names it)
    return None


def _span(buf: Buffer, pos: int, blen: int, width: int, nullable: bool, string: bool) -> tuple[int, int]:
    """The value bytes after a length prefix at ``pos``: (their start, their length; -1 for null)."""
    n, pos = _count(buf, pos, width, nullable)
    if n < 0:
        return pos, -1
    if string and not width and n > _MAX_STRING:
        raise bad_length(pos, n)
    if pos + n > blen:
        raise short(pos, n, blen)
    return pos, n


def _text(buf: Buffer, pos: int, n: int) -> str:
    try:
        return str(buf[pos : pos + n], "utf-8")
    except UnicodeDecodeError as e:
        raise DecodeError(f"invalid UTF-8 in string: {e.reason}", pos + e.start) from None


def read_string(buf: Buffer, pos: int, blen: int, width: int) -> tuple[str, int]:
    """A string that is not nullable, with its length prefix (``width``: 0 compact, 2 int16); returns
    (it, the position after it)."""
    found = _short_text(buf, pos, blen, width)
    if found is not None:
        return found
    pos, n = _span(buf, pos, blen, width, False, True)
    return _text(buf, pos, n), pos + n


def read_nullable_string(buf: Buffer, pos: int, blen: int, width: int) -> tuple[str | None, int]:
    """A nullable string, as ``read_string``; None for null."""
    found = _short_text(buf, pos, blen, width)
    if found is not None:
        return found
    if not width and pos < len(buf) and buf[pos] == 0:
        return None, pos + 1
    pos, n = _span(buf, pos, blen, width, True, True)
    return (None, pos) if n < 0 else (_text(buf, pos, n), pos + n)


def _short_blob(buf: Buffer, pos: int, blen: int, width: int) -> tuple[bytes | None, int] | None:
    """Bytes whose length prefix at ``pos`` is a one-byte compact length or an int32 (``width`` 0 or
    4) and fit before ``blen``, and the position after them; ``(None, position)`` for a null prefix;
    None for anything else, which the general path reads."""
    if not width and pos < len(buf):
        n = buf[pos] - 1  # (a one-byte varint: below 128)
        start = pos + 1
        if n >= 127:
            return None
    elif width == 4 and pos + 4 <= len(buf):
        n = _I32(buf, pos)[0]
        start = pos + 4
    else:
        return None
    if n == -1:
        return None, start
    if n >= 0 and start + n <= blen:
        return bytes(buf[start : start + n]), start + n
    return None


def read_blob(buf: Buffer, pos: int, blen: int, width: int) -> tuple[bytes, int]:
    """Bytes that are not nullable, with their length prefix (``width``: 0 compact, 4 int32)."""
    found = _short_blob(buf, pos, blen, width)
    if found is not None and found[0] is not None:
        return found[0], found[1]
    pos, n = _span(buf, pos, blen, width, False, False)
    return bytes(buf[pos : pos + n]), pos + n


def read_nullable_blob(buf: Buffer, pos: int, blen: int, width: int) -> tuple[bytes | None, int]:
    """Nullable bytes, as ``read_blob``; None for null."""
    found = _short_blob(buf, pos, blen, width)
    if found is not None:
        return found
    pos, n = _span(buf, pos, blen, width, True, False)
    return (None, pos) if n < 0 else (bytes(buf[pos : pos + n]), pos + n)


def skip_blob(buf: Buffer, pos: int, blen: int, width: int, nullable: bool, string: bool) -> int:
    """Check a string or bytes value as ``read_string``/``read_blob`` do; return the position after it."""
    pos, n = _span(buf, pos, blen, width, nullable, string)
    return pos if n < 0 else pos + n


def write_length(out: bytearray, n: int, width: int, limit: int | None) -> None:
    """A length or count prefix of ``n`` (``width``: 0 compact, 2 int16, 4 int32); above ``limit``
    (if any) refused."""
    if limit is not None and n > limit:
        raise too_long(n, limit)
    if width:
        out += _LENGTH[width].pack(n)
    elif n < 127:
        out.append(n + 1)
    else:
        _wuv(out, n + 1)


def _write_null(out: bytearray, width: int, nullable: bool) -> None:
    if not nullable:
        raise null_value()
    out += b"\xff" * width if width else b"\x00"


def write_string(out: bytearray, value: str | None, width: int, nullable: bool, limit: int | None) -> None:
    """A string with its length prefix (``width``: 0 compact, 2 int16), or null."""
    if value is None:
        _write_null(out, width, nullable)
        return
    data = value.encode()
    write_length(out, len(data), width, limit)
    out += data


def write_blob(out: bytearray, value: Buffer | None, width: int, nullable: bool, limit: int | None) -> None:
    """Bytes with their length prefix (``width``: 0 compact, 4 int32), or null; a large value is kept
    aside uncopied when ``out`` is a ``ChunkedOut``."""
    if value is None:
        _write_null(out, width, nullable)
        return
    write_length(out, len(value), width, limit)
    if type(out) is ChunkedOut and len(value) >= CHUNK_BYTES:
        blob(out, value)
    else:
        out += value
