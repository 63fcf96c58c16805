"""Kafka's primitive wire types at run time: one entry per type, and what the runtime does with it.

The generator declares every primitive once (``kcodec.codegen.wire_types``: name, snippet family,
struct format and width, integer bounds, length prefix, maximum length, JSON kind, construct form).
The generated package carries that declaration as plain rows (``kcodec._generated.wire_types``) and
this module turns each row into a :class:`WireType`: the facts, plus how a value of the type is read,
written, skipped and sized on the wire, which spans the wire walk gives it, and how it converts to
and from construct containers. Everything in the runtime that handles a primitive value (the wire
walk under partial bodies and the fuzzer's layout, JSON conversion, construct conversion, hypothesis
strategies, the fuzzer's generator and mutator) looks its type up here (:func:`wire_type`) instead
of matching type names, so a type added to the generator's table reaches all of them.

How a value's bytes become a value depends only on the type's snippet family (the same families the
generator's emitters switch on): ``fixed`` (a struct format), ``uuid`` (16 bytes, a ``Uuid``),
``string`` (UTF-8 after an int16 or compact length), ``bytes`` and ``records`` (bytes after an int32
or compact length; records are read as a ``memoryview``, as the codecs give them).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kcodec._generated import wire_types as _rows
from kcodec.protocol._wire import (
    Buffer,
    bad_length,
    null_error,
    read_uvarint,
    short,
    too_long,
    uvarint_size,
    write_uvarint,
)
from kcodec.protocol.errors import DecodeError
from kcodec.protocol.values import Uuid

__all__ = [
    "INT_BOUNDS", "JSON_KINDS", "WIRE_TYPES", "WireType", "entry", "int_types", "length_kinds", "wire_type",
]

#: how the value bytes of a variable-length family become a value (the codecs' types)
_VALUE_OF: dict[str, Callable[[Any], Any]] = {
    "string": lambda data: str(data, "utf-8"),
    "bytes": bytes,
    "records": memoryview,
}
#: a fixed-width family's value from what ``struct`` unpacks, and the reverse
_FROM_RAW: dict[str, Callable[[Any], Any]] = {"uuid": Uuid}
_TO_RAW: dict[str, Callable[[Any], Any]] = {"uuid": bytes}
#: construct containers hold uuids, bytes and records as plain ``bytes``
_TO_CONTAINER: dict[str, Callable[[Any], Any]] = {"uuid": bytes, "bytes": bytes, "records": bytes}
_FROM_CONTAINER: dict[str, Callable[[Any], Any]] = {"uuid": Uuid, "bytes": bytes, "records": bytes}


def _same(value: Any) -> Any:
    return value


def _unpacker(codec: struct.Struct, convert: Callable[[Any], Any] | None) -> Callable[[Buffer, int], Any]:
    unpack_from = codec.unpack_from
    if convert is None:
        return lambda buf, pos: unpack_from(buf, pos)[0]
    return lambda buf, pos: convert(unpack_from(buf, pos)[0])


@dataclass(frozen=True, slots=True)
class WireType:
    """One primitive type (see the module docstring); built from a row of the generator's table."""

    name: str  # the spec's type name
    snippet: str  # family: "fixed", "uuid", "string", "bytes" or "records"
    json: str  # how a value looks in Kafka's JSON: bool, int, float, uuid, string or base64
    construct: str  # construct primitive (fixed width) or kcodec.protocol.construct_backend factory
    fmt: str = ""  # struct format (fixed width only)
    size: int = 0  # bytes (fixed width only)
    bounds: tuple[int, int] | None = None  # inclusive range of an integer type
    length_fmt: str = ""  # struct format of the non-compact length prefix (variable length only)
    max_length: int = 0  # the most bytes one value may have (variable length only)
    compact_limit: int | None = None  # the most a compact length may say before it is refused
    # derived from the above (attributes, not properties: the wire walk reads them per value)
    fixed_width: bool = field(init=False, compare=False)
    #: bytes of the non-compact length prefix (0 for a fixed-width type)
    length_size: int = field(init=False, compare=False)
    #: the kind of the wire walk's span holding a value's bytes: the type name for a fixed-width
    #: type, ``<name>_data`` for the bytes after a length
    span_kind: str = field(init=False, compare=False)
    #: the kind of the span holding a variable-length value's length (``<name>_length``)
    length_kind: str = field(init=False, compare=False)
    #: whether a span of the type holds an integer (integers and bools; not uuids, floats)
    holds_int: bool = field(init=False, compare=False)
    #: ``unpack(buf, pos)``: the value of a fixed-width type at ``pos`` (its bytes checked to be there)
    unpack: Callable[[Buffer, int], Any] = field(init=False, repr=False, compare=False)
    _struct: struct.Struct = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        fixed = self.size > 0
        codec = struct.Struct(">" + (self.fmt or self.length_fmt))
        derived = {
            "fixed_width": fixed,
            "length_size": 0 if fixed else codec.size,
            "span_kind": self.name if fixed else f"{self.name}_data",
            "length_kind": "" if fixed else f"{self.name}_length",
            "holds_int": self.json in ("int", "bool"),
            "unpack": _unpacker(codec, _FROM_RAW.get(self.snippet)),
            "_struct": codec,
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    # -- facts -------------------------------------------------------------------------------------

    def length_limit(self, compact: bool) -> int | None:
        """The most bytes a writer may put after a length prefix (None: no limit but the varint's)."""
        return self.compact_limit if compact else self.max_length

    def in_bounds(self, value: int) -> bool:
        return self.bounds is None or self.bounds[0] <= value <= self.bounds[1]

    # -- values ------------------------------------------------------------------------------------

    def pack(self, value: Any) -> bytes:
        """The bytes of a fixed-width value (``struct.error`` for a value that does not fit)."""
        return self._struct.pack(_TO_RAW.get(self.snippet, _same)(value))

    def value_of(self, data: Any, pos: int) -> Any:
        """The value of a variable-length type whose bytes (after the length) are ``data``, found at
        ``pos`` (for the offset of a UTF-8 error, which is a ``DecodeError`` as the codecs raise)."""
        try:
            return _VALUE_OF[self.snippet](data)
        except UnicodeDecodeError as e:
            raise DecodeError(f"invalid UTF-8 in string: {e.reason}", pos + e.start) from None

    def data_of(self, value: Any) -> bytes:
        """The bytes a variable-length value is written as (after its length)."""
        return value.encode("utf-8") if isinstance(value, str) else bytes(value)

    def to_container(self, value: Any) -> Any:
        """The value as a construct container holds it (uuids, bytes and records as ``bytes``)."""
        return _TO_CONTAINER.get(self.snippet, _same)(value)

    def from_container(self, value: Any) -> Any:
        """The value a construct container's item stands for (the codec's type)."""
        return _FROM_CONTAINER.get(self.snippet, _same)(value)

    # -- the wire ----------------------------------------------------------------------------------

    def read_length(self, buf: Buffer, pos: int, compact: bool) -> tuple[int, int]:
        """A length prefix at ``pos``: ``(length, next pos)``; -1 (or less) is a null."""
        if pos >= len(buf) or (not compact and pos + self.length_size > len(buf)):
            raise DecodeError("unexpected end of buffer", pos)
        if compact:
            raw, end = read_uvarint(buf, pos)
            return raw - 1, end
        return int(self._struct.unpack_from(buf, pos)[0]), pos + self.length_size

    def check_length(self, n: int, pos: int, compact: bool, nullable: bool) -> None:
        """Refuse a length as the codecs do: a null where none is allowed, below -1, or (compact)
        above the type's limit. ``pos``: where the value's bytes would start."""
        if n < 0:
            if not nullable:
                raise null_error(pos, n)
            if n < -1:
                raise bad_length(pos, n)
        elif compact and self.compact_limit is not None and n > self.compact_limit:
            raise bad_length(pos, n)

    def read(self, buf: Buffer, pos: int, compact: bool = False, nullable: bool = True) -> tuple[Any, int]:
        """One value at ``pos``, its length prefix included: ``(value, next pos)`` (None for a null).
        ``compact``: a flexible version's compact length. Raises the codecs' ``DecodeError``."""
        if self.fixed_width:
            if pos + self.size > len(buf):
                raise short(pos, self.size, len(buf))
            return self.unpack(buf, pos), pos + self.size
        n, pos = self.read_length(buf, pos, compact)
        self.check_length(n, pos, compact, nullable)
        if n < 0:
            return None, pos
        if pos + n > len(buf):
            raise short(pos, n, len(buf))
        return self.value_of(buf[pos : pos + n], pos), pos + n

    def skip(self, buf: Buffer, pos: int, compact: bool = False) -> int:
        """Where the value at ``pos`` ends, its bytes checked to be there but not decoded."""
        if self.fixed_width:
            if pos + self.size > len(buf):
                raise short(pos, self.size, len(buf))
            return pos + self.size
        n, pos = self.read_length(buf, pos, compact)
        self.check_length(n, pos, compact, True)
        if pos + max(n, 0) > len(buf):
            raise short(pos, n, len(buf))
        return pos + max(n, 0)

    def write(self, out: bytearray, value: Any, compact: bool = False) -> None:
        """Append ``value`` (None: a null) as the codecs write it; ``EncodeError`` for a value over
        the type's maximum length, ``struct.error`` for a fixed-width value that does not fit."""
        if self.fixed_width:
            out += self.pack(value)
            return
        data = None if value is None else self.data_of(value)
        n = -1 if data is None else len(data)
        limit = self.length_limit(compact)
        if limit is not None and n > limit:
            raise too_long(n, limit)
        if compact:
            write_uvarint(out, n + 1)
        else:
            out += self._struct.pack(n)
        if data is not None:
            out += data

    def encoded_size(self, value: Any, compact: bool = False) -> int:
        """How many bytes :meth:`write` appends for ``value``."""
        if self.fixed_width:
            return self.size
        n = -1 if value is None else len(self.data_of(value))
        return max(n, 0) + (uvarint_size(n + 1) if compact else self.length_size)


def entry(row: tuple[Any, ...], columns: tuple[str, ...]) -> WireType:
    """The entry of one row of a generated table (``columns`` names its items)."""
    values = dict(zip(columns, row, strict=True))
    bounds = values.get("bounds")
    values["bounds"] = tuple(bounds) if bounds is not None else None
    return WireType(**values)


#: every primitive type by name (the generated package's table)
WIRE_TYPES: dict[str, WireType] = {str(row[0]): entry(row, _rows.COLUMNS) for row in _rows.ROWS}


def wire_type(name: str) -> WireType | None:
    """The entry for a primitive type name (None for a struct or an unknown name)."""
    return WIRE_TYPES.get(name)


def int_types() -> Iterator[WireType]:
    """The integer types (those with bounds)."""
    return (t for t in WIRE_TYPES.values() if t.bounds is not None)


def length_kinds() -> frozenset[str]:
    """The wire walk's span kinds that hold a length or count."""
    return frozenset({"array_count", *(t.length_kind for t in WIRE_TYPES.values() if not t.fixed_width)})


#: inclusive bounds of the integer types (views of the table, for callers that want plain data)
INT_BOUNDS: dict[str, tuple[int, int]] = {t.name: t.bounds for t in int_types() if t.bounds is not None}
#: how each primitive looks in JSON
JSON_KINDS: dict[str, str] = {t.name: t.json for t in WIRE_TYPES.values()}

