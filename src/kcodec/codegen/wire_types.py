"""The one table of Kafka's primitive wire types.

Every layer reads its facts about a primitive from here: the spec model (which type names exist, which
may be null, how a default is written), the layouts (struct format and width), both back ends (Python
annotation and read/write snippet kind; construct primitive), and, through the copy the generator writes
into the generated package (``kcodec/_generated/wire_types.py``, see ``runtime_copy``), the runtime's
table of primitive codecs (``kcodec.protocol.wire_table``): the wire walk under partial bodies and the
fuzzer's layout, JSON conversion, construct conversion, hypothesis strategies and the fuzzer's generator
and mutator. The runtime cannot import the generator, so it reads that generated copy; nothing in the
runtime restates a fact this table holds.

Adding a type of an existing snippet family (say ``uint64``: ``fixed``, ``"Q"``, 8 bytes, its bounds,
construct ``Int64ub``) is one entry here; a new family also needs its printers
(``kcodec.codegen.print_read`` and ``print_write`` dispatch on the value op's kind, which layout.py
takes from ``WireType.snippet``), its helpers in ``kcodec.protocol._gen_runtime``, and its reader and
writer in ``kcodec.protocol.wire_table``.
"""

from __future__ import annotations

from dataclasses import dataclass

#: what a value looks like in JSON (Kafka's JsonConverter) and how a spec default is written for it
REPRESENTATIONS = ("bool", "int", "float", "uuid", "string", "base64")


@dataclass(frozen=True, slots=True)
class WireType:
    """One primitive: how it is written on the wire and what it is in Python, JSON and construct."""

    name: str  # the spec's type name
    snippet: str  # emitter snippet family: "fixed", "uuid", "string", "bytes" or "records"
    py_type: str  # annotation of an attribute holding one (generated modules import _Uuid)
    json: str  # one of REPRESENTATIONS
    # construct primitive (fixed width) or kcodec.protocol.construct_backend factory (variable)
    construct: str
    fmt: str = ""  # struct format (fixed width only)
    size: int = 0  # bytes (fixed width only)
    bounds: tuple[int, int] | None = None  # inclusive range of an integer type
    length_fmt: str = ""  # struct format of the non-compact length prefix (variable length only)
    max_length: int = 0  # the most bytes one value may have (variable length only)

    @property
    def fixed_width(self) -> bool:
        return self.size > 0

    @property
    def compact_limit(self) -> int | None:
        """The most a compact length may say before a reader refuses it (``invalid length``): the
        maximum length of a type whose non-compact prefix is an int16 (strings). A compact length of
        the int32-prefixed types is not checked against their maximum (it could not fit any buffer)."""
        return self.max_length if self.length_fmt == "h" else None

    def length_limit(self, compact: bool) -> int | None:
        """The most bytes a writer may put after a length prefix (None: no limit but the varint's)."""
        return self.compact_limit if compact else self.max_length

    @property
    def nullable(self) -> bool:
        """Kafka allows null for variable-length values (and arrays and structs), not fixed-width ones."""
        return not self.fixed_width


def _int(name: str, fmt: str, size: int, lo: int, hi: int, construct: str) -> WireType:
    return WireType(name, "fixed", "int", "int", construct, fmt, size, (lo, hi))


INT8_MAX = 2**7 - 1
INT16_MAX = 2**15 - 1
INT32_MAX = 2**31 - 1

#: unsigned varints (compact lengths and counts, tagged fields): 7 bits a byte, low bits first, every
#: byte but the last with the high bit set. A value below ``VARINT_ONE_BYTE`` takes one byte, below
#: ``VARINT_TWO_BYTES`` two, below ``VARINT_THREE_BYTES`` three.
VARINT_BITS = 7
VARINT_ONE_BYTE = 1 << VARINT_BITS
VARINT_TWO_BYTES = 1 << 2 * VARINT_BITS
VARINT_THREE_BYTES = 1 << 3 * VARINT_BITS
#: the int8 before a nullable struct: -1 (null, written as its byte) or 1 (present)
NULL_STRUCT_BYTE = 0xFF
PRESENT_STRUCT_BYTE = 1

WIRE_TYPES: dict[str, WireType] = {
    t.name: t
    for t in (
        WireType("bool", "fixed", "bool", "bool", "Flag", "?", 1),
        _int("int8", "b", 1, -(2**7), INT8_MAX, "Int8sb"),
        _int("int16", "h", 2, -(2**15), INT16_MAX, "Int16sb"),
        _int("uint16", "H", 2, 0, 2**16 - 1, "Int16ub"),
        _int("int32", "i", 4, -(2**31), INT32_MAX, "Int32sb"),
        _int("uint32", "I", 4, 0, 2**32 - 1, "Int32ub"),
        _int("int64", "q", 8, -(2**63), 2**63 - 1, "Int64sb"),
        WireType("float64", "fixed", "float", "float", "Float64b", "d", 8),
        WireType("uuid", "uuid", "_Uuid", "uuid", "Bytes(16)", "16s", 16),
        WireType("string", "string", "str", "string", "KafkaString", length_fmt="h", max_length=INT16_MAX),
        WireType("bytes", "bytes", "bytes", "base64", "KafkaBytes", length_fmt="i", max_length=INT32_MAX),
        WireType(
            "records", "records", "bytes | memoryview", "base64", "KafkaBytes", length_fmt="i",
            max_length=INT32_MAX,
        ),
    )
}

#: integer bounds by type name (default validation here, range checks in the runtime's copy)
INT_BOUNDS: dict[str, tuple[int, int]] = {t.name: t.bounds for t in WIRE_TYPES.values() if t.bounds}


def wire_type(name: str) -> WireType:
    """The entry for a primitive type name (``KeyError`` for anything else)."""
    return WIRE_TYPES[name]


#: the columns of the runtime copy, in order (``kcodec.protocol.wire_table`` builds its entries from them)
RUNTIME_COLUMNS = (
    "name", "snippet", "json", "construct", "fmt", "size", "bounds", "length_fmt", "max_length",
    "compact_limit",
)


def runtime_copy() -> str:
    """Source of ``kcodec/_generated/wire_types.py``: the facts the runtime reads, as plain data."""
    rows = (tuple(getattr(t, c) for c in RUNTIME_COLUMNS) for t in WIRE_TYPES.values())
    lines = [
        "# Generated by kcodec's codegen from kcodec/codegen/wire_types.py; do not edit.",
        '"""Kafka\'s primitive wire types as plain data, for the runtime\'s table '
        '(kcodec.protocol.wire_table)."""',
        "",
        "from __future__ import annotations",
        "",
        "#: the columns of each row",
        f"COLUMNS: tuple[str, ...] = {RUNTIME_COLUMNS!r}",
        "#: one row per primitive type, in the generator's order",
        "ROWS: tuple[tuple[object, ...], ...] = (",
        *(f"    {row!r}," for row in rows),
        ")",
        "",
    ]
    return "\n".join(lines)
