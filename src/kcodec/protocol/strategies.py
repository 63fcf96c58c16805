"""Hypothesis strategies for kcodec messages: valid message objects of any message at any version.

The strategies are driven by each message's runtime description (``kcodec.protocol.schema.MessageInfo``):

- only the fields present at the version get random values; fields the version does not have keep
  their class defaults, so the message can always be encoded at that version;
- ``None`` is drawn only for fields nullable at the version;
- tagged fields are sometimes left at their default (and so not written) and sometimes set;
- each primitive's values come from its entry in the runtime's wire-type table
  (``kcodec.protocol.wire_table``), by its JSON kind: strings are unicode including astral characters (never
  lone surrogates), at most the table's maximum length in UTF-8 bytes (Kafka's 32767 for every
  string); integers cover the type's bounds; floats are finite (including ``-0.0``); uuids are
  ``kcodec.protocol.model.Uuid``; bytes and ``records`` are arbitrary bytes;
- flexible structs sometimes carry ``unknown_tagged_fields`` whose tags no tagged field of the struct
  uses at any version, in ascending tag order (the order the wire format requires). Kafka's generated
  readers refuse a tag that the struct defines for other versions ("Tag 1 is not valid for version
  12"), so such a tag is never drawn as an unknown one.

Hypothesis is an optional dependency (the ``test`` extra): it is imported here only, and
``import kcodec`` does not import this module.

>>> from hypothesis import given
>>> from kcodec import strategies
>>> @given(strategies.messages("FetchRequest", 13))
... def test_round_trip(msg): ...
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from hypothesis import strategies as st

from kcodec.protocol.codec import message_info, message_names
from kcodec.protocol.errors import InvalidArgumentError
from kcodec.protocol.model import Message, Uuid
from kcodec.protocol.schema import INT_BOUNDS, FieldInfo, MessageInfo
from kcodec.protocol.wire_table import WIRE_TYPES, WireType, wire_type

__all__ = [
    "DEFAULT_MAX_ARRAY_SIZE",
    "DEFAULT_MAX_BYTES_SIZE",
    "DEFAULT_MAX_STRING_SIZE",
    "DEFAULT_MAX_UNKNOWN_TAGGED_FIELDS",
    "INT_BOUNDS",
    "MAX_STRING_BYTES",
    "message_and_version",
    "messages",
    "pairs",
    "versions",
]

DEFAULT_MAX_ARRAY_SIZE = 3
DEFAULT_MAX_STRING_SIZE = 8  # characters
DEFAULT_MAX_BYTES_SIZE = 16
DEFAULT_MAX_UNKNOWN_TAGGED_FIELDS = 2

MAX_STRING_BYTES = WIRE_TYPES["string"].max_length  # Kafka refuses to serialize longer strings
MAX_TAG = 2**31 - 1  # Kafka reads tags into a Java int

def versions(message_name: str) -> list[int]:
    """Every version kcodec has a codec for, ascending."""
    return sorted(message_info(message_name).owners)


def pairs(names: Sequence[str] | None = None) -> list[tuple[str, int]]:
    """Every ``(message name, version)`` pair of ``names`` (default: every message kcodec knows)."""
    return [(name, v) for name in (message_names() if names is None else names) for v in versions(name)]


def messages(
    message_name: str,
    version: int,
    *,
    max_array_size: int = DEFAULT_MAX_ARRAY_SIZE,
    max_string_size: int = DEFAULT_MAX_STRING_SIZE,
    max_bytes_size: int = DEFAULT_MAX_BYTES_SIZE,
    unknown_tagged_fields: bool = True,
) -> st.SearchStrategy[Message]:
    """Valid ``message_name`` objects for ``version``: ``kcodec.encode(msg, version)`` accepts them.

    ``max_string_size`` is in characters (strings are also cut to 32767 UTF-8 bytes);
    ``unknown_tagged_fields=False`` never sets unknown tagged fields (e.g. for peers that drop them).
    """
    info = message_info(message_name)
    if version not in info.owners:
        from kcodec.protocol.errors import UnsupportedVersionError

        raise UnsupportedVersionError(f"{message_name} has no version {version!r}")
    limits = _Limits(max_array_size, max_string_size, max_bytes_size, unknown_tagged_fields)
    return _struct_strategy(message_name, info.name, version, limits)


def message_and_version(
    names: Sequence[str] | None = None, **kwargs: Any
) -> st.SearchStrategy[tuple[Message, int]]:
    """``(message, version)`` for any message of ``names`` (default: all) at any of its versions.

    Keyword arguments are passed to ``messages``.
    """
    choices = pairs(names)
    if not choices:
        raise InvalidArgumentError("no messages to choose from")

    def build(pair: tuple[str, int]) -> st.SearchStrategy[tuple[Message, int]]:
        name, version = pair
        return messages(name, version, **kwargs).map(lambda m: (m, version))

    return st.sampled_from(choices).flatmap(build)


# --- building blocks ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Limits:
    """Size limits (hashable: part of the strategy cache key)."""

    arrays: int
    strings: int
    blobs: int
    unknown: bool

    def __post_init__(self) -> None:
        if min(self.arrays, self.strings, self.blobs) < 0:
            raise InvalidArgumentError("size limits must not be negative")


def _fit_utf8(s: str, limit: int) -> str:
    """Cut ``s`` to at most ``limit`` UTF-8 bytes, on a character boundary."""
    b = s.encode("utf-8")
    if len(b) <= limit:
        return s
    return b[:limit].decode("utf-8", errors="ignore")


@cache
def _text(t: WireType, max_size: int) -> st.SearchStrategy[str]:
    # codec="utf-8" excludes lone surrogates; the second branch makes astral characters common.
    alphabet = st.one_of(
        st.characters(codec="utf-8"),
        st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF, codec="utf-8"),
    )
    text = st.text(alphabet, max_size=max_size)
    limit = t.max_length
    return text.map(lambda s: _fit_utf8(s, limit)) if max_size * 4 > limit else text


@cache
def _integers(t: WireType) -> st.SearchStrategy[int]:
    assert t.bounds is not None
    lo, hi = t.bounds
    edges = sorted({v for v in (lo, hi, 0, -1, 1, lo + 1, hi - 1) if lo <= v <= hi})
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi))


_UUIDS: st.SearchStrategy[Uuid] = st.one_of(
    st.just(Uuid.ZERO), st.binary(min_size=16, max_size=16).map(Uuid)
)
_FLOATS: st.SearchStrategy[float] = st.one_of(
    st.sampled_from([0.0, -0.0]), st.floats(allow_nan=False, allow_infinity=False)
)

#: the strategy of each JSON kind of the wire-type table, from the type's entry and the size limits
_BY_KIND: dict[str, Callable[[WireType, _Limits], st.SearchStrategy[Any]]] = {
    "int": lambda t, limits: _integers(t),
    "bool": lambda t, limits: st.booleans(),
    "float": lambda t, limits: _FLOATS,
    "string": lambda t, limits: _text(t, limits.strings),
    "uuid": lambda t, limits: _UUIDS,
    "base64": lambda t, limits: st.binary(max_size=min(limits.blobs, t.max_length)),
}


def _primitive(type_name: str, limits: _Limits) -> st.SearchStrategy[Any]:
    t = wire_type(type_name)
    if t is None:
        raise InvalidArgumentError(f"no strategy for field type {type_name!r}")
    return _BY_KIND[t.json](t, limits)


def _field_strategy(
    message: str, info: MessageInfo, f: FieldInfo, version: int, limits: _Limits
) -> st.SearchStrategy[Any]:
    struct = f.struct_name
    element: st.SearchStrategy[Any]
    if struct is not None:
        element = _struct_strategy(message, struct, version, limits)
    else:
        element = _primitive(f.element_type, limits)
    value = st.lists(element, max_size=limits.arrays) if f.is_array else element
    if f.is_nullable(version):
        value = st.one_of(st.none(), value)
    return value


def _unknown_tags(known: frozenset[int], limits: _Limits) -> st.SearchStrategy[list[tuple[int, bytes]]]:
    tag = st.one_of(st.integers(0, 15), st.integers(0, MAX_TAG)).filter(lambda t: t not in known)
    field = st.tuples(tag, st.binary(max_size=limits.blobs))
    return st.lists(
        field, min_size=1, max_size=DEFAULT_MAX_UNKNOWN_TAGGED_FIELDS, unique_by=lambda t: t[0]
    ).map(lambda fields: sorted(fields, key=lambda t: t[0]))


def _reserved_tags(info: MessageInfo, struct: str) -> frozenset[int]:
    """The tags of every tagged field ``struct`` has, at any version, in any spec set."""
    return frozenset(
        f.tag for fields in info.structs[struct].by_set.values() for f in fields if f.tag is not None
    )


_building: set[tuple[str, str, int, _Limits]] = set()


@cache
def _struct_strategy(message: str, struct: str, version: int, limits: _Limits) -> st.SearchStrategy[Any]:
    """Instances of ``struct`` (a struct of ``message``, or the message itself) at ``version``."""
    key = (message, struct, version, limits)
    if key in _building:  # a recursive struct (none in Kafka's specs so far): resolve lazily
        return st.deferred(lambda: _struct_strategy(message, struct, version, limits))
    _building.add(key)
    try:
        info = message_info(message)
        cls: Callable[..., Any] = info.structs[struct].cls
        required: dict[str, st.SearchStrategy[Any]] = {}
        optional: dict[str, st.SearchStrategy[Any]] = {}
        for f in info.fields_at(struct, version):
            strategy = _field_strategy(message, info, f, version, limits)
            if f.is_tagged(version) and info.is_flexible(version):
                # Left out of the kwargs: the class default, which is not written on the wire.
                optional[f.attr] = strategy
            else:
                required[f.attr] = strategy
        if limits.unknown and info.is_flexible(version):
            optional["unknown_tagged_fields"] = _unknown_tags(_reserved_tags(info, struct), limits)
        kwargs = st.fixed_dictionaries(required, optional=optional)
        return kwargs.map(lambda kw: cls(**kw))
    finally:
        _building.discard(key)
