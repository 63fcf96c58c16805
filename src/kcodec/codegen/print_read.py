"""Print the decoders and skippers of a generated codec module from their ops (``kcodec.codegen.program``).

One printer per op kind: it turns one ``Read*`` or ``Skip*`` op into the lines of Python it reads or
walks with, decides nothing (every name, constant, limit and form is a field of the op), and returns a
list of lines, indented from column 0; the caller indents them into its block. Numbers of the wire
format come from ``kcodec.codegen.wire_types``, never from a literal here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kcodec.codegen.constants import VALUES_TABLE_SIZE
from kcodec.codegen.program import (
    BuildObject,
    FunctionPlan,
    Length,
    ReadArray,
    ReadRun,
    ReadTagged,
    ReadValue,
    SkipStructArray,
    SkipValue,
    Target,
)
from kcodec.codegen.wire_types import INT8_MAX, VARINT_BITS, VARINT_ONE_BYTE

Lines = list[str]
#: the largest value of one varint byte's 7 bits (also: a byte above it has the continuation bit set)
_LOW_BITS = VARINT_ONE_BYTE - 1
#: the readers of non-compact length prefixes, by width (module constants of every codec module)
_PREFIX_READERS = {2: "_I16", 4: "_I32"}


def indent(lines: Iterable[str], levels: int = 1) -> Lines:
    """``lines`` indented by ``levels`` blocks of four spaces (blank lines stay blank)."""
    pad = "    " * levels
    return [pad + line if line else line for line in lines]


def _tuple_targets(names: tuple[str, ...]) -> str:
    """Assignment targets: ``a, b`` (one name: ``a,``, unpacking a one-item tuple)."""
    return ", ".join(names) + ("," if len(names) == 1 else "")


# --- lengths and nulls -----------------------------------------------------------------------------


def read_length(op: Length) -> Lines:
    """A length or count prefix read into ``op.var`` (compact: the unsigned varint of n + 1)."""
    n = op.var
    if op.arith and not op.compact:
        return [f"{n} = {op.arith}", f"pos += {op.width}"]
    if not op.compact:
        return [f"{n} = {_PREFIX_READERS[op.width]}(buf, pos)[0]", f"pos += {op.width}"]
    out = [f"{n} = buf[pos]", f"if {n} < {VARINT_ONE_BYTE}:", "    pos += 1"]
    if op.three_byte:
        out += [
            "# lengths of 16 KiB - 2 MiB (three varint bytes, typical of record batches) read in place",
            f"elif pos + 2 < blen and buf[pos + 1] > {_LOW_BITS} and buf[pos + 2] < {VARINT_ONE_BYTE}:",
            f"    {n} = ({n} & {_LOW_BITS}) | (buf[pos + 1] & {_LOW_BITS}) << {VARINT_BITS}"
            f" | buf[pos + 2] << {2 * VARINT_BITS}",
            "    pos += 3",
        ]
    return [*out, "else:", f"    {n}, pos = _ruv(buf, pos)", f"{n} -= 1"]


def read_null(op: ReadValue | SkipValue, target: str) -> Lines:
    """A negative length or count: null where the version allows it, an error otherwise."""
    assert op.length is not None
    n = op.length.var
    if not op.nullable:
        return [f"raise _null_error(pos, {n})"]
    check = [] if op.length.compact else [f"if {n} < -1:", f"    raise _bad_length(pos, {n})"]
    return [*check, f"{target} = None"]


def _bounds(op: ReadValue | SkipValue, n: str) -> Lines:
    """A value of ``n`` bytes: within the type's maximum (compact strings) and the buffer; ends at ``end``."""
    limit = [f"if {n} > {op.max_length}:", f"    raise _bad_length(pos, {n})"] if op.max_length else []
    return [*limit, f"{op.end} = pos + {n}", f"if {op.end} > blen:", f"    raise _short(pos, {n}, blen)"]


def null_struct_test(bytes_input: bool) -> str:
    """The test of a nullable struct's marker byte for null (-1)."""
    return f"buf[pos] > {INT8_MAX}" if bytes_input else "_I8(buf, pos)[0] < 0"


def new_object(cls: str, root: bool) -> str:
    """An object made without running ``__init__`` (its fields are set as they are read)."""
    return f"_new_message({cls})" if root else f"_new({cls})"


def build(b: BuildObject) -> str:
    """Compiled decoders: the object made in one constructor call from the locals read."""
    return f"{b.target} = {b.cls}({b.args})"


# --- values ----------------------------------------------------------------------------------------


def read_run(op: ReadRun) -> Lines:
    """Adjacent fixed-width fields: one struct call (or integer arithmetic per field)."""
    if op.arith:
        out = [f"{t} = {expr}" for t, expr in zip(op.targets, op.arith, strict=True)]
    else:
        out = [f"{_tuple_targets(op.targets)} = {op.fmt}.unpack_from(buf, pos)"]
    out += [f"{t} = _uuid_new(_Uuid, {t})" for t in op.uuid_targets]
    return [*out, f"pos += {op.size}"]


def read_fixed(op: ReadValue) -> Lines:
    value = op.arith or f"{op.fmt}.unpack_from(buf, pos)[0]"
    return [f"{op.target} = {value}", f"pos += {op.size}"]


def read_uuid(op: ReadValue) -> Lines:
    return [f"{op.target} = _uuid_new(_Uuid, {op.fmt}.unpack_from(buf, pos)[0])", f"pos += {op.size}"]


def _slice(op: ReadValue) -> str:
    """The value of a string, bytes or records field read from ``buf[pos:end]``."""
    if op.kind == "string":
        return f"buf[pos:{op.end}].decode()" if op.bytes_input else f'str(buf[pos:{op.end}], "utf-8")'
    if op.kind == "bytes":
        return f"bytes(buf[pos:{op.end}])"
    return f"mvb[pos:{op.end}]"  # records: a slice of the caller's buffer


def read_blob(op: ReadValue) -> Lines:
    """A string, bytes or records value: its length, null, its bounds, the value."""
    assert op.length is not None
    if op.helper:
        nullable = "nullable_" if op.nullable else ""
        kind = "string" if op.kind == "string" else "blob"
        return [f"{op.target}, pos = _read_{nullable}{kind}(buf, pos, blen, {op.length.width_arg})"]
    n = op.length.var
    value = [*_bounds(op, n), f"{op.target} = {_slice(op)}", f"pos = {op.end}"]
    null = indent(read_null(op, op.target))
    return [*read_length(op.length), f"if {n} < 0:", *null, "else:", *indent(value)]


def read_struct(op: ReadValue) -> Lines:
    call = f"{op.target}, pos = d_{op.fn}(buf, pos, blen)"
    if not op.nullable:
        return [call]
    test = null_struct_test(op.bytes_input)
    return [f"if {test}:", "    pos += 1", f"    {op.target} = None", "else:", "    pos += 1", f"    {call}"]


def read_array(op: ReadValue) -> Lines:
    """An array: its count, null, then its elements as the array's strategy reads them."""
    assert op.length is not None and op.array is not None
    n = op.length.var
    elements = array_elements(op.array, n, op.target)
    if op.helper:
        count = f"{n}, pos = _read_count(buf, pos, blen, {op.length.width_arg}, {op.nullable})"
        if not op.nullable:
            return [count, *elements]
        return [count, f"if {n} < 0:", f"    {op.target} = None", "else:", *indent(elements)]
    null = indent(read_null(op, op.target))
    return [*read_length(op.length), f"if {n} < 0:", *null, "else:", *indent(elements)]


#: the printer of each ``ReadValue`` kind
VALUE_READERS: dict[str, Callable[[ReadValue], Lines]] = {
    "fixed": read_fixed,
    "uuid": read_uuid,
    "string": read_blob,
    "bytes": read_blob,
    "records": read_blob,
    "struct": read_struct,
    "array": read_array,
}


def read_value(op: ReadValue) -> Lines:
    return VALUE_READERS[op.kind](op)


def read_steps(ops: Iterable[ReadRun | ReadValue]) -> Lines:
    """A struct's fields read in wire order."""
    out: Lines = []
    for op in ops:
        out += read_run(op) if isinstance(op, ReadRun) else read_value(op)
    return out


# --- arrays ----------------------------------------------------------------------------------------


def _count_check(a: ReadArray, n: str) -> Lines:
    """The count checked against the bytes left before anything is allocated for it."""
    if a.strategy in ("values", "uuids"):
        return [
            f"if {n} * {a.elem_size} > blen - pos:",
            f"    raise _bad_count(pos, {n}, {a.elem_size}, blen)",
        ]
    if a.min_size == 0:
        return [f"if {n} > blen - pos:", f"    raise _bad_count(pos, {n}, 1, blen)"]
    return []


def read_uuids(a: ReadArray, n: str, target: str) -> Lines:
    size = a.elem_size
    return [
        f"{target} = [_uuid_new(_Uuid, buf[p:p + {size}]) for p in range(pos, pos + {size} * {n}, {size})]",
        f"pos += {size} * {n}",
    ]


def read_values(a: ReadArray, n: str, target: str) -> Lines:
    return [
        f"if {n} < {VALUES_TABLE_SIZE}:",
        f"    {target} = list({a.table}[{n}].unpack_from(buf, pos))",
        "else:",
        f'    {target} = list(_unpack_from(">%d{a.value_fmt}" % {n}, buf, pos))',
        f"pos += {a.elem_size} * {n}",
    ]


def read_lazy(a: ReadArray, n: str, target: str) -> Lines:
    assert a.skip is not None
    ignore = "" if a.compiled else "  # type: ignore[assignment]"
    return [
        f"{a.start} = pos",
        *skip_structs(a.skip),
        "# a LazyArray where the class declares a list (decode(..., lazy=True) documents it)",
        f"{target} = _Lazy({ignore}",
        f"    buf, {a.start}, {n}, d_{a.fn}, ({a.message!r}, {a.seg[:-2]!r}, {a.version})",
        ")",
    ]


def read_generic(a: ReadArray, n: str, target: str) -> Lines:
    assert a.element is not None
    loop = [*read_value(a.element), f"{a.items}.append({a.item})"]
    return [f"{a.items} = []", f"for _ in range({n}):", *indent(loop), f"{target} = {a.items}"]


def _element(a: ReadArray) -> Lines:
    """One struct element read in the array's loop, fields in place."""
    if a.build is not None:
        tagged = read_tagged(a.tagged) if a.tagged else []
        return [*read_steps(a.body), *tagged, build(a.build)]
    out = [f"{a.item} = {new_object(a.cls, False)}", *read_steps(a.body)]
    out += [f"{t} = {d}" for t, d in a.defaults]
    return out + (read_tagged(a.tagged) if a.tagged else [f"{a.item}._unknown_tagged_fields = None"])


def _in_place(a: ReadArray) -> Lines:
    return [*_element(a), f"{a.items}.append({a.item})"]


def _made(a: ReadArray, ctor: str, stores: Iterable[tuple[str, str]]) -> Lines:
    """An element made from values unpacked at once: one constructor call, or stores into a new object."""
    if a.compiled:
        return [f"{a.item} = {a.cls}({ctor})"]
    out = [f"{a.item} = {new_object(a.cls, False)}", *(f"{t} = {v}" for t, v in stores)]
    return [*out, f"{a.item}._unknown_tagged_fields = None"]


def read_same_width(a: ReadArray, n: str) -> Lines:
    sw = a.same_width
    assert sw is not None
    view = f"memoryview(buf)[pos:pos + {sw.size} * {n}]"
    loop = [
        f"if {sw.values[-1]}:",
        "    break  # this element has tagged fields: the loop below reads it and the rest",
    ]
    loop = (loop if a.tagged else []) + _made(a, sw.ctor, sw.stores) + [f"{sw.append}({a.item})"]
    return [
        f"if {n} >= {sw.min_count} and {n} * {sw.size} <= blen - pos:",
        "    # Same-width elements: one iter_unpack over the whole array.",
        f"    {sw.append} = {a.items}.append",
        f"    for {_tuple_targets(sw.values)} in {sw.fmt}.iter_unpack({view}):",
        *indent(loop, 2),
        f"    pos += {sw.size} * len({a.items})",
        f"for _ in range(len({a.items}), {n}):",
        *indent(_in_place(a)),
    ]


def read_shaped(a: ReadArray, n: str) -> Lines:
    sh = a.shape
    assert sh is not None
    shape_locals = ", ".join([sh.unpack, sh.size, *sh.starts, *sh.counts])
    out = [
        "# Elements are read with one unpack_from by the shape (array lengths) of the element before,",
        "# once every count byte and the tagged-field byte it reads match that shape; otherwise in full.",
    ]
    if a.compiled:
        out += [
            f"{sh.size}: int  # typed: compiled code compares and indexes with machine integers",
            f"{sh.values}: tuple[int, ...]",
            *(f"{x}: int" for x in (*sh.starts, *sh.counts)),
        ]
    made = _made(a, sh.ctor, [*sh.stores, *a.defaults])
    fast = [*made, f"pos += {sh.size}", f"{a.items}.append({a.item})", "continue"]
    lengths = f"{sh.readers}, {sh.lengths}, {sh.pattern!r}, {sh.widths}"
    return [
        *out,
        f"{sh.shape} = {sh.readers}.get(())",
        f"if {sh.shape} is None:",
        f"    {sh.unpack}: Any = None",
        "else:",
        f"    {shape_locals} = {sh.shape}",
        f"for _ in range({n}):",
        f"    if {sh.unpack} is not None and pos + {sh.size} <= blen:",
        f"        {sh.values} = {sh.unpack}(buf, pos)",
        f"        if {sh.checks}:",
        *indent(fast, 3),
        *indent(_element(a)),
        f"    {sh.shape} = _shape_reader({lengths})",
        f"    if {sh.shape} is not None:",
        f"        {shape_locals} = {sh.shape}",
        f"    {a.items}.append({a.item})",
    ]


def read_inline(a: ReadArray, n: str) -> Lines:
    return [f"for _ in range({n}):", *indent(_in_place(a))]


def read_calls(a: ReadArray, n: str) -> Lines:
    return [
        f"for _ in range({n}):",
        f"    {a.item}, pos = d_{a.fn}(buf, pos, blen)",
        f"    {a.items}.append({a.item})",
    ]


#: the printer of each array strategy building a list of its own
_LISTS: dict[str, Callable[[ReadArray, str, str], Lines]] = {
    "uuids": read_uuids,
    "values": read_values,
    "lazy": read_lazy,
    "generic": read_generic,
}
#: the printer of each strategy reading struct elements into a typed list
_STRUCT_LISTS: dict[str, Callable[[ReadArray, str], Lines]] = {
    "shaped": read_shaped,
    "same_width": read_same_width,
    "inline": read_inline,
    "call": read_calls,
}


def array_elements(a: ReadArray, n: str, target: str) -> Lines:
    """The ``n`` elements of an array read into ``target`` by the array's strategy."""
    check = _count_check(a, n)
    if a.strategy in _LISTS:
        return check + _LISTS[a.strategy](a, n, target)
    return [
        *check,
        f"{a.items}: list[{a.cls}] = []",
        *_STRUCT_LISTS[a.strategy](a, n),
        f"{target} = {a.items}",
    ]


# --- tagged fields ---------------------------------------------------------------------------------


def read_tagged(t: ReadTagged) -> Lines:
    """A tagged-field section: the known tags into their fields, any other kept raw."""
    out = [f"{target} = {d}" for target, d in t.defaults]
    if not t.known:
        return [
            *out,
            "if buf[pos]:",
            f"    {t.store}, pos = _read_tags(buf, pos, blen)",
            "else:",
            f"    {t.store} = None",
            "    pos += 1",
        ]
    known: Lines = []
    for i, k in enumerate(t.known):
        known += [
            f"{'elif' if i else 'if'} {t.tag} == {k.tag}:",
            *indent(read_value(k.value)),
            f"    if pos != {t.end}:  # the value must fill its declared size exactly",
            f"        raise _tag_size(pos, {t.end}, {t.size}, {k.name!r}, {k.tag})",
        ]
    unknown = [
        f"if {t.unknown} is None:",
        f"    {t.unknown} = []",
        f"{t.unknown}.append(({t.tag}, bytes(buf[pos:{t.end}])))",
        f"pos = {t.end}",
    ]
    return [
        *out,
        f"{t.count} = buf[pos]",
        f"if {t.count} < {VARINT_ONE_BYTE}:",
        "    pos += 1",
        "else:",
        f"    {t.count}, pos = _ruv(buf, pos)",
        f"if {t.count}:",
        f"    {t.unknown}: list[tuple[int, bytes]] | None = None",
        f"    {t.prev} = -1",
        f"    for _ in range({t.count}):",
        f"        {t.start} = pos",
        f"        {t.tag}, pos = _ruv(buf, pos)",
        f"        if {t.tag} <= {t.prev}:",
        f"            raise _tag_order({t.start}, {t.tag}, {t.prev})",
        f"        {t.prev} = {t.tag}",
        f"        {t.size}, pos = _ruv(buf, pos)",
        f"        {t.end} = pos + {t.size}",
        f"        if {t.end} > blen:",
        f"            raise _short(pos, {t.size}, blen)",
        *indent(known, 2),
        "        else:",
        *indent(unknown, 3),
        f"    {t.store} = {t.unknown}",
        "else:",
        f"    {t.store} = None",
    ]


# --- walking (lazy decoding): every check of a read, nothing built -----------------------------------


def skip_structs(s: SkipStructArray) -> Lines:
    if s.runtime:
        return [f"pos = _skip_structs(INFO, {s.runtime!r}, {s.version}, buf, pos, blen, {s.count})"]
    walk = [f"for _ in range({s.count}):", f"    pos = s_{s.fn}(buf, pos, blen)"]
    if not s.same_width:
        return walk
    clear = f" and _tags_clear(buf, pos, {s.count}, {s.same_width})" if s.flexible else ""
    return [
        f"if {s.count} * {s.same_width} <= blen - pos{clear}:",
        f"    pos += {s.same_width} * {s.count}",
        "else:",
        *indent(walk),
    ]


def skip_fixed(op: SkipValue) -> Lines:
    """A run of fixed-width fields or one fixed-width value: its bytes must be there."""
    return [f"if pos + {op.size} > blen:", f"    raise _short(pos, {op.size}, blen)", f"pos += {op.size}"]


def skip_blob(op: SkipValue) -> Lines:
    assert op.length is not None
    if op.helper:
        return [
            f"pos = _skip_blob(buf, pos, blen, {op.length.width_arg}, {op.nullable}, {op.kind == 'string'})"
        ]
    n = op.length.var
    value = [*_bounds(op, n), f"pos = {op.end}"]
    return [*read_length(op.length), f"if {n} < 0:", *indent(read_null(op, "_null")), "else:", *indent(value)]


def skip_struct(op: SkipValue) -> Lines:
    if not op.nullable:
        return [f"pos = s_{op.fn}(buf, pos, blen)"]
    return [
        f"if {null_struct_test(op.bytes_input)}:",
        "    pos += 1",
        "else:",
        f"    pos = s_{op.fn}(buf, pos + 1, blen)",
    ]


def skip_array(op: SkipValue) -> Lines:
    assert op.length is not None
    n = op.length.var
    if op.helper:
        head = [
            f"{n}, pos = _read_count(buf, pos, blen, {op.length.width_arg}, {op.nullable})",
            f"if {n} >= 0:",
        ]
    else:
        head = [*read_length(op.length), f"if {n} < 0:", *indent(read_null(op, "_null")), "else:"]
    if op.elem_size:
        body = [
            f"if {n} * {op.elem_size} > blen - pos:",
            f"    raise _bad_count(pos, {n}, {op.elem_size}, blen)",
            f"pos += {op.elem_size} * {n}",
        ]
    else:
        body = (
            [f"if {n} > blen - pos:", f"    raise _bad_count(pos, {n}, 1, blen)"] if op.min_size == 0 else []
        )
        if op.structs is not None:
            body += skip_structs(op.structs)
        else:
            assert op.element is not None
            body += [f"for _ in range({n}):", *indent(skip_value(op.element))]
    return head + indent(body)


#: the printer of each ``SkipValue`` kind
VALUE_SKIPPERS: dict[str, Callable[[SkipValue], Lines]] = {
    "run": skip_fixed,
    "fixed": skip_fixed,
    "string": skip_blob,
    "bytes": skip_blob,
    "records": skip_blob,
    "struct": skip_struct,
    "array": skip_array,
}


def skip_value(op: SkipValue) -> Lines:
    return VALUE_SKIPPERS[op.kind](op)


SKIP_TAGGED = ["if buf[pos]:", "    pos = _skip_tags(buf, pos, blen)", "else:", "    pos += 1"]


# --- functions -------------------------------------------------------------------------------------


def _signature(name: str, target: Target, returns: str) -> str:
    buffer = "bytes" if target.bytes_buffer else "Buffer"
    offset = target.offset_type
    return f"def {name}(buf: {buffer}, pos: {offset}, blen: {offset}) -> {returns}:"


def decoder(fn: FunctionPlan, target: Target, *, lazy: bool = False) -> Lines:
    """``d_<id>`` (or, ``lazy``, the root's ``dl_<id>``, its arrays of structs left as LazyArray)."""
    if lazy:
        name = f"dl_{fn.id}"
        note = f"decode {fn.cls} at versions {fn.versions}, its arrays of structs left unbuilt (lazy=True)"
        ops, tagged, made = fn.read_lazy, fn.read_lazy_tagged, fn.read_lazy_build
        declared = fn.read_lazy_locals
    else:
        helpers = "; strings and bytes by runtime helpers" if target.helpers else ""
        name, note = f"d_{fn.id}", f"decode {fn.cls} at versions {fn.versions} ({fn.strategy}{helpers})"
        ops, tagged, made, declared = fn.read, fn.read_tagged, fn.read_build, fn.read_locals
    if made is not None:
        head = [
            "# fields are read into locals; the object is made in one constructor call after the last",
            *(f"{local}: Any" for local in declared),
        ]
    else:
        head = [f"obj = {new_object(fn.cls, fn.is_root)}"]
    if fn.records_view:
        head.append("mvb = memoryview(buf)  # records values are slices of it")
    if made is not None:
        tail = [*(read_tagged(tagged) if tagged else []), build(made)]
    else:
        tail = [f"obj.{attr} = {d}" for attr, d in fn.read_defaults]
        tail += read_tagged(tagged) if tagged else ["obj._unknown_tagged_fields = None"]
    body = [f"# {note}", *head, *read_steps(ops), *tail, "return obj, pos"]
    return [_signature(name, target, f"tuple[{fn.cls}, int]"), *indent(body)]


def skipper(fn: FunctionPlan, target: Target) -> Lines:
    """``s_<id>``: a struct's bytes checked and walked, nothing built (lazy decoding)."""
    body = [f"# skip {fn.cls} at versions {fn.versions}: check its bytes, build nothing (lazy decoding)"]
    for op in fn.skip:
        body += skip_value(op)
    body += [*(SKIP_TAGGED if fn.flexible else []), "return pos"]
    return [_signature(f"s_{fn.id}", target, "int"), *indent(body)]


__all__ = [
    "SKIP_TAGGED", "VALUE_READERS", "VALUE_SKIPPERS", "Lines", "array_elements", "build", "decoder", "indent",
    "new_object", "null_struct_test", "read_length", "read_null", "read_run", "read_steps", "read_tagged",
    "read_value", "skip_structs", "skip_value", "skipper",
]
