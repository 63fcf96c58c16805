"""Print the encoders of a generated codec module from their ops (``kcodec.codegen.program``).

One printer per op kind, as in ``kcodec.codegen.print_read``: a ``Write*`` op in, the lines of Python
writing it out (indented from column 0), nothing decided here. Compiled encoders keep the field at
fault as they go (the ops' ``mark`` and ``tracked``); interpreted ones leave that to
``kcodec.protocol.encode_check``, run on a failure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kcodec.codegen.constants import VALUES_TABLE_SIZE
from kcodec.codegen.print_read import Lines, indent
from kcodec.codegen.program import (
    AbsentCheck,
    FunctionPlan,
    Length,
    Target,
    WriteArray,
    WriteRun,
    WriteTagged,
    WriteValue,
)
from kcodec.codegen.wire_types import (
    NULL_STRUCT_BYTE,
    PRESENT_STRUCT_BYTE,
    VARINT_BITS,
    VARINT_ONE_BYTE,
    VARINT_THREE_BYTES,
    VARINT_TWO_BYTES,
    WIRE_TYPES,
)

UUID_SIZE = WIRE_TYPES["uuid"].size
#: the writers of non-compact length prefixes, by width (module constants of every codec module)
_PREFIX_WRITERS = {2: "_P16", 4: "_P32"}


def _hex(value: int) -> str:
    """A mask in hex with capital digits, as the encoders print it."""
    return f"0x{value:X}"


def _null_prefix(width: int) -> str:
    """The bytes literal of a null (-1) non-compact length of ``width`` bytes."""
    data = (-1).to_bytes(width, "big", signed=True)
    return 'b"' + "".join(f"\\x{b:02x}" for b in data) + '"'


def _three_byte_varints(n: str, out: str) -> Lines:
    """Varints of two and three bytes written in place, without ``_wuv``'s loop."""
    low = VARINT_ONE_BYTE - 1
    cont = VARINT_ONE_BYTE
    step = 8 - VARINT_BITS  # each byte's 7 bits move up by this much per byte before it
    two = f"{n} & {_hex(low)} | {n} << {step} & {_hex(low << 8)} | {_hex(cont)}"
    three = (
        f"{n} & {_hex(low)} | {n} << {step} & {_hex(low << 8)} | {n} << {2 * step} & {_hex(low << 16)}"
        f" | {_hex(cont | cont << 8)}"
    )
    return [
        f"elif {n} < {_hex(VARINT_TWO_BYTES)}:",
        "    # varints of two and three bytes (lengths up to 2 MiB, typical of record batches) written in",
        "    # place: the bytes as one little-endian int, 7 bits each, all but the last with the high bit"
        " set",
        f'    {out} += ({two}).to_bytes(2, "little")',
        f"elif {n} < {_hex(VARINT_THREE_BYTES)}:",
        f'    {out} += ({three}).to_bytes(3, "little")',
    ]


def write_length(op: Length, out: str) -> Lines:
    """A length or count prefix written from ``op.var`` (compact: the unsigned varint of n + 1)."""
    n = op.var
    if op.helper:
        return [f"_write_length({out}, {n}, {op.width_arg}, {op.limit_arg})"]
    if not op.compact:
        return [
            f"if {n} > {op.limit}:",
            f"    raise _too_long({n}, {op.limit})",
            f"{out} += {_PREFIX_WRITERS[op.width]}({n})",
        ]
    lines = [f"if {n} > {op.limit}:", f"    raise _too_long({n}, {op.limit})"] if op.limit else []
    lines += [f"{n} += 1", f"if {n} < {VARINT_ONE_BYTE}:", f"    {out}.append({n})"]
    if op.three_byte:
        lines += _three_byte_varints(n, out)
    return [*lines, "else:", f"    _wuv({out}, {n})"]


def write_null(op: WriteValue) -> Lines:
    """A null value: its null length where the version allows it, an error otherwise."""
    assert op.length is not None
    if not op.nullable:
        return ["raise _null_value()"]
    if op.length.compact:
        return [f"{op.out}.append(0)"]
    return [f"{op.out} += {_null_prefix(op.length.width)}"]


def absent(checks: Iterable[AbsentCheck]) -> Lines:
    """Fields the version does not have: a value other than the default is refused."""
    out: Lines = []
    for c in checks:
        out += [f"_field = {c.mark}"] if c.mark else []
        out += [f"if {c.condition}:", f"    raise _unsupported({c.json_name!r}, -1)"]
    return out


def _uuid_check(source: str) -> Lines:
    return [f"if len({source}) != {UUID_SIZE}:", f'    raise ValueError("a uuid needs {UUID_SIZE} bytes")']


def write_run(op: WriteRun) -> Lines:
    """Adjacent fixed-width fields: one pack call."""
    out = [f"_field = {op.mark}"] if op.mark else []
    for source in op.uuid_sources:
        out += _uuid_check(source)
    return [*out, f"{op.out} += {op.fmt}.pack({', '.join(op.sources)})"]


def write_fixed(op: WriteValue) -> Lines:
    return [f"{op.out} += {op.fmt}.pack({op.source})"]


def write_uuid(op: WriteValue) -> Lines:
    return [*_uuid_check(op.source), *write_fixed(op)]


def write_blob(op: WriteValue) -> Lines:
    """A string, bytes or records value: null, or its length and bytes (large ones kept uncopied)."""
    assert op.length is not None
    out = op.out
    if op.helper:
        kind = "string" if op.kind == "string" else "blob"
        args = f"{out}, {op.source}, {op.length.width_arg}, {op.nullable}, {op.length.limit_arg}"
        return [f"_write_{kind}({args})"]
    data = [
        f"{op.data} = {op.value}{'.encode()' if op.kind == 'string' else ''}",
        f"{op.length.var} = len({op.data})",
        *write_length(op.length, out),
    ]
    if op.kind == "string":
        data.append(f"{out} += {op.data}")
    else:
        data += [
            f"if type({out}) is _Chunked and len({op.data}) >= _CHUNK_BYTES:",
            f"    _blob({out}, {op.data})",
            "else:",
            f"    {out} += {op.data}",
        ]
    return [
        f"{op.value} = {op.source}",
        f"if {op.value} is None:",
        *indent(write_null(op)),
        "else:",
        *indent(data),
    ]


def write_struct(op: WriteValue) -> Lines:
    out = op.out
    null = f"{out}.append({NULL_STRUCT_BYTE})" if op.nullable else "raise _null_value()"
    present = [f"    {out}.append({PRESENT_STRUCT_BYTE})"] if op.nullable else []
    return [
        f"{op.value} = {op.source}",
        f"if {op.value} is None:",
        f"    {null}",
        "else:",
        *present,
        f"    e_{op.fn}({op.value}, {out})",
    ]


def write_array(op: WriteValue) -> Lines:
    return [
        f"{op.value} = {op.source}",
        f"if {op.value} is None:",
        *indent(write_null(op)),
        "else:",
        *indent(array_elements(op)),
    ]


#: the printer of each ``WriteValue`` kind
VALUE_WRITERS: dict[str, Callable[[WriteValue], Lines]] = {
    "fixed": write_fixed,
    "uuid": write_uuid,
    "string": write_blob,
    "bytes": write_blob,
    "records": write_blob,
    "struct": write_struct,
    "array": write_array,
}


def write_value(op: WriteValue) -> Lines:
    return VALUE_WRITERS[op.kind](op)


def write_steps(ops: Iterable[WriteRun | WriteValue]) -> Lines:
    """A struct's fields written in wire order."""
    out: Lines = []
    for op in ops:
        if isinstance(op, WriteRun):
            out += write_run(op)
        else:
            out += ([f"_field = {op.mark}"] if op.mark else []) + write_value(op)
    return out


# --- arrays ----------------------------------------------------------------------------------------


def _loop(a: WriteArray, values: str) -> str:
    """The loop over the elements (compiled: with their index, kept for error paths)."""
    return f"for _index, {a.item} in enumerate({values}):" if a.tracked else f"for {a.item} in {values}:"


def _foreign(a: WriteArray, out: str) -> Lines:
    """Compiled: an element not of exactly the struct's native class is written by its own encoder."""
    index = [f"    _field, _index = {a.seg!r}, {a.index}"] if a.index else []
    return [
        f"if type({a.item}) is not {a.cls}:",
        "    # not of exactly the struct's (native) class: written by its own encoder, fields read by name",
        *index,
        f"    e_{a.fn}({a.item}, {out})",
        "    continue",
        f"{a.native}: {a.cls} = {a.item}",
    ]


def _in_place(a: WriteArray, out: str, body: Lines) -> Lines:
    """An element written in place; compiled: on any error its own encoder runs on a new bytearray."""
    if not a.tracked:
        return indent(body)
    foreign = _foreign(a, out) if a.native else []
    return indent(
        [
            f"{a.index} = _index",
            *foreign,
            "try:",
            *indent(body),
            "except Exception:",
            f"    _field, _index = {a.seg!r}, {a.index}",
            f"    e_{a.fn}({a.item}, bytearray())",
            "    raise",
        ]
    )


def write_values(op: WriteValue) -> Lines:
    """Fixed-width values: count and values in one pack call (long arrays: a format made for them)."""
    a, n, out, v = op.array, op.length, op.out, op.value
    assert a is not None and n is not None
    return [
        f"if {n.var} < {VALUES_TABLE_SIZE}:",
        "    # the length and the elements in one pack call",
        f"    {out} += {a.table}[{n.var}].pack({a.count_source}, *{v})",
        "else:",
        f'    {a.packed} = _pack(">%d{a.value_fmt}" % {n.var}, *{v})',
        *indent(write_length(n, out)),
        f"    {out} += {a.packed}",
    ]


def write_generic(a: WriteArray, out: str, values: str) -> Lines:
    assert a.element is not None
    return [_loop(a, values), *indent(write_value(a.element))]


def write_same_width(a: WriteArray, out: str, values: str) -> Lines:
    pack = f"{out} += {a.same_width_fmt}.pack({', '.join(a.same_width_values)})"
    if a.tracked:
        write = [
            "try:",
            f"    {pack}",
            "except Exception:  # the element's own encoder names the field at fault",
            f"    e_{a.fn}({a.item}, {out})",
        ]
    else:
        write = [pack]
    return [
        _loop(a, values),
        *(indent(_foreign(a, out)) if a.native else []),
        f"    if {a.holder}._unknown_tagged_fields:",
        f"        e_{a.fn}({a.item}, {out})",
        "    else:  # same-width element without tagged fields: written in place",
        *indent(write, 2),
    ]


def write_shaped(a: WriteArray, out: str, values: str) -> Lines:
    sh = a.shape
    assert sh is not None
    body = [
        *absent(a.absent),
        *(f"{local} = {source}" for local, source in sh.arrays),
        f"{sh.key} = {sh.key_source}",
        f"{sh.packer} = {sh.writers}.get({sh.key})",
        f"if {sh.packer} is None:",
        f"    {sh.packer} = _shape_writer({sh.writers}, {sh.key}, {sh.pattern!r})",
        f"if {sh.packer} is None or {a.holder}._unknown_tagged_fields:",
        f"    e_{a.fn}({a.item}, {out})",
        "else:",
        f"    {out} += {sh.packer}.pack({sh.values}, 0)",
    ]
    return [
        _loop(a, values),
        "    # one pack per element, by the struct.Struct of its array lengths (its shape); an element with",
        f"    # tagged fields or an array of {VARINT_ONE_BYTE - 1}+ values is written by its own encoder",
        *_in_place(a, out, body),
    ]


def write_inline(a: WriteArray, out: str, values: str) -> Lines:
    unknown = f"{a.holder}._unknown_tagged_fields"
    if a.flexible:
        tags = [f"if {unknown}:", f"    _wtag({out}, [], {unknown}, ())", "else:", f"    {out}.append(0)"]
    else:
        tags = [f"if {unknown}:", "    raise _tagged_unsupported()"]
    body = [*absent(a.absent), *write_steps(a.body), *tags]
    return [_loop(a, values), "    # the element written in place", *_in_place(a, out, body)]


def write_calls(a: WriteArray, out: str, values: str) -> Lines:
    if a.rerun and a.tracked:
        return [
            _loop(a, values),
            "    try:",
            f"        e_{a.fn}({a.item}, {out})",
            "    except Exception:  # the error an element written in place gives: its encoder's on a new"
            " bytearray",
            f"        e_{a.fn}({a.item}, bytearray())",
            "        raise",
        ]
    return [f"for {a.item} in {values}:", f"    e_{a.fn}({a.item}, {out})"]


#: the printer of each array strategy writing elements after the count
_ELEMENT_WRITERS: dict[str, Callable[[WriteArray, str, str], Lines]] = {
    "generic": write_generic,
    "same_width": write_same_width,
    "shaped": write_shaped,
    "inline": write_inline,
    "call": write_calls,
}


def array_elements(op: WriteValue) -> Lines:
    """A non-null array: its count and its elements, as its strategy writes them."""
    a, n = op.array, op.length
    assert a is not None and n is not None
    head = [f"{n.var} = len({op.value})"]
    if a.strategy == "values":
        return head + write_values(op)
    head += write_length(n, op.out) + ([f"_field = {a.seg!r}"] if a.tracked else [])
    return head + _ELEMENT_WRITERS[a.strategy](a, op.out, op.value)


# --- tagged fields and functions -------------------------------------------------------------------


def write_tagged(t: WriteTagged) -> Lines:
    """A tagged-field section: the known fields holding a value other than their default, then any
    unknown ones kept from decoding, in tag order."""
    section = ['_field = "_tagged_fields"'] if t.tracked else []
    if not t.known:
        return [
            *section,
            "if obj._unknown_tagged_fields:",
            "    _wtag(out, [], obj._unknown_tagged_fields, ())",
            "else:",
            "    out.append(0)",
        ]
    out = ["tagged: list[tuple[int, bytes | bytearray]] = []"]
    for tag, attr, condition, v in t.known:
        out += [f"_field = {attr!r}"] if t.tracked else []
        out += [
            f"if {condition}:",
            f"    {v.out} = bytearray()",
            *indent(write_value(v)),
            f"    tagged.append(({tag}, {v.out}))",
        ]
    return (
        out
        + section
        + [
            "if tagged or obj._unknown_tagged_fields:",
            f"    _wtag(out, tagged, obj._unknown_tagged_fields, {t.known_tags})",
            "else:",
            "    out.append(0)",
        ]
    )


def encoder(fn: FunctionPlan, target: Target) -> Lines:
    """``e_<id>``: one struct layout written to ``out`` (compiled: inside the error tracking)."""
    helpers = "; strings and bytes by runtime helpers" if target.helpers else ""
    head = [
        f"def e_{fn.id}(obj: {'Any' if target.compiled else fn.cls}, out: bytearray) -> None:",
        f"    # encode {fn.cls} at versions {fn.versions} ({fn.strategy}{helpers})",
    ]
    tagged = (
        write_tagged(fn.write_tagged)
        if fn.write_tagged
        else ["if obj._unknown_tagged_fields:", "    raise _tagged_unsupported()"]
    )
    body = [*absent(fn.write_absent), *write_steps(fn.write), *tagged]
    if not target.compiled:
        return head + indent(body)
    return [
        *head,
        "    # (compiled: the field at fault is kept as the encoder goes; interpreted encoders leave that to",
        "    # kcodec.protocol.encode_check, run on a failure)",
        "    _field: Any = None",
        "    _index = 0",
        "    try:",
        *indent(body, 2),
        "    except Exception as _e:",
        "        raise _efail(_e, _field, obj, _index) from None",
    ]


__all__ = [
    "UUID_SIZE", "VALUE_WRITERS", "absent", "array_elements", "encoder", "write_length", "write_null",
    "write_run", "write_steps", "write_tagged", "write_value",
]
