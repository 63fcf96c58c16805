"""Base classes of the generated message and struct classes, and the ``Uuid`` value type."""

from __future__ import annotations

import base64
from typing import Any, ClassVar


class _Missing:
    """Sentinel for "argument not given" in generated constructors (None is a real value)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Uuid(bytes):
    """A Kafka UUID: 16 bytes, shown as Kafka's 22-character URL-safe base64 (``Uuid.toString()``)."""

    __slots__ = ()
    ZERO: ClassVar[Uuid]

    def __new__(cls, value: bytes | bytearray | memoryview | str = bytes(16)) -> Uuid:
        if isinstance(value, str):
            raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        else:
            raw = bytes(value)
        if len(raw) != 16:
            raise ValueError(f"a Kafka UUID has 16 bytes, not {len(raw)}")
        return super().__new__(cls, raw)

    def __str__(self) -> str:
        return base64.urlsafe_b64encode(self).rstrip(b"=").decode("ascii")

    def __repr__(self) -> str:
        return f"Uuid({str(self)!r})"


Uuid.ZERO = Uuid()


def _short_repr(value: Any) -> str:
    if isinstance(value, memoryview):
        value = bytes(value)
    if isinstance(value, bytes | bytearray) and not isinstance(value, Uuid) and len(value) > 32:
        return f"<{len(value)} bytes>"
    return repr(value)


class Struct:
    """A generated struct class: ``__slots__``, keyword constructor, equality and a readable repr.

    ``_unknown_tagged_fields`` holds ``(tag, bytes)`` pairs of tagged fields this version of kcodec
    does not know; they are kept on decode and written back on encode, merged in tag order.
    """

    __slots__ = ("_unknown_tagged_fields",)
    _fields_: ClassVar[tuple[str, ...]] = ()
    _unknown_tagged_fields: list[tuple[int, bytes]] | None

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        for name in self._fields_:
            if getattr(self, name) != getattr(other, name):
                return False
        theirs = other._unknown_tagged_fields
        return (self._unknown_tagged_fields or None) == (theirs or None)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        parts = [f"{name}={_short_repr(getattr(self, name))}" for name in self._fields_]
        if self._unknown_tagged_fields:
            parts.append(f"unknown_tagged_fields={self._unknown_tagged_fields!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    @property
    def unknown_tagged_fields(self) -> list[tuple[int, bytes]]:
        """Tagged fields kcodec does not know, as ``(tag, raw bytes)``; editable."""
        if self._unknown_tagged_fields is None:
            self._unknown_tagged_fields = []
        return self._unknown_tagged_fields


class Message(Struct):
    """A generated top-level message class (request, response, header or data)."""

    __slots__ = ()
    MESSAGE_NAME: ClassVar[str] = ""
    MESSAGE_KIND: ClassVar[str] = ""
    API_KEY: ClassVar[int | None] = None
