"""Runtime descriptions of every message and struct field, emitted by the generator as plain data.

They drive JSON conversion, ``kcodec describe``, field requirements and the hypothesis strategies.
The wire codecs themselves do not consult them (they are straight-line generated code).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kcodec.protocol.wire_table import INT_BOUNDS, JSON_KINDS

MAX_VERSION = 0x7FFF
# INT_BOUNDS (inclusive bounds of Kafka's integer types) and JSON_KINDS (how each primitive looks in
# JSON) are views of the runtime's table of primitive types (kcodec.protocol.wire_table), built from the
# generator's one table of wire types (kcodec.codegen.wire_types).
__all__ = [
    "INT_BOUNDS",
    "JSON_KINDS",
    "MAX_VERSION",
    "STRUCT_DEFAULT",
    "FieldInfo",
    "MessageInfo",
    "StructInfo",
    "VersionRange",
    "in_range",
    "range_text",
]
VersionRange = tuple[int, int]  # inclusive; (1, 0) is empty


def in_range(r: VersionRange | None, version: int) -> bool:
    return r is not None and r[0] <= version <= r[1]


def range_text(r: VersionRange | None) -> str:
    if r is None or r[1] < r[0]:
        return "none"
    if r[1] >= MAX_VERSION:
        return f"{r[0]}+"
    return str(r[0]) if r[0] == r[1] else f"{r[0]}-{r[1]}"


@dataclass(frozen=True, slots=True)
class FieldInfo:
    """One field as a spec set defines it (names, type, version ranges, default, description)."""

    name: str  # spec name, e.g. CurrentLeaderEpoch
    attr: str  # Python attribute, e.g. current_leader_epoch
    type: str  # spec type text, e.g. int32, []FetchTopic, records
    versions: VersionRange
    nullable: VersionRange | None = None
    tagged: VersionRange | None = None
    tag: int | None = None
    #: the field's own ``flexibleVersions`` (the versions where its length is compact), which then
    #: overrides the message's: RequestHeader.ClientId has ``"none"``, the empty range ``(1, 0)``.
    #: None: the field follows the message (``compact``)
    flexible: VersionRange | None = None
    ignorable: bool = False
    map_key: bool = False
    entity_type: str | None = None
    default: Any = None  # Python value; for arrays [], for structs STRUCT_DEFAULT
    default_text: str | None = None
    #: the spec's description of the field, as the newest spec set describing it writes it
    about: str | None = None

    @property
    def json_name(self) -> str:
        return self.name[0].lower() + self.name[1:]

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def struct_name(self) -> str | None:
        t = self.element_type
        return t if t[:1].isupper() else None

    def present(self, version: int) -> bool:
        return in_range(self.versions, version)

    def is_nullable(self, version: int) -> bool:
        return in_range(self.nullable, version)

    def is_tagged(self, version: int) -> bool:
        return in_range(self.tagged, version)

    def compact(self, version: int, message_flexible: bool) -> bool:
        """Whether the field's length or count is written compact (an unsigned varint) at ``version``:
        per its own flexible versions if it has them, else as the message (``message_flexible``)."""
        return message_flexible if self.flexible is None else in_range(self.flexible, version)


class _StructDefault:
    def __repr__(self) -> str:
        return "STRUCT_DEFAULT"


STRUCT_DEFAULT: Any = _StructDefault()


@dataclass(slots=True)
class StructInfo:
    """A struct's fields as each spec set defines them (``by_set[set_name]``), in wire order."""

    name: str
    cls: type
    by_set: dict[str, tuple[FieldInfo, ...]]
    #: the versions at which an array of the struct has each element written in place by the
    #: array's encoder (not by a call of the element's): on an error, the element's encoder runs again
    #: on a new buffer to name the field (``kcodec.protocol.encode_check``)
    in_place: tuple[VersionRange, ...] = ()

    def written_in_place(self, version: int) -> bool:
        return any(lo <= version <= hi for lo, hi in self.in_place)


@dataclass(slots=True)
class MessageInfo:
    """A message across spec sets: the set owning each version, its structs and flexible versions."""

    name: str
    kind: str
    api_key: int | None
    versions: VersionRange
    owners: dict[int, str]  # version -> spec set name
    flexible: dict[str, VersionRange | None]  # per spec set
    structs: dict[str, StructInfo]
    sources: dict[str, str] = field(default_factory=dict)  # spec set -> schema file
    _views: dict[tuple[str, int], tuple[FieldInfo, ...]] = field(default_factory=dict, repr=False)

    @property
    def cls(self) -> type:
        return self.structs[self.name].cls

    def is_flexible(self, version: int) -> bool:
        return in_range(self.flexible[self.owners[version]], version)

    def fields_at(self, struct: str, version: int) -> tuple[FieldInfo, ...]:
        """The fields of ``struct`` that exist at ``version``, in wire order (tagged ones included)."""
        key = (struct, version)
        view = self._views.get(key)
        if view is None:
            info = self.structs[struct]
            owner = self.owners[version]
            view = tuple(f for f in info.by_set.get(owner, ()) if f.present(version))
            self._views[key] = view
        return view

    def all_fields(self, struct: str) -> tuple[FieldInfo, ...]:
        """Every field of the class, newest definition first (what the class's attributes are)."""
        seen: dict[str, FieldInfo] = {}
        info = self.structs[struct]
        for set_name in reversed(list(info.by_set)):
            for f in info.by_set[set_name]:
                seen.setdefault(f.name, f)
        return tuple(seen.values())
