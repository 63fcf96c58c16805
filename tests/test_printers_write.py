"""The encoders' printers (``kcodec.codegen.print_write``), one op at a time, as ``test_printers.py``
does for the decoders' (and the check that no printer holds a number of the wire format).

As Kafka's generator tests its ``VersionConditional`` (``VersionConditionalTest``: a hand-built
conditional printed into a ``CodeBuffer``, the exact lines asserted), each test builds one op by hand,
prints it and compares the exact lines. That every op of every generated module prints as before is
``test_generated_snapshots.py``'s part (and the byte-for-byte comparison of whole builds).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from test_printers import _function

from kcodec.codegen import print_read as pr
from kcodec.codegen import print_write as pw
from kcodec.codegen.program import (
    AbsentCheck,
    Length,
    ShapeWrite,
    Target,
    WriteArray,
    WriteRun,
    WriteTagged,
    WriteValue,
)
from kcodec.codegen.wire_types import INT16_MAX, INT32_MAX, VARINT_THREE_BYTES, VARINT_TWO_BYTES

COMPACT = Length("n", compact=True, width=4, width_arg="0", limit_arg="None")
INT16 = Length("n", compact=False, width=2, limit=INT16_MAX, width_arg="2", limit_arg=str(INT16_MAX))
INT32 = Length("n", compact=False, width=4, limit=INT32_MAX, width_arg="4", limit_arg=str(INT32_MAX))


def lines(text: str) -> list[str]:
    """The expected lines, written as an indented block in the test."""
    return textwrap.dedent(text).strip("\n").split("\n")


def test_write_lengths() -> None:
    assert pw.write_length(INT16, "out") == [
        f"if n > {INT16_MAX}:",
        f"    raise _too_long(n, {INT16_MAX})",
        "out += _P16(n)",
    ]
    assert pw.write_length(Length("n", True, 2, limit=INT16_MAX), "out") == lines(f"""
        if n > {INT16_MAX}:
            raise _too_long(n, {INT16_MAX})
        n += 1
        if n < 128:
            out.append(n)
        else:
            _wuv(out, n)
    """)
    helper = Length("n", False, 4, limit=INT32_MAX, width_arg="_W4", limit_arg="_M4", helper=True)
    assert pw.write_length(helper, "buf2") == ["_write_length(buf2, n, _W4, _M4)"]


def test_write_length_three_bytes_in_place() -> None:
    assert pw.write_length(Length("n", True, 4, three_byte=True), "out") == lines(f"""
        n += 1
        if n < 128:
            out.append(n)
        elif n < {VARINT_TWO_BYTES:#x}:
            # varints of two and three bytes (lengths up to 2 MiB, typical of record batches) written in
            # place: the bytes as one little-endian int, 7 bits each, all but the last with the high bit set
            out += (n & 0x7F | n << 1 & 0x7F00 | 0x80).to_bytes(2, "little")
        elif n < {VARINT_THREE_BYTES:#x}:
            out += (n & 0x7F | n << 1 & 0x7F00 | n << 2 & 0x7F0000 | 0x8080).to_bytes(3, "little")
        else:
            _wuv(out, n)
    """)


def test_write_nulls_absent_fields_and_runs() -> None:
    def value(length: Length, nullable: bool) -> WriteValue:
        return WriteValue("bytes", "obj.b", "b", True, "out", nullable=nullable, length=length)

    assert pw.write_null(value(COMPACT, True)) == ["out.append(0)"]
    assert pw.write_null(value(INT16, True)) == ['out += b"\\xff\\xff"']
    assert pw.write_null(value(INT32, True)) == ['out += b"\\xff\\xff\\xff\\xff"']
    assert pw.write_null(value(INT32, False)) == ["raise _null_value()"]
    checks = (AbsentCheck("a", "obj.a != -1", "a", mark="'a'"), AbsentCheck("b", "obj.b is not None", "b"))
    assert pw.absent(checks) == [
        "_field = 'a'",
        "if obj.a != -1:",
        "    raise _unsupported('a', -1)",
        "if obj.b is not None:",
        "    raise _unsupported('b', -1)",
    ]
    run = WriteRun(
        "_FIELDS_a_to_id", ("obj.a", "obj.id"), "_S_int32_uuid", ("obj.id",), mark="_FIELDS_a_to_id"
    )
    assert pw.write_steps((run,)) == [
        "_field = _FIELDS_a_to_id",
        "if len(obj.id) != 16:",
        '    raise ValueError("a uuid needs 16 bytes")',
        "out += _S_int32_uuid.pack(obj.a, obj.id)",
    ]


def test_write_strings_bytes_and_structs() -> None:
    string = WriteValue(
        "string",
        "obj.s",
        "s",
        True,
        "out",
        nullable=True,
        value="s_value",
        data="s_bytes",
        length=Length("s_len", True, 2, limit=INT16_MAX),
        mark="'s'",
    )
    printed = pw.write_steps((string,))
    assert printed[:6] == [
        "_field = 's'",
        "s_value = obj.s",
        "if s_value is None:",
        "    out.append(0)",
        "else:",
        "    s_bytes = s_value.encode()",
    ]
    assert printed[-1] == "    out += s_bytes"
    data = WriteValue("bytes", "obj.b", "b", True, "out", value="v", data="d", length=INT32)
    assert pw.write_value(data)[-4:] == [
        "    if type(out) is _Chunked and len(d) >= _CHUNK_BYTES:",
        "        _blob(out, d)",
        "    else:",
        "        out += d",
    ]
    helper = WriteValue("string", "obj.s", "s", True, "out", nullable=True, length=COMPACT, helper=True)
    assert pw.write_value(helper) == ["_write_string(out, obj.s, 0, True, None)"]
    struct = WriteValue("struct", "obj.l", "l", True, "out", nullable=True, value="l_value", fn="L_v0")
    assert pw.write_value(struct) == [
        "l_value = obj.l",
        "if l_value is None:",
        "    out.append(255)",
        "else:",
        "    out.append(1)",
        "    e_L_v0(l_value, out)",
    ]


def _write_array(a: WriteArray, length: Length = INT32) -> WriteValue:
    return WriteValue("array", "obj.xs", "xs", True, "out", value="xs_value", length=length, array=a)


def test_write_values_array() -> None:
    values = WriteArray(
        "values",
        "xs[]",
        "xs_item",
        table="_COUNT_VALUES_int32",
        value_fmt="i",
        packed="xs_packed",
        count_source="n",
    )
    assert pw.write_value(_write_array(values)) == lines(f"""
        xs_value = obj.xs
        if xs_value is None:
            raise _null_value()
        else:
            n = len(xs_value)
            if n < 32:
                # the length and the elements in one pack call
                out += _COUNT_VALUES_int32[n].pack(n, *xs_value)
            else:
                xs_packed = _pack(">%di" % n, *xs_value)
                if n > {INT32_MAX}:
                    raise _too_long(n, {INT32_MAX})
                out += _P32(n)
                out += xs_packed
    """)


def test_write_call_arrays_tracked_and_not() -> None:
    helper = Length("n", True, 4, width_arg="0", limit_arg="None", helper=True)
    plain = WriteArray("call", "xs[]", "xs_item", fn="X_v0", holder="xs_item")
    assert pw.array_elements(_write_array(plain, helper)) == [
        "n = len(xs_value)",
        "_write_length(out, n, 0, None)",
        "for xs_item in xs_value:",
        "    e_X_v0(xs_item, out)",
    ]
    rerun = WriteArray("call", "xs[]", "xs_item", fn="X_v0", holder="xs_item", rerun=True, tracked=True)
    assert pw.array_elements(_write_array(rerun, helper)) == lines("""
        n = len(xs_value)
        _write_length(out, n, 0, None)
        _field = 'xs[]'
        for _index, xs_item in enumerate(xs_value):
            try:
                e_X_v0(xs_item, out)
            except Exception:  # the error an element written in place gives: its encoder's on a new bytearray
                e_X_v0(xs_item, bytearray())
                raise
    """)


def test_write_same_width_native_elements() -> None:
    a = WriteArray(
        "same_width",
        "xs[]",
        "xs_item",
        index="xs_index",
        fn="X_v0",
        same_width_fmt="_S_int32_int8",
        same_width_values=("xs_element.a", "0"),
        native="xs_element",
        cls="X",
        holder="xs_element",
        tracked=True,
    )
    assert pw.array_elements(
        _write_array(a, Length("n", False, 4, width_arg="4", limit_arg="1", helper=True))
    ) == (
        lines("""
        n = len(xs_value)
        _write_length(out, n, 4, 1)
        _field = 'xs[]'
        for _index, xs_item in enumerate(xs_value):
            if type(xs_item) is not X:
                # not of exactly the struct's (native) class: written by its own encoder, fields read by name
                _field, _index = 'xs[]', xs_index
                e_X_v0(xs_item, out)
                continue
            xs_element: X = xs_item
            if xs_element._unknown_tagged_fields:
                e_X_v0(xs_item, out)
            else:  # same-width element without tagged fields: written in place
                try:
                    out += _S_int32_int8.pack(xs_element.a, 0)
                except Exception:  # the element's own encoder names the field at fault
                    e_X_v0(xs_item, out)
        """)
    )


def test_write_inline_and_shaped_arrays() -> None:
    length = Length("n", False, 4, width_arg="4", limit_arg="9", helper=True)
    body = (WriteValue("fixed", "p_item.x", "x", False, "out", fmt="_S_int32"),)
    absent = (AbsentCheck("y", "p_item.y != 0", "y"),)
    inline = WriteArray(
        "inline",
        "p[]",
        "p_item",
        index="p_index",
        fn="P_v0",
        absent=absent,
        body=body,
        flexible=True,
        holder="p_item",
    )
    assert pw.array_elements(_write_array(inline, length))[2:] == lines("""
        for p_item in xs_value:
            # the element written in place
            if p_item.y != 0:
                raise _unsupported('y', -1)
            out += _S_int32.pack(p_item.x)
            if p_item._unknown_tagged_fields:
                _wtag(out, [], p_item._unknown_tagged_fields, ())
            else:
                out.append(0)
    """)
    from dataclasses import replace

    tracked = pw.array_elements(_write_array(replace(inline, flexible=False, tracked=True), length))
    assert tracked[3:7] == [
        "for _index, p_item in enumerate(xs_value):",
        "    # the element written in place",
        "    p_index = _index",
        "    try:",
    ]
    assert tracked[-6:] == [
        "        if p_item._unknown_tagged_fields:",
        "            raise _tagged_unsupported()",
        "    except Exception:",
        "        _field, _index = 'p[]', p_index",
        "        e_P_v0(p_item, bytearray())",
        "        raise",
    ]
    sh = ShapeWrite(
        "_SHAPE_WRITERS_P",
        ">i%di",
        "shape_key",
        "shape_struct",
        (("r_values", "p_item.r"),),
        "(len(r_values), )",
        "p_item.x, shape_key[0] + 1, *r_values",
    )
    shaped = WriteArray("shaped", "p[]", "p_item", index="p_index", fn="P_v0", shape=sh, holder="p_item")
    assert pw.array_elements(_write_array(shaped, length))[2:] == lines("""
        for p_item in xs_value:
            # one pack per element, by the struct.Struct of its array lengths (its shape); an element with
            # tagged fields or an array of 127+ values is written by its own encoder
            r_values = p_item.r
            shape_key = (len(r_values), )
            shape_struct = _SHAPE_WRITERS_P.get(shape_key)
            if shape_struct is None:
                shape_struct = _shape_writer(_SHAPE_WRITERS_P, shape_key, '>i%di')
            if shape_struct is None or p_item._unknown_tagged_fields:
                e_P_v0(p_item, out)
            else:
                out += shape_struct.pack(p_item.x, shape_key[0] + 1, *r_values, 0)
    """)


def test_write_tagged_sections() -> None:
    assert pw.write_tagged(WriteTagged((), "()", tracked=True)) == [
        '_field = "_tagged_fields"',
        "if obj._unknown_tagged_fields:",
        "    _wtag(out, [], obj._unknown_tagged_fields, ())",
        "else:",
        "    out.append(0)",
    ]
    value = WriteValue("fixed", "obj.leader", "leader", False, "leader_tagged_bytes", fmt="_S_int32")
    t = WriteTagged(((2, "leader", "obj.leader != -1", value),), "(2, )")
    assert pw.write_tagged(t) == lines("""
        tagged: list[tuple[int, bytes | bytearray]] = []
        if obj.leader != -1:
            leader_tagged_bytes = bytearray()
            leader_tagged_bytes += _S_int32.pack(obj.leader)
            tagged.append((2, leader_tagged_bytes))
        if tagged or obj._unknown_tagged_fields:
            _wtag(out, tagged, obj._unknown_tagged_fields, (2, ))
        else:
            out.append(0)
    """)


def test_encoder_function() -> None:
    write = (WriteValue("fixed", "obj.x", "x", True, "out", fmt="_S_int32", mark="'x'"),)
    fn = _function(write=write)
    assert pw.encoder(fn, Target(compiled=True)) == lines("""
        def e_Topic_v0(obj: Any, out: bytearray) -> None:
            # encode Topic at versions 0-3 (call)
            # (compiled: the field at fault is kept as the encoder goes; interpreted encoders leave that to
            # kcodec.protocol.encode_check, run on a failure)
            _field: Any = None
            _index = 0
            try:
                _field = 'x'
                out += _S_int32.pack(obj.x)
                if obj._unknown_tagged_fields:
                    raise _tagged_unsupported()
            except Exception as _e:
                raise _efail(_e, _field, obj, _index) from None
    """)
    assert pw.encoder(_function(), Target())[:1] == ["def e_Topic_v0(obj: Topic, out: bytearray) -> None:"]


def test_printers_hold_no_wire_numbers() -> None:
    """The numbers of the wire format come from the ops and ``kcodec.codegen.wire_types``."""
    source = "".join(Path(m.__file__ or "").read_text(encoding="utf-8") for m in (pr, pw))
    for number in (INT16_MAX, INT32_MAX, VARINT_TWO_BYTES, VARINT_THREE_BYTES, 127, 128, 255, 32):
        assert not re.search(rf"(?<![\w.]){number}(?![\w.])", source), number
    for literal in ("0x4000", "0x200000", "0x7F", "0x80", "\\xff"):
        assert literal not in source, literal
