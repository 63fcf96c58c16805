"""Kafka's JsonConverter format: ``to_json`` / ``from_json`` for any message at any version.

Field names are the spec names with the first letter lower-cased; only fields present at the version
appear; tagged fields only when they differ from their default; bytes and records as standard base64;
uuids as Kafka's 22-character URL-safe base64; int64 as JSON integers.

``to_json(..., records="base64"|"text")`` expands ``records`` fields into their batches and records
(``kcodec.records.records_to_json``) instead of one base64 blob: a view for people and tools, which
``from_json`` does not read back.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable
from typing import Any, Literal

from kcodec.codec import message_class, message_info
from kcodec.errors import InvalidArgumentError, JsonError
from kcodec.model import Message, Uuid
from kcodec.schema import INT_BOUNDS, JSON_KINDS, STRUCT_DEFAULT, FieldInfo, MessageInfo

RecordsMode = Literal["raw", "base64", "text"]
RECORDS_MODES: tuple[RecordsMode, ...] = ("raw", "base64", "text")


def is_default(info: MessageInfo, f: FieldInfo, value: Any) -> bool:
    """Kafka's "is this field at its default" rule (decides whether tagged fields are written)."""
    d = f.default
    if d is None:
        return value is None
    if f.is_array:
        return value is not None and len(value) == 0
    if d is STRUCT_DEFAULT:
        struct = f.struct_name
        assert struct is not None
        return bool(value == info.structs[struct].cls())
    return bool(value == d)


def to_json(
    message: Message, version: int, *, records: RecordsMode = "raw", error_names: bool = False
) -> dict[str, Any]:
    """The JSON object Kafka's ``*JsonConverter.write(data, version)`` returns for ``message``.

    ``records``: how ``records`` fields are written: ``"raw"`` (Kafka's format: one base64 string),
    ``"base64"`` or ``"text"`` (expanded into batches and records, with keys, values and header values
    as base64, or as text where they are valid UTF-8; see ``kcodec.records.records_to_json``).
    Malformed record data never makes this raise: the expansion reports it in place.

    ``error_names=True`` adds, next to every ``errorCode`` / ``*ErrorCode`` member, a ``<member>Name``
    with Kafka's name of the code (``"errorCodeName": "UNKNOWN_LEADER_EPOCH"``; see
    ``kcodec.error_codes.with_error_names``): a view for people, which ``from_json`` ignores.
    """
    convert = _converters.get((type(message).MESSAGE_NAME, version, records))
    if convert is None:
        convert = json_converter(type(message).MESSAGE_NAME, version, records=records)
    out = convert(message)
    if error_names:
        from kcodec.error_codes import with_error_names

        named: dict[str, Any] = with_error_names(out)
        return named
    return out


# (message name, version, records mode) -> converter built by json_converter
_converters: dict[tuple[str, int, str], Callable[[Any], dict[str, Any]]] = {}


def json_converter(
    message_name: str, version: int, *, records: RecordsMode = "raw"
) -> Callable[[Any], dict[str, Any]]:
    """The function ``to_json`` uses for one message and version: straight-line Python built once
    (and cached) from the message's schema, one function per struct, with no per-field lookups."""
    if records not in RECORDS_MODES:
        raise InvalidArgumentError(f"records must be one of {RECORDS_MODES}, not {records!r}")
    key = (message_name, version, records)
    found = _converters.get(key)
    if found is not None:
        return found
    info = message_info(message_name)
    if version not in info.owners:
        from kcodec.errors import UnsupportedVersionError

        raise UnsupportedVersionError(f"{message_name} has no version {version}")
    convert = _ConverterBuilder(info, version, records).build()
    _converters[key] = convert
    return convert


def _b64(value: Any) -> str:
    return base64.b64encode(value).decode("ascii")


def _uuid(value: Any) -> str:
    return str(value) if isinstance(value, Uuid) else str(Uuid(value))


def _expanded_records(mode: str) -> Callable[[Any], Any]:
    from kcodec.records.jsonview import records_to_json  # imported only when asked for

    def expand(value: Any) -> Any:
        return records_to_json(value, values=mode)  # type: ignore[arg-type]

    return expand


class _ConverterBuilder:
    """Writes the Python source of a converter (``s0`` for the message, ``s1``... for its structs)."""

    def __init__(self, info: MessageInfo, version: int, records: RecordsMode) -> None:
        self.info = info
        self.version = version
        self.records = records
        self.names: dict[str, str] = {}  # struct -> function name
        self.lines: list[str] = []
        self.env: dict[str, Any] = {"_b64": _b64, "_uuid": _uuid}
        if records != "raw":
            self.env["_rec"] = _expanded_records(records)

    def build(self) -> Callable[[Any], dict[str, Any]]:
        root = self.function(self.info.name)
        exec(compile("\n".join(self.lines), f"<to_json {self.info.name} v{self.version}>", "exec"), self.env)
        fn: Callable[[Any], dict[str, Any]] = self.env[root]
        return fn

    def function(self, struct: str) -> str:
        name = self.names.get(struct)
        if name is not None:
            return name
        name = self.names[struct] = f"s{len(self.names)}"
        body: list[str] = []
        literal: list[str] = []
        started = False  # once a tagged field is met, the rest are statements (order is kept)
        for i, f in enumerate(self.info.fields_at(struct, self.version)):
            key = repr(f.json_name)
            value = self.value(f, f"o.{f.attr}")
            if f.is_tagged(self.version):
                started = True
                body.append(f"    v = o.{f.attr}")
                body.append(f"    if {self.not_default(f, i)}:")
                body.append(f"        d[{key}] = {self.value(f, 'v')}")
            elif started:
                body.append(f"    d[{key}] = {value}")
            else:
                literal.append(f"{key}: {value}")
        lines = [f"def {name}(o):", "    d = {" + ", ".join(literal) + "}", *body, "    return d"]
        self.lines.extend(lines)
        return name

    def value(self, f: FieldInfo, expr: str) -> str:
        """The expression converting ``expr`` (evaluated once) to Kafka JSON."""
        t = f.element_type
        item = self.item(t, "x")
        if f.is_array:
            if item == "x":
                return f"(None if (a := {expr}) is None else list(a))"
            return f"(None if (a := {expr}) is None else [None if x is None else {item} for x in a])"
        if item == "x":
            return expr
        inner = self.item(t, "b")
        return f"(None if (b := {expr}) is None else {inner})"

    def item(self, t: str, var: str) -> str:
        if t[:1].isupper():
            return f"{self.function(t)}({var})"
        if t == "records" and self.records != "raw":
            return f"_rec({var})"
        kind = JSON_KINDS.get(t)  # the wire-type table's representation of the type
        if kind == "base64":
            return f"_b64({var})"
        if kind == "uuid":
            return f"_uuid({var})"
        return var

    def not_default(self, f: FieldInfo, i: int) -> str:
        """The condition under which a tagged field differs from its default (is_default's rule)."""
        d = f.default
        if d is None:
            return "v is not None"
        if f.is_array:
            return "v is None or len(v) != 0"
        name = f"_d{len(self.env)}_{i}"
        if d is STRUCT_DEFAULT:
            struct = f.struct_name
            assert struct is not None
            self.env[name] = self.info.structs[struct].cls()
        else:
            self.env[name] = d
        return f"not (v == {name})"


def from_json(message_name: str, version: int, obj: Any) -> Message:
    """Read a message from Kafka JsonConverter JSON at ``version`` (as ``*JsonConverter.read`` does).

    Like Kafka, fields that do not exist at ``version`` are still read when present (so a value can be
    carried to a version where encoding will decide whether it may be dropped); fields that exist at
    ``version`` and are not tagged are mandatory.
    """
    info = message_info(message_name)
    if version not in info.owners:
        from kcodec.errors import UnsupportedVersionError

        raise UnsupportedVersionError(f"{message_name} has no version {version}")
    result = _struct_from_json(info, message_name, obj, version, message_name)
    assert isinstance(result, message_class(message_name))
    return result


def _struct_from_json(info: MessageInfo, struct: str, data: Any, version: int, path: str) -> Any:
    if not isinstance(data, dict):
        raise JsonError(f"expected a JSON object, not {type(data).__name__}", path)
    present = {f.name: f for f in info.fields_at(struct, version)}
    kwargs: dict[str, Any] = {}
    for f in info.all_fields(struct):
        f = present.get(f.name, f)
        key = f.json_name
        here = f"{path}.{key}"
        if key in data:
            kwargs[f.attr] = _value_from_json(info, f, f.element_type, f.is_array, data[key], version, here)
        elif f.name in present and not f.is_tagged(version):
            raise JsonError(f"missing field {key!r}, which is mandatory in version {version}", here)
    return info.structs[struct].cls(**kwargs)


def _value_from_json(
    info: MessageInfo, f: FieldInfo, t: str, array: bool, value: Any, version: int, path: str
) -> Any:
    if value is None:
        return None  # whether null may be written is the encoder's call (Kafka: NPE on write)
    if array:
        if not isinstance(value, list):
            raise JsonError(f"expected a JSON array, not {type(value).__name__}", path)
        return [_value_from_json(info, f, t, False, v, version, f"{path}[{i}]") for i, v in enumerate(value)]
    if t[:1].isupper():
        return _struct_from_json(info, t, value, version, path)
    kind = JSON_KINDS.get(t)  # the wire-type table's representation of the type
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise JsonError(f"expected an integer for {t}, not {value!r}", path)
        lo, hi = INT_BOUNDS[t]
        if t == "int8" and 128 <= value <= 255:
            value -= 256  # Kafka's MessageUtil.jsonNodeToByte accepts unsigned bytes too
        if not lo <= value <= hi:
            raise JsonError(f"{value} is out of range for {t}", path)
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise JsonError(f"expected true or false, not {value!r}", path)
        return value
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise JsonError(f"expected a finite number, not {value!r}", path)
        return float(value)
    if kind == "string":
        if not isinstance(value, str):
            raise JsonError(f"expected a string, not {value!r}", path)
        return value
    if kind == "uuid":
        if not isinstance(value, str):
            raise JsonError(f"expected a base64 UUID string, not {value!r}", path)
        try:
            return Uuid(value)
        except (ValueError, binascii.Error) as e:
            raise JsonError(f"invalid UUID {value!r}: {e}", path) from None
    if kind == "base64":
        if not isinstance(value, str):
            raise JsonError(f"expected a base64 string, not {value!r}", path)
        try:
            return base64.b64decode(value, validate=True)
        except (ValueError, binascii.Error) as e:
            raise JsonError(f"invalid base64: {e}", path) from None
    raise JsonError(f"unknown type {t}", path)
