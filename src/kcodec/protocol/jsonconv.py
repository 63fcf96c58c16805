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
from functools import partial
from types import ModuleType
from typing import Any, Literal

from kcodec.protocol.codec import companion_module, message_class, message_info
from kcodec.protocol.errors import InvalidArgumentError, JsonError, UnsupportedVersionError
from kcodec.protocol.json_build import build_converter, default_test, holds_records
from kcodec.protocol.model import Message, Uuid
from kcodec.protocol.schema import FieldInfo, MessageInfo
from kcodec.protocol.wire_table import WireType, wire_type

RecordsMode = Literal["raw", "base64", "text"]
RECORDS_MODES: tuple[RecordsMode, ...] = ("raw", "base64", "text")


def is_default(info: MessageInfo, f: FieldInfo, value: Any) -> bool:
    """Kafka's "is this field at its default" rule (decides whether tagged fields are written)."""
    return default_test(info, f)(value)


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
    ``kcodec.protocol.error_codes.with_error_names``): a view for people, which ``from_json`` ignores.
    """
    convert = _converters.get((type(message).MESSAGE_NAME, version, records))
    if convert is None:
        convert = json_converter(type(message).MESSAGE_NAME, version, records=records)
    out = convert(message)
    if error_names:
        from kcodec.protocol.error_codes import with_error_names

        named: dict[str, Any] = with_error_names(out)
        return named
    return out


# (message name, version, records mode) -> the converter (bound to a records expander)
_converters: dict[tuple[str, int, str], Callable[[Any], dict[str, Any]]] = {}


def json_converter(
    message_name: str, version: int, *, records: RecordsMode = "raw"
) -> Callable[[Any], dict[str, Any]]:
    """The function ``to_json`` uses for one message and version, cached: the converter the generator
    wrote for it if it wrote one (``kcodec._generated.json_.<message module>``: straight-line Python,
    one function per struct layout, for the hot and the consumer group messages), imported on the
    message's first use; else one built from the message's description (``kcodec.protocol.json_build``),
    which gives the same JSON."""
    if records not in RECORDS_MODES:
        raise InvalidArgumentError(f"records must be one of {RECORDS_MODES}, not {records!r}")
    key = (message_name, version, records)
    found = _converters.get(key)
    if found is not None:
        return found
    table = _json_module(message_name)
    if table is None:
        convert = _built_converter(message_name, version, records)
    else:
        generated: Callable[..., dict[str, Any]] | None = table.TO_JSON.get(version)
        if generated is None:
            raise UnsupportedVersionError(f"{message_name} has no version {version}")
        convert = generated
        if records != "raw" and version in table.RECORDS_VERSIONS:
            convert = partial(generated, rec=_expanded_records(records))
    _converters[key] = convert
    return convert


def _built_converter(
    message_name: str, version: int, records: RecordsMode
) -> Callable[[Any], dict[str, Any]]:
    """The converter built from the description of a message the generator wrote none for."""
    if version not in message_info(message_name).owners:
        raise UnsupportedVersionError(f"{message_name} has no version {version}")
    if records == "raw":
        return build_converter(message_name, version)
    if not holds_records(message_name, version):
        return json_converter(message_name, version)  # (the raw one: nothing for ``records`` to change)
    return build_converter(message_name, version, rec=_expanded_records(records))


def _json_module(message_name: str) -> ModuleType | None:
    """The generated JSON module of one message, imported on first use (None if there is none)."""
    return companion_module(message_name, "json_")


def _expanded_records(mode: str) -> Callable[[Any], Any]:
    from kcodec.records.jsonview import records_to_json  # imported only when asked for

    def expand(value: Any) -> Any:
        return records_to_json(value, values=mode)  # type: ignore[arg-type]

    return expand


def from_json(message_name: str, version: int, obj: Any) -> Message:
    """Read a message from Kafka JsonConverter JSON at ``version`` (as ``*JsonConverter.read`` does).

    Like Kafka, fields that do not exist at ``version`` are still read when present (so a value can be
    carried to a version where encoding will decide whether it may be dropped); fields that exist at
    ``version`` and are not tagged are mandatory.
    """
    info = message_info(message_name)
    if version not in info.owners:
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
    wire = wire_type(t)  # the runtime's table of primitive types
    if wire is None:
        raise JsonError(f"unknown type {t}", path)
    return _READERS[wire.json](wire, value, path)


def _int_from_json(t: WireType, value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise JsonError(f"expected an integer for {t.name}, not {value!r}", path)
    assert t.bounds is not None
    lo, hi = t.bounds
    number: int = value
    if t.size == 1 and lo < 0 and hi < number < 256:
        number -= 256  # Kafka's MessageUtil.jsonNodeToByte accepts unsigned bytes too
    if not lo <= number <= hi:
        raise JsonError(f"{number} is out of range for {t.name}", path)
    return number


def _bool_from_json(t: WireType, value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise JsonError(f"expected true or false, not {value!r}", path)
    return value


def _float_from_json(t: WireType, value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise JsonError(f"expected a finite number, not {value!r}", path)
    return float(value)


def _string_from_json(t: WireType, value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise JsonError(f"expected a string, not {value!r}", path)
    return value


def _uuid_from_json(t: WireType, value: Any, path: str) -> Uuid:
    if not isinstance(value, str):
        raise JsonError(f"expected a base64 UUID string, not {value!r}", path)
    try:
        return Uuid(value)
    except (ValueError, binascii.Error) as e:
        raise JsonError(f"invalid UUID {value!r}: {e}", path) from None


def _base64_from_json(t: WireType, value: Any, path: str) -> bytes:
    if not isinstance(value, str):
        raise JsonError(f"expected a base64 string, not {value!r}", path)
    try:
        return base64.b64decode(value, validate=True)
    except (ValueError, binascii.Error) as e:
        raise JsonError(f"invalid base64: {e}", path) from None


#: how a value of each JSON kind of the wire-type table is read back (as Kafka's JsonConverter reads it)
_READERS: dict[str, Callable[[WireType, Any, str], Any]] = {
    "int": _int_from_json,
    "bool": _bool_from_json,
    "float": _float_from_json,
    "string": _string_from_json,
    "uuid": _uuid_from_json,
    "base64": _base64_from_json,
}
