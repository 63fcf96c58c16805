"""A second, independent codec: every message version as a ``construct`` definition.

``construct_schema(name, version)`` builds it on first use from the message's runtime model (the
``INFO`` of its generated module: the fields of each version, their nullability, compact lengths and
tags) and the runtime's table of primitive types, out of construct primitives (``Int32sb``,
``VarInt``, ``PascalString``, ``Prefixed``, ``PrefixedArray``, ``Struct`` ...) and the few
Kafka-specific pieces defined here:

* length prefixes: ``LEN16``/``LEN32`` (signed int16/int32) and ``COMPACT`` (unsigned varint holding
  ``length + 1``), all three giving ``-1`` for null;
* ``KafkaString``/``KafkaBytes``/``KafkaArray``: length- or count-prefixed values, ``None`` when nullable;
* ``NullableStruct``: an int8 marker (-1 null, 1 present) before a struct;
* ``Flexible``/``TaggedField``: a struct followed by the tagged-field section of flexible versions.

A parsed message is a ``construct.Container`` keyed by the snake_case attribute names of the fields
present at the version (tagged ones included, with their defaults when absent on the wire); structs
of flexible versions also carry ``unknown_tagged_fields``, a list of ``(tag, raw bytes)``.
``to_container`` and ``from_container`` convert between these and kcodec's message objects.
"""

from __future__ import annotations

import copy
import importlib
import io
from typing import Any

import construct
from construct import (
    Adapter,
    Construct,
    Container,
    GreedyBytes,
    Int8sb,
    Int16sb,
    Int32sb,
    ListContainer,
    PascalString,
    Prefixed,
    PrefixedArray,
    SizeofError,
    Struct,
    Subconstruct,
    ValidationError,
    VarInt,
    stream_read,
    stream_seek,
    stream_tell,
    stream_write,
)

from kcodec.protocol._wire import tag_order, tag_size
from kcodec.protocol.errors import UnknownMessageError, UnsupportedVersionError, WrongTypeError
from kcodec.protocol.model import Struct as KafkaStruct
from kcodec.protocol.schema import FieldInfo, MessageInfo
from kcodec.protocol.wire_table import WIRE_TYPES, WireType, wire_type

__all__ = [
    "COMPACT",
    "LEN16",
    "LEN32",
    "UNKNOWN_TAGGED_FIELDS",
    "CompactLength",
    "Flexible",
    "KafkaArray",
    "KafkaBytes",
    "KafkaString",
    "Nullable",
    "NullableStruct",
    "TaggedField",
    "construct_schema",
    "from_container",
    "to_container",
]

GENERATED = "kcodec._generated"
#: the Container key holding a flexible struct's unknown tagged fields, as ``(tag, bytes)`` pairs.
UNKNOWN_TAGGED_FIELDS = "unknown_tagged_fields"


# --- length prefixes ---------------------------------------------------------------------------------


class CompactLength(Adapter):  # type: ignore[misc]
    """Kafka's compact length or count: an unsigned varint holding ``n + 1`` (0 stands for null, -1)."""

    def __init__(self) -> None:
        super().__init__(VarInt)

    def _decode(self, obj: int, context: Any, path: str) -> int:
        return obj - 1

    def _encode(self, obj: int, context: Any, path: str) -> int:
        return obj + 1


#: int16 length (strings), int32 length (bytes, records) or count (arrays), compact length or count.
LEN16: Construct = Int16sb
LEN32: Construct = Int32sb
COMPACT: Construct = CompactLength()


# --- nullable values ---------------------------------------------------------------------------------


class Nullable(Subconstruct):  # type: ignore[misc]
    """``None`` when the length/count prefix is -1, else ``subcon`` (which reads the prefix again).

    Parsing peeks at the prefix, so the stream must be seekable (``parse(bytes)`` always is).
    """

    def __init__(self, prefix: Construct, subcon: Construct) -> None:
        super().__init__(subcon)
        self.prefix = prefix
        self.flagbuildnone = False

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        start = stream_tell(stream, path)
        n = self.prefix._parsereport(stream, context, path)
        if n == -1:
            return None
        if n < -1:
            raise ValidationError(f"invalid length {n}", path=path)
        stream_seek(stream, start, 0, path)
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            self.prefix._build(-1, stream, context, path)
            return None
        return self.subcon._build(obj, stream, context, path)

    def _sizeof(self, context: Any, path: str) -> int:
        raise SizeofError("a nullable value has no fixed size", path=path)


class _Limited(Subconstruct):  # type: ignore[misc]
    """A string whose UTF-8 bytes may not exceed the wire-type table's maximum length (Kafka's
    32767): a longer one is refused on building, and a longer compact length on parsing, as the
    generated codecs refuse them."""

    def __init__(self, prefix: Construct, limit: int) -> None:
        super().__init__(PascalString(prefix, "utf8"))
        self.prefix = prefix
        self.limit = limit

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        start = stream_tell(stream, path)
        n = self.prefix._parsereport(stream, context, path)
        if n > self.limit:
            raise ValidationError(f"invalid length {n}", path=path)
        stream_seek(stream, start, 0, path)
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        n = len(obj.encode("utf-8")) if isinstance(obj, str) else 0
        if n > self.limit:
            reason = f"{n} bytes exceed the {self.limit}-byte limit of this length prefix"
            raise ValidationError(reason, path=path)
        return self.subcon._build(obj, stream, context, path)


def KafkaString(prefix: Construct, nullable: bool = False) -> Construct:
    """A UTF-8 string after an int16 or compact length; ``None`` for length -1 if ``nullable``.
    Longer than the wire-type table's maximum length: refused, as by the generated codecs."""
    limit = WIRE_TYPES["string"].max_length
    body = _Limited(prefix, limit)
    return Nullable(prefix, body) if nullable else body


def KafkaBytes(prefix: Construct, nullable: bool = False) -> Construct:
    """Bytes (or records) after an int32 or compact length; ``None`` for length -1 if ``nullable``."""
    body = Prefixed(prefix, GreedyBytes)
    return Nullable(prefix, body) if nullable else body


def KafkaArray(prefix: Construct, element: Construct, nullable: bool = False) -> Construct:
    """An array after an int32 or compact count; ``None`` for count -1 if ``nullable``."""
    body = PrefixedArray(prefix, element)
    return Nullable(prefix, body) if nullable else body


class NullableStruct(Subconstruct):  # type: ignore[misc]
    """A struct that may be null: an int8 marker, -1 (any negative) for null, 1 before the struct."""

    def __init__(self, subcon: Construct) -> None:
        super().__init__(subcon)
        self.flagbuildnone = False

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        if Int8sb._parsereport(stream, context, path) < 0:
            return None
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            Int8sb._build(-1, stream, context, path)
            return None
        Int8sb._build(1, stream, context, path)
        return self.subcon._build(obj, stream, context, path)

    def _sizeof(self, context: Any, path: str) -> int:
        raise SizeofError("a nullable struct has no fixed size", path=path)



# --- tagged fields -----------------------------------------------------------------------------------


class TaggedField:
    """A known tagged field of a flexible struct: its tag, Container key, value layout, default and
    spec name (for errors; the Container key when not given).

    ``default`` is plain data (``dict`` for a struct, ``list`` for an array); a field whose value
    equals it is not written, as in Kafka.
    """

    __slots__ = ("default", "name", "spec_name", "subcon", "tag")

    def __init__(self, tag: int, name: str, subcon: Construct, default: Any, spec_name: str = "") -> None:
        self.tag = tag
        self.name = name
        self.subcon = subcon
        self.default = default
        self.spec_name = spec_name or name

    def __repr__(self) -> str:
        return (
            f"TaggedField({self.tag}, {self.name!r}, {self.subcon!r}, {self.default!r}, {self.spec_name!r})"
        )


def _fresh(value: Any) -> Any:
    """A default as parse results look: dicts become Containers, lists ListContainers (new objects)."""
    if isinstance(value, dict):
        return Container((k, _fresh(v)) for k, v in value.items())
    if isinstance(value, list):
        return ListContainer(_fresh(v) for v in value)
    return copy.copy(value)


def _is_default(value: Any, default: Any) -> bool:
    """Kafka's "non-default" test for tagged fields, on Container values (recursing into structs)."""
    if isinstance(default, dict):
        if not isinstance(value, dict):
            return False
        for key, d in default.items():
            if key == UNKNOWN_TAGGED_FIELDS:
                continue
            if key not in value or not _is_default(value[key], d):
                return False
        return not value.get(UNKNOWN_TAGGED_FIELDS)
    if default is None:
        return value is None
    if isinstance(default, list):
        return isinstance(value, list) and len(value) == len(default) and all(
            _is_default(v, d) for v, d in zip(value, default, strict=True)
        )
    return bool(value == default)


class Flexible(Subconstruct):  # type: ignore[misc]
    """A struct of a flexible version: ``subcon`` (a ``Struct``), then the tagged-field section.

    The section is an unsigned-varint count and, per field, varint tag, varint size and the bytes.
    Known tags are parsed into their Container keys (absent ones get their defaults); unknown ones are
    kept raw in ``unknown_tagged_fields``. Building writes the known fields whose value is not the
    default and the unknown ones, in ascending tag order.
    """

    def __init__(self, subcon: Construct, *tagged: TaggedField) -> None:
        super().__init__(subcon)
        self.tagged = tuple(sorted(tagged, key=lambda t: t.tag))
        self.by_tag = {t.tag: t for t in self.tagged}
        self.flagbuildnone = False

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        obj = self.subcon._parsereport(stream, context, path)
        for t in self.tagged:
            obj[t.name] = _fresh(t.default)
        unknown: list[tuple[int, bytes]] = []
        count = VarInt._parsereport(stream, context, path)
        prev = -1
        for _ in range(count):
            tag = VarInt._parsereport(stream, context, path)
            if tag > 0xFFFFFFFF:
                raise ValidationError(f"unsigned varint {tag} does not fit 32 bits", path=path)
            if tag <= prev:  # as the fast codec: strictly ascending tags, or the section is refused
                raise ValidationError(tag_order(0, tag, prev).reason, path=path)
            prev = tag
            size = VarInt._parsereport(stream, context, path)
            data = stream_read(stream, size, path)
            known = self.by_tag.get(tag)
            if known is None:
                unknown.append((tag, data))
            else:
                sub = io.BytesIO(data)  # a tagged value may not run past its size, nor end before it
                obj[known.name] = known.subcon._parsereport(sub, context, f"{path} -> {known.name}")
                if sub.tell() != size:
                    reason = tag_size(sub.tell(), size, size, known.spec_name, tag).reason
                    raise ValidationError(reason, path=f"{path} -> {known.name}")
        obj[UNKNOWN_TAGGED_FIELDS] = unknown
        return obj

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        result = self.subcon._build(obj, stream, context, path)
        fields: list[tuple[int, bytes]] = []
        for t in self.tagged:
            value = obj.get(t.name, t.default)
            if not _is_default(value, t.default):
                sub = io.BytesIO()
                t.subcon._build(value, sub, context, f"{path} -> {t.name}")
                fields.append((t.tag, sub.getvalue()))
        unknown = obj.get(UNKNOWN_TAGGED_FIELDS)
        if unknown:
            fields.extend((int(tag), bytes(data)) for tag, data in unknown)
            fields.sort(key=lambda f: f[0])
        VarInt._build(len(fields), stream, context, path)
        for tag, data in fields:
            VarInt._build(tag, stream, context, path)
            VarInt._build(len(data), stream, context, path)
            stream_write(stream, data, len(data), path)
        return result

    def _sizeof(self, context: Any, path: str) -> int:
        raise SizeofError("a flexible struct has no fixed size", path=path)


# --- definitions built from the runtime model ---------------------------------------------------------

#: the variable-length factories the wire-type table's ``construct`` column names
_FACTORIES: dict[str, Any] = {"KafkaString": KafkaString, "KafkaBytes": KafkaBytes}


def _primitive(t: WireType, prefix: Construct, nullable: bool) -> Construct:
    """The construct of one primitive value, as the wire-type table's ``construct`` column says: a
    construct primitive (``Int32sb``, ``Bytes(16)``) for a fixed-width type, else a factory here."""
    if t.fixed_width:
        name, _, args = t.construct.partition("(")
        primitive = getattr(construct, name)
        return primitive(*(int(a) for a in args.rstrip(")").split(","))) if args else primitive
    return _FACTORIES[t.construct](prefix, nullable)


def _prefix(t: WireType, compact: bool) -> Construct:
    """The length prefix of a variable-length value: compact, or the table's int16/int32 prefix."""
    if compact:
        return COMPACT
    return LEN16 if t.length_size == 2 else LEN32


class _Builder:
    """The construct definitions of one message at one version, from its runtime model (``INFO``):
    the same fields, lengths, nullability and tagged fields as the generated codecs read."""

    def __init__(self, info: MessageInfo, version: int) -> None:
        self.info = info
        self.version = version
        self.flexible = info.is_flexible(version)
        self.structs: dict[str, Construct] = {}

    def struct(self, name: str) -> Construct:
        built = self.structs.get(name)
        if built is None:
            members: list[Construct] = []
            tagged: list[TaggedField] = []
            for f in self.info.fields_at(name, self.version):
                if self.flexible and f.is_tagged(self.version) and f.tag is not None:
                    default = self.default(f)
                    tagged.append(TaggedField(f.tag, f.attr, self.value(f), default, f.name))
                else:
                    members.append(f.attr / self.value(f))
            body = Struct(*members)
            built = self.structs[name] = Flexible(body, *tagged) if self.flexible else body
        return built

    def value(self, f: FieldInfo) -> Construct:
        v = self.version
        compact = f.compact(v, self.flexible)
        nullable = f.is_nullable(v)
        t = wire_type(f.element_type)
        if f.is_array:
            element = self.struct(f.element_type) if t is None else _primitive(t, _prefix(t, compact), False)
            return KafkaArray(COMPACT if compact else LEN32, element, nullable)
        if t is None:
            body = self.struct(f.element_type)
            return NullableStruct(body) if nullable else body
        return _primitive(t, _prefix(t, compact), nullable)

    def default(self, f: FieldInfo) -> Any:
        """A tagged field's default as plain data (Container values): structs as dicts of their
        fields' defaults, arrays as lists, uuids as bytes."""
        if f.default is None:
            return None
        if f.is_array:
            return list(f.default)
        if f.struct_name is not None:
            items = {s.attr: self.default(s) for s in self.info.fields_at(f.struct_name, self.version)}
            if self.flexible:
                items[UNKNOWN_TAGGED_FIELDS] = []
            return items
        return _wire(f).to_container(f.default)


# --- lookup ------------------------------------------------------------------------------------------

_schemas: dict[tuple[str, int], Construct] = {}


def _index_entry(message_name: str) -> tuple[str, str, int | None, int, int]:
    from kcodec._generated import MESSAGES

    entry = MESSAGES.get(message_name) if isinstance(message_name, str) else None
    if entry is None:
        raise UnknownMessageError(f"no message named {message_name!r}")
    return entry


def _check_version(message_name: str, version: int, versions: tuple[int, int]) -> None:
    if not isinstance(version, int) or isinstance(version, bool) or not versions[0] <= version <= versions[1]:
        raise UnsupportedVersionError(
            f"{message_name} has no version {version!r} (kcodec knows {versions[0]}-{versions[1]})"
        )


def construct_schema(message_name: str, version: int) -> Construct:
    """The construct definition of one message version: ``parse(bytes)`` gives a ``Container`` keyed
    by attribute names, ``build(container)`` gives the bytes Kafka would write. Built on first use
    from the message's runtime model, then kept.

    Raises ``UnknownMessageError`` for an unknown message, ``UnsupportedVersionError`` for a version
    the message does not have.
    """
    key = (message_name, version) if type(version) is int else None
    schema = _schemas.get(key) if key is not None and isinstance(message_name, str) else None
    if schema is None:
        info = _message_info(message_name)
        _check_version(message_name, version, info.versions)
        schema = _schemas[(message_name, version)] = _Builder(info, version).struct(info.name)
    return schema


# --- conversion to and from kcodec objects -----------------------------------------------------------


def _message_info(message_name: str) -> MessageInfo:
    module = _index_entry(message_name)[0]
    info = importlib.import_module(f"{GENERATED}.{module}").INFO
    assert isinstance(info, MessageInfo)
    return info


def to_container(message: KafkaStruct, version: int) -> Container:
    """The Container ``construct_schema(name, version).parse`` gives for ``message``'s encoding.

    Only the fields present at ``version`` are taken (absent ones are not checked); uuids become
    plain ``bytes`` and records ``bytes``.
    """
    name = getattr(type(message), "MESSAGE_NAME", None)
    if not isinstance(message, KafkaStruct) or not name:
        raise WrongTypeError(f"expected a kcodec message, not {type(message).__name__}")
    info = _message_info(name)
    _check_version(name, version, info.versions)
    return _to_container(info, name, message, version, info.is_flexible(version))


def _to_container(info: MessageInfo, struct: str, obj: Any, version: int, flexible: bool) -> Container:
    out = Container()
    for f in info.fields_at(struct, version):
        out[f.attr] = _value_to(info, f, getattr(obj, f.attr), version, flexible)
    if flexible:
        out[UNKNOWN_TAGGED_FIELDS] = [(tag, bytes(data)) for tag, data in obj._unknown_tagged_fields or ()]
    return out


def _value_to(info: MessageInfo, f: FieldInfo, value: Any, version: int, flexible: bool) -> Any:
    if value is None:
        return None
    struct = f.struct_name
    if struct is not None:
        if f.is_array:
            return ListContainer(_to_container(info, struct, x, version, flexible) for x in value)
        return _to_container(info, struct, value, version, flexible)
    convert = _wire(f).to_container
    return ListContainer(convert(x) for x in value) if f.is_array else convert(value)


def from_container(message_name: str, version: int, container: Any) -> Any:
    """The kcodec message a Container (as ``construct_schema(message_name, version)`` parses) stands for.

    Fields absent at ``version`` (or missing from the Container) get their defaults.
    """
    info = _message_info(message_name)
    _check_version(message_name, version, info.versions)
    return _from_container(info, message_name, container, version)


def _from_container(info: MessageInfo, struct: str, container: Any, version: int) -> Any:
    kwargs: dict[str, Any] = {}
    for f in info.fields_at(struct, version):
        if f.attr in container:
            kwargs[f.attr] = _value_from(info, f, container[f.attr], version)
    unknown = container.get(UNKNOWN_TAGGED_FIELDS)
    kwargs["unknown_tagged_fields"] = [(int(t), bytes(d)) for t, d in unknown] if unknown else None
    return info.structs[struct].cls(**kwargs)


def _value_from(info: MessageInfo, f: FieldInfo, value: Any, version: int) -> Any:
    if value is None:
        return None
    struct = f.struct_name
    if struct is not None:
        if f.is_array:
            return [_from_container(info, struct, x, version) for x in value]
        return _from_container(info, struct, value, version)
    convert = _wire(f).from_container
    return [convert(x) for x in value] if f.is_array else convert(value)


def _wire(f: FieldInfo) -> WireType:
    """The entry of the runtime's wire-type table for a primitive field (or array of them)."""
    t = wire_type(f.element_type)
    if t is None:
        raise WrongTypeError(f"no construct conversion for field type {f.element_type!r}")
    return t
