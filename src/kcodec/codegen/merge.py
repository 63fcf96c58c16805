"""The merged registry: every version of every message, each taken from the newest spec set defining it.

Spec sets are listed oldest first in ``schemas/sets.json``. For a message, version ``v`` is *owned* by
the newest set whose ``validVersions`` contains ``v``; its plan is built from that set's spec alone.
The Python class of a message or struct is shared by all versions, so it carries the union of the
fields the sets define (looked up by field name, recursively); its defaults and types come from the
newest definition, and conflicting definitions are a ``SpecError``. Its description (``about``) is the
newest set's text, or the newest text of an older set where the newer sets have none (a proposal set
restating Kafka's fields without their texts).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kcodec.codegen.spec.errors import SpecError
from kcodec.codegen.spec.fields import FieldSpec
from kcodec.codegen.spec.messages import MessageSpec
from kcodec.codegen.spec.structs import StructSpec, attr_name
from kcodec.codegen.spec.versions import Versions


@dataclass(slots=True)
class MergedField:
    """One attribute of a generated class, the newest spec field that defines it and the newest
    description of it."""

    attr: str
    spec: FieldSpec
    struct: MergedStruct | None = None
    about: str | None = None


@dataclass(slots=True)
class MergedStruct:
    """One generated class: the union of a struct's fields over every spec set."""

    name: str
    fields: list[MergedField] = field(default_factory=list)
    about: str | None = None

    def get(self, name: str) -> MergedField | None:
        for f in self.fields:
            if f.spec.name == name:
                return f
        return None


@dataclass(slots=True)
class MergedMessage:
    """A message across spec sets: which set owns each version, and the shared classes."""

    name: str
    kind: str
    api_key: int | None
    owners: dict[int, MessageSpec]
    specs: list[MessageSpec]  # newest first
    root: MergedStruct
    classes: dict[str, MergedStruct]

    @property
    def versions(self) -> Versions:
        return Versions(min(self.owners), max(self.owners))

    @property
    def about(self) -> str | None:
        return self.root.about

    @property
    def newest(self) -> MessageSpec:
        return self.specs[0]

    def owner(self, version: int) -> MessageSpec:
        return self.owners[version]


def merge_message(specs_oldest_first: list[MessageSpec]) -> MergedMessage:
    """Merge one message's specs (each tagged with its set in ``MessageSpec.source``)."""
    newest_first = list(reversed(specs_oldest_first))
    first = newest_first[0]
    for s in newest_first[1:]:
        if (s.kind, s.api_key) != (first.kind, first.api_key):
            raise SpecError(
                f"{s.source}/{s.name}.json",
                f"type/apiKey ({s.kind}, {s.api_key}) differ from {first.source} "
                f"({first.kind}, {first.api_key})",
            )
    owners: dict[int, MessageSpec] = {}
    for s in newest_first:
        for v in s.valid_versions:
            owners.setdefault(v, s)
    versions = sorted(owners)
    if versions != list(range(versions[0], versions[-1] + 1)):
        raise SpecError(first.name, f"the spec sets leave a gap in the versions {versions}")
    classes: dict[str, MergedStruct] = {}
    root = MergedStruct(first.name)
    classes[root.name] = root
    for s in newest_first:
        _merge_struct(s, s.root, root, classes, f"{s.source}/{s.name}.json: {s.name}")
    return MergedMessage(first.name, first.kind, first.api_key, owners, newest_first, root, classes)


def _merge_struct(
    spec: MessageSpec, struct: StructSpec, into: MergedStruct, classes: dict[str, MergedStruct], where: str
) -> None:
    if into.about is None:
        into.about = struct.about
    for f in struct.fields:
        here = f"{where}.{f.name}"
        existing = into.get(f.name)
        if existing is None:
            existing = MergedField(attr_name(f), f)
            into.fields.append(existing)
        else:
            _check_compatible(existing.spec, f, here)
        if existing.about is None:
            existing.about = f.about
        if f.type.struct_name is None:
            continue
        if existing.struct is None:
            name = existing.spec.type.struct_name
            assert name is not None
            if name in classes:
                existing.struct = classes[name]
            else:
                existing.struct = classes[name] = MergedStruct(name)
        _merge_struct(spec, spec.struct_of(f), existing.struct, classes, here)


def _check_compatible(newer: FieldSpec, older: FieldSpec, where: str) -> None:
    """A field defined by two sets must mean the same thing in both (type shape and default)."""
    if newer.type.is_array != older.type.is_array or newer.type.primitive != older.type.primitive:
        raise SpecError(where, f"type {older.type.text} conflicts with the newer set's {newer.type.text}")
    if newer.type.primitive is not None and newer.default_value() != older.default_value():
        raise SpecError(
            where, f"default {older.default_text!r} conflicts with the newer set's {newer.default_text!r}"
        )
