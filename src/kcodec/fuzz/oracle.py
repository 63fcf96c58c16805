"""The oracle: is what a broker did with one request a finding?

``judge(sent, reply)`` looks at one request and what came back: a connection closed or reset (fine
for a malformed request, a finding for a valid one), silence past the timeout, a reply frame of an
impossible size, a response that does not decode at the request's version (strict) or only with
bytes left over, a correlation id that is not the request's, and error codes that make no sense
(codes Kafka does not define, UNKNOWN_SERVER_ERROR, UNSUPPORTED_VERSION for a version the broker
advertised, or a success for bytes that are not a valid request). Whether the broker survived is the
liveness probe's business (``kcodec.fuzz.wire.alive``), asked after anything suspicious.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kcodec.fuzz.generate import is_wait_field
from kcodec.fuzz.wire import Reply
from kcodec.protocol.codec import decode, message_info
from kcodec.protocol.error_codes import ErrorCode, error_name
from kcodec.protocol.errors import KcodecError, TrailingBytesError
from kcodec.protocol.frames import decode_response
from kcodec.protocol.registry import api

__all__ = ["KINDS", "Sent", "Verdict", "error_codes", "judge"]

#: every kind of finding, with its severity
KINDS: dict[str, str] = {
    "broker_died": "critical",
    "broker_unresponsive": "critical",
    "bad_reply_frame": "high",
    "undecodable_response": "high",
    "correlation_mismatch": "high",
    "closed_on_valid_request": "high",
    "no_response": "high",
    "server_error": "high",
    "trailing_bytes": "medium",
    "unknown_error_code": "medium",
    "unsupported_advertised_version": "medium",
    "silent_on_malformed": "medium",
    "accepted_malformed": "info",
}


@dataclass(slots=True)
class Sent:
    """One request as sent: the frame and what it was meant to be."""

    api_key: int
    api_version: int
    correlation_id: int
    frame: bytes
    body: bytes
    mutation: str | None = None  # None: a valid request, as generated
    detail: str = ""
    frame_level: bool = False  # the frame itself lies (size, header): no reply is owed
    advertised: bool = True  # the broker advertised this api key and version

    @property
    def api_name(self) -> str:
        try:
            return api(self.api_key).name
        except KcodecError:
            return f"ApiKey{self.api_key}"

    @property
    def valid(self) -> bool:
        return self.mutation is None


@dataclass(slots=True)
class Verdict:
    """A finding's kind (``None``: nothing wrong) and one readable sentence."""

    kind: str | None
    summary: str = ""
    suspicious: bool = False  # ask the liveness probe whether the broker is still there
    extra: dict[str, Any] = field(default_factory=dict)


def error_codes(message: Any, name: str, version: int) -> Iterator[tuple[str, int]]:
    """Every ``error_code`` in a decoded message: (path, code)."""
    info = message_info(name)

    def walk(obj: Any, struct_name: str, path: str) -> Iterator[tuple[str, int]]:
        for f in info.fields_at(struct_name, version):
            value = getattr(obj, f.attr, None)
            where = f"{path}.{f.attr}" if path else f.attr
            if f.attr == "error_code" and isinstance(value, int):
                yield where, value
            elif f.struct_name is not None and value is not None:
                items = value if f.is_array else [value]
                for i, item in enumerate(items):
                    yield from walk(item, f.struct_name, f"{where}[{i}]" if f.is_array else where)

    yield from walk(message, info.name, "")


def _valid_body(sent: Sent) -> Any:
    """The request body decoded (strict), or None when the bytes are not a valid request."""
    try:
        return decode(api(sent.api_key).request, sent.api_version, sent.body)
    except (KcodecError, ValueError):
        return None


def declared_wait_ms(sent: Sent) -> int:
    """The longest wait the request asks the broker for (Fetch max_wait_ms, timeouts); 0 if unknown."""
    body = _valid_body(sent)
    if body is None:
        return 0
    name = api(sent.api_key).request
    info = message_info(name)
    longest = 0
    for f in info.fields_at(name, sent.api_version):
        if is_wait_field(f):
            longest = max(longest, int(getattr(body, f.attr)))
    return longest


def _no_reply_owed(sent: Sent) -> bool:
    """Produce with acks=0 gets no response (nor does anything the frame itself garbles)."""
    if sent.frame_level:
        return True
    if sent.api_key == 0:
        body = _valid_body(sent)
        return body is not None and body.acks == 0
    return False


def judge(sent: Sent, reply: Reply, timeout: float) -> Verdict:
    """Whether ``reply`` to ``sent`` is a finding (see the module docstring)."""
    what = f"{sent.api_name} v{sent.api_version}"
    how = "a valid request" if sent.valid else f"a request mutated by {sent.mutation} ({sent.detail})"
    if reply.outcome in ("closed", "reset"):
        if sent.valid and sent.advertised and not _no_reply_owed(sent):
            return Verdict(
                "closed_on_valid_request",
                f"the broker {reply.outcome} the connection on {how} {what}",
                True,
            )
        return Verdict(None)  # a malformed request: closing is what Kafka does
    if reply.outcome == "timeout":
        if _no_reply_owed(sent) or declared_wait_ms(sent) >= timeout * 1000:
            return Verdict(None, suspicious=not sent.frame_level)
        if sent.valid:
            return Verdict("no_response", f"no response within {timeout:g} s to {how} {what}", True)
        return Verdict(
            "silent_on_malformed",
            f"neither a response nor a close within {timeout:g} s after {how} {what}",
            True,
        )
    if reply.outcome == "bad_frame":
        return Verdict("bad_reply_frame", f"{reply.detail} in reply to {how} {what}", True)
    return _judge_response(sent, reply.data, what, how)


def _judge_response(sent: Sent, data: bytes, what: str, how: str) -> Verdict:
    (cid,) = struct.unpack_from(">i", data, 4) if len(data) >= 8 else (None,)
    if cid != sent.correlation_id:
        return Verdict(
            "correlation_mismatch",
            f"the response to {how} {what} carries correlation id {cid}, not {sent.correlation_id}",
            True,
        )
    if sent.frame_level:  # the header lied: the broker read something else; any reply decodes or not
        return Verdict(None)
    try:
        resp = decode_response(data, sent.api_key, sent.api_version).body
    except TrailingBytesError as e:
        return Verdict("trailing_bytes", f"the response to {how} {what} has bytes left over: {e}")
    except KcodecError as e:
        return Verdict("undecodable_response", f"the response to {how} {what} does not decode: {e}", True)
    name = api(sent.api_key).response
    codes = list(error_codes(resp, name, sent.api_version))
    for path, code in codes:
        if code not in ErrorCode._value2member_map_:
            return Verdict(
                "unknown_error_code", f"the response to {how} {what} has error code {code} at {path}"
            )
    for path, code in codes:
        if code == ErrorCode.UNKNOWN_SERVER_ERROR:
            return Verdict(
                "server_error", f"the response to {how} {what} has UNKNOWN_SERVER_ERROR at {path}", True
            )
        if code == ErrorCode.UNSUPPORTED_VERSION and sent.valid and sent.advertised:
            return Verdict(
                "unsupported_advertised_version",
                f"UNSUPPORTED_VERSION at {path} for {what}, a version the broker advertised",
            )
    if not sent.valid and _valid_body(sent) is None and codes and all(c == 0 for _, c in codes):
        return Verdict(
            "accepted_malformed",
            f"the broker answered {how} {what} with no error, though those bytes are not a valid "
            f"{api(sent.api_key).request} v{sent.api_version} ({error_name(0)} in {len(codes)} places)",
        )
    return Verdict(None)
