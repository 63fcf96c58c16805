"""Field types of Kafka's spec language: primitives, ``[]T`` arrays and struct names."""

from __future__ import annotations

from dataclasses import dataclass

from kcodec.codegen.wire_types import WIRE_TYPES, WireType

#: every primitive type name, from the one table of wire types.
PRIMITIVES = frozenset(WIRE_TYPES)


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
    def wire(self) -> WireType | None:
        """The wire type of a primitive (not of an array or struct)."""
        return None if self.primitive is None else WIRE_TYPES[self.primitive]

    @property
    def is_fixed_width(self) -> bool:
        return self.wire is not None and self.wire.fixed_width

    @property
    def can_be_nullable(self) -> bool:
        """Kafka allows null for strings, bytes, records, arrays and structs (not ints, bools, uuids)."""
        return self.is_array or self.struct_name is not None or (self.wire is not None and self.wire.nullable)
