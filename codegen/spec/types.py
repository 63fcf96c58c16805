"""Field types of Kafka's spec language: primitives, ``[]T`` arrays and struct names."""

from __future__ import annotations

from dataclasses import dataclass

#: struct-module format code and byte width of every fixed-width primitive.
FIXED_WIDTH: dict[str, tuple[str, int]] = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
    "uuid": ("16s", 16),
}
#: primitives with a length prefix.
VARIABLE = ("string", "bytes", "records")
PRIMITIVES = frozenset(FIXED_WIDTH) | frozenset(VARIABLE)
#: integer bounds, used for default validation and by the runtime's range checks.
INT_BOUNDS: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


@dataclass(frozen=True, slots=True)
class FieldType:
    """A parsed type string. ``element`` is set for arrays; ``struct_name`` for struct-valued types."""

    text: str
    is_array: bool
    element: FieldType | None
    primitive: str | None
    struct_name: str | None

    @staticmethod
    def parse(text: str) -> FieldType:
        """Parse ``text``; raise ``ValueError`` for a type Kafka's generator would not know."""
        if not isinstance(text, str) or not text:
            raise ValueError(f"type must be a non-empty string, not {text!r}")
        if text.startswith("[]"):
            inner = FieldType.parse(text[2:])
            if inner.is_array:
                raise ValueError(f"type {text!r}: arrays of arrays are not supported")
            if inner.primitive == "records":
                raise ValueError(f"type {text!r}: arrays of records are not supported")
            return FieldType(text, True, inner, None, inner.struct_name)
        if text in PRIMITIVES:
            return FieldType(text, False, None, text, None)
        if text[0].isupper() and text.isidentifier():
            return FieldType(text, False, None, None, text)
        raise ValueError(f"unknown type {text!r}")

    @property
    def is_struct(self) -> bool:
        """True for a single struct value (not an array of structs)."""
        return not self.is_array and self.struct_name is not None

    @property
    def is_fixed_width(self) -> bool:
        return self.primitive in FIXED_WIDTH

    @property
    def can_be_nullable(self) -> bool:
        """Kafka allows null for strings, bytes, records, arrays and structs (not ints, bools, uuids)."""
        return self.is_array or self.struct_name is not None or self.primitive in VARIABLE
