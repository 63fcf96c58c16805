"""Skip structs by a message's field descriptions: how ``decode(..., lazy=True)`` checks the bytes of an
array of structs it leaves unbuilt, for the messages whose generated modules have no skip functions.

The hot messages, the client group messages and the compiled build print a skip function per struct
(``s_<Struct>``). The other messages' lazy decoders call :func:`skip_structs` instead, which builds one
skipper per (message, struct, version) from the message's ``INFO`` and the runtime's table of
primitive types (``kcodec.protocol.wire_table``), once, and keeps it. A skipper makes exactly the
checks the generated skip function makes, in the same order, with the same runtime helpers, so it
fails on the same bytes with the same error (and the codec reads the body again with the wire walk
to name the field, as for any decoder): each run of adjacent fixed-width fields must be there; a
string or bytes value's length is checked as ``read_string``/``read_blob`` check it; a records value's
length is read as the decoders read it; an array's count must fit the remaining bytes; a nullable
struct's marker says null or not; a flexible version's tagged-field section is walked, every tag
taken as unknown. Nothing is decoded.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from kcodec.protocol._gen_runtime import read_count, skip_blob, skip_tags
from kcodec.protocol._wire import Buffer, bad_count, bad_length, null_error, read_uvarint, short, tags_clear
from kcodec.protocol.schema import FieldInfo, MessageInfo
from kcodec.protocol.wire_table import WireType, wire_type

__all__ = ["Skip", "skip_structs", "skipper"]

#: ``skip(buf, pos, blen)``: the position after the value at ``pos``, its bytes checked
Skip = Callable[[Buffer, int, int], int]
#: ``skip(buf, pos, blen, count)``: the position after ``count`` elements from ``pos``
SkipMany = Callable[[Buffer, int, int, int], int]

_I8 = struct.Struct(">b").unpack_from  # the marker before a nullable struct (-1: null)
_COUNT_WIDTH = 4  # a non-compact array count is an int32
_ONE_BYTE = 0x80  # a varint byte below it is the varint's last


@dataclass(frozen=True, slots=True)
class _Struct:
    """The skippers of one struct at one version: of one value, and of ``count`` array elements."""

    one: Skip
    many: SkipMany
    min_size: int  # the fewest bytes an element takes


#: per message (by the identity of its ``INFO``, kept alive here): (struct, version) -> skippers
_cache: dict[int, tuple[MessageInfo, dict[tuple[str, int], _Struct]]] = {}


def _skippers(info: MessageInfo, name: str, version: int) -> _Struct:
    entry = _cache.get(id(info))
    if entry is None or entry[0] is not info:
        entry = _cache[id(info)] = (info, {})
    found = entry[1].get((name, version))
    if found is None:
        found = entry[1][(name, version)] = _Builder(info, version).struct(name)
    return found


def skipper(info: MessageInfo, name: str, version: int) -> Skip:
    """The skipper of struct ``name`` of ``info``'s message at ``version`` (built on first use)."""
    return _skippers(info, name, version).one


def skip_structs(
    info: MessageInfo, name: str, version: int, buf: Buffer, pos: int, blen: int, count: int
) -> int:
    """Skip ``count`` elements of struct ``name`` (of ``info``'s message at ``version``) from ``pos``,
    checked as the generated skip functions check them; return the position after them."""
    return _skippers(info, name, version).many(buf, pos, blen, count)


# --- the steps of a struct --------------------------------------------------------------------------


def _fixed(size: int) -> Skip:
    """A run of adjacent fixed-width fields (or one fixed-width value): its bytes must be there."""

    def skip(buf: Buffer, pos: int, blen: int) -> int:
        if pos + size > blen:
            raise short(pos, size, blen)
        return pos + size

    return skip


def _blob(width: int, nullable: bool, string: bool) -> Skip:
    """A string or bytes value (``width``: its length prefix's, 0 compact), by the runtime helper."""

    def skip(buf: Buffer, pos: int, blen: int) -> int:
        return skip_blob(buf, pos, blen, width, nullable, string)

    return skip


def _inline_blob(t: WireType, compact: bool, nullable: bool) -> Skip:
    """A value the decoders read in place rather than by a helper (records): its length read as they
    read it (a compact length's first byte by index; an int32 by ``struct``), then checked."""
    prefix = struct.Struct(">" + t.length_fmt)
    width, unpack = prefix.size, prefix.unpack_from
    limit = t.compact_limit if compact else None

    def skip(buf: Buffer, pos: int, blen: int) -> int:
        if compact:
            n = buf[pos]
            if n < _ONE_BYTE:
                pos += 1
            else:
                n, pos = read_uvarint(buf, pos)
            n -= 1
        else:
            n = unpack(buf, pos)[0]
            pos += width
        if n < 0:
            if not nullable:
                raise null_error(pos, n)
            if not compact and n < -1:
                raise bad_length(pos, n)
            return pos
        if limit is not None and n > limit:
            raise bad_length(pos, n)
        if pos + n > blen:
            raise short(pos, n, blen)
        return pos + n

    return skip


def _nullable_struct(child: Skip) -> Skip:
    def skip(buf: Buffer, pos: int, blen: int) -> int:
        if _I8(buf, pos)[0] < 0:
            return pos + 1
        return child(buf, pos + 1, blen)

    return skip


def _array(width: int, nullable: bool, elements: SkipMany) -> Skip:
    def skip(buf: Buffer, pos: int, blen: int) -> int:
        n, pos = read_count(buf, pos, blen, width, nullable)
        return elements(buf, pos, blen, n) if n >= 0 else pos

    return skip


def _fixed_elements(size: int) -> SkipMany:
    def skip(buf: Buffer, pos: int, blen: int, n: int) -> int:
        if n * size > blen - pos:
            raise bad_count(pos, n, size, blen)
        return pos + size * n

    return skip


def _each(one: Skip, min_size: int) -> SkipMany:
    """``n`` elements walked one by one (of a struct that may take no bytes: the count checked first)."""

    def skip(buf: Buffer, pos: int, blen: int, n: int) -> int:
        if not min_size and n > blen - pos:
            raise bad_count(pos, n, 1, blen)
        for _ in range(n):
            pos = one(buf, pos, blen)
        return pos

    return skip


def _same_width(one: Skip, size: int, flexible: bool) -> SkipMany:
    """Elements of one width: all at once when they fit (and each one's tagged-field section is
    empty), else one by one (which then fails where the generated walk fails)."""

    def skip(buf: Buffer, pos: int, blen: int, n: int) -> int:
        if n * size <= blen - pos and (not flexible or tags_clear(buf, pos, n, size)):
            return pos + size * n
        for _ in range(n):
            pos = one(buf, pos, blen)
        return pos

    return skip


def _struct(steps: tuple[Skip, ...], flexible: bool) -> Skip:
    def skip(buf: Buffer, pos: int, blen: int) -> int:
        for step in steps:
            pos = step(buf, pos, blen)
        if flexible:
            if buf[pos]:
                pos = skip_tags(buf, pos, blen)
            else:
                pos += 1
        return pos

    return skip


class _Builder:
    """Builds the skippers of one message version's structs from its field descriptions."""

    def __init__(self, info: MessageInfo, version: int) -> None:
        self.info = info
        self.version = version
        self.flexible = info.is_flexible(version)

    def _fixed_type(self, f: FieldInfo) -> WireType | None:
        """The wire type of a single fixed-width value (None for anything else)."""
        if f.is_array or f.struct_name is not None:
            return None
        t = self._primitive(f)
        return t if t.fixed_width else None

    def _primitive(self, f: FieldInfo) -> WireType:
        t = wire_type(f.element_type)
        if t is None:
            raise ValueError(f"{self.info.name}: no wire type {f.element_type!r} for field {f.name}")
        return t

    def struct(self, name: str) -> _Struct:
        v, flexible = self.version, self.flexible
        steps: list[Skip] = []
        sizes: list[int] = []  # the runs' sizes (a struct of one run has elements of one width)
        min_size = 1 if flexible else 0
        run = 0
        fields = [f for f in self.info.fields_at(name, v) if not (flexible and f.is_tagged(v))]
        for f in fields:
            t = self._fixed_type(f)
            if t is not None:
                run += t.size
                continue
            if run:
                steps.append(_fixed(run))
                sizes.append(run)
                min_size += run
                run = 0
            step, least = self.value(f)
            steps.append(step)
            min_size += least
        if run:
            steps.append(_fixed(run))
            sizes.append(run)
            min_size += run
        one = _struct(tuple(steps), flexible)
        uuid = any(self._primitive(f).snippet == "uuid" for f in fields if self._fixed_type(f) is not None)
        if len(steps) == 1 and sizes and not uuid:
            many = _same_width(one, sizes[0] + (1 if flexible else 0), flexible)
        else:
            many = _each(one, min_size)
        return _Struct(one, many, min_size)

    def value(self, f: FieldInfo) -> tuple[Skip, int]:
        """The skipper of a field that is not a fixed-width value, and the fewest bytes it takes."""
        v = self.version
        compact = f.compact(v, self.flexible)
        nullable = f.is_nullable(v)
        if f.is_array:
            width = 0 if compact else _COUNT_WIDTH
            return _array(width, nullable, self.elements(f, compact)), width or 1
        if f.struct_name is not None:
            child = _skippers(self.info, f.struct_name, v)
            if nullable:
                return _nullable_struct(child.one), 1
            return child.one, child.min_size
        t = self._primitive(f)
        return self.variable(t, compact, nullable), 1 if compact else t.length_size

    def variable(self, t: WireType, compact: bool, nullable: bool) -> Skip:
        """A length-prefixed value: strings and bytes by the runtime helper, records in place."""
        if t.snippet == "records":
            return _inline_blob(t, compact, nullable)
        return _blob(0 if compact else t.length_size, nullable, t.snippet == "string")

    def elements(self, f: FieldInfo, compact: bool) -> SkipMany:
        """The skipper of an array's elements (never null)."""
        if f.struct_name is not None:
            return _skippers(self.info, f.struct_name, self.version).many
        t = self._primitive(f)
        if t.fixed_width:
            return _fixed_elements(t.size)
        return _each(self.variable(t, compact, False), 1)
