"""The fuzzers' own oracle (kcodec.fuzz.selfcheck) and the partial reader on known tagged fields:
a non-minimal varint inside a known tag is a legal round trip to its canonical form (the tag's size
shrinks with it), and a known tag's fixed-width value cut short by the end of the body gets the same
reason from the codec and from ``read_partial`` (the codec said "unexpected end of buffer", the walker
"needs N bytes"). Both are checked for every root-level known tagged field of every message version."""

from __future__ import annotations

from typing import Any

import pytest

import kcodec
from kcodec.fuzz.mutate import uvarint
from kcodec.fuzz.selfcheck import canonical_form, check_body
from kcodec.protocol import strategies
from kcodec.protocol.codec import message_info
from kcodec.protocol.errors import DecodeError
from kcodec.protocol.partial import read_partial

FIXED = {"int8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "float64": 8, "uuid": 16}


def _root_tags(kind: str) -> list[Any]:
    """(name, version, field) for every root-level known tagged field of ``kind``: fixed-width
    values, or (nullable or not) strings."""
    out = []
    for name, version in strategies.pairs():
        info = message_info(name)
        if not info.is_flexible(version):
            continue
        for f in info.fields_at(name, version):
            if f.tag is None or not f.is_tagged(version) or f.is_array:
                continue
            # (a 1-byte value is never cut short by the body's end once its size fits)
            if (kind == "fixed" and FIXED.get(f.type, 1) > 1) or (kind == "string" and f.type == "string"):
                out.append(pytest.param(name, version, f, id=f"{name}-v{version}-{f.attr}"))
    return out


def _default_body(name: str, version: int) -> bytes:
    body = kcodec.encode(kcodec.message_class(name)(), version)
    assert body.endswith(b"\x00")  # the root's tagged section comes last: no tags
    return body[:-1]


def _codec_error(name: str, version: int, body: bytes) -> tuple[int, str, str]:
    with pytest.raises(DecodeError) as info:
        kcodec.decode(name, version, body)
    e = info.value
    return e.offset, e.path, e.reason


def test_the_issue_case() -> None:
    body = bytes.fromhex("0000010000000001010100")
    p = read_partial("ApiVersionsResponse", 3, body)
    assert p.error is not None
    got = (p.error.offset, p.error.path, p.error.reason)
    assert got == _codec_error("ApiVersionsResponse", 3, body)
    assert got[2] == "needs 8 bytes but only 1 remain"


@pytest.mark.parametrize(("name", "version", "field"), _root_tags("fixed"))
def test_a_short_fixed_width_tag_value_has_one_reason(name: str, version: int, field: Any) -> None:
    width = FIXED[field.type]
    body = _default_body(name, version) + b"\x01" + uvarint(field.tag) + uvarint(width) + b"\x00"
    p = read_partial(name, version, body)
    assert p.error is not None
    assert (p.error.offset, p.error.path, p.error.reason) == _codec_error(name, version, body)
    assert p.error.reason == f"needs {width} bytes but only 1 remain"


def test_the_issue_canonical_case() -> None:
    # SupportedFeatures (tag 0) of one feature, its array count written 82 00, the tag's size 9
    body = bytes.fromhex("00000100000000010009820002660001000200")
    assert check_body("ApiVersionsResponse", 3, body) == "round-trip (canonical form)"
    assert canonical_form("ApiVersionsResponse", 3, body).hex() == "000001000000000100080202660001000200"


@pytest.mark.parametrize(("name", "version", "field"), _root_tags("string"))
def test_a_non_minimal_varint_in_a_known_tag_is_a_canonical_round_trip(
    name: str, version: int, field: Any
) -> None:
    value = b"\x82\x00x"  # a compact string "x" whose length (2 = 1 + 1) takes two bytes
    body = _default_body(name, version) + b"\x01" + uvarint(field.tag) + uvarint(len(value)) + value
    assert check_body(name, version, body) == "round-trip (canonical form)"
    minimal = _default_body(name, version) + b"\x01" + uvarint(field.tag) + b"\x02\x02x"
    assert canonical_form(name, version, body) == minimal == kcodec.encode(
        kcodec.decode(name, version, body), version
    )


def test_there_are_cases() -> None:
    assert len(_root_tags("fixed")) >= 2 and len(_root_tags("string")) >= 5
