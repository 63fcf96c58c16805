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

from kcodec.codec import decode, encode, message_names
from kcodec.errors import KcodecError
from kcodec.frames import decode_request, decode_response, encode_request, encode_response
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
    from kcodec.codec import message_info

    return [(n, v) for n in message_names() for v in sorted(message_info(n).owners)]


def check_body(name: str, version: int, data: bytes) -> str:
    """``refused`` or ``round-trip`` (raises ``SelfCheckFailure`` when re-encoding differs).

    Two differences are Kafka's own: unsigned varints written with redundant continuation bytes
    (``81 00`` for 1) are read as their value and booleans other than 0 and 1 as true, as Kafka's
    reader does, and both are written back in their canonical form. A body holding such items must
    re-encode as exactly the body with each of them made canonical (``round-trip (canonical form)``),
    located by ``kcodec.fuzz.layout``."""
    try:
        msg = decode(name, version, data)
    except KcodecError:
        return "refused"
    again = encode(msg, version)
    if again == data:
        return "round-trip"
    if again == canonical_form(name, version, data):
        return "round-trip (canonical form)"
    raise SelfCheckFailure(f"{name} v{version}: decoded {data.hex()} re-encodes as {again.hex()}")


def canonical_form(name: str, version: int, data: bytes) -> bytes:
    """``data`` with every unsigned varint in its shortest form and every boolean 0 or 1."""
    from kcodec._wire import read_uvarint
    from kcodec.fuzz.layout import layout
    from kcodec.fuzz.mutate import uvarint

    out = bytearray()
    pos = 0
    for span in layout(name, version, data):
        if span.compact:
            value, _ = read_uvarint(data, span.offset)
            out += data[pos : span.offset] + uvarint(value)
            pos = span.end
        elif span.kind == "bool":
            out += data[pos : span.offset] + (b"\x01" if data[span.offset] else b"\x00")
            pos = span.end
    out += data[pos:]
    return bytes(out)


def check_request_frame(data: bytes) -> str:
    try:
        frame = decode_request(data)
    except KcodecError:
        return "refused"
    again = encode_request(frame.body, frame.api_version, correlation_id=0, header=frame.header)
    if again != data:
        raise SelfCheckFailure(f"request frame {data.hex()} re-encodes as {again.hex()}")
    return "round-trip"


def check_response_frame(data: bytes, api_key: int, api_version: int) -> str:
    try:
        frame = decode_response(data, api_key, api_version)
    except KcodecError:
        return "refused"
    again = encode_response(frame.body, api_version, correlation_id=0, header=frame.header)
    if again != data:
        raise SelfCheckFailure(f"response frame {data.hex()} re-encodes as {again.hex()}")
    return "round-trip"


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
