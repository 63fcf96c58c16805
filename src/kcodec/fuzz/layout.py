"""Where things are in an encoded body: every length, count, varint, null marker, tag and value.

``layout(message_name, version, data)`` walks an encoding with the message's runtime description
(``kcodec.codec.message_info``: fields per version, nullability, tagged fields, flexible versions)
and returns one ``Span`` per wire item, in order. The spans tile the body exactly: every byte belongs
to one span. The mutator uses them to aim at lengths, counts and markers instead of random bytes.

The walk checks bounds as it goes (``DecodeError`` when the bytes do not fit), but it is a map, not
a codec: values are not built, only located.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kcodec._wire import Buffer, read_uvarint
from kcodec.codec import message_info
from kcodec.errors import DecodeError
from kcodec.schema import FieldInfo, MessageInfo

__all__ = ["FIXED_WIDTH", "LENGTH_KINDS", "Span", "layout"]

#: fixed-width field types: (struct format, width)
FIXED_WIDTH: dict[str, tuple[str, int]] = {
    "int8": (">b", 1),
    "bool": (">b", 1),
    "int16": (">h", 2),
    "uint16": (">H", 2),
    "int32": (">i", 4),
    "uint32": (">I", 4),
    "int64": (">q", 8),
    "float64": (">d", 8),
    "uuid": ("16s", 16),
}
#: span kinds that hold a length or count (what length mutations aim at)
LENGTH_KINDS = frozenset({"string_length", "bytes_length", "records_length", "array_count"})


@dataclass(frozen=True, slots=True)
class Span:
    """One wire item: ``size`` bytes at ``offset``.

    ``kind``: a field type for fixed-width values (``int32``, ``bool``, ``uuid`` ...), a length or
    count (``LENGTH_KINDS``), ``struct_marker`` (the int8 before a nullable struct), value bytes
    (``string_data``, ``bytes_data``, ``records_data``) or a tagged-field section item (``tag_count``,
    ``tag`` (``known_tag`` for a tag the struct defines), ``tag_size``, ``tag_data`` for an unknown
    tag's bytes, ``tag_slack`` for bytes a known tag's size declares beyond its value, which the
    decoders refuse). ``value``: the integer it holds (-1 for null lengths, counts and markers),
    ``None`` for data. ``compact``: written as an unsigned varint (compact lengths hold length + 1;
    tag items hold themselves). ``path``: the field, e.g. ``topics[0].partitions[2].partition_index``
    (tag items: the struct's path + ``._tagged``).
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


class _Walker:
    def __init__(self, info: MessageInfo, version: int, buf: Buffer) -> None:
        self.info = info
        self.version = version
        self.flexible = info.is_flexible(version)
        self.buf = buf
        self.end = len(buf)
        self.pos = 0
        self.spans: list[Span] = []

    # -- primitives --------------------------------------------------------------------------------

    def _need(self, n: int, path: str) -> None:
        if n < 0 or self.pos + n > self.end:
            remain = max(self.end - self.pos, 0)
            raise DecodeError(f"needs {n} bytes but only {remain} remain", self.pos, path)

    def _fixed(self, kind: str, path: str) -> int | None:
        fmt, width = FIXED_WIDTH[kind]
        self._need(width, path)
        value = None if kind in ("uuid", "float64") else struct.unpack_from(fmt, self.buf, self.pos)[0]
        self.spans.append(Span(self.pos, width, kind, path, value))
        self.pos += width
        return value

    def _uvarint(self, kind: str, path: str, compact_length: bool) -> int:
        start = self.pos
        try:
            raw, self.pos = read_uvarint(self.buf, start)
        except DecodeError as e:
            raise DecodeError(e.reason, e.offset, path) from None
        if self.pos > self.end:
            raise DecodeError("varint runs past the end of the section", start, path)
        value = raw - 1 if compact_length else raw
        self.spans.append(Span(start, self.pos - start, kind, path, value, True))
        return value

    def _length(self, kind: str, path: str, width: int, compact: bool) -> int:
        """A length or count: compact (flexible versions) or int16/int32."""
        if compact:
            return self._uvarint(kind, path, True)
        fmt = ">h" if width == 2 else ">i"
        self._need(width, path)
        (n,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.spans.append(Span(self.pos, width, kind, path, n))
        self.pos += width
        return int(n)

    def _data(self, kind: str, n: int, path: str) -> None:
        if n < -1:
            raise DecodeError(f"invalid length {n}", self.pos, path)
        if n > 0:
            self._need(n, path)
            self.spans.append(Span(self.pos, n, kind, path))
            self.pos += n

    # -- structure ---------------------------------------------------------------------------------

    def _compact(self, f: FieldInfo) -> bool:
        return f.compact(self.version, self.flexible)

    def value(self, f: FieldInfo, path: str) -> None:
        v = self.version
        if f.is_array:
            n = self._length("array_count", path, 4, self._compact(f))
            if n < -1:
                raise DecodeError(f"invalid count {n}", self.pos, path)
            for i in range(max(n, 0)):
                self.element(f, f"{path}[{i}]")
            return
        if f.struct_name is not None:
            if f.is_nullable(v):
                marker = self._fixed("int8", path)
                self.spans[-1] = Span(self.spans[-1].offset, 1, "struct_marker", path, marker)
                if marker is not None and marker < 0:
                    return
            self.struct(f.struct_name, path)
            return
        self.element(f, path)

    def element(self, f: FieldInfo, path: str) -> None:
        kind = f.element_type
        if f.struct_name is not None:
            self.struct(f.struct_name, path)
        elif kind in FIXED_WIDTH:
            self._fixed(kind, path)
        elif kind == "string":
            self._data("string_data", self._length("string_length", path, 2, self._compact(f)), path)
        elif kind in ("bytes", "records"):
            self._data(f"{kind}_data", self._length(f"{kind}_length", path, 4, self._compact(f)), path)
        else:
            raise DecodeError(f"no layout for field type {kind!r}", self.pos, path)

    def struct(self, name: str, path: str) -> None:
        tagged: dict[int, FieldInfo] = {}
        for f in self.info.fields_at(name, self.version):
            if self.flexible and f.is_tagged(self.version) and f.tag is not None:
                tagged[f.tag] = f
            else:
                self.value(f, _join(path, f.attr))
        if self.flexible:
            self.tags(tagged, path)

    def tags(self, known: dict[int, FieldInfo], path: str) -> None:
        where = _join(path, "_tagged")
        count = self._uvarint("tag_count", where, False)
        for _ in range(count):
            tag = self._uvarint("tag", where, False)
            size = self._uvarint("tag_size", where, False)
            start = self.pos
            self._need(size, where)
            f = known.get(tag)
            if f is not None:  # a tag this struct defines: its span says so
                s = self.spans[-2]
                self.spans[-2] = Span(s.offset, s.size, "known_tag", where, s.value, True)
            if f is None:
                self._data("tag_data", size, where)
                continue
            outer, self.end = self.end, start + size
            try:
                self.value(f, _join(path, f.attr))
            finally:
                self.end = outer
            if self.pos < start + size:  # a known tagged value shorter than its size: the rest is slack
                self.spans.append(Span(self.pos, start + size - self.pos, "tag_slack", where))
            self.pos = start + size


def _join(path: str, attr: str) -> str:
    return f"{path}.{attr}" if path else attr


def layout(message_name: str, version: int, data: Buffer) -> list[Span]:
    """The spans of ``data``, an encoding of ``message_name`` at ``version`` (raises ``DecodeError``
    if the bytes do not fit the message, including bytes left over)."""
    info = message_info(message_name)
    if version not in info.owners:
        from kcodec.errors import UnsupportedVersionError

        raise UnsupportedVersionError(f"{message_name} has no version {version!r}")
    w = _Walker(info, version, memoryview(data).cast("B") if isinstance(data, memoryview) else data)
    w.struct(info.name, "")
    if w.pos != len(data):
        raise DecodeError(f"{len(data) - w.pos} bytes left after the layout", w.pos, message_name)
    return w.spans
