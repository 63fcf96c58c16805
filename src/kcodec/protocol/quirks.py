"""Known off-spec layouts of real peers, read into their real values.

Both the ApiVersions handshake (``kcodec.net.negotiation``) and the offline capture decoder
(``kcodec.capture``) use this module; it depends on the codec runtime only (no network code).

Each reader takes a frame as captured (size prefix included) that does not decode cleanly, checks
that it has exactly the layout of one known deviation (every byte accounted for), and returns what
the peer meant, with a diagnostic naming the behaviour. They never raise on bad input; None means
"not this quirk".

Known deviations:

- ``int8_api_keys_count``: librdkafka's mock cluster answers ApiVersions v3+ requests it wants
  retried at a lower version with ErrorCode, a 1-byte ApiKeys count N (a compact array of N would
  write N+1), N entries without tagged fields, ThrottleTimeMs and no tagged fields
  (:func:`diagnose_api_versions_reply`);
- ``other_version_layout`` / ``flexible_response_header``: an ApiVersions reply in the layout of another
  version, or with a tagged-field byte after the correlation id (response header v1; ApiVersions
  responses always use v0);
- ``doubled_tagged_fields``: librdkafka's mock cluster writes a second, empty top-level tagged-field
  section after flexible Metadata responses (:func:`doubled_tagged_section`);
- ``metadata_topics_placeholder``: librdkafka (2.x) writes the Topics count of an all-topics flexible
  Metadata request (v9+) as four zero bytes, the int32 placeholder it reserves for array counts, where
  a compact array length belongs; read by the spec the request asks for all topics (a null array) and
  its three remaining bytes shift AllowAutoTopicCreation and the fields after it
  (:func:`metadata_topics_placeholder`);
- ``null_array``: an array the spec does not allow to be null is null (librdkafka's mock cluster
  answers an all-topics OffsetFetch with a null Topics array): :func:`read_null_arrays` reads the
  frame with those arrays as null.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from kcodec.protocol.codec import message_class
from kcodec.protocol.errors import DecodeError, KcodecError
from kcodec.protocol.frames import Frame, RequestFrame, decode_request, decode_response
from kcodec.protocol.model import Message
from kcodec.protocol.registry import api

__all__ = [
    "API_VERSIONS_KEY",
    "QUIRKS",
    "QuirkReading",
    "diagnose_api_versions_reply",
    "doubled_tagged_section",
    "metadata_topics_placeholder",
    "ranges_from_response",
    "read_api_versions_reply",
    "read_null_arrays",
    "short_note",
]

API_VERSIONS_KEY = 18
METADATA_KEY = 3
UNSUPPORTED_VERSION = 35

# Deviations from the specs that kcodec recognises (QuirkReading.quirk, diagnostics).
QUIRKS: dict[str, str] = {
    "other_version_layout": "the body is in the layout of another ApiVersions version",
    "flexible_response_header": (
        "a tagged-field byte follows the correlation id (ApiVersions responses always use the "
        "non-flexible response header v0)"
    ),
    "int8_api_keys_count": (
        "ErrorCode, a 1-byte ApiKeys count N (a compact array would write N+1), N entries without "
        "tagged fields, ThrottleTimeMs, no tagged fields: the layout librdkafka's mock cluster "
        "writes for ApiVersions v3+ requests"
    ),
    "doubled_tagged_fields": (
        "a second, empty top-level tagged-field section after the body (librdkafka's mock cluster "
        "writes it for flexible Metadata responses)"
    ),
    "metadata_topics_placeholder": (
        "the Topics count of an all-topics flexible Metadata request written as the 4-byte placeholder "
        "00 00 00 00 instead of a compact array length (librdkafka 2.x)"
    ),
    "null_array": "an array the spec does not allow to be null is null",
}


def ranges_from_response(response: Message) -> dict[int, tuple[int, int]]:
    """``{api_key: (min, max)}`` advertised by an ApiVersionsResponse."""
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class QuirkReading:
    """What could be read from an ApiVersions reply that deviates from KIP-511 in a known way."""

    quirk: str  # a key of QUIRKS
    error_code: int
    ranges: dict[int, tuple[int, int]]
    decoded_as: int | None  # the ApiVersionsResponse version whose layout the body has, if any
    detail: str
    throttle_time_ms: int = 0
    body: Message | None = None  # the body as read (the layout's version, or rebuilt from the bytes)

    @property
    def advertised_max(self) -> int | None:
        found = self.ranges.get(API_VERSIONS_KEY)
        return None if found is None else found[1]


def _api_versions_body(code: int, ranges: dict[int, tuple[int, int]], throttle: int) -> Message:
    cls: Any = message_class("ApiVersionsResponse")
    keys = [cls.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in ranges.items()]
    body: Message = cls(error_code=code, api_keys=keys, throttle_time_ms=throttle)
    return body


def diagnose_api_versions_reply(raw: bytes, sent: int | None) -> QuirkReading | None:
    """Read an ApiVersions reply frame (size prefix included) that decodes neither at the version sent
    (``sent``; None: unknown) nor as v0, by the deviations in :data:`QUIRKS`; None if none fits.
    Every reading must account for every byte of the frame."""
    info = api(API_VERSIONS_KEY)
    expected = "neither v0 nor the version sent" if sent is None else f"neither v{sent} nor v0"
    others = [v for v in reversed(info.versions) if v != 0 and v != sent]
    if sent is not None:
        others.sort(key=lambda v: (v > sent, abs(v - sent)))  # closest lower versions first
        for v in others:
            try:
                body = decode_response(raw, API_VERSIONS_KEY, v, strict=True).body
            except KcodecError:
                continue
            detail = f"reply is in the ApiVersionsResponse v{v} layout ({expected})"
            code = int(body.error_code)  # type: ignore[attr-defined]
            throttle = int(getattr(body, "throttle_time_ms", 0))
            return QuirkReading(
                "other_version_layout", code, ranges_from_response(body), v, detail, throttle, body
            )
    payload = raw[8:]  # after the size prefix and the correlation id (response header v0)
    if len(payload) >= 7:
        count = payload[2]
        if len(payload) == 3 + 6 * count + 4:
            (code,) = struct.unpack_from(">h", payload)
            ranges = {k: (lo, hi) for k, lo, hi in struct.iter_unpack(">hhh", payload[3 : 3 + 6 * count])}
            (throttle,) = struct.unpack_from(">i", payload, 3 + 6 * count)
            detail = (
                f"reply is {expected}: error code {code}, a 1-byte ApiKeys count of {count} (a compact "
                f"array of {count} would write {count + 1}), entries without tagged fields, ThrottleTimeMs, "
                "no tagged fields (the layout librdkafka's mock cluster writes for ApiVersions v3+ requests)"
            )
            body = _api_versions_body(code, ranges, throttle)
            return QuirkReading("int8_api_keys_count", code, ranges, None, detail, throttle, body)
    if len(raw) > 8 and raw[8] == 0:
        stripped = struct.pack(">i", len(raw) - 5) + raw[4:8] + raw[9:]
        for v in dict.fromkeys(x for x in (sent, 0) if x is not None):
            try:
                body = decode_response(stripped, API_VERSIONS_KEY, v, strict=True).body
            except KcodecError:
                continue
            detail = (
                f"reply is {expected}: a tagged-field byte follows the correlation id (a flexible response "
                f"header; ApiVersions responses always use header v0), then a v{v} body"
            )
            code = int(body.error_code)  # type: ignore[attr-defined]
            throttle = int(getattr(body, "throttle_time_ms", 0))
            return QuirkReading(
                "flexible_response_header", code, ranges_from_response(body), v, detail, throttle, body
            )
    return None


@dataclass(frozen=True, slots=True)
class ApiVersionsReading:
    """An ApiVersions reply read for a capture: the body, the version it is shown at, and why."""

    body: Message
    version: int  # the version whose fields the body has (the one asked, or v0 for Kafka's fallback)
    diagnostics: tuple[str, ...]
    quirk: str | None


def read_api_versions_reply(raw: bytes, asked: int) -> ApiVersionsReading | None:
    """An ApiVersions reply to a v``asked`` request that did not decode cleanly at v``asked``: Kafka's
    own fallback (KIP-511: a v0 UNSUPPORTED_VERSION reply to a version the broker does not know) or a
    known deviation (:func:`diagnose_api_versions_reply`), with the real values. None if neither."""
    if asked > 0:
        try:
            resp = decode_response(raw, API_VERSIONS_KEY, 0, strict=True)
        except KcodecError:
            pass
        else:
            if int(resp.body.error_code) == UNSUPPORTED_VERSION:  # type: ignore[attr-defined]
                why = f"ApiVersions v{asked} answered with a v0 UNSUPPORTED_VERSION response"
                return ApiVersionsReading(resp.body, 0, (why,), None)
    reading = diagnose_api_versions_reply(raw, asked)
    if reading is None or reading.body is None:
        return None
    version = asked if reading.decoded_as is None else reading.decoded_as
    return ApiVersionsReading(reading.body, version, (reading.detail,), reading.quirk)


def doubled_tagged_section(api_key: int, version: int, raw: bytes, trailing: int) -> str | None:
    """The explanation for ``trailing`` bytes left after a response body, if they are the empty second
    tagged-field section librdkafka's mock cluster writes after flexible Metadata responses."""
    if api_key == METADATA_KEY and version >= 9 and trailing == 1 and raw[-1:] == b"\x00":
        return (
            "1 byte after MetadataResponse: a second, empty top-level tagged-field section "
            "(librdkafka's mock cluster writes it for flexible Metadata versions)"
        )
    return None


def metadata_topics_placeholder(raw: bytes) -> tuple[RequestFrame, str] | None:
    """A flexible Metadata request (v9+) whose body starts with the 4-byte placeholder ``00 00 00 00``
    where the Topics compact array length belongs (librdkafka's all-topics request): the request read
    with Topics null (all topics) and the fields after the placeholder, and the diagnostic."""
    if len(raw) < 12 or struct.unpack_from(">h", raw, 4)[0] != METADATA_KEY:
        return None
    version = struct.unpack_from(">h", raw, 6)[0]
    if version < 9:
        return None
    try:
        as_spec = decode_request(raw, strict=False)
    except KcodecError:
        return None
    if not as_spec.diagnostics or not as_spec.diagnostics[0].reason.startswith("3 trailing bytes"):
        return None
    # Read by the spec the body is 4 bytes (a null Topics array, two booleans, no tagged fields),
    # followed by the 3 bytes left over.
    body_at = as_spec.diagnostics[0].offset - 4
    if raw[body_at : body_at + 4] != b"\x00\x00\x00\x00":
        return None
    fixed = struct.pack(">i", len(raw) - 7) + raw[4 : body_at + 1] + raw[body_at + 4 :]
    try:
        real = decode_request(fixed, strict=True)
    except KcodecError:
        return None
    allow = bool(getattr(real.body, "allow_auto_topic_creation", False))
    why = (
        f"Topics is written as the 4-byte placeholder 00 00 00 00 at byte {body_at} where a compact "
        "array length belongs (librdkafka's all-topics Metadata request): read as a null Topics array "
        f"(all topics) followed by 3 stray zero bytes; the client meant AllowAutoTopicCreation={allow} "
        f"(read by the spec it would be False, with 3 bytes left over)"
    )
    return real, why


#: A short name for each known peer deviation's diagnostic (the text that names it, matched), for
#: a table row; the diagnostic itself says how the frame was read.
_SHORT_NOTES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"1-byte ApiKeys count"),
     "quirk: ApiVersions reply with a 1-byte ApiKeys count (librdkafka mock)"),
    (re.compile(r"reply is in the ApiVersionsResponse (v\d+) layout"),
     r"quirk: ApiVersions reply in the \1 layout"),
    (re.compile(r"a tagged-field byte follows the correlation id"),
     "quirk: ApiVersions reply with a flexible header"),
    (re.compile(r"a second, empty top-level tagged-field section"),
     "quirk: doubled tagged-field section (librdkafka mock)"),
    (re.compile(r"the 4-byte placeholder 00 00 00 00 .*AllowAutoTopicCreation=(\w+)"),
     r"quirk: all-topics placeholder 00 00 00 00 (librdkafka), auto-create \1"),
    (re.compile(r"^(\S+) is null, which \S+ v\d+ does not allow; read as null"),
     r"quirk: \1 null, read as null"),
)  # fmt: skip


def short_note(diagnostic: str) -> str:
    """A short name for a known peer deviation's diagnostic (``quirk: ...``), for a table row where
    the whole text would repeat on every frame of the peer; any other diagnostic unchanged."""
    for pattern, short in _SHORT_NOTES:
        found = pattern.search(diagnostic)
        if found is not None:
            return found.expand(short)
    return diagnostic


_NULL = re.compile(r"null \(length -?\d+\) for a field that is not nullable")
_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)")
# (message, field attribute) -> the peer known to send it null
_NULL_SENDERS: dict[tuple[str, str], str] = {
    ("OffsetFetchResponse", "topics"): (
        "librdkafka's mock cluster answers an OffsetFetch for all topics (Topics null) this way"
    ),
}

F = TypeVar("F", bound=Frame)


def _patch_null(data: bytearray, pos: int) -> bool:
    """Turn the null length just before ``pos`` into an empty one of the same width."""
    if pos >= 1 and data[pos - 1] == 0:  # compact (varint N+1): 0 is null, 1 is empty
        data[pos - 1] = 1
        return True
    if pos >= 4 and data[pos - 4 : pos] == b"\xff\xff\xff\xff":  # int32 array/bytes length
        data[pos - 4 : pos] = b"\x00\x00\x00\x00"
        return True
    if pos >= 2 and data[pos - 2 : pos] == b"\xff\xff":  # int16 string length
        data[pos - 2 : pos] = b"\x00\x00"
        return True
    return False


def _set_null(root: Message, path: str) -> bool:
    """Set the field named by a decode error's ``path`` (``Message.a[2].b``) to None."""
    parts = path.split(".")[1:]
    obj: Any = root
    for i, part in enumerate(parts):
        m = _SEGMENT.fullmatch(part)
        if m is None:
            return False
        name, indices = m.group(1), [int(x) for x in re.findall(r"\d+", m.group(2))]
        if i == len(parts) - 1 and not indices:
            if not hasattr(obj, name):
                return False
            setattr(obj, name, None)
            return True
        obj = getattr(obj, name, None)
        for k in indices:
            if obj is None or k >= len(obj):
                return False
            obj = obj[k]
    return False


def read_null_arrays(
    raw: bytes, error: DecodeError, decode: Callable[[bytes], F], limit: int = 32
) -> tuple[F, tuple[str, ...]] | None:
    """A frame that failed with "null for a field that is not nullable" (``error``), read with every
    such field as null: the length is read as empty to decode the rest, then the field is set to
    None. ``decode`` decodes a frame (size prefix included). None if some other error remains."""
    data = bytearray(raw)
    paths: list[str] = []
    for _ in range(limit):
        if not _NULL.match(error.reason) or not error.path or "Header" in error.path.split(".")[0]:
            return None
        if not _patch_null(data, error.offset):
            return None
        paths.append(error.path)
        try:
            frame = decode(bytes(data))
        except DecodeError as e:
            error = e
            continue
        except KcodecError:
            return None
        notes: list[str] = []
        for path in paths:
            if not _set_null(frame.body, path):
                return None
            message, _, rest = path.partition(".")
            sender = _NULL_SENDERS.get((message, rest.split(".")[-1].split("[")[0]))
            notes.append(
                f"{path} is null, which {message} v{frame.api_version} does not allow; read as null"
                + (f" ({sender})" if sender else "")
            )
        return frame, tuple(notes)
    return None
