"""What kcodec's own decoders must do with any input, for the fuzz harnesses (atheris, hypothesis) and
the regression corpus: refuse it with a ``KcodecError``, or accept it such that encoding the result
gives the same bytes back. Anything else (another exception, different bytes) is a kcodec bug and
raises here: ``SelfCheckFailure`` for a wrong round trip, the exception itself otherwise.

Checks: message bodies (every message, every version), request and response frames, record batches
(headers, CRCs, decompression, records) and the capture reader (``iter_capture``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

from kcodec.protocol.codec import decode, decode_at, encode, message_names
from kcodec.protocol.errors import KcodecError
from kcodec.protocol.frames import decode_request, decode_response, encode_request, encode_response
from kcodec.protocol.registry import api
from kcodec.records import iter_batches

__all__ = [
    "CHECKS",
    "SelfCheckFailure",
    "canonical_form",
    "check_body",
    "check_capture",
    "check_records",
    "check_request_frame",
    "check_response_frame",
    "pairs",
]

#: decompression limit for self-checks: large enough for every batch in the corpus, small enough to
#: keep a harness's memory flat
MAX_DECOMPRESSED = 8 << 20


class SelfCheckFailure(AssertionError):
    """kcodec accepted bytes it cannot write back unchanged (not a ``KcodecError``: a kcodec bug)."""


def pairs() -> list[tuple[str, int]]:
    """Every (message name, version) kcodec has a codec for."""
    from kcodec.protocol.codec import message_info

    return [(n, v) for n in message_names() for v in sorted(message_info(n).owners)]


def check_body(name: str, version: int, data: bytes) -> str:
    """``refused`` or ``round-trip`` (raises ``SelfCheckFailure`` when re-encoding differs).

    Some differences are Kafka's own: unsigned varints written with redundant continuation bytes
    (``81 00`` for 1) are read as their value, booleans other than 0 and 1 as true, nullable-struct
    markers other than -1 and 1 as null (negative) or present, as Kafka's reader does, and all are
    written back in their canonical form; so are known tagged fields written at their default value
    (Kafka reads them, and writes only non-default ones). A body holding such items must
    re-encode as exactly the body with each of them made canonical (``round-trip (canonical form)``),
    located by ``kcodec.fuzz.layout``.

    A known tagged field whose value ends before the size it declares is not among them: the
    decoders refuse it (``refused``; accepted, the rest would be dropped on re-encoding, and Kafka's
    reader, which does not bound a known tag's value by its size, would read it as the next tag),
    so accepting one is a ``SelfCheckFailure`` like any other wrong round trip."""
    try:
        msg = decode(name, version, data)
    except KcodecError:
        return "refused"
    again = encode(msg, version)
    if again == data:
        return "round-trip"
    if again == canonical_form(name, version, data):
        return "round-trip (canonical form)"
    from kcodec.fuzz.layout import layout

    spans = layout(name, version, data)
    if default_tagged_fields(msg, name, version, spans) and decode(name, version, again) == msg:
        return "round-trip (canonical form: tagged fields at their default dropped)"
    raise SelfCheckFailure(f"{name} v{version}: decoded {data.hex()} re-encodes as {again.hex()}")


def default_tagged_fields(msg: Any, name: str, version: int, spans: list[Any]) -> int:
    """How many known tagged fields in the body carry their default value (Kafka never writes those,
    and neither does kcodec: re-encoding drops them)."""
    from kcodec.protocol.codec import message_info
    from kcodec.protocol.schema import STRUCT_DEFAULT
    from kcodec.protocol.wirewalk import TAGGED

    info = message_info(name)
    found = 0
    for s in spans:
        if s.kind != "known_tag":
            continue
        obj = _resolve(msg, s.path[: -len(TAGGED) - 1] if s.path != TAGGED else "")
        struct = type(obj).__name__
        f = next(x for x in info.fields_at(struct, version) if x.tag == s.value and x.is_tagged(version))
        value = getattr(obj, f.attr)
        default = type(value)() if f.default is STRUCT_DEFAULT else ([] if f.is_array else f.default)
        if value == default:
            found += 1
    return found


def _resolve(obj: Any, path: str) -> Any:
    for part in path.split(".") if path else ():
        attr, _, index = part.partition("[")
        obj = getattr(obj, attr)
        if index:
            obj = obj[int(index[:-1])]
    return obj


def canonical_form(name: str, version: int, data: bytes) -> bytes:
    """``data`` with every unsigned varint in its shortest form, every boolean 0 or 1 and every
    nullable-struct marker -1 or 1; a tagged field's size is then the size of its canonical value
    (a shortened varint inside a known tag shortens the tag)."""
    from kcodec.fuzz.layout import layout

    spans = layout(name, version, data)
    out, _ = _canonical(data, spans, 0, 0, len(data))
    return bytes(out)


def _canonical(data: bytes, spans: list[Any], i: int, start: int, end: int) -> tuple[bytearray, int]:
    """The canonical form of ``data[start:end]``, whose spans start at ``spans[i]``; with the index
    of the first span after it."""
    from kcodec.fuzz.mutate import uvarint
    from kcodec.protocol._wire import read_uvarint

    out = bytearray()
    pos = start
    while i < len(spans) and spans[i].offset < end:
        span = spans[i]
        i += 1
        if span.kind == "tag_size":  # the tag's value follows: canonical first, then its size
            value_end = span.end + (span.value or 0)
            inner, i = _canonical(data, spans, i, span.end, value_end)
            out += data[pos : span.offset] + uvarint(len(inner)) + inner
            pos = value_end
        elif span.compact:
            value, _ = read_uvarint(data, span.offset)
            out += data[pos : span.offset] + uvarint(value)
            pos = span.end
        elif span.kind == "bool":
            out += data[pos : span.offset] + (b"\x01" if data[span.offset] else b"\x00")
            pos = span.end
        elif span.kind == "struct_marker":  # any negative marker is null, anything else present
            out += data[pos : span.offset] + (b"\xff" if data[span.offset] >= 0x80 else b"\x01")
            pos = span.end
    out += data[pos:end]
    return out, i


def check_request_frame(data: bytes) -> str:
    try:
        frame = decode_request(data)
    except KcodecError:
        return "refused"
    again = encode_request(frame.body, frame.api_version, correlation_id=0, header=frame.header)
    if again == data:
        return "round-trip"
    name = api(frame.api_key).request
    return _frame_outcome(data, again, frame, "RequestHeader", name, frame.api_version)


def check_response_frame(data: bytes, api_key: int, api_version: int) -> str:
    try:
        frame = decode_response(data, api_key, api_version)
    except KcodecError:
        return "refused"
    again = encode_response(frame.body, api_version, correlation_id=0, header=frame.header)
    if again == data:
        return "round-trip"
    name = api(api_key).response
    return _frame_outcome(data, again, frame, "ResponseHeader", name, api_version)


def _frame_outcome(data: bytes, again: bytes, frame: Any, header: str, body: str, version: int) -> str:
    """A frame that decoded but re-encodes differently: fine only if its header re-encodes as its
    canonical form and its body passes ``check_body`` (whose outcome is returned)."""
    _, end = decode_at(header, frame.header_version, data[4:])
    head = data[4 : 4 + end]
    head_again = encode(frame.header, frame.header_version)
    if head_again not in (head, canonical_form(header, frame.header_version, head)):
        raise SelfCheckFailure(f"{header} {head.hex()} re-encodes as {head_again.hex()} in {data.hex()}")
    outcome = check_body(body, version, data[4 + end :])
    if outcome == "round-trip" and head_again == head:
        raise SelfCheckFailure(f"frame {data.hex()} re-encodes as {again.hex()}")
    return outcome


def check_records(data: bytes) -> str:
    """Every batch and record read; ``refused`` at the first ``KcodecError``."""
    try:
        for batch in iter_batches(data, max_decompressed_size=MAX_DECOMPRESSED):
            for record in batch.records():
                _ = (record.offset, record.key, record.value, record.headers)
    except KcodecError:
        return "refused"
    return "read"


def check_capture(data: bytes) -> str:
    """A capture file's bytes through ``kcodec.capture.iter_capture`` (every event, summaries too)."""
    from kcodec.capture import iter_capture

    fd, path = tempfile.mkstemp(suffix=".pcap")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        try:
            events = list(iter_capture(path))
        except KcodecError:
            return "refused"
        return f"{len(events)} events"
    finally:
        os.unlink(path)


CHECKS: dict[str, Callable[..., str]] = {
    "body": check_body,
    "request_frame": check_request_frame,
    "response_frame": check_response_frame,
    "records": check_records,
    "capture": check_capture,
}


def run_case(case: dict[str, Any]) -> str:
    """One regression-corpus case: ``{"check": ..., "hex": ..., and the check's other arguments}``."""
    data = bytes.fromhex(case["hex"])
    check = case["check"]
    if check == "body":
        return check_body(case["message"], case["version"], data)
    if check == "response_frame":
        return check_response_frame(data, case["api_key"], case["api_version"])
    return CHECKS[check](data)
