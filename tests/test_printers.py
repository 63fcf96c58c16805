"""The decoders' and skippers' printers (``kcodec.codegen.print_read``), one op at a time (the
encoders': ``test_printers_write.py``).

As Kafka's generator tests its ``VersionConditional`` (``VersionConditionalTest``: a hand-built
conditional printed into a ``CodeBuffer``, the exact lines asserted), each test builds one op by hand,
prints it and compares the exact lines. That every op of every generated module prints as before is
``test_generated_snapshots.py``'s part (and the byte-for-byte comparison of whole builds).
"""

from __future__ import annotations

import textwrap

from kcodec.codegen import print_read as pr
from kcodec.codegen.layout import StructPlan
from kcodec.codegen.program import (
    BuildObject,
    FunctionPlan,
    KnownTag,
    Length,
    ReadArray,
    ReadRun,
    ReadTagged,
    ReadValue,
    SameWidth,
    ShapeRead,
    SkipStructArray,
    SkipValue,
    Target,
)
from kcodec.codegen.wire_types import INT16_MAX, INT32_MAX

COMPACT = Length("n", compact=True, width=4, width_arg="0", limit_arg="None")
INT16 = Length("n", compact=False, width=2, limit=INT16_MAX, width_arg="2", limit_arg=str(INT16_MAX))
INT32 = Length("n", compact=False, width=4, limit=INT32_MAX, width_arg="4", limit_arg=str(INT32_MAX))


def lines(text: str) -> list[str]:
    """The expected lines, written as an indented block in the test."""
    return textwrap.dedent(text).strip("\n").split("\n")


# --- reading: lengths, nulls, values -----------------------------------------------------------------


def test_read_length_compact_int16_and_arithmetic() -> None:
    assert pr.read_length(COMPACT) == lines("""
        n = buf[pos]
        if n < 128:
            pos += 1
        else:
            n, pos = _ruv(buf, pos)
        n -= 1
    """)
    assert pr.read_length(INT16) == ["n = _I16(buf, pos)[0]", "pos += 2"]
    assert pr.read_length(Length("n", False, 4, arith="ARITH")) == ["n = ARITH", "pos += 4"]


def test_read_length_three_bytes_in_place() -> None:
    assert pr.read_length(Length("len", compact=True, width=4, three_byte=True)) == lines("""
        len = buf[pos]
        if len < 128:
            pos += 1
        # lengths of 16 KiB - 2 MiB (three varint bytes, typical of record batches) read in place
        elif pos + 2 < blen and buf[pos + 1] > 127 and buf[pos + 2] < 128:
            len = (len & 127) | (buf[pos + 1] & 127) << 7 | buf[pos + 2] << 14
            pos += 3
        else:
            len, pos = _ruv(buf, pos)
        len -= 1
    """)


def test_read_null() -> None:
    nullable = ReadValue("string", "obj.name", "name", True, nullable=True, length=INT16)
    assert pr.read_null(nullable, "obj.name") == lines("""
        if n < -1:
            raise _bad_length(pos, n)
        obj.name = None
    """)
    compact = ReadValue("string", "x", "x", True, nullable=True, length=COMPACT)
    assert pr.read_null(compact, "_null") == ["_null = None"]
    required = ReadValue("string", "x", "x", True, length=COMPACT)
    assert pr.read_null(required, "x") == ["raise _null_error(pos, n)"]


def test_read_run() -> None:
    op = ReadRun("_FIELDS_a_to_b", ("obj.a", "obj.b"), "_S_int32_uuid", 20, ("obj.b",))
    assert pr.read_run(op) == [
        "obj.a, obj.b = _S_int32_uuid.unpack_from(buf, pos)",
        "obj.b = _uuid_new(_Uuid, obj.b)",
        "pos += 20",
    ]
    one = ReadRun(None, ("a",), "_S_int8", 1, ())
    assert pr.read_run(one) == ["a, = _S_int8.unpack_from(buf, pos)", "pos += 1"]
    arith = ReadRun(None, ("a", "b"), "_S_int8_int8", 2, (), ("A0", "A1"))
    assert pr.read_run(arith) == ["a = A0", "b = A1", "pos += 2"]


def test_read_fixed_and_uuid() -> None:
    fixed = ReadValue("fixed", "obj.x", "x", True, fmt="_S_int64", size=8)
    assert pr.read_value(fixed) == ["obj.x = _S_int64.unpack_from(buf, pos)[0]", "pos += 8"]
    by_arith = ReadValue(
        "fixed", "x", "x", True, fmt="_S_int8", size=1, arith="(i64(buf[pos]) ^ 0x80) - 0x80"
    )
    assert pr.read_value(by_arith) == ["x = (i64(buf[pos]) ^ 0x80) - 0x80", "pos += 1"]
    uuid = ReadValue("uuid", "obj.id", "id", True, fmt="_S_uuid", size=16)
    assert pr.read_value(uuid) == ["obj.id = _uuid_new(_Uuid, _S_uuid.unpack_from(buf, pos)[0])", "pos += 16"]


def test_read_string_inline_with_its_limit_from_the_op() -> None:
    op = ReadValue("string", "obj.s", "s", True, nullable=True, length=COMPACT, end="s_end", max_length=99)
    assert pr.read_value(op) == lines("""
        n = buf[pos]
        if n < 128:
            pos += 1
        else:
            n, pos = _ruv(buf, pos)
        n -= 1
        if n < 0:
            obj.s = None
        else:
            if n > 99:
                raise _bad_length(pos, n)
            s_end = pos + n
            if s_end > blen:
                raise _short(pos, n, blen)
            obj.s = str(buf[pos:s_end], "utf-8")
            pos = s_end
    """)
    from_bytes = ReadValue("string", "s", "s", True, length=INT16, end="e", bytes_input=True)
    assert pr.read_value(from_bytes)[-2:] == ["    s = buf[pos:e].decode()", "    pos = e"]


def test_read_bytes_records_and_helpers() -> None:
    data = ReadValue("bytes", "b", "b", True, length=INT32, end="e")
    assert pr.read_value(data)[-2:] == ["    b = bytes(buf[pos:e])", "    pos = e"]
    records = ReadValue("records", "r", "r", True, length=INT32, end="e")
    assert pr.read_value(records)[-2:] == ["    r = mvb[pos:e]", "    pos = e"]
    versioned = Length("n", compact=False, width=2, width_arg="_W2")
    helper = ReadValue("string", "obj.s", "s", True, nullable=True, length=versioned, helper=True)
    assert pr.read_value(helper) == ["obj.s, pos = _read_nullable_string(buf, pos, blen, _W2)"]
    blob = ReadValue("bytes", "obj.b", "b", True, length=COMPACT, helper=True)
    assert pr.read_value(blob) == ["obj.b, pos = _read_blob(buf, pos, blen, 0)"]


def test_read_struct() -> None:
    plain = ReadValue("struct", "obj.s", "s", True, fn="Leader_v1")
    assert pr.read_value(plain) == ["obj.s, pos = d_Leader_v1(buf, pos, blen)"]
    nullable = ReadValue("struct", "obj.s", "s", True, nullable=True, fn="Leader_v1")
    assert pr.read_value(nullable) == lines("""
        if _I8(buf, pos)[0] < 0:
            pos += 1
            obj.s = None
        else:
            pos += 1
            obj.s, pos = d_Leader_v1(buf, pos, blen)
    """)
    from_bytes = ReadValue("struct", "s", "s", True, nullable=True, fn="L", bytes_input=True)
    assert pr.read_value(from_bytes)[0] == "if buf[pos] > 127:"


# --- reading: arrays ---------------------------------------------------------------------------------


def _array(
    a: ReadArray, *, nullable: bool = False, helper: bool = False, length: Length = INT32
) -> ReadValue:
    return ReadValue("array", "obj.xs", "xs", True, nullable=nullable, length=length, array=a, helper=helper)


def test_read_values_array() -> None:
    values = ReadArray(
        "values", "xs[]", "xs_list", "xs_item", elem_size=4, min_size=4, table="_VALUES_int32", value_fmt="i"
    )
    assert pr.read_value(_array(values)) == lines("""
        n = _I32(buf, pos)[0]
        pos += 4
        if n < 0:
            raise _null_error(pos, n)
        else:
            if n * 4 > blen - pos:
                raise _bad_count(pos, n, 4, blen)
            if n < 32:
                obj.xs = list(_VALUES_int32[n].unpack_from(buf, pos))
            else:
                obj.xs = list(_unpack_from(">%di" % n, buf, pos))
            pos += 4 * n
    """)


def test_read_array_count_by_helper() -> None:
    calls = ReadArray("call", "xs[]", "xs_list", "xs_item", min_size=0, cls="Topic", fn="Topic_v0")
    assert pr.read_value(_array(calls, nullable=True, helper=True)) == lines("""
        n, pos = _read_count(buf, pos, blen, 4, True)
        if n < 0:
            obj.xs = None
        else:
            if n > blen - pos:
                raise _bad_count(pos, n, 1, blen)
            xs_list: list[Topic] = []
            for _ in range(n):
                xs_item, pos = d_Topic_v0(buf, pos, blen)
                xs_list.append(xs_item)
            obj.xs = xs_list
    """)
    assert pr.read_value(_array(calls, helper=True))[:2] == [
        "n, pos = _read_count(buf, pos, blen, 4, False)",
        "if n > blen - pos:",
    ]


def test_read_uuids_and_generic_arrays() -> None:
    uuids = ReadArray("uuids", "ids[]", "l", "i", elem_size=16, min_size=16)
    assert pr.array_elements(uuids, "n", "obj.ids") == [
        "if n * 16 > blen - pos:",
        "    raise _bad_count(pos, n, 16, blen)",
        "obj.ids = [_uuid_new(_Uuid, buf[p:p + 16]) for p in range(pos, pos + 16 * n, 16)]",
        "pos += 16 * n",
    ]
    element = ReadValue("string", "names_item", "names", False, length=COMPACT, helper=True)
    generic = ReadArray("generic", "names[]", "names_list", "names_item", min_size=1, element=element)
    assert pr.array_elements(generic, "n", "obj.names") == lines("""
        names_list = []
        for _ in range(n):
            names_item, pos = _read_string(buf, pos, blen, 0)
            names_list.append(names_item)
        obj.names = names_list
    """)


def test_read_lazy_array() -> None:
    skip = SkipStructArray("n", "Topic_v3")
    lazy = ReadArray(
        "lazy",
        "topics[]",
        "l",
        "i",
        min_size=2,
        fn="Topic_v3",
        start="topics_start",
        skip=skip,
        message="FetchResponse",
        version="v",
    )
    assert pr.array_elements(lazy, "n", "obj.topics") == lines("""
        topics_start = pos
        for _ in range(n):
            pos = s_Topic_v3(buf, pos, blen)
        # a LazyArray where the class declares a list (decode(..., lazy=True) documents it)
        obj.topics = _Lazy(  # type: ignore[assignment]
            buf, topics_start, n, d_Topic_v3, ('FetchResponse', 'topics', v)
        )
    """)
    compiled = ReadArray(
        "lazy",
        "t[]",
        "l",
        "i",
        min_size=2,
        fn="T",
        start="s",
        skip=skip,
        message="M",
        version="3",
        compiled=True,
    )
    assert pr.array_elements(compiled, "n", "obj.t")[4] == "obj.t = _Lazy("


def test_read_inline_array_with_tagged_elements() -> None:
    body = (ReadValue("fixed", "p_item.index", "index", False, fmt="_S_int32", size=4),)
    tagged = ReadTagged(
        "p_item", False, "p_item._unknown_tagged_fields", "c", "t", "sz", "e", "st", "pv", "u", (), ()
    )
    inline = ReadArray(
        "inline",
        "p[]",
        "p_list",
        "p_item",
        min_size=5,
        cls="Part",
        fn="Part_v9",
        body=body,
        defaults=(("p_item.epoch", "-1"),),
        tagged=tagged,
    )
    assert pr.array_elements(inline, "n", "obj.p") == lines("""
        p_list: list[Part] = []
        for _ in range(n):
            p_item = _new(Part)
            p_item.index = _S_int32.unpack_from(buf, pos)[0]
            pos += 4
            p_item.epoch = -1
            if buf[pos]:
                p_item._unknown_tagged_fields, pos = _read_tags(buf, pos, blen)
            else:
                p_item._unknown_tagged_fields = None
                pos += 1
            p_list.append(p_item)
        obj.p = p_list
    """)
    built = ReadArray(
        "inline",
        "p[]",
        "p_list",
        "p_item",
        min_size=4,
        cls="Part",
        body=body,
        build=BuildObject("p_item", "Part", "index=index_value, unknown_tagged_fields=None"),
    )
    assert pr.array_elements(built, "n", "obj.p")[2:6] == [
        "    p_item.index = _S_int32.unpack_from(buf, pos)[0]",
        "    pos += 4",
        "    p_item = Part(index=index_value, unknown_tagged_fields=None)",
        "    p_list.append(p_item)",
    ]


def test_read_same_width_array() -> None:
    sw = SameWidth(
        "_S_int32_int8",
        5,
        ("a_value", "tagged_count"),
        (("x_item.a", "a_value"),),
        "x_append",
        "a=a_value, unknown_tagged_fields=None",
        4,
    )
    tagged = ReadTagged(
        "x_item", False, "x_item._unknown_tagged_fields", "c", "t", "sz", "e", "st", "pv", "u", (), ()
    )
    a = ReadArray(
        "same_width",
        "x[]",
        "x_list",
        "x_item",
        elem_size=5,
        min_size=5,
        cls="X",
        fn="X_v0",
        body=(ReadRun(None, ("x_item.a",), "_S_int32", 4, ()),),
        tagged=tagged,
        same_width=sw,
    )
    printed = pr.array_elements(a, "n", "obj.x")
    assert printed[:10] == lines("""
        x_list: list[X] = []
        if n >= 4 and n * 5 <= blen - pos:
            # Same-width elements: one iter_unpack over the whole array.
            x_append = x_list.append
            for a_value, tagged_count in _S_int32_int8.iter_unpack(memoryview(buf)[pos:pos + 5 * n]):
                if tagged_count:
                    break  # this element has tagged fields: the loop below reads it and the rest
                x_item = _new(X)
                x_item.a = a_value
                x_item._unknown_tagged_fields = None
    """)
    assert printed[10:14] == [
        "        x_append(x_item)",
        "    pos += 5 * len(x_list)",
        "for _ in range(len(x_list), n):",
        "    x_item = _new(X)",
    ]
    from dataclasses import replace

    compiled = pr.array_elements(replace(a, compiled=True, tagged=None), "n", "obj.x")
    assert compiled[5:7] == [
        "        x_item = X(a=a_value, unknown_tagged_fields=None)",
        "        x_append(x_item)",
    ]


def test_read_shaped_array() -> None:
    sh = ShapeRead(
        "_SHAPE_READERS_P",
        ">i%dih",
        "(4, 2, )",
        "shape",
        "shape_unpack",
        "shape_size",
        ("b_at",),
        ("r_count_byte",),
        "shape_values",
        "shape_values[0] == r_count_byte and not shape_values[-1]",
        (("p_item.r", "[*shape_values[1:b_at]]"),),
        "(len(p_item.r), )",
        "CTOR",
    )
    body = (ReadValue("fixed", "p_item.x", "x", False, fmt="_S_int32", size=4),)
    a = ReadArray("shaped", "p[]", "p_list", "p_item", min_size=3, cls="P", fn="P_v0", body=body, shape=sh)
    assert pr.array_elements(a, "n", "obj.p") == lines("""
        p_list: list[P] = []
        # Elements are read with one unpack_from by the shape (array lengths) of the element before,
        # once every count byte and the tagged-field byte it reads match that shape; otherwise in full.
        shape = _SHAPE_READERS_P.get(())
        if shape is None:
            shape_unpack: Any = None
        else:
            shape_unpack, shape_size, b_at, r_count_byte = shape
        for _ in range(n):
            if shape_unpack is not None and pos + shape_size <= blen:
                shape_values = shape_unpack(buf, pos)
                if shape_values[0] == r_count_byte and not shape_values[-1]:
                    p_item = _new(P)
                    p_item.r = [*shape_values[1:b_at]]
                    p_item._unknown_tagged_fields = None
                    pos += shape_size
                    p_list.append(p_item)
                    continue
            p_item = _new(P)
            p_item.x = _S_int32.unpack_from(buf, pos)[0]
            pos += 4
            p_item._unknown_tagged_fields = None
            shape = _shape_reader(_SHAPE_READERS_P, (len(p_item.r), ), '>i%dih', (4, 2, ))
            if shape is not None:
                shape_unpack, shape_size, b_at, r_count_byte = shape
            p_list.append(p_item)
        obj.p = p_list
    """)


# --- reading: tagged fields, skipping, functions -------------------------------------------------------


def test_read_tagged_known_field() -> None:
    value = ReadValue("fixed", "obj.leader", "leader", True, fmt="_S_int32", size=4)
    t = ReadTagged(
        "obj",
        True,
        "obj._unknown_tagged_fields",
        "tagged_count",
        "tag",
        "tag_size",
        "tag_end",
        "tag_start",
        "prev_tag",
        "unknown_tags",
        (("obj.leader", "-1"),),
        (KnownTag(2, "leader", "Leader", value),),
    )
    assert pr.read_tagged(t) == lines("""
        obj.leader = -1
        tagged_count = buf[pos]
        if tagged_count < 128:
            pos += 1
        else:
            tagged_count, pos = _ruv(buf, pos)
        if tagged_count:
            unknown_tags: list[tuple[int, bytes]] | None = None
            prev_tag = -1
            for _ in range(tagged_count):
                tag_start = pos
                tag, pos = _ruv(buf, pos)
                if tag <= prev_tag:
                    raise _tag_order(tag_start, tag, prev_tag)
                prev_tag = tag
                tag_size, pos = _ruv(buf, pos)
                tag_end = pos + tag_size
                if tag_end > blen:
                    raise _short(pos, tag_size, blen)
                if tag == 2:
                    obj.leader = _S_int32.unpack_from(buf, pos)[0]
                    pos += 4
                    if pos != tag_end:  # the value must fill its declared size exactly
                        raise _tag_size(pos, tag_end, tag_size, 'Leader', 2)
                else:
                    if unknown_tags is None:
                        unknown_tags = []
                    unknown_tags.append((tag, bytes(buf[pos:tag_end])))
                    pos = tag_end
            obj._unknown_tagged_fields = unknown_tags
        else:
            obj._unknown_tagged_fields = None
    """)


def test_skip_values() -> None:
    assert pr.skip_value(SkipValue("run", "a", "_FIELDS_a", size=6)) == [
        "if pos + 6 > blen:",
        "    raise _short(pos, 6, blen)",
        "pos += 6",
    ]
    helper = SkipValue("string", "s", "'s'", nullable=True, length=COMPACT, helper=True)
    assert pr.skip_value(helper) == ["pos = _skip_blob(buf, pos, blen, 0, True, True)"]
    inline = SkipValue("bytes", "b", "'b'", nullable=True, length=INT32, end="b_end")
    assert pr.skip_value(inline)[2:] == lines("""
        if n < 0:
            if n < -1:
                raise _bad_length(pos, n)
            _null = None
        else:
            b_end = pos + n
            if b_end > blen:
                raise _short(pos, n, blen)
            pos = b_end
    """)
    assert pr.skip_value(SkipValue("struct", "s", nullable=True, fn="S_v0", bytes_input=True)) == [
        "if buf[pos] > 127:",
        "    pos += 1",
        "else:",
        "    pos = s_S_v0(buf, pos + 1, blen)",
    ]


def test_skip_arrays() -> None:
    structs = SkipStructArray("n", "P_v0", same_width=9, flexible=True)
    op = SkipValue("array", "p", "'p'", length=COMPACT, min_size=9, structs=structs, helper=True)
    assert pr.skip_value(op) == lines("""
        n, pos = _read_count(buf, pos, blen, 0, False)
        if n >= 0:
            if n * 9 <= blen - pos and _tags_clear(buf, pos, n, 9):
                pos += 9 * n
            else:
                for _ in range(n):
                    pos = s_P_v0(buf, pos, blen)
    """)
    values = SkipValue("array", "v", "'v'", length=INT32, elem_size=8, min_size=8)
    assert pr.skip_value(values)[-3:] == [
        "    if n * 8 > blen - pos:",
        "        raise _bad_count(pos, n, 8, blen)",
        "    pos += 8 * n",
    ]
    strings = SkipValue(
        "array",
        "s",
        "'s'",
        length=INT32,
        min_size=0,
        element=SkipValue("string", "s", length=INT16, helper=True),
    )
    assert pr.skip_value(strings)[-4:] == [
        "    if n > blen - pos:",
        "        raise _bad_count(pos, n, 1, blen)",
        "    for _ in range(n):",
        "        pos = _skip_blob(buf, pos, blen, 2, False, True)",
    ]


def _function(**fields: object) -> FunctionPlan:
    base: dict[str, object] = dict(
        id="Topic_v0",
        cls="Topic",
        versions="0-3",
        served=(0, 1, 2, 3),
        strategy="call",
        layout=StructPlan("Topic", False, (), (), ()),
        flexible=False,
        is_root=False,
        records_view=False,
        read=(),
        read_lazy=(),
        read_defaults=(),
        read_tagged=None,
        skip=(),
        write_absent=(),
        write=(),
        write_tagged=None,
    )
    return FunctionPlan(**(base | fields))  # type: ignore[arg-type]


def test_decoder_and_skipper_functions() -> None:
    fixed = ReadValue("fixed", "obj.x", "x", True, fmt="_S_int32", size=4)
    fn = _function(read=(fixed,), read_defaults=(("y", "0"),), skip=(SkipValue("fixed", "x", "'x'", size=4),))
    assert pr.decoder(fn, Target(helpers=True)) == lines("""
        def d_Topic_v0(buf: Buffer, pos: int, blen: int) -> tuple[Topic, int]:
            # decode Topic at versions 0-3 (call; strings and bytes by runtime helpers)
            obj = _new(Topic)
            obj.x = _S_int32.unpack_from(buf, pos)[0]
            pos += 4
            obj.y = 0
            obj._unknown_tagged_fields = None
            return obj, pos
    """)
    assert pr.skipper(fn, Target(compiled=True, bytes_buffer=True)) == lines("""
        def s_Topic_v0(buf: bytes, pos: i64, blen: i64) -> int:
            # skip Topic at versions 0-3: check its bytes, build nothing (lazy decoding)
            if pos + 4 > blen:
                raise _short(pos, 4, blen)
            pos += 4
            return pos
    """)
    built = _function(
        is_root=True,
        read_lazy=(fixed,),
        read_lazy_locals=("x_value",),
        read_lazy_build=BuildObject("obj", "Topic", "x=x_value, unknown_tagged_fields=None"),
    )
    assert pr.decoder(built, Target(compiled=True), lazy=True)[:4] == [
        "def dl_Topic_v0(buf: Buffer, pos: i64, blen: i64) -> tuple[Topic, int]:",
        "    # decode Topic at versions 0-3, its arrays of structs left unbuilt (lazy=True)",
        "    # fields are read into locals; the object is made in one constructor call after the last",
        "    x_value: Any",
    ]
    assert pr.decoder(built, Target(compiled=True), lazy=True)[-2:] == [
        "    obj = Topic(x=x_value, unknown_tagged_fields=None)",
        "    return obj, pos",
    ]
