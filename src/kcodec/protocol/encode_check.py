"""Which field an encoder failed on: a second pass over the object, driven by the runtime model.

The generated encoders keep no account of the field they write: on any exception, the runtime runs
this pass over the same object (``encode_error``), which does what the encoder does, field by field
and in the same order, on a scratch buffer: the checks of fields absent at the version (Kafka's
``UnsupportedVersionException``), each run of fixed-width fields packed at once, each string, bytes,
records, struct and array value with the same runtime writers, the known tagged fields and the
tagged-field section. The first operation that fails gives the error the encoder raises, named by
``kcodec.protocol._wire.encode_failure`` with the field (``topics[3].partitions[0].leader_epoch``).

What a primitive is on the wire (its width, struct format, length prefix and limit) comes from the
runtime's table of primitive types (``kcodec.protocol.wire_table``).
"""

from __future__ import annotations

import struct
from typing import Any

from kcodec.protocol._gen_runtime import write_blob, write_length, write_string
from kcodec.protocol._wire import (
    ChunkedOut,
    encode_failure,
    null_value,
    tagged_unsupported,
    unsupported,
    write_tagged,
)
from kcodec.protocol.errors import EncodeError
from kcodec.protocol.schema import STRUCT_DEFAULT, FieldInfo, MessageInfo
from kcodec.protocol.wire_table import WireType, wire_type

__all__ = ["encode_error"]

#: what the generated encoders name a struct's tagged-field section in error paths
TAGGED = "_tagged_fields"
_INT32_MAX = 2**31 - 1
_Run = tuple[FieldInfo, ...]


class _Where:
    """The field (and element index) an encoder of one struct is at, as its errors name them."""

    __slots__ = ("field", "index")

    def __init__(self) -> None:
        self.field: Any = None
        self.index = 0


def _uuid_check(value: Any) -> None:
    if len(value) != 16:
        raise ValueError("a uuid needs 16 bytes")


class _Check:
    def __init__(self, info: MessageInfo, version: int, compiled: bool) -> None:
        self.info = info
        self.version = version
        self.flexible = info.is_flexible(version)
        self.compiled = compiled

    # -- the layout of a struct at the version --------------------------------------------------------

    def _tagged(self, f: FieldInfo) -> bool:
        return self.flexible and f.is_tagged(self.version) and f.tag is not None

    def steps(self, name: str) -> list[_Run | FieldInfo]:
        """The untagged fields in wire order, adjacent fixed-width ones grouped into runs (one pack)."""
        out: list[_Run | FieldInfo] = []
        run: list[FieldInfo] = []
        for f in self.info.fields_at(name, self.version):
            if self._tagged(f):
                continue
            t = None if f.is_array else wire_type(f.type)
            if t is not None and t.fixed_width:
                run.append(f)
                continue
            if run:
                out.append(tuple(run))
                run = []
            out.append(f)
        if run:
            out.append(tuple(run))
        return out

    def absent(self, name: str) -> list[FieldInfo]:
        """The class's fields absent at the version, Kafka's refusal to drop a non-default value
        checked for each (unless ignorable in the version's own definition)."""
        present = {f.name for f in self.info.fields_at(name, self.version)}
        own = {f.name: f for f in self.info.structs[name].by_set.get(self.info.owners[self.version], ())}
        return [
            f for f in self.info.all_fields(name)
            if f.name not in present and not own.get(f.name, f).ignorable
        ]

    def default(self, f: FieldInfo) -> Any:
        """The value a field is compared with to be written (the class's default)."""
        if f.default is STRUCT_DEFAULT:
            return self.info.structs[f.element_type].cls()
        if f.is_array and f.default is not None:
            return list(f.default)
        return f.default

    def nondefault(self, f: FieldInfo, value: Any) -> bool:
        default = self.default(f)
        return value is not None if default is None else bool(value != default)

    def same_width(self, name: str) -> bool:
        """Elements written with one pack each (every field present, fixed-width, no uuid, no tagged
        field): the array's loop tests their unknown tagged fields itself."""
        fields = self.info.fields_at(name, self.version)
        if not fields or len(fields) != len(self.info.all_fields(name)):
            return False
        for f in fields:
            t = None if f.is_array else wire_type(f.type)
            if self._tagged(f) or t is None or not t.fixed_width or t.snippet == "uuid":
                return False
        return True

    # -- writing ---------------------------------------------------------------------------------------

    def struct(self, name: str, obj: Any, out: bytearray) -> None:
        """What the struct's encoder does; raises what it raises."""
        where = _Where()
        try:
            for f in self.absent(name):
                where.field = f.attr
                if self.nondefault(f, getattr(obj, f.attr)):
                    raise unsupported(f.json_name, -1)
            for step in self.steps(name):
                if isinstance(step, tuple):
                    self.run(step, obj, out, where)
                else:
                    where.field = step.attr
                    self.value(step, getattr(obj, step.attr), out, where)
            if self.flexible:
                self.tags(name, obj, out, where)
            elif obj._unknown_tagged_fields:
                raise tagged_unsupported()
        except Exception as e:
            raise encode_failure(e, where.field, obj, where.index) from None

    def run(self, run: _Run, obj: Any, out: bytearray, where: _Where) -> None:
        types = [self._wire(f) for f in run]
        where.field = tuple((f.attr, t.size, t.fmt) for f, t in zip(run, types, strict=True))
        for f, t in zip(run, types, strict=True):  # the uuids' lengths first, then one pack
            if t.snippet == "uuid":
                _uuid_check(getattr(obj, f.attr))
        out += struct.pack(">" + "".join(t.fmt for t in types), *(getattr(obj, f.attr) for f in run))

    def value(self, f: FieldInfo, value: Any, out: bytearray, where: _Where) -> None:
        v = self.version
        nullable = f.is_nullable(v)
        compact = f.compact(v, self.flexible)
        if f.is_array:
            self.array(f, value, out, where, nullable, compact)
        elif f.struct_name is not None:
            if value is None:
                if not nullable:
                    raise null_value()
                out.append(255)
                return
            if nullable:
                out.append(1)
            self.struct(f.struct_name, value, out)
        else:
            self.primitive(self._wire(f), value, out, nullable, compact)

    def primitive(self, t: WireType, value: Any, out: bytearray, nullable: bool, compact: bool) -> None:
        if t.fixed_width:
            if t.snippet == "uuid":
                _uuid_check(value)
            out += struct.pack(">" + t.fmt, value)
            return
        width = 0 if compact else t.length_size
        limit = t.length_limit(compact)
        if t.snippet == "string":
            write_string(out, value, width, nullable, limit)
        else:
            write_blob(out, value, width, nullable, limit)

    def array(
        self, f: FieldInfo, value: Any, out: bytearray, where: _Where, nullable: bool, compact: bool
    ) -> None:
        if value is None:
            if not nullable:
                raise null_value()
            out += b"\x00" if compact else b"\xff\xff\xff\xff"
            return
        n = len(value)
        t = wire_type(f.element_type)
        if t is not None and t.fixed_width and t.snippet != "uuid":  # the values in one pack
            out += struct.pack(f">{n}{t.fmt}", *value)
            return
        write_length(out, n, 0 if compact else 4, None if compact else _INT32_MAX)
        where.field = f"{f.attr}[]"
        element = f.struct_name
        # an element written in place: on an error, its encoder runs again on a new buffer
        in_place = element is not None and self.info.structs[element].written_in_place(self.version)
        for index, item in enumerate(value):
            where.index = index
            if element is None:
                assert t is not None
                self.primitive(t, item, out, False, compact)
            else:
                if self.same_width(element) and not self.compiled:
                    _ = item._unknown_tagged_fields  # the array's loop tests it before the element's encoder
                self.struct(element, item, bytearray() if in_place else out)

    def tags(self, name: str, obj: Any, out: bytearray, where: _Where) -> None:
        known = [f for f in self.info.fields_at(name, self.version) if self._tagged(f)]
        known.sort(key=lambda f: f.tag or 0)
        written: list[tuple[int, bytes | bytearray]] = []
        for f in known:
            where.field = f.attr
            value = getattr(obj, f.attr)
            if self.nondefault(f, value):
                data = bytearray()
                self.value(f, value, data, where)
                written.append((f.tag or 0, data))
        where.field = TAGGED
        unknown = obj._unknown_tagged_fields
        if written or unknown:
            write_tagged(out, written, unknown, tuple(f.tag or 0 for f in known))

    def _wire(self, f: FieldInfo) -> WireType:
        t = wire_type(f.element_type)
        if t is None:
            raise EncodeError(f"no writer for field type {f.element_type!r}")
        return t


def encode_error(info: MessageInfo, version: int, message: Any, compiled: bool = False) -> Exception | None:
    """The error the generated encoder of ``info``'s message at ``version`` raises for ``message``
    (its field named), or None if this pass writes it without one. ``compiled``: the message's
    codecs are compiled (their struct elements of another class are written by their own encoder)."""
    try:
        _Check(info, version, compiled).struct(info.name, message, ChunkedOut())
    except Exception as e:
        return e
    return None

