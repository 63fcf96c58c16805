"""Structs: the message body itself, inline struct fields and ``commonStructs``; and their registry."""

from __future__ import annotations

import keyword
from collections.abc import Iterator
from dataclasses import dataclass

from kcodec.codegen.spec.errors import SpecError
from kcodec.codegen.spec.fields import FieldSpec
from kcodec.codegen.spec.versions import Versions


@dataclass(frozen=True, slots=True)
class StructSpec:
    """A named list of fields. ``versions`` is where the struct can appear at all; ``about`` is the
    spec's own description of a common struct or a message (None for inline structs, whose field has it)."""

    name: str
    fields: tuple[FieldSpec, ...]
    versions: Versions
    about: str | None = None

    def check(self, where: str, flexible: Versions) -> None:
        """Kafka's per-struct rules: unique names and tags, tags only in flexible versions."""
        names: set[str] = set()
        attrs: set[str] = set()
        tags: dict[int, str] = {}
        for f in self.fields:
            here = f"{where}.{f.name}"
            if f.name in names:
                raise SpecError(here, f"duplicate field name {f.name!r} in struct {self.name}")
            names.add(f.name)
            if f.snake_name in attrs:
                raise SpecError(here, f"field {f.name!r} maps to the same attribute as another field")
            attrs.add(f.snake_name)
            if f.tag is not None:
                if f.tag in tags:
                    raise SpecError(here, f"duplicate tag {f.tag}: already used by field {tags[f.tag]!r}")
                tags[f.tag] = f.name
                if f.tagged_versions not in flexible:
                    raise SpecError(
                        here,
                        f"taggedVersions {f.tagged_versions} are outside the message's flexibleVersions "
                        f"{flexible}; tagged fields exist only in flexible versions",
                    )


def attr_name(field: FieldSpec) -> str:
    """The Python attribute for a field: snake_case, with a trailing ``_`` if it is a keyword."""
    name = field.snake_name
    return name + "_" if keyword.iskeyword(name) or name.startswith("_") else name


class StructRegistry:
    """Every struct of one message by name, inline and common, each defined exactly once."""

    def __init__(self, message: str) -> None:
        self._message = message
        self._structs: dict[str, StructSpec] = {}
        self._common: set[str] = set()

    def add(self, struct: StructSpec, where: str, *, common: bool = False) -> None:
        if struct.name in self._structs:
            raise SpecError(where, f"struct {struct.name!r} is defined more than once in {self._message}")
        if struct.name == self._message:
            raise SpecError(where, f"struct {struct.name!r} has the same name as its message")
        self._structs[struct.name] = struct
        if common:
            self._common.add(struct.name)

    def get(self, name: str, where: str) -> StructSpec:
        try:
            return self._structs[name]
        except KeyError:
            raise SpecError(where, f"unknown type {name!r}: no inline or common struct of that name") from (
                None
            )

    def is_common(self, name: str) -> bool:
        return name in self._common

    def __iter__(self) -> Iterator[StructSpec]:
        return iter(self._structs.values())
