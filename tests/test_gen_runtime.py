"""kcodec.protocol._gen_runtime: the helpers generated codecs call for tagged-field sections, strings, bytes and
counts. Each must raise what the inline code it replaces raised (reason and offset; the generated
function adds the field), which the codec-level tests check end to end; here each case by itself."""

from __future__ import annotations

import pytest

from kcodec.protocol import _gen_runtime as rt
from kcodec.protocol.errors import DecodeError, EncodeError, NullValueError


def _error(fn: object, *args: object) -> tuple[str, int, str]:
    with pytest.raises(DecodeError) as info:
        fn(*args)  # type: ignore[operator]
    return info.value.reason, info.value.offset, info.value.path


def test_tagged_sections_keep_unknown_fields_in_order() -> None:
    data = bytes([2, 1, 2, 0xAA, 0xBB, 5, 0, 9])
    assert rt.read_tags(data, 0, len(data)) == ([(1, b"\xaa\xbb"), (5, b"")], 7)
    assert rt.skip_tags(data, 0, len(data)) == 7
    assert rt.read_tags(b"\x00", 0, 1) == (None, 1)


@pytest.mark.parametrize("fn", [rt.read_tags, rt.skip_tags])
def test_tagged_section_errors(fn: object) -> None:
    assert _error(fn, b"", 0, 0) == ("unexpected end of buffer", 0, "")
    assert _error(fn, bytes([2, 5, 0, 5, 0]), 0, 5) == (
        "tagged field 5 repeats tag 5: tags must be strictly ascending", 3, "")
    assert _error(fn, bytes([1, 1, 4, 0]), 0, 4) == ("needs 4 bytes but only 1 remain", 3, "")


def test_strings_compact_and_int16() -> None:
    assert rt.read_string(b"\x04abc", 0, 4, 0) == ("abc", 4)
    assert rt.read_string(b"\x00\x03abc", 0, 5, 2) == ("abc", 5)
    assert rt.read_nullable_string(b"\x00", 0, 1, 0) == (None, 1)
    assert rt.read_nullable_string(b"\xff\xff", 0, 2, 2) == (None, 2)


def test_string_errors() -> None:
    assert _error(rt.read_string, b"\x00", 0, 1, 0) == (
        "null (length -1) for a field that is not nullable at this version", 1, "")
    assert _error(rt.read_nullable_string, b"\xff\xfe", 0, 2, 2) == ("invalid length -2", 2, "")
    assert _error(rt.read_string, b"\x05ab", 0, 3, 0) == ("needs 4 bytes but only 2 remain", 1, "")
    assert _error(rt.read_string, b"\x00", 0, 1, 2) == ("unexpected end of buffer", 0, "")
    bad_utf8 = _error(rt.read_string, b"\x03a\xff", 0, 3, 0)
    assert bad_utf8[:2] == ("invalid UTF-8 in string: invalid start byte", 2)
    too_long = bytes([0x81, 0x80, 0x02])  # compact length 32768 + 1
    assert _error(rt.read_string, too_long, 0, 3, 0) == ("invalid length 32768", 3, "")
    assert rt.skip_blob(b"\x03ab", 0, 3, 0, False, True) == 3


def test_bytes_and_counts() -> None:
    assert rt.read_blob(b"\x00\x00\x00\x02ab", 0, 6, 4) == (b"ab", 6)
    assert rt.read_nullable_blob(b"\xff\xff\xff\xff", 0, 4, 4) == (None, 4)
    assert rt.read_count(b"\x00", 0, 1, 0, True) == (-1, 1)
    assert rt.read_count(b"\x00\x00\x00\x07", 0, 4, 4, False) == (7, 4)


def test_writes() -> None:
    out = bytearray()
    rt.write_string(out, "abc", 0, False, 32767)
    rt.write_string(out, None, 2, True, 32767)
    rt.write_blob(out, b"xy", 4, False, 2147483647)
    rt.write_length(out, 200, 0, None)
    assert bytes(out) == b"\x04abc\xff\xff\x00\x00\x00\x02xy\xc9\x01"
    with pytest.raises(NullValueError):
        rt.write_string(bytearray(), None, 0, False, 32767)
    with pytest.raises(EncodeError, match="32768 bytes exceed the 32767-byte limit"):
        rt.write_string(bytearray(), "a" * 32768, 2, False, 32767)
