"""Base classes of the generated message and struct classes (``Struct``, ``Message``).

In the compiled build (``KCODEC_COMPILE``) mypyc compiles this module: the base classes become native
classes that the compiled codecs' native classes extend, and that the pure-Python codecs of the other
messages extend as ordinary subclasses (``allow_interpreted_subclasses``). ``Uuid``, ``LazyArray`` and
``MISSING`` live in ``kcodec.protocol.values`` and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from kcodec.protocol.values import MISSING, LazyArray, Uuid

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # the pure build needs no mypy_extensions: the decorator only speaks to mypyc

    _C = TypeVar("_C")

    def mypyc_attr(*attrs: str, **kwattrs: object) -> Callable[[_C], _C]:
        return lambda cls: cls


__all__ = ["MISSING", "LazyArray", "Message", "Struct", "Uuid"]


def _short_repr(value: Any) -> str:
    if isinstance(value, memoryview):
        value = bytes(value)
    if isinstance(value, bytes | bytearray) and not isinstance(value, Uuid) and len(value) > 32:
        return f"<{len(value)} bytes>"
    return repr(value)


@mypyc_attr(allow_interpreted_subclasses=True)
class Struct:
    """A generated struct class: keyword constructor, equality and a readable repr.

    Generated classes declare their attributes themselves (``__slots__`` in the pure build, native
    attributes in the compiled one), ``_unknown_tagged_fields`` included: it holds ``(tag, bytes)``
    pairs of tagged fields this version of kcodec does not know; they are kept on decode and written
    back on encode, merged in tag order. This base holds no attributes, so it can be a native class.
    """

    __slots__ = ()
    _fields_: ClassVar[tuple[str, ...]] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        for name in self._fields_:
            if getattr(self, name) != getattr(other, name):
                return False
        mine, theirs = getattr(self, _UNKNOWN), getattr(other, _UNKNOWN)
        return (mine or None) == (theirs or None)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        parts = [f"{name}={_short_repr(getattr(self, name))}" for name in self._fields_]
        unknown = getattr(self, _UNKNOWN)
        if unknown:
            parts.append(f"unknown_tagged_fields={unknown!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Copy and pickle by field values (the same in the pure and the compiled build)."""
        values = tuple([getattr(self, name) for name in self._fields_])
        return (_rebuild, (type(self), values, getattr(self, _UNKNOWN)))

    @property
    def unknown_tagged_fields(self) -> list[tuple[int, bytes]]:
        """Tagged fields kcodec does not know, as ``(tag, raw bytes)``; editable."""
        unknown: list[tuple[int, bytes]] | None = getattr(self, _UNKNOWN)
        if unknown is None:
            unknown = []
            setattr(self, _UNKNOWN, unknown)
        return unknown


_UNKNOWN = "_unknown_tagged_fields"


def _rebuild(cls: type[Struct], values: tuple[Any, ...], unknown: Any) -> Struct:
    obj = cls.__new__(cls)
    for name, value in zip(cls._fields_, values, strict=True):
        setattr(obj, name, value)
    setattr(obj, _UNKNOWN, unknown)
    return obj


@mypyc_attr(allow_interpreted_subclasses=True)
class Message(Struct):
    """A generated top-level message class (request, response, header or data)."""

    __slots__ = ()
    MESSAGE_NAME: ClassVar[str] = ""
    MESSAGE_KIND: ClassVar[str] = ""
    API_KEY: ClassVar[int | None] = None
