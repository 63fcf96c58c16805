"""A whole message spec (request, response, header or data), validated like Kafka's generator does."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kcodec.codegen.spec.errors import SpecError
from kcodec.codegen.spec.fields import FieldSpec, about_text
from kcodec.codegen.spec.structs import StructRegistry, StructSpec
from kcodec.codegen.spec.versions import Versions

_MESSAGE_KEYS = frozenset(
    {"apiKey", "type", "name", "validVersions", "deprecatedVersions", "flexibleVersions", "listeners",
     "latestVersionUnstable", "about", "fields", "commonStructs"}
)
_KINDS = ("request", "response", "header", "data")


@dataclass(slots=True)
class MessageSpec:
    """One validated message spec with its struct registry."""

    name: str
    kind: str
    api_key: int | None
    valid_versions: Versions
    deprecated_versions: Versions
    flexible_versions: Versions
    listeners: tuple[str, ...]
    latest_version_unstable: bool
    root: StructSpec
    structs: StructRegistry = field(repr=False)
    source: str = ""

    @staticmethod
    def from_json(obj: Any, where: str) -> MessageSpec:
        """Validate a spec object (as written by tools/import_specs.py)."""
        if not isinstance(obj, dict):
            raise SpecError(where, "a spec must be a JSON object")
        unknown = set(obj) - _MESSAGE_KEYS
        if unknown:
            raise SpecError(where, f"unknown message keys {sorted(unknown)}")
        name = obj.get("name")
        if not isinstance(name, str) or not name.isidentifier() or not name[0].isupper():
            raise SpecError(where, f"message name {name!r} must be a capitalised identifier")
        kind = obj.get("type")
        if kind not in _KINDS:
            raise SpecError(where, f"type {kind!r} must be one of {', '.join(_KINDS)}")
        api_key = obj.get("apiKey")
        if kind in ("request", "response"):
            if not isinstance(api_key, int) or isinstance(api_key, bool) or not 0 <= api_key <= 0x7FFF:
                raise SpecError(where, f"{kind} specs need an int16 apiKey, not {api_key!r}")
        elif api_key is not None and not isinstance(api_key, int):
            raise SpecError(where, f"apiKey {api_key!r} must be an integer")

        def versions(key: str, default: str | None) -> Versions:
            raw = obj.get(key, default)
            if raw is None:
                raise SpecError(where, f"missing {key}")
            try:
                return Versions.parse(raw, what=key)
            except ValueError as e:
                raise SpecError(where, str(e)) from None

        valid = versions("validVersions", None)
        if valid.empty and obj.get("fields"):
            raise SpecError(where, "a spec with validVersions 'none' (a removed message) has no fields")
        flexible = versions("flexibleVersions", "none")
        if not flexible.empty and not flexible.open_ended:
            raise SpecError(where, f"flexibleVersions {flexible} must be open-ended ('N+') or 'none'")
        deprecated = versions("deprecatedVersions", "none")
        if deprecated not in valid:
            raise SpecError(where, f"deprecatedVersions {deprecated} are outside validVersions {valid}")
        listeners = obj.get("listeners", [])
        if not isinstance(listeners, list) or not all(isinstance(x, str) for x in listeners):
            raise SpecError(where, "listeners must be a list of strings")
        raw_fields = obj.get("fields", [] if valid.empty else None)
        if not isinstance(raw_fields, list):
            raise SpecError(where, "missing 'fields' list")
        fields = tuple(FieldSpec.from_json(f, f"{where}: {name}") for f in raw_fields)
        registry = StructRegistry(name)
        for cs in obj.get("commonStructs", []) or []:
            if not isinstance(cs, dict) or not isinstance(cs.get("name"), str):
                raise SpecError(where, "each commonStruct needs a name")
            cs_where = f"{where}: commonStructs.{cs['name']}"
            cs_fields = tuple(FieldSpec.from_json(f, cs_where) for f in cs.get("fields", []))
            cs_versions = Versions.parse(cs["versions"]) if "versions" in cs else Versions.ALL
            cs_struct = StructSpec(cs["name"], cs_fields, cs_versions, about_text(cs, cs_where))
            registry.add(cs_struct, cs_where, common=True)
        root = StructSpec(name, fields, valid, about_text(obj, where))
        msg = MessageSpec(
            name=name, kind=kind, api_key=api_key, valid_versions=valid, deprecated_versions=deprecated,
            flexible_versions=flexible, listeners=tuple(listeners),
            latest_version_unstable=bool(obj.get("latestVersionUnstable", False)), root=root,
            structs=registry,
        )
        msg._register_inline(root, f"{where}: {name}")
        msg._check(root, f"{where}: {name}", set())
        return msg

    def _register_inline(self, struct: StructSpec, where: str) -> None:
        for f in struct.fields:
            if f.fields is not None and f.type.struct_name is not None:
                here = f"{where}.{f.name}"
                child = StructSpec(f.type.struct_name, f.fields, f.versions)
                self.structs.add(child, here)
                self._register_inline(child, here)

    def _check(self, struct: StructSpec, where: str, seen: set[str]) -> None:
        struct.check(where, self.flexible_versions)
        for f in struct.fields:
            name = f.type.struct_name
            if name is None:
                continue
            here = f"{where}.{f.name}"
            child = self.structs.get(name, here)
            if f.fields is None and not self.structs.is_common(name):
                raise SpecError(here, f"type {name!r} refers to an inline struct defined by another field")
            if name in seen:
                raise SpecError(here, f"struct {name!r} contains itself")
            self._check(child, f"{where}.{f.name}", seen | {name})

    def struct_of(self, f: FieldSpec) -> StructSpec:
        """The struct a struct-typed or struct-array field holds."""
        assert f.type.struct_name is not None
        return self.structs.get(f.type.struct_name, f"{self.name}.{f.name}")

    def all_structs(self) -> Iterator[StructSpec]:
        yield self.root
        yield from self.structs

    @property
    def removed(self) -> bool:
        """A release that removed the message keeps its spec with ``validVersions`` ``none``."""
        return self.valid_versions.empty

    @property
    def about(self) -> str | None:
        """The spec's description of the message (Kafka's specs have none at this level today)."""
        return self.root.about

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible_versions
