"""Stage 2c: frames decoded into :class:`~kcodec.capture.events.CapturedFrame` events.

:class:`FrameDecoder` decodes one connection's frames: requests by their header, responses by the
request with the same correlation id (:class:`~kcodec.capture.framing.Pairing`). Frames that do not
decode cleanly are read as far as they go, into their real values where a known peer deviation
explains them (``kcodec.protocol.quirks``), with a diagnostic saying what was read how; otherwise the frame
carries the typed error (also its last diagnostic) and, when its header decodes, what its body holds
up to the bad spot (``kcodec.protocol.partial``; ``CapturedFrame.partial``), with a diagnostic naming what was
read and where it stopped. ``strict=True`` takes no leniency at all:
bytes left after a body, and every known deviation, are errors (the deviation is still named).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final

from kcodec.capture.events import CapturedFrame, UnmatchedResponseError
from kcodec.capture.framing import Pairing, RawFrame
from kcodec.capture.groups import GROUP_KEYS, GroupTracker
from kcodec.protocol.codec import GC_PAUSE_BYTES, Diagnostic, decode_at, message_class, raw_decoder
from kcodec.protocol.errors import DecodeError, KcodecError, TrailingBytesError
from kcodec.protocol.frames import Frame, ResponseFrame, decode_request, decode_response
from kcodec.protocol.model import Message
from kcodec.protocol.quirks import (
    API_VERSIONS_KEY,
    doubled_tagged_section,
    metadata_topics_placeholder,
    read_api_versions_reply,
    read_null_arrays,
)
from kcodec.protocol.registry import api

__all__ = ["FrameDecoder", "header_fields", "read_partial_body"]

_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_PRODUCE_KEY: Final = 0
_CUT: Final = "frame truncated"  # the framer's reason for a frame of which only the first bytes were captured
_METADATA_KEY: Final = 3


def header_fields(raw: bytes, request: bool) -> tuple[int | None, int | None, int | None]:
    """(api key, api version, correlation id) read straight from a frame's first bytes, as far as
    they are there (a response has only the correlation id)."""
    if request:
        key = _I16.unpack_from(raw, 4)[0] if len(raw) >= 6 else None
        ver = _I16.unpack_from(raw, 6)[0] if len(raw) >= 8 else None
        corr = _I32.unpack_from(raw, 8)[0] if len(raw) >= 12 else None
        return key, ver, corr
    return None, None, (_I32.unpack_from(raw, 4)[0] if len(raw) >= 8 else None)


_Raw = Callable[[bytes, int, int], tuple[Message, int]]
#: (api key << 16 | api version) -> (header version, header decoder, body decoder) of the requests
#: and of the responses met so far (a registry lookup once per pair, not per frame)
_REQUESTS: Final[dict[int, tuple[int, _Raw, _Raw]]] = {}
_RESPONSES: Final[dict[int, tuple[int, _Raw, _Raw]]] = {}


def _route(key: int, version: int, request: bool) -> tuple[int, _Raw, _Raw] | None:
    """The header version and the generated decoders of an API's requests or responses at ``version``;
    None if kcodec has none (the frame readers of ``kcodec.protocol.frames`` then say why)."""
    routes = _REQUESTS if request else _RESPONSES
    found = routes.get(key << 16 | version)
    if found is None:
        try:
            info = api(key)
            if request:
                hv = info.request_header_version(version)
                found = (hv, raw_decoder("RequestHeader", hv), raw_decoder(info.request, version))
            else:
                hv = info.response_header_version(version)
                found = (hv, raw_decoder("ResponseHeader", hv), raw_decoder(info.response, version))
        except KcodecError:
            return None
        routes[key << 16 | version] = found
    return found


def _clean(data: bytes, key: int, version: int, request: bool) -> tuple[int, Message, Message] | None:
    """(header version, header, body) of a frame that decodes cleanly, read by the generated
    decoders directly: a small frame whose size prefix is its length, whose header and body read
    without error and leave no byte. None for anything else (a large body, whose decoding pauses the
    garbage collector, included): ``decode_request``/``decode_response`` then read it again, with
    the errors, diagnostics and leniency they have (the same values when it does decode)."""
    n = len(data)
    if n < 8 or n >= GC_PAUSE_BYTES or type(data) is not bytes or _I32.unpack_from(data, 0)[0] != n - 4:
        return None
    if key < 0 or version < 0 or key > 0x7FFF or version > 0x7FFF:
        return None
    route = _route(key, version, request)
    if route is None:
        return None
    hv, read_header, read_body = route
    try:
        header, pos = read_header(data, 4, n)
        body, end = read_body(data, pos, n)
    except Exception:  # (read again by the frame readers, which name it)
        return None
    return (hv, header, body) if end == n else None


def _as_kcodec_error(e: Exception) -> KcodecError:
    if isinstance(e, KcodecError):
        return e
    return DecodeError(f"{type(e).__name__}: {e}", 0, "frame")  # a decoder bug must not stop the capture


def _reasons(diagnostics: list[Diagnostic]) -> tuple[str, ...]:
    return tuple([d.reason for d in diagnostics]) if diagnostics else ()


def read_partial_body(frame: CapturedFrame, data: bytes, request: bool, *, cut: bool = False) -> None:
    """For a frame whose body did not decode (``frame.error`` set; api key and version known): when
    its header decodes and the error lies in the body (or ``cut``: the capture has only the first
    bytes of the frame, ``data``), set ``frame.header`` and ``frame.partial`` (the body read as far
    as it goes; offsets count from the size prefix, as the error's do) and put a diagnostic saying
    what was read before the error's own (which stays last)."""
    error, key, version = frame.error, frame.api_key, frame.api_version
    if not isinstance(error, DecodeError) or isinstance(error, TrailingBytesError):
        return
    if key is None or version is None or len(data) < 4:
        return
    try:
        info = api(key)
        name = info.request if request else info.response
        if not cut and error.path != name and not error.path.startswith((f"{name}.", f"{name}[")):
            return  # the size prefix or the header is what broke
        hv = info.request_header_version(version) if request else info.response_header_version(version)
        header, end = decode_at("RequestHeader" if request else "ResponseHeader", hv, memoryview(data)[4:])
        from kcodec.protocol.partial import (
            read_partial,  # (imported by the first frame that needs it, if any)
        )

        partial = read_partial(name, version, data, 4 + end)
    except KcodecError:
        return
    frame.header_version, frame.header, frame.partial = hv, header, partial
    frame.diagnostics = (*frame.diagnostics[:-1], partial.describe(), *frame.diagnostics[-1:])


class FrameDecoder:
    """Decodes the frames of one connection (see the module docstring)."""

    __slots__ = ("client", "groups", "number", "pairing", "server", "strict")

    def __init__(self, number: int, client: str, server: str, pairing: Pairing, *, strict: bool = False):
        self.number = number
        self.client = client
        self.server = server
        self.pairing = pairing
        self.strict = strict
        self.groups: GroupTracker | None = None  # (made by the connection's first group frame)

    def _group_frame(self, frame: CapturedFrame, request: bool) -> None:
        """A frame of a group API: the groups it is about and the protocol values embedded in it
        (``kcodec.capture.groups``)."""
        tracker = self.groups
        if tracker is None:
            tracker = self.groups = GroupTracker()
        key, version, corr = frame.api_key, frame.api_version, frame.correlation_id
        assert key is not None and version is not None and corr is not None
        found = (tracker.request if request else tracker.response)(key, version, corr, frame.body)
        frame.groups, embedded, notes = found
        if embedded:
            frame.embedded = tuple(embedded)
        if notes:
            frame.diagnostics = (*frame.diagnostics, *notes)

    def request(self, raw: RawFrame) -> CapturedFrame:
        frame = CapturedFrame(
            raw.timestamp, self.number, self.client, self.server, "request", raw.offset, raw.size, raw.data
        )
        if raw.framed:
            frame.api_key, frame.api_version, frame.correlation_id = header_fields(raw.data, True)
        if raw.error is not None:
            frame.fail(raw.error)
            if raw.framed and raw.error.reason.startswith(_CUT):
                read_partial_body(frame, raw.data, True, cut=True)
        else:
            self._decode_request(frame, raw.data)
        if frame.api_key is not None and frame.api_version is not None and frame.correlation_id is not None:
            acks = getattr(frame.body, "acks", None) if frame.api_key == _PRODUCE_KEY else None
            if acks != 0:  # a Produce request with acks=0 gets no response
                self.pairing.add(frame.correlation_id, frame.api_key, frame.api_version, frame.timestamp)
            if frame.api_key in GROUP_KEYS and frame.body is not None:
                self._group_frame(frame, True)
        return frame

    def _decode_request(self, frame: CapturedFrame, data: bytes) -> None:
        key, version = frame.api_key, frame.api_version
        clean = None if key is None or version is None else _clean(data, key, version, True)
        if clean is not None:
            frame.header_version, frame.header, frame.body = clean
            return
        strict = self.strict
        try:
            req: Frame = decode_request(data, strict=strict)
            diagnostics = _reasons(req.diagnostics)
        except DecodeError as e:
            found = None if strict else read_null_arrays(data, e, lambda d: decode_request(d, strict=False))
            if found is None:
                frame.fail(e)
                read_partial_body(frame, data, True)
                self._explain_failed_request(frame, data)
                return
            req, notes = found
            diagnostics = notes + _reasons(req.diagnostics)
        except Exception as other:  # (its own name: compiled, a name has one type)
            frame.fail(_as_kcodec_error(other))
            return
        if diagnostics and frame.api_key == _METADATA_KEY:
            placeholder = metadata_topics_placeholder(data)
            if placeholder is not None:
                req, why = placeholder
                diagnostics = (why,)
        frame.header_version, frame.header, frame.body = req.header_version, req.header, req.body
        if diagnostics:
            frame.diagnostics = diagnostics + frame.diagnostics

    def _explain_failed_request(self, frame: CapturedFrame, data: bytes) -> None:
        if frame.api_key == _METADATA_KEY:
            placeholder = metadata_topics_placeholder(data)
            if placeholder is not None:
                frame.diagnostics = (placeholder[1], *frame.diagnostics)

    def response(self, raw: RawFrame) -> CapturedFrame:
        frame = CapturedFrame(
            raw.timestamp, self.number, self.client, self.server, "response", raw.offset, raw.size, raw.data
        )
        if raw.framed:
            frame.correlation_id = header_fields(raw.data, False)[2]
        waiting = None if frame.correlation_id is None else self.pairing.take(frame.correlation_id)
        if waiting is not None:
            frame.api_key, frame.api_version, sent = waiting
            frame.latency = frame.timestamp - sent
        if raw.error is not None:
            frame.fail(raw.error)
            if raw.framed and raw.error.reason.startswith(_CUT):
                read_partial_body(frame, raw.data, False, cut=True)
        elif frame.api_key is None or frame.api_version is None:
            frame.fail(
                UnmatchedResponseError(
                    f"no request with correlation id {frame.correlation_id} was seen on this connection",
                    4,
                    "ResponseHeader.correlation_id",
                )
            )
        else:
            self._decode_response(frame, raw.data, frame.api_key, frame.api_version)
        if frame.api_key in GROUP_KEYS and frame.correlation_id is not None and self.groups is not None:
            self._group_frame(frame, False)
        return frame

    def _decode_response(self, frame: CapturedFrame, data: bytes, key: int, version: int) -> None:
        clean = _clean(data, key, version, False)
        if clean is not None:
            frame.header_version, frame.header, frame.body = clean
            return
        strict = self.strict
        resp: Frame | None = None
        error: KcodecError | None = None
        try:
            resp = decode_response(data, key, version, strict=strict)
        except Exception as e:
            error = _as_kcodec_error(e)
        if key == API_VERSIONS_KEY and (resp is None or resp.diagnostics):
            reading = read_api_versions_reply(data, version)
            if reading is not None:
                if strict:
                    frame.diagnostics = reading.diagnostics
                    frame.fail(error or DecodeError("reply does not decode cleanly", 0, "frame"))
                    return
                header = message_class("ResponseHeader")(correlation_id=frame.correlation_id)  # type: ignore[call-arg]
                frame.header_version, frame.header, frame.body = 0, header, reading.body
                frame.api_version = reading.version
                frame.diagnostics = reading.diagnostics
                return
        if resp is None and isinstance(error, DecodeError) and not strict:
            found = read_null_arrays(data, error, lambda d: decode_response(d, key, version, strict=False))
            if found is not None:
                resp, notes = found
                error = None
                frame.diagnostics = notes
        if resp is None:
            assert error is not None
            frame.fail(error)
            read_partial_body(frame, data, False)
            return
        assert isinstance(resp, ResponseFrame)
        frame.header_version, frame.header, frame.body = resp.header_version, resp.header, resp.body
        if resp.diagnostics:
            frame.diagnostics += self._explain(key, version, data, resp.diagnostics)

    @staticmethod
    def _explain(key: int, version: int, data: bytes, diagnostics: list[Diagnostic]) -> tuple[str, ...]:
        out: list[str] = []
        for d in diagnostics:
            trailing = len(data) - d.offset
            why = doubled_tagged_section(key, version, data, trailing)
            out.append(why or d.reason)
        return tuple(out)
