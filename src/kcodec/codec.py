"""Decode and encode message bodies by name and version, loading each message's codec on first use."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from kcodec.errors import (
    DecodeError,
    EncodeError,
    TrailingBytesError,
    UnknownMessageError,
    UnsupportedVersionError,
)
from kcodec.model import Message
from kcodec.schema import MessageInfo

GENERATED = "kcodec._generated"
_modules: dict[str, ModuleType] = {}


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """Something lenient decoding tolerated, e.g. bytes left after a body in captured traffic."""

    message: str
    version: int
    offset: int
    reason: str


def message_names() -> list[str]:
    """Every message kcodec has codecs for (requests, responses, headers and data)."""
    from kcodec._generated import MESSAGES

    return list(MESSAGES)


def module(message_name: str) -> ModuleType:
    """The generated module of one message, imported on first use."""
    mod = _modules.get(message_name)
    if mod is None:
        from kcodec._generated import MESSAGES

        entry = MESSAGES.get(message_name)
        if entry is None:
            raise UnknownMessageError(f"no message named {message_name!r}")
        mod = importlib.import_module(f"{GENERATED}.{entry[0]}")
        _modules[message_name] = mod
    return mod


def message_info(message_name: str) -> MessageInfo:
    info: MessageInfo = module(message_name).INFO
    return info


def message_class(message_name: str) -> type[Message]:
    cls: type[Message] = getattr(module(message_name), message_name)
    return cls


def _function(message_name: str, version: int, table: str) -> Any:
    fns = getattr(module(message_name), table)
    fn = fns.get(version) if isinstance(version, int) and not isinstance(version, bool) else None
    if fn is None:
        lo, hi = min(fns), max(fns)
        raise UnsupportedVersionError(f"{message_name} has no version {version!r} (kcodec knows {lo}-{hi})")
    return fn


def as_buffer(data: Any) -> bytes | bytearray | memoryview:
    if isinstance(data, bytes | bytearray):
        return data
    if isinstance(data, memoryview):
        return data if (data.ndim == 1 and data.itemsize == 1 and data.format == "B") else data.cast("B")
    raise TypeError(f"expected bytes, bytearray or memoryview, not {type(data).__name__}")


def decode_at(
    message_name: str, version: int, data: Any, pos: int = 0
) -> tuple[Message, int]:
    """Decode one body starting at ``pos``; return it and the position after it (no trailing check)."""
    fn = _function(message_name, version, "DECODERS")
    buf = as_buffer(data)
    try:
        obj, end = fn(buf, pos, len(buf))
    except DecodeError as e:
        e._segments.append(message_name)
        raise
    except RecursionError:
        raise DecodeError("nesting too deep", pos, message_name) from None
    return obj, end


def decode(
    message_name: str,
    version: int,
    data: Any,
    *,
    strict: bool = True,
    diagnostics: list[Diagnostic] | None = None,
) -> Any:
    """Decode a message body (no size prefix, no header) of ``message_name`` at ``version``.

    Every byte must be consumed: leftover bytes raise ``TrailingBytesError`` in strict mode; with
    ``strict=False`` they are reported to ``diagnostics`` (if given) and the message is returned.
    """
    buf = as_buffer(data)
    obj, end = decode_at(message_name, version, buf)
    size = len(buf)
    if end != size:
        reason = f"{size - end} trailing bytes after {message_name} v{version}"
        if strict:
            raise TrailingBytesError(reason, end, message_name)
        if diagnostics is not None:
            diagnostics.append(Diagnostic(message_name, version, end, reason))
    return obj


def encode_into(message: Message, version: int, out: bytearray) -> None:
    """Append the encoding of ``message`` at ``version`` to ``out``."""
    name = getattr(type(message), "MESSAGE_NAME", None)
    if not isinstance(message, Message) or not name:
        raise TypeError(f"expected a kcodec message, not {type(message).__name__}")
    fn = _function(name, version, "ENCODERS")
    try:
        fn(message, out)
    except UnsupportedVersionError as e:
        if getattr(e, "tagged", False):
            raise UnsupportedVersionError(
                f"Tagged fields were set, but version {version} of {name} does not support them."
            ) from None
        field = getattr(e, "field", None)
        if field is None:
            raise
        raise UnsupportedVersionError(
            f"Attempted to write a non-default {field} at version {version}"
        ) from None
    except EncodeError as e:
        e._segments.append(name)
        raise


def encode(message: Message, version: int) -> bytes:
    """Encode a message body at ``version``, exactly as Apache Kafka's serializer would."""
    out = bytearray()
    encode_into(message, version, out)
    return bytes(out)
