"""The value types generated classes hold besides plain Python values: ``Uuid``, ``LazyArray`` and the
``MISSING`` constructor sentinel. Kept apart from ``kcodec.protocol.model`` (whose base classes the compiled
build compiles) because a ``bytes`` subclass and a generic ``Sequence`` stay ordinary Python classes."""

from __future__ import annotations

import base64
import binascii
import gc
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, TypeVar, overload


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
        from kcodec.protocol.errors import InvalidArgumentError, WrongTypeError

        if isinstance(value, str):
            try:
                raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
            except (binascii.Error, ValueError) as e:
                raise InvalidArgumentError(f"{value!r} is not a Kafka UUID (URL-safe base64): {e}") from None
        elif isinstance(value, bytes | bytearray | memoryview):
            raw = bytes(value)
        else:
            raise WrongTypeError(f"a Kafka UUID is made from bytes or a string, not {type(value).__name__}")
        if len(raw) != 16:
            raise InvalidArgumentError(f"a Kafka UUID has 16 bytes, not {len(raw)}")
        return super().__new__(cls, raw)

    def __str__(self) -> str:
        return base64.urlsafe_b64encode(self).rstrip(b"=").decode("ascii")

    def __repr__(self) -> str:
        return f"Uuid({str(self)!r})"


Uuid.ZERO = Uuid()


T = TypeVar("T")


class LazyArray(Sequence[T]):
    """An array of structs that ``decode(..., lazy=True)`` has checked but not built yet.

    Decoding walks the array's bytes (every length, count and bound is checked, so a malformed
    body still fails at decode time) and keeps where it starts; the elements are built on first
    access (indexing, iteration, equality, ``materialize()``), with the same errors and field paths
    as an eager decode for what only building them can find (e.g. invalid UTF-8). ``len()`` needs no
    building. Until built, it holds on to the input buffer: don't modify that buffer meanwhile.
    It is read-only; ``materialize()`` returns the list itself, to change or to assign back.
    """

    __slots__ = ("_buf", "_count", "_decode", "_items", "_start", "_where")

    def __init__(
        self,
        buf: bytes | bytearray | memoryview,
        start: int,
        count: int,
        decode: Callable[[Any, int, int], tuple[T, int]],
        where: tuple[str, str, int],
    ) -> None:
        self._buf: bytes | bytearray | memoryview | None = buf
        self._start = start
        self._count = count
        self._decode = decode
        #: (message name, array attribute, a version of the message the array is read at): where
        #: building an element that fails is read again to name the field at fault
        self._where = where
        self._items: list[T] | None = None

    def materialize(self) -> list[T]:
        """The elements as a list (built now if they were not yet)."""
        items = self._items
        if items is None:
            buf = self._buf
            assert buf is not None
            items = []
            pos, blen, fn = self._start, len(buf), self._decode
            start = pos
            # as decode() does for large bodies: no collector passes over objects still being built
            paused = self._count >= 64 and gc.isenabled()
            if paused:
                gc.disable()
            try:
                for _ in range(self._count):
                    start = pos
                    x, pos = fn(buf, pos, blen)
                    items.append(x)
            except Exception as e:
                raise self._failure(e, buf, start, len(items)) from None
            finally:
                if paused:
                    gc.enable()
            self._items, self._buf = items, None
        return items

    def _failure(self, e: Exception, buf: Any, start: int, index: int) -> Exception:
        """The error building element ``index`` (at ``start``) raised: read again by the wire walk,
        which names the field (the decoders keep no account of it), under the array's path."""
        from kcodec.protocol.codec import failure, message_info

        message, attr, version = self._where
        info = message_info(message)
        field = next(f for f in info.fields_at(message, version) if f.attr == attr)
        error = failure(e, info, version, buf, start, field.element_type)
        error._segments.append(f"{attr}[{index}]")
        error._segments.append(message)
        return error

    @property
    def is_built(self) -> bool:
        return self._items is not None

    def __len__(self) -> int:
        return self._count if self._items is None else len(self._items)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        return self.materialize()[index]

    def __iter__(self) -> Iterator[T]:
        return iter(self.materialize())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyArray):
            other = other.materialize()
        if isinstance(other, list):
            return self.materialize() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        if self._items is None:
            return f"<LazyArray {self._where[0]}.{self._where[1]}: {self._count} elements, not built yet>"
        return repr(self._items)
