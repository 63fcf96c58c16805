"""Wire primitives used by the generated codecs: varints, bounds errors, tagged-field sections.

Everything here is small and called rarely (the generated code inlines the common paths).
"""

from __future__ import annotations

import struct
from typing import Any

from kcodec.protocol.chunked import CHUNK_BYTES, Buffer, ChunkedOut
from kcodec.protocol.errors import (
    DecodeError,
    EncodeError,
    NullValueError,
    UnsupportedVersionError,
    WrongTypeError,
)

__all__ = ["CHUNK_BYTES", "Buffer", "ChunkedOut"]


def byte_view(data: object) -> memoryview:
    """A flat memoryview of unsigned bytes over ``data`` (bytes, bytearray or memoryview), or
    ``WrongTypeError`` for anything else."""
    if isinstance(data, memoryview):
        return data.cast("B") if data.format != "B" or data.ndim != 1 else data
    if isinstance(data, bytes | bytearray):
        return memoryview(data)
    raise WrongTypeError(f"expected bytes, bytearray or memoryview, not {type(data).__name__}")


def tags_clear(buf: Buffer, start: int, count: int, size: int) -> bool:
    """Whether ``count`` same-width elements of ``size`` bytes from ``start`` all end with a 0 byte
    (an empty tagged-field section), so the array is exactly ``count * size`` bytes."""
    ends = memoryview(buf)[start + size - 1 : start + count * size : size]
    return bytes(ends).count(0) == count


# --- shapes: one struct call per element whose width varies only through arrays of fixed values ---

SHAPES_MAX = 64  # shapes cached per struct; elements of further shapes take the general path
_LAST: tuple[int, ...] = ()  # a reader cache's key for the shape read most recently


def shape_writer(cache: dict[tuple[int, ...], Any], key: tuple[int, ...], pattern: str) -> Any:
    """The ``struct.Struct`` writing an element whose arrays have the lengths ``key``: ``pattern``
    (e.g. ``">hiiiB%diB%diB%diB"``) filled in with them, one compact-length byte per array.
    None when a length needs a multi-byte varint or the cache already holds ``SHAPES_MAX`` shapes,
    and the generated code then writes the element field by field."""
    if len(cache) >= SHAPES_MAX or max(key) > 126:
        return None
    packer = cache[key] = struct.Struct(pattern % key)
    return packer


def shape_reader(
    cache: dict[tuple[int, ...], Any], key: tuple[int, ...], pattern: str, widths: tuple[int, ...]
) -> tuple[Any, ...] | None:
    """How to read an element of the shape ``key`` (its array lengths) with one ``unpack_from``:
    ``(unpack_from, size, start of each step after the first, count byte of each array)``, where a
    step is a run of ``widths[i]`` fixed fields or an array (width -1) and a start is the step's
    index in the unpacked tuple. The generated code checks every count byte (and the empty
    tagged-field byte) before it trusts the tuple, so a wrong guess only costs the general read.
    The shape read last is kept under the key ``()`` to start the next array with. None as for
    ``shape_writer``."""
    hit = cache.get(key)
    if hit is None:
        if len(cache) >= SHAPES_MAX or max(key) > 126:
            return None
        unpacker = struct.Struct(pattern % key)
        starts: list[int] = []
        counts: list[int] = []
        lengths = iter(key)
        index = 0
        for width in widths:
            starts.append(index)
            if width < 0:
                length = next(lengths)
                counts.append(length + 1)
                index += 1 + length
            else:
                index += width
        hit = cache[key] = (unpacker.unpack_from, unpacker.size, *starts[1:], *counts)
    cache[_LAST] = hit
    return hit


def read_uvarint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Read an unsigned varint (at most 5 bytes, < 2**32) at ``pos``; return (value, next pos)."""
    # lengths of 128 B .. 2 MiB (two or three bytes) without the loop: the common multi-byte case
    n = len(buf)
    if pos + 2 < n:
        b0 = buf[pos]
        if b0 < 0x80:
            return b0, pos + 1
        b1 = buf[pos + 1]
        if b1 < 0x80:
            return (b0 & 0x7F) | (b1 << 7), pos + 2
        b2 = buf[pos + 2]
        if b2 < 0x80:
            return (b0 & 0x7F) | ((b1 & 0x7F) << 7) | (b2 << 14), pos + 3
    value = 0
    shift = 0
    start = pos
    while True:
        if pos >= n:
            raise DecodeError("varint runs past the end of the buffer", start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value > 0xFFFFFFFF:  # a fifth byte above 0x0F: bits Kafka's reader would drop
                raise DecodeError(f"unsigned varint {value} does not fit 32 bits", start)
            return value, pos
        shift += 7
        if shift > 28:
            raise DecodeError("varint is longer than 5 bytes", start)


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0 or value > 0xFFFFFFFF:
        raise EncodeError(f"length {value} does not fit an unsigned varint")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def uvarint_size(value: int) -> int:
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def short(pos: int, need: int, blen: int) -> DecodeError:
    return DecodeError(f"needs {need} bytes but only {max(blen - pos, 0)} remain", pos)


def tag_order(pos: int, tag: int, prev: int) -> DecodeError:
    """A tagged field whose tag is not above the previous one's: KIP-482 sections are strictly
    ascending, and kcodec's encoder (like Kafka's) writes them only so, so such a section is refused
    rather than accepted in a form that could not be written back."""
    what = "repeats" if tag == prev else "comes after"
    return DecodeError(f"tagged field {tag} {what} tag {prev}: tags must be strictly ascending", pos)


def tag_size(pos: int, end: int, size: int, name: str, tag: int) -> DecodeError:
    """A known tagged field whose value does not end where its declared size says (``pos`` is where
    the value ended, ``end`` where the size put it).

    Running past the size is a value cut short by it. Ending before it would leave bytes that kcodec
    would drop on re-encoding, and that Kafka's reader (which reads a known tag's value without
    bounding it by the size) would take for the next tag: refused, naming the field."""
    if pos > end:
        return short(end - size, pos - end + size, end)
    return DecodeError(
        f"tagged field {name} (tag {tag}) ends {end - pos} bytes before its declared size of {size}", pos
    )


def bad_count(pos: int, count: int, size: int, blen: int) -> DecodeError:
    """An array count that the remaining bytes cannot hold (checked before anything is allocated)."""
    return DecodeError(
        f"array count {count} cannot fit: elements of {size} bytes overrun the buffer, "
        f"{max(blen - pos, 0)} bytes remain here",
        pos,
    )


def null_error(pos: int, length: int) -> DecodeError:
    return DecodeError(f"null (length {length}) for a field that is not nullable at this version", pos)


def bad_length(pos: int, length: int) -> DecodeError:
    return DecodeError(f"invalid length {length}", pos)


def encode_failure(exc: BaseException, segment: Any, obj: Any, index: int) -> Exception:
    """Turn an exception raised while writing one field into an ``EncodeError`` naming it."""
    if isinstance(segment, tuple):  # a run: find the value struct refused
        for attr, _size, fmt in segment:
            try:
                struct.pack(">" + fmt, getattr(obj, attr))
            except struct.error as e:
                value = getattr(obj, attr)
                reason = "None for a field that is not nullable" if value is None else f"{value!r}: {e}"
                err: EncodeError = (NullValueError if value is None else EncodeError)(reason)
                err._segments.append(attr)
                return err
            except AttributeError:
                pass
        segment = segment[0][0]
    if isinstance(segment, str) and segment.endswith("[]"):
        segment = f"{segment[:-2]}[{index}]"
    if isinstance(exc, EncodeError):
        exc._segments.append(segment)
        return exc
    if isinstance(exc, UnsupportedVersionError):
        return exc
    if isinstance(exc, AttributeError) and "NoneType" in str(exc):
        err = NullValueError("None for a field that is not nullable at this version")
    else:
        err = EncodeError(f"{type(exc).__name__}: {exc}")
    err._segments.append(segment)
    return err


def null_value() -> NullValueError:
    return NullValueError("None for a field that is not nullable at this version")


def too_long(n: int, limit: int) -> EncodeError:
    return EncodeError(f"{n} bytes exceed the {limit}-byte limit of this length prefix")


def unsupported(field: str, version: int) -> UnsupportedVersionError:
    """Kafka's refusal to drop a non-default value; ``version`` -1 is filled in by ``kcodec.encode``."""
    err = UnsupportedVersionError(f"Attempted to write a non-default {field} at version {version}")
    err.field = field  # type: ignore[attr-defined]
    return err


def tagged_unsupported() -> UnsupportedVersionError:
    """Unknown tagged fields set on a struct at a version without tagged fields (Kafka refuses too)."""
    err = UnsupportedVersionError("Tagged fields were set, but this version does not support them.")
    err.tagged = True  # type: ignore[attr-defined]
    return err


def write_tagged(
    out: bytearray, known: list[tuple[int, bytes | bytearray]], unknown: Any, known_tags: tuple[int, ...]
) -> None:
    """Write a tagged-field section: known and unknown fields merged in ascending tag order.

    Unknown tags must be ascending, unique and not tags the struct defines at this version (Kafka's
    RawTaggedFieldWriter rules); anything else would write bytes that decode to a different value.
    """
    fields = list(known)
    if unknown:
        prev = -1
        for tag, data in unknown:
            if not isinstance(tag, int) or tag < 0 or tag > 0xFFFFFFFF:
                raise EncodeError(f"invalid unknown tag {tag!r}")
            if tag <= prev:
                raise EncodeError(f"unknown tagged fields must be in ascending tag order: {tag} after {prev}")
            if tag in known_tags:
                raise EncodeError(f"unknown tagged field uses tag {tag}, which this version defines")
            if not isinstance(data, bytes | bytearray | memoryview):
                raise EncodeError(f"unknown tagged field {tag} needs bytes, not {type(data).__name__}")
            prev = tag
        fields.extend(unknown)
        fields.sort(key=lambda t: t[0])
    write_uvarint(out, len(fields))
    for tag, data in fields:
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data
