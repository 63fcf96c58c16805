"""Decode and encode message bodies by name and version, loading each message's codec on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from gc import disable as _gc_disable
from gc import enable as _gc_enable
from gc import isenabled as _gc_isenabled
from types import ModuleType
from typing import Any

from kcodec.protocol._wire import ChunkedOut
from kcodec.protocol.blobs import joined, parts
from kcodec.protocol.errors import (
    DecodeError,
    EncodeError,
    TrailingBytesError,
    UnknownMessageError,
    UnsupportedVersionError,
    WrongTypeError,
)
from kcodec.protocol.model import Message
from kcodec.protocol.schema import MessageInfo
from kcodec.protocol.specialize import specialized

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


#: (subpackage, message name) -> its generated companion module, None where the generator wrote none
_companions: dict[tuple[str, str], ModuleType | None] = {}


def companion_module(message_name: str, package: str) -> ModuleType | None:
    """The generated module of one message in the subpackage ``package`` (``json_``: its JSON
    converters, ``facts_``: its facts extractors), imported on first use; None where the generator
    wrote none (the messages outside the hot and client-group sets: theirs are built at run time).
    Raises UnknownMessageError if there is no such message."""
    key = (package, message_name)
    if key in _companions:
        return _companions[key]
    codec = module(message_name)
    name = f"{GENERATED}.{package}.{codec.__name__.rsplit('.', 1)[1]}"
    found: ModuleType | None
    try:
        found = importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name:
            raise
        found = None
    _companions[key] = found
    return found


def message_info(message_name: str) -> MessageInfo:
    info: MessageInfo = module(message_name).INFO
    return info


def message_class(message_name: str) -> type[Message]:
    cls: type[Message] = getattr(module(message_name), message_name)
    return cls


def _function(message_name: str, version: int, table: str) -> Any:
    mod = module(message_name)
    fns = getattr(mod, table)
    fn = fns.get(version) if isinstance(version, int) and not isinstance(version, bool) else None
    if fn is None:
        lo, hi = min(fns), max(fns)
        raise UnsupportedVersionError(f"{message_name} has no version {version!r} (kcodec knows {lo}-{hi})")
    return specialized(mod, fn)


# (message name, version) -> generated function: one dict lookup per call once a pair has been used.
# Keys are only ever looked up with an int version (True == 1 would find version 1's function).
_decoders: dict[tuple[str, int], Any] = {}
_lazy_decoders: dict[tuple[str, int], Any] = {}
_encoders: dict[tuple[str, int], Any] = {}

# Decoding a large body allocates thousands of objects that cannot form reference cycles; the cyclic
# garbage collector would walk them again and again while they are being built (about a quarter of
# the time of a 2,000-partition MetadataResponse). Bodies of at least this many bytes are decoded with
# the collector paused (and resumed afterwards only if it was running).
GC_PAUSE_BYTES = 16384


def _decoder_fn(message_name: str, version: int, lazy: bool = False) -> Any:
    cache = _lazy_decoders if lazy else _decoders
    fn = cache.get((message_name, version)) if type(version) is int else None
    if fn is None:
        fn = _function(message_name, version, "DECODERS_LAZY" if lazy else "DECODERS")
        cache[(message_name, version)] = fn
    return fn


def _encoder_fn(message_name: str, version: int) -> Any:
    fn = _encoders.get((message_name, version)) if type(version) is int else None
    if fn is None:
        fn = _function(message_name, version, "ENCODERS")
        _encoders[(message_name, version)] = fn
    return fn


def bytes_input(message_name: str) -> bool:
    """Whether the message's decoders read ``bytes`` only: compiled codecs of messages without records
    fields (records are zero-copy slices of the caller's own buffer, so those read any buffer)."""
    return bool(getattr(module(message_name), "BYTES_INPUT", False))


def _input(data: Any, bytes_only: bool) -> bytes | bytearray | memoryview:
    """The buffer a decoder reads: ``data`` itself, or for bytes-only decoders a ``bytes`` copy of it
    (same offsets, so errors name the same positions)."""
    buf = as_buffer(data)
    return bytes(buf) if bytes_only and type(buf) is not bytes else buf


def as_buffer(data: Any) -> bytes | bytearray | memoryview:
    if isinstance(data, bytes | bytearray):
        return data
    if isinstance(data, memoryview):
        return data if (data.ndim == 1 and data.itemsize == 1 and data.format == "B") else data.cast("B")
    raise WrongTypeError(f"expected bytes, bytearray or memoryview, not {type(data).__name__}")


def _decode_failed(
    e: Exception, message_name: str, version: int, buf: Any, pos: int, lazy: bool = False
) -> DecodeError:
    """The error a decode raises when the generated decoder raised ``e``: the decoders keep no account
    of the field they read, so the body is read again by the wire walk, which names the field,
    offset and reason (the message's name first)."""
    error = failure(e, message_info(message_name), version, buf, pos, lazy=lazy)
    error._segments.append(message_name)
    return error


def failure(
    e: Exception, info: MessageInfo, version: int, buf: Any, pos: int, struct: str = "", lazy: bool = False
) -> DecodeError:
    """The ``DecodeError`` for a decoder of ``info``'s ``struct`` (the message by default) that raised
    ``e`` reading from ``pos``: where the wire walk stops on the same bytes (path below the struct;
    ``lazy``: walked as the lazy decoders check a message)."""
    from kcodec.protocol.wirewalk import struct_error  # (the runtime's table: imported on a first failure)

    if isinstance(e, RecursionError):
        return DecodeError("nesting too deep", pos)
    found = struct_error(info, version, struct or info.name, as_buffer(buf), pos, lazy)
    if found is not None:
        return found
    if isinstance(e, DecodeError):
        return e
    return DecodeError(f"{type(e).__name__}: {e}", pos)


def _run_decoder(
    fn: Any, message_name: str, version: int, buf: Any, pos: int, lazy: bool = False
) -> tuple[Message, int]:
    size = len(buf)
    paused = size >= GC_PAUSE_BYTES and _gc_isenabled()
    if paused:
        _gc_disable()
    try:
        obj, end = fn(buf, pos, size)
    except Exception as e:
        raise _decode_failed(e, message_name, version, buf, pos, lazy) from None
    finally:
        if paused:
            _gc_enable()
    return obj, end


def decode_at(
    message_name: str, version: int, data: Any, pos: int = 0
) -> tuple[Message, int]:
    """Decode one body starting at ``pos``; return it and the position after it (no trailing check)."""
    fn = _decoder_fn(message_name, version)
    buf = data if type(data) is bytes else _input(data, bytes_input(message_name))
    return _run_decoder(fn, message_name, version, buf, pos)


def raw_decoder(message_name: str, version: int) -> Callable[[bytes, int, int], tuple[Message, int]]:
    """The generated decoding function of one message and version itself: ``fn(buf, pos, end)``
    returns the message read from ``pos`` and the position after it. ``buf`` must be ``bytes``, and
    what it raises has no message-level context (nor is the garbage collector paused for large
    bodies): for callers that decode many small bodies and, on any exception, decode the same bytes
    again with :func:`decode_at` for the error it gives (the capture's frame decoder)."""
    fn: Callable[[bytes, int, int], tuple[Message, int]] = _decoder_fn(message_name, version)
    return fn


def decoder_at(message_name: str, version: int) -> Callable[[Any, int], tuple[Message, int]]:
    """``decode_at(message_name, version, data, pos)`` bound to one message and version: the decoding
    function is resolved once, not per call (what frame readers use, one call per frame)."""
    fn = _decoder_fn(message_name, version)
    bytes_only = bytes_input(message_name)

    def read_at(data: Any, pos: int) -> tuple[Message, int]:
        buf = data if type(data) is bytes else _input(data, bytes_only)
        return _run_decoder(fn, message_name, version, buf, pos)

    return read_at


def _trailing(
    message_name: str, version: int, end: int, size: int, strict: bool, diagnostics: list[Diagnostic] | None
) -> None:
    reason = f"{size - end} trailing bytes after {message_name} v{version}"
    if strict:
        raise TrailingBytesError(reason, end, message_name)
    if diagnostics is not None:
        diagnostics.append(Diagnostic(message_name, version, end, reason))


def decode(
    message_name: str,
    version: int,
    data: Any,
    *,
    strict: bool = True,
    diagnostics: list[Diagnostic] | None = None,
    lazy: bool = False,
) -> Any:
    """Decode a message body (no size prefix, no header) of ``message_name`` at ``version``.

    Every byte must be consumed: leftover bytes raise ``TrailingBytesError`` in strict mode; with
    ``strict=False`` they are reported to ``diagnostics`` (if given) and the message is returned.

    ``lazy=True`` checks the whole body as usual but leaves the message's arrays of structs (e.g.
    ``MetadataResponse.topics``) as ``kcodec.protocol.model.LazyArray`` objects built on first access: for
    readers that look at a few fields of large messages.
    """
    fn = _decoder_fn(message_name, version, lazy)
    buf = data if type(data) is bytes else _input(data, bytes_input(message_name))
    obj, end = _run_decoder(fn, message_name, version, buf, 0, lazy)
    if end != len(buf):
        _trailing(message_name, version, end, len(buf), strict, diagnostics)
    return obj


def decoder(message_name: str, version: int, *, lazy: bool = False) -> Callable[[Any], Any]:
    """A decoding function bound to one message and version: ``decoder(name, v)(data)`` is
    ``decode(name, v, data)`` (strict; ``lazy`` as there), without the per-call lookup. Raises now
    for an unknown message or version."""
    fn = _decoder_fn(message_name, version, lazy)
    bound = None if lazy else getattr(module(message_name), "BOUND_DECODERS", {}).get(version)
    if bound is not None:  # compiled modules: the same function, native (no Python frame per call)
        return bound  # type: ignore[no-any-return]
    bytes_only = bytes_input(message_name)

    def decode_body(data: Any) -> Any:
        buf = data if type(data) is bytes else _input(data, bytes_only)
        size = len(buf)
        if size >= GC_PAUSE_BYTES:
            obj, end = _run_decoder(fn, message_name, version, buf, 0, lazy)
        else:  # _run_decoder's work without its frame: small bodies are where a call shows
            try:
                obj, end = fn(buf, 0, size)
            except Exception as e:
                raise _decode_failed(e, message_name, version, buf, 0, lazy) from None
        if end != size:
            _trailing(message_name, version, end, size, True, None)
        return obj

    decode_body.__name__ = decode_body.__qualname__ = f"decode_{message_name}_v{version}"
    return decode_body


def _encode_failed(e: Exception, name: str, version: int) -> Exception:
    """The error ``encode`` raises for an error the generated encoder raised (message-level context)."""
    if isinstance(e, UnsupportedVersionError):
        if getattr(e, "tagged", False):
            return UnsupportedVersionError(
                f"Tagged fields were set, but version {version} of {name} does not support them."
            )
        field = getattr(e, "field", None)
        if field is None:
            return e
        return UnsupportedVersionError(f"Attempted to write a non-default {field} at version {version}")
    if isinstance(e, EncodeError):
        e._segments.append(name)
    return e


def _encoder_error(e: Exception, name: str, version: int, message: Any) -> Exception:
    """The error ``encode`` raises when the generated encoder raised ``e``: the encoders of the pure
    build keep no account of the field they write, so a check pass over the object against the
    runtime model finds it (``kcodec.protocol.encode_check``) and names it; compiled codecs name it
    themselves."""
    from kcodec._generated import COMPILED
    from kcodec.protocol.encode_check import encode_error

    if name not in COMPILED:
        found = encode_error(message_info(name), version, message)
        if found is None and not isinstance(e, EncodeError | UnsupportedVersionError):
            found = EncodeError(f"{type(e).__name__}: {e}")
        e = found or e
    if isinstance(e, UnsupportedVersionError | EncodeError):
        return _encode_failed(e, name, version)
    return e


def _run_encoder(fn: Any, name: str, version: int, message: Message, out: bytearray) -> None:
    try:
        fn(message, out)
    except Exception as e:
        raise _encoder_error(e, name, version, message) from None


def encode_into(message: Message, version: int, out: bytearray) -> None:
    """Append the encoding of ``message`` at ``version`` to ``out``."""
    name = getattr(type(message), "MESSAGE_NAME", None)
    if not isinstance(message, Message) or not name:
        raise WrongTypeError(f"expected a kcodec message, not {type(message).__name__}")
    _run_encoder(_encoder_fn(name, version), name, version, message, out)


def encode(message: Message, version: int) -> bytes:
    """Encode a message body at ``version``, exactly as Apache Kafka's serializer would."""
    out = ChunkedOut()
    encode_into(message, version, out)
    return joined(out)


def encode_chunks(message: Message, version: int) -> list[bytes | bytearray | memoryview]:
    """Encode a message body as a list of buffers whose concatenation is ``encode(message, version)``.

    Large bytes/records values (e.g. the record batches of a ProduceRequest) are not copied: they are
    returned as they are, between the encoded bytes around them, ready for ``socket.sendmsg`` or
    ``writelines``. Don't modify those values until the chunks have been written.
    """
    out = ChunkedOut()
    encode_into(message, version, out)
    return parts(out)


def encoder(message_name: str, version: int) -> Callable[[Message], bytes]:
    """An encoding function bound to one message and version: ``encoder(name, v)(msg)`` is
    ``encode(msg, v)`` for a ``name`` message, without the per-call lookup."""
    fn = _encoder_fn(message_name, version)
    bound = getattr(module(message_name), "BOUND_ENCODERS", {}).get(version)
    if bound is not None:  # compiled modules: native, falling back on encode_as for the rest
        return bound  # type: ignore[no-any-return]
    return _python_encoder(message_name, version, fn)


_python_encoders: dict[tuple[str, int], Callable[[Message], bytes]] = {}


def encode_as(message_name: str, version: int, message: Any) -> bytes:
    """``encoder(message_name, version)(message)`` by the Python path: what a compiled module's
    bound encoder falls back on for a subclass, another type or an error (same checks, same errors)."""
    enc = _python_encoders.get((message_name, version))
    if enc is None:
        enc = _python_encoders[(message_name, version)] = _python_encoder(
            message_name, version, _encoder_fn(message_name, version)
        )
    return enc(message)


def _python_encoder(message_name: str, version: int, fn: Any) -> Callable[[Message], bytes]:
    cls = message_class(message_name)

    def encode_body(message: Message) -> bytes:
        if type(message) is not cls and not isinstance(message, cls):  # one compare when exact
            raise WrongTypeError(f"expected a {message_name}, not {type(message).__name__}")
        out = ChunkedOut()
        try:  # _run_encoder's work without its frame
            fn(message, out)
        except Exception as e:
            raise _encoder_error(e, message_name, version, message) from None
        return joined(out)

    encode_body.__name__ = encode_body.__qualname__ = f"encode_{message_name}_v{version}"
    return encode_body
