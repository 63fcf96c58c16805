"""Converters to Kafka JSON built at run time from a message's description (``INFO``): for the
messages the generator writes no converters for (``kcodec._generated.json_`` holds those of the hot
and the consumer group messages), ``kcodec.protocol.jsonconv`` builds them here, once per message,
version and records mode, and they give exactly what a generated one would.

The rules are Kafka's (``JsonConverter.write``), the same the generator plans with
(``kcodec.codegen.plan_json``): a member per field present at the version, in spec order, named by
the field's camelCase name; tagged fields only when their value is not the default of the spec set
owning the version (:func:`default_test`); null stays null whatever the field; arrays are copied
element by element; a value's JSON kind is that of its wire type (``kcodec.protocol.wire_table``):
bytes and records are standard base64 (records may be expanded by a converter the caller passes),
uuids Kafka's URL-safe base64 text, numbers, booleans and strings themselves. Each struct's
converter is a closure over its members, resolved when it is built (no look-up in the description
per call).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from kcodec.protocol.codec import message_info
from kcodec.protocol.json_values import b64, uuid_text
from kcodec.protocol.schema import STRUCT_DEFAULT, FieldInfo, MessageInfo
from kcodec.protocol.wire_table import wire_type

__all__ = ["JSON_WRITERS", "build_converter", "default_test", "holds_records"]

Converter = Callable[[Any], Any]
#: the function writing a value of each JSON kind of the wire-type table (the others are themselves)
JSON_WRITERS: dict[str, Converter] = {"base64": b64, "uuid": uuid_text}


def build_converter(message: str, version: int, rec: Converter = b64) -> Callable[[Any], dict[str, Any]]:
    """The converter of ``message`` at ``version`` to Kafka JSON; ``rec`` writes a ``records`` value
    (standard base64, or an expansion of its batches). The caller checks that the version exists."""
    info = message_info(message)
    return _struct(info, message, version, rec, {})


def holds_records(message: str, version: int) -> bool:
    """Whether ``message`` holds a ``records`` field at ``version`` (the only fields ``rec`` writes)."""
    info = message_info(message)

    def walk(struct: str) -> bool:
        for f in info.fields_at(struct, version):
            child = f.struct_name
            if f.element_type == "records" or (child is not None and walk(child)):
                return True
        return False

    return walk(message)


def default_test(info: MessageInfo, f: FieldInfo) -> Callable[[Any], bool]:
    """Kafka's "is this field at its default" test (whether a tagged field is left out): the default
    of the spec set ``f`` comes from; null for a nullable default, an empty array for arrays, the
    struct's default instance for structs."""
    d = f.default
    if d is None:
        return _is_none
    if f.is_array:
        return _is_empty
    if d is STRUCT_DEFAULT:
        struct = f.struct_name
        assert struct is not None
        d = info.structs[struct].cls()
    default: Any = d
    return lambda value: bool(value == default)


def _is_none(value: Any) -> bool:
    return value is None


def _is_empty(value: Any) -> bool:
    return value is not None and len(value) == 0


def _struct(info: MessageInfo, struct: str, version: int, rec: Converter,
            built: dict[str, Callable[[Any], dict[str, Any]]]) -> Callable[[Any], dict[str, Any]]:
    """The converter of ``struct`` at ``version`` (built once per message version)."""
    found = built.get(struct)
    if found is not None:
        return found
    fields = info.fields_at(struct, version)
    keys = tuple(f.json_name for f in fields)
    writers = tuple(_writer(info, f, version, rec, built) for f in fields)
    skips = tuple(default_test(info, f) if f.is_tagged(version) else None for f in fields)
    read = _reader(tuple(f.attr for f in fields))
    fn: Callable[[Any], dict[str, Any]]
    if not any(writers) and not any(skips):

        def fn(o: Any) -> dict[str, Any]:
            return dict(zip(keys, read(o)))  # noqa: B905 (one value per key)

    else:
        members = tuple(zip(keys, writers, skips, strict=True))

        def fn(o: Any) -> dict[str, Any]:
            d: dict[str, Any] = {}
            for (key, write, skip), v in zip(members, read(o)):  # noqa: B905 (one value per member)
                if skip is None or not skip(v):
                    d[key] = v if write is None else write(v)
            return d

    built[struct] = fn
    return fn


def _reader(attrs: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """A function reading ``attrs`` of an object into a tuple, in order."""
    if len(attrs) > 1:
        return attrgetter(*attrs)
    if attrs:
        one = attrgetter(attrs[0])
        return lambda o: (one(o),)
    return lambda o: ()


def _writer(info: MessageInfo, f: FieldInfo, version: int, rec: Converter,
            built: dict[str, Callable[[Any], dict[str, Any]]]) -> Converter | None:
    """What writes the value of ``f`` (None: the value itself); null stays null."""
    child = f.struct_name
    t = f.element_type
    write: Converter | None
    if child is not None:
        write = _struct(info, child, version, rec, built)
    elif t == "records":
        write = rec
    else:
        wire = wire_type(t)
        assert wire is not None, t
        write = JSON_WRITERS.get(wire.json)
    if f.is_array:
        if write is None:
            return _copy
        element = write
        return lambda v: None if v is None else [None if x is None else element(x) for x in v]
    if write is None:
        return None
    scalar = write
    return lambda v: None if v is None else scalar(v)


def _copy(v: Any) -> Any:
    return None if v is None else list(v)
