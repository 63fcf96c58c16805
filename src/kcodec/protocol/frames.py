"""Frames as they travel on a socket: int32 size + header + body.

The header version follows Kafka's rules (``ApiMessageType.requestHeaderVersion/responseHeaderVersion``):
ApiVersionsResponse always uses response header v0 and ControlledShutdownRequest v0 request header v0.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kcodec.protocol.codec import (
    Diagnostic,
    as_buffer,
    decoder_at,
    encode_into,
    message_class,
)
from kcodec.protocol.errors import DecodeError, TrailingBytesError, UnsupportedVersionError, WrongTypeError
from kcodec.protocol.model import Message
from kcodec.protocol.registry import ApiInfo, api

_SIZE = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")


@dataclass(slots=True)
class Frame:
    """A decoded frame: header and body, the api key/version they were read at, and diagnostics."""

    api_key: int
    api_version: int
    header_version: int
    header: Message
    body: Message
    size: int
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def correlation_id(self) -> int:
        return int(self.header.correlation_id)  # type: ignore[attr-defined]


class RequestFrame(Frame):
    """A decoded request frame (api key and version come from its header)."""

    __slots__ = ()


class ResponseFrame(Frame):
    """A decoded response frame (api key and version come from the request it answers)."""

    __slots__ = ()


def _framed(out: bytearray) -> bytes:
    out[0:4] = _SIZE.pack(len(out) - 4)
    return bytes(out)


def _api_of(body: Message, kind: str, function: str) -> ApiInfo:
    """The API of ``body``, which must be a kcodec message of ``kind`` ("request" or "response")."""
    if not isinstance(body, Message):
        raise WrongTypeError(f"{function} needs a kcodec {kind} message, not {type(body).__name__}")
    if kind != body.MESSAGE_KIND:
        other = "encode_response" if kind == "request" else "encode_request"
        hint = f" (use {other})" if body.MESSAGE_KIND in ("request", "response") else ""
        raise WrongTypeError(
            f"{function} needs a {kind} message, not {body.MESSAGE_NAME} (a {body.MESSAGE_KIND}){hint}"
        )
    return api(body.MESSAGE_NAME)


def _header_of(header: Message | None, name: str, function: str) -> None:
    if header is not None and (not isinstance(header, Message) or name != header.MESSAGE_NAME):
        raise WrongTypeError(f"{function}: header must be a {name}, not {type(header).__name__}")


def encode_request(
    body: Message,
    version: int,
    *,
    correlation_id: int,
    client_id: str | None = "kcodec",
    header: Message | None = None,
) -> bytes:
    """A complete request frame for ``body`` at ``version`` (header built unless ``header`` is given).

    ``body`` must be a request message and ``header`` a RequestHeader (else ``WrongTypeError``)."""
    info = _api_of(body, "request", "encode_request")
    _header_of(header, "RequestHeader", "encode_request")
    hv = info.request_header_version(version)
    if header is None:
        header = message_class("RequestHeader")(
            request_api_key=info.key, request_api_version=version,  # type: ignore[call-arg]
            correlation_id=correlation_id, client_id=client_id,
        )
    out = bytearray(4)
    encode_into(header, hv, out)
    encode_into(body, version, out)
    return _framed(out)


def encode_response(
    body: Message, version: int, *, correlation_id: int, header: Message | None = None
) -> bytes:
    """A complete response frame for ``body`` at ``version``.

    ``body`` must be a response message and ``header`` a ResponseHeader (else ``WrongTypeError``)."""
    info = _api_of(body, "response", "encode_response")
    _header_of(header, "ResponseHeader", "encode_response")
    hv = info.response_header_version(version)
    if header is None:
        header = message_class("ResponseHeader")(correlation_id=correlation_id)  # type: ignore[call-arg]
    out = bytearray(4)
    encode_into(header, hv, out)
    encode_into(body, version, out)
    return _framed(out)


def _frame(data: Any) -> tuple[bytes | bytearray | memoryview, int]:
    """The frame ``data`` holds (size prefix included), checked to be exactly one frame, and its
    size. The header and body are read from it at offset 4 on: no view of the bytes after the prefix
    is made, and the readers' offsets are the frame's own."""
    buf = data if type(data) is bytes else as_buffer(data)
    if len(buf) < 4:
        raise DecodeError(f"a frame needs a 4-byte size prefix, got {len(buf)} bytes", 0, "frame")
    (size,) = _SIZE.unpack_from(buf, 0)
    if size < 0:
        raise DecodeError(f"negative frame size {size}", 0, "frame.size")
    if 4 + size > len(buf):
        raise DecodeError(f"frame claims {size} bytes but only {len(buf) - 4} follow", 0, "frame.size")
    if 4 + size < len(buf):
        raise TrailingBytesError(f"{len(buf) - 4 - size} bytes after the frame", 4 + size, "frame")
    return buf, size


# A message's decoder as frames run it (``kcodec.protocol.codec.decoder_at``), resolved once per (message,
# version)
_Reader = Callable[[Any, int], tuple[Message, int]]
_readers: dict[tuple[str, int], _Reader] = {}


def _reader(name: str, version: int) -> _Reader:
    exact = type(version) is int  # (True == 1 must not share version 1's entry)
    found = _readers.get((name, version)) if exact else None
    if found is None:
        found = decoder_at(name, version)
        if exact:
            _readers[(name, version)] = found
    return found


def _finish(
    name: str, version: int, reader: _Reader, frame: Any, pos: int, strict: bool,
    diags: list[Diagnostic],
) -> Message:
    """The body of ``frame`` (the whole frame: offsets count from its size prefix) read from ``pos``."""
    obj, end = reader(frame, pos)
    if end != len(frame):
        reason = f"{len(frame) - end} trailing bytes after {name} v{version}"
        if strict:
            raise TrailingBytesError(reason, end, name)
        diags.append(Diagnostic(name, version, end, reason))
    return obj


# (api key, version) -> (body message name, header version, header reader, body reader) of the pairs
# decoded so far: the registry is looked up once per pair (it is fixed), not per frame
_Route = tuple[str, int, _Reader, _Reader]
_request_routes: dict[tuple[int, int], _Route] = {}
_response_routes: dict[tuple[int, int], _Route] = {}


def decode_request(data: Any, *, strict: bool = True) -> RequestFrame:
    """Decode a request frame; api key and version come from its header, the header version from them."""
    frame, size = _frame(data)
    if size < 4:
        raise DecodeError("a request header needs at least 4 bytes (api key and version)", 4, "RequestHeader")
    key, version = _KEY_VERSION.unpack_from(frame, 4)
    route = _request_routes.get((key, version))
    if route is None:
        try:
            info = api(key)
            name, hv = info.request, info.request_header_version(version)
        except (KeyError, UnsupportedVersionError) as e:
            raise UnsupportedVersionError(
                f"cannot decode request with api key {key} version {version}: {e}"
            ) from None
        route = (name, hv, _reader("RequestHeader", hv), _reader(name, version))
        _request_routes[(key, version)] = route
    name, hv, header_reader, body_reader = route
    header, pos = header_reader(frame, 4)  # (errors' offsets are the frame's: the prefix counts)
    diags: list[Diagnostic] = []
    obj = _finish(name, version, body_reader, frame, pos, strict, diags)
    return RequestFrame(key, version, hv, header, obj, size, diags)


def decode_response(data: Any, api_key: int, api_version: int, *, strict: bool = True) -> ResponseFrame:
    """Decode a response frame to a request of ``api_key`` at ``api_version``."""
    frame, size = _frame(data)
    exact = type(api_key) is int and type(api_version) is int  # (True == 1 must not find version 1)
    route = _response_routes.get((api_key, api_version)) if exact else None
    if route is None:
        info = api(api_key)
        name, hv = info.response, info.response_header_version(api_version)
        route = (name, hv, _reader("ResponseHeader", hv), _reader(name, api_version))
        if exact:
            _response_routes[(api_key, api_version)] = route
    name, hv, header_reader, body_reader = route
    header, pos = header_reader(frame, 4)  # (errors' offsets are the frame's: the prefix counts)
    diags: list[Diagnostic] = []
    obj = _finish(name, api_version, body_reader, frame, pos, strict, diags)
    return ResponseFrame(api_key, api_version, hv, header, obj, size, diags)
