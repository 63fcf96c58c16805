"""One walk over an encoded body, driven by the runtime schema, that yields what it reads.

``walk(message_name, version, data)`` reads a body the way the generated decoders do (the fields of
each version, nullability, tagged fields, message- and field-level flexible versions) and yields, in
wire order:

- a :class:`Span` for every wire item (a fixed-width value, a length or count, a null marker, value
  bytes, a tagged-field section item), tiling the bytes it has read;
- :class:`Enter` / :class:`Leave` around every struct (the message itself included) and array;
- a :class:`Value` for every primitive value, null array or null struct, decoded into the value the
  codec gives it (``str``, ``int``, ``bool``, ``float``, ``Uuid``, ``bytes``, a ``memoryview`` of
  ``records``).

It stops with the ``DecodeError`` the codec raises for the same bytes (reason, offset, and the path
below the message, e.g. ``topics[3].partitions[0].leader_epoch``), so that a consumer holds exactly
what precedes the bad spot. Lengths and counts are checked against the bytes that remain before
anything is read for them. A known tagged field's events are yielded only once its whole value has
been read and checked against its declared size: tagged values are all or nothing.

What a primitive is on the wire (its width or length prefix, its limit, how its bytes become a
value, its span kinds) comes from the runtime's table of primitive types (``kcodec.protocol.wire_table``).

Two consumers build on it: ``kcodec.fuzz.layout`` (the spans: where every length, count and tag is)
and ``kcodec.protocol.partial`` (the values: what a body that does not decode holds up to the bad spot).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kcodec.protocol._wire import Buffer, read_uvarint
from kcodec.protocol.errors import DecodeError
from kcodec.protocol.schema import FieldInfo, MessageInfo
from kcodec.protocol.wire_table import WIRE_TYPES, WireType, length_kinds, wire_type

__all__ = [
    "LENGTH_KINDS", "TAGGED", "Enter", "Event", "Leave", "Span", "Value", "struct_error", "walk_info",
]

#: span kinds that hold a length or count (``array_count`` and each variable-length type's)
LENGTH_KINDS = length_kinds()
#: the path segment of a struct's tagged-field section (as the codec's errors name it)
TAGGED = "_tagged_fields"
_INT8 = WIRE_TYPES["int8"]  # the marker before a nullable struct
_INT32 = WIRE_TYPES["int32"]  # a non-compact array count


@dataclass(frozen=True, slots=True)
class Span:
    """One wire item: ``size`` bytes at ``offset``.

    ``kind``: a field type for fixed-width values (``int32``, ``bool``, ``uuid`` ...), a length or
    count (``LENGTH_KINDS``), ``struct_marker`` (the int8 before a nullable struct), value bytes
    (``string_data``, ``bytes_data``, ``records_data``: ``WireType.span_kind``) or a tagged-field
    section item (``tag_count``, ``tag`` (``known_tag`` for a tag the struct defines), ``tag_size``,
    ``tag_data`` for an unknown tag's bytes). ``value``: the integer it holds (-1 for null lengths,
    counts and markers), ``None`` for data, uuids and floats. ``compact``: written as an unsigned
    varint (compact lengths hold length + 1; tag items hold themselves). ``path``: the field, e.g.
    ``topics[0].partitions[2].partition_index`` (tag items: the struct's path + ``._tagged_fields``).
    """

    offset: int
    size: int
    kind: str
    path: str
    value: int | None = None
    compact: bool = False

    @property
    def end(self) -> int:
        return self.offset + self.size


@dataclass(frozen=True, slots=True)
class Enter:
    """A struct (``struct`` names it) or an array (``struct`` is None) starts at ``offset``.
    ``field`` is the field holding it (None for the message itself); ``count``: an array's length."""

    field: FieldInfo | None
    struct: str | None
    path: str
    offset: int
    count: int = 0


@dataclass(frozen=True, slots=True)
class Leave:
    """The struct or array entered last ends at ``offset``."""

    offset: int


@dataclass(frozen=True, slots=True)
class Value:
    """A primitive value of ``field`` (an array element when inside an array), or None for a null
    array, string, bytes or struct."""

    field: FieldInfo
    value: Any
    path: str


Event = Span | Enter | Leave | Value


def _join(path: str, attr: str) -> str:
    return f"{path}.{attr}" if path else attr


class _Walker:
    def __init__(self, info: MessageInfo, version: int, buf: Buffer, start: int, lazy: bool = False) -> None:
        self.info = info
        #: walk as ``decode(..., lazy=True)`` checks a body: the message's arrays of structs only
        #: skipped (``skipping`` while in one): no string decoded, every tagged field taken as unknown
        self.lazy = lazy
        self.skipping = False
        self.version = version
        self.flexible = info.is_flexible(version)
        self.buf = buf
        self.end = len(buf)
        self.pos = start

    # -- primitives --------------------------------------------------------------------------------

    def _short(self, n: int, path: str) -> DecodeError:
        return DecodeError(f"needs {n} bytes but only {max(self.end - self.pos, 0)} remain", self.pos, path)

    def _fixed(self, t: WireType, path: str) -> tuple[Span, Any]:
        width = t.size
        if self.pos + width > self.end:
            raise self._short(width, path)
        value = t.unpack(self.buf, self.pos)
        span = Span(self.pos, width, t.span_kind, path, int(value) if t.holds_int else None)
        self.pos += width
        return span, value

    def _uvarint(self, kind: str, path: str, compact_length: bool, first_indexed: bool) -> Span:
        """An unsigned varint. ``first_indexed``: the codec reads its first byte by index, so a
        missing first byte is "unexpected end of buffer" (else read_uvarint's own error)."""
        start = self.pos
        if first_indexed and start >= self.end:
            raise DecodeError("unexpected end of buffer", start, path)
        try:
            raw, pos = read_uvarint(self.buf, start)
        except DecodeError as e:
            raise DecodeError(e.reason, e.offset, path) from None
        self.pos = pos
        return Span(start, pos - start, kind, path, raw - 1 if compact_length else raw, True)

    def _length(self, kind: str, path: str, compact: bool, t: WireType | None = None) -> Span:
        """A length (of a value of type ``t``) or an array count (``t`` None): compact (flexible
        versions, an unsigned varint) or the type's int16/int32 prefix (an int32 for counts)."""
        if compact:
            return self._uvarint(kind, path, True, True)
        width = _INT32.size if t is None else t.length_size
        if self.pos + width > self.end:
            raise DecodeError("unexpected end of buffer", self.pos, path)
        n = _INT32.unpack(self.buf, self.pos) if t is None else t.read_length(self.buf, self.pos, False)[0]
        span = Span(self.pos, width, kind, path, n)
        self.pos += width
        return span

    def _data(self, kind: str, n: int, path: str) -> Iterator[Span]:
        if n > 0:
            if self.pos + n > self.end:
                raise self._short(n, path)
            yield Span(self.pos, n, kind, path)
            self.pos += n

    def _null(self, n: int, nullable: bool, path: str) -> None:
        """A negative length or count: refused as the decoders do unless it is -1 where null is allowed."""
        if not nullable:
            reason = f"null (length {n}) for a field that is not nullable at this version"
            raise DecodeError(reason, self.pos, path)
        if n < -1:
            raise DecodeError(f"invalid length {n}", self.pos, path)

    # -- values ------------------------------------------------------------------------------------

    def _compact(self, f: FieldInfo) -> bool:
        return f.compact(self.version, self.flexible)

    def value(self, f: FieldInfo, path: str) -> Iterator[Event]:
        v = self.version
        if f.is_array:
            yield from self.array(f, path)
        elif f.struct_name is not None:
            if f.is_nullable(v):
                if self.pos >= self.end:  # the decoders read the marker by index
                    raise DecodeError("unexpected end of buffer", self.pos, path)
                span, marker = self._fixed(_INT8, path)
                yield Span(span.offset, 1, "struct_marker", path, marker)
                if marker < 0:
                    yield Value(f, None, path)
                    return
            yield from self.struct(f, f.struct_name, path)
        else:
            yield from self.element(f, path, f.is_nullable(v))

    def array(self, f: FieldInfo, path: str) -> Iterator[Event]:
        count = self._length("array_count", path, self._compact(f))
        yield count
        n = count.value
        assert n is not None
        if n < 0:
            self._null(n, f.is_nullable(self.version), path)
            yield Value(f, None, path)
            return
        yield Enter(f, None, path, self.pos, n)
        t = wire_type(f.element_type)
        if t is not None and t.fixed_width:  # checked before anything is read, as the codec does
            width = t.size
            fits = (self.end - self.pos) // width
            if n > fits:
                for i in range(fits):
                    yield from self.element(f, f"{path}[{i}]", False)
                raise DecodeError(
                    f"array count {n} cannot fit: elements of {width} bytes overrun the buffer, "
                    f"{max(self.end - self.pos, 0)} bytes remain here",
                    self.pos,
                    f"{path}[{fits}]",
                )
        for i in range(n):
            if f.struct_name is not None:
                yield from self.struct(f, f.struct_name, f"{path}[{i}]")
            else:
                yield from self.element(f, f"{path}[{i}]", False)
        yield Leave(self.pos)

    def element(self, f: FieldInfo, path: str, nullable: bool) -> Iterator[Event]:
        """A primitive value (``nullable``: whether a null string or bytes is allowed here; array
        elements never are)."""
        t = wire_type(f.element_type)
        if t is None:
            raise DecodeError(f"no reader for field type {f.element_type!r}", self.pos, path)
        if t.fixed_width:
            span, value = self._fixed(t, path)
            yield span
            yield Value(f, value, path)
        else:
            yield from self.variable(f, t, path, nullable)

    def variable(self, f: FieldInfo, t: WireType, path: str, nullable: bool) -> Iterator[Event]:
        """A length-prefixed value (string, bytes, records): its length, then its bytes."""
        compact = self._compact(f)
        length = self._length(t.length_kind, path, compact, t)
        yield length
        n = length.value
        assert n is not None
        if n < 0:
            self._null(n, nullable, path)
            yield Value(f, None, path)
            return
        if compact and t.compact_limit is not None and n > t.compact_limit:
            raise DecodeError(f"invalid length {n}", self.pos, path)
        start = self.pos
        yield from self._data(t.span_kind, n, path)
        if self.skipping:
            return
        try:
            value = t.value_of(self.buf[start : start + n], start)
        except DecodeError as e:
            raise DecodeError(e.reason, e.offset, path) from None
        yield Value(f, value, path)

    # -- structs -----------------------------------------------------------------------------------

    def struct(self, f: FieldInfo | None, name: str, path: str) -> Iterator[Event]:
        yield Enter(f, name, path, self.pos)
        tagged: dict[int, FieldInfo] = {}
        for sub in self.info.fields_at(name, self.version):
            if self.flexible and sub.is_tagged(self.version) and sub.tag is not None:
                if not self.skipping:
                    tagged[sub.tag] = sub
            elif f is None and self.lazy and sub.is_array and sub.struct_name is not None:
                self.skipping = True
                yield from self.value(sub, _join(path, sub.attr))
                self.skipping = False
            else:
                yield from self.value(sub, _join(path, sub.attr))
        if self.flexible:
            yield from self.tags(tagged, path)
        yield Leave(self.pos)

    def tags(self, known: dict[int, FieldInfo], path: str) -> Iterator[Event]:
        where = _join(path, TAGGED)
        count = self._uvarint("tag_count", where, False, True)
        yield count
        prev = -1
        for _ in range(count.value or 0):
            tag = self._uvarint("tag", where, False, False)
            number = tag.value or 0
            if number <= prev:
                what = "repeats" if number == prev else "comes after"
                reason = f"tagged field {number} {what} tag {prev}: tags must be strictly ascending"
                raise DecodeError(reason, tag.offset, where)
            prev = number
            size = self._uvarint("tag_size", where, False, False)
            n = size.value or 0
            if self.pos + n > self.end:
                raise self._short(n, where)
            f = known.get(number)
            if f is None:
                yield tag
                yield size
                yield from self._data("tag_data", n, where)
                continue
            yield from self.known_tag(f, tag, size, path)

    def known_tag(self, f: FieldInfo, tag: Span, size: Span, path: str) -> Iterator[Event]:
        """A tagged field the struct defines. As the decoders do, its value is read (bounded by the
        buffer, not by its size) and must then end exactly where its declared size says; its events
        are yielded only once that holds."""
        n = size.value or 0
        start = self.pos
        here = _join(path, f.attr)
        events = list(self.value(f, here))
        if self.pos > start + n:
            raise DecodeError(f"needs {self.pos - start} bytes but only {n} remain", start, here)
        if self.pos < start + n:
            raise DecodeError(
                f"tagged field {f.name} (tag {tag.value}) ends {start + n - self.pos} bytes before its "
                f"declared size of {n}",
                self.pos,
                here,
            )
        yield Span(tag.offset, tag.size, "known_tag", tag.path, tag.value, True)
        yield size
        yield from events


def walk_info(info: MessageInfo, version: int, data: Buffer, start: int = 0) -> Iterator[Event]:
    """The events of reading the body that starts at ``start`` in ``data`` (and runs to its end) as
    ``info``'s message at ``version`` (see the module docstring); offsets count from ``data``'s start,
    as the codec's (``decode_at``) do. The walk stops at the end of the message; bytes after it are
    the caller's business."""
    buf = memoryview(data).cast("B") if isinstance(data, memoryview) else data
    return _Walker(info, version, buf, start).struct(None, info.name, "")


def struct_error(
    info: MessageInfo, version: int, struct: str, data: Buffer, start: int = 0, lazy: bool = False
) -> DecodeError | None:
    """The ``DecodeError`` reading ``struct`` (of ``info``'s message at ``version``) from ``start`` in
    ``data`` stops with, its path below the struct; None when it reads to its end. What the codecs
    raise for the same bytes: they keep no account of where they are, and on any failure the
    runtime reads the bytes again with this walk for the field, offset and reason. ``lazy``: as
    ``decode(..., lazy=True)`` checks the message (its arrays of structs skipped, not decoded)."""
    buf = memoryview(data).cast("B") if isinstance(data, memoryview) else data
    try:
        for _event in _Walker(info, version, buf, start, lazy).struct(None, struct, ""):
            pass
    except DecodeError as e:
        return e
    return None

