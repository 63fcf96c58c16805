"""One field of a message or struct, as the spec states it, checked on construction."""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass
from typing import Any

from kcodec.codegen.spec.errors import SpecError
from kcodec.codegen.spec.types import FieldType
from kcodec.codegen.spec.versions import Versions

_FIELD_KEYS = frozenset(
    {"name", "type", "versions", "nullableVersions", "tag", "taggedVersions", "default", "ignorable",
     "mapKey", "entityType", "flexibleVersions", "zeroCopy", "fields", "about"}
)


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """A validated field. ``fields`` holds the inline struct definition, if the field has one;
    ``about`` is the spec's description of the field, exactly as the spec writes it (None: none)."""

    name: str
    type: FieldType
    versions: Versions
    nullable_versions: Versions
    tag: int | None
    tagged_versions: Versions
    default_text: str | None
    ignorable: bool
    map_key: bool
    entity_type: str | None
    flexible_versions: Versions | None
    zero_copy: bool
    fields: tuple[FieldSpec, ...] | None
    about: str | None = None

    @staticmethod
    def from_json(obj: Any, where: str) -> FieldSpec:
        """Build a field from its spec object; ``where`` names the file and parent path for errors."""
        if not isinstance(obj, dict):
            raise SpecError(where, f"a field must be a JSON object, not {type(obj).__name__}")
        name = obj.get("name")
        if not isinstance(name, str) or not name.isidentifier():
            raise SpecError(where, f"field name {name!r} must be an identifier")
        here = f"{where}.{name}" if where else name
        unknown = set(obj) - _FIELD_KEYS
        if unknown:
            raise SpecError(here, f"unknown field keys {sorted(unknown)}")

        def versions(key: str, default: str | None) -> Versions:
            raw = obj.get(key, default)
            if raw is None:
                return Versions.NONE
            try:
                return Versions.parse(raw, what=key)
            except ValueError as e:
                raise SpecError(here, str(e)) from None

        try:
            ftype = FieldType.parse(obj.get("type"))  # type: ignore[arg-type]
        except ValueError as e:
            raise SpecError(here, str(e)) from None
        tagged = versions("taggedVersions", None)
        if "versions" not in obj and "taggedVersions" not in obj:
            raise SpecError(here, "field has no 'versions' (and no 'taggedVersions' to fall back to)")
        vers = versions("versions", obj.get("taggedVersions"))
        nullable = versions("nullableVersions", None)
        flexible = versions("flexibleVersions", None) if "flexibleVersions" in obj else None
        tag = obj.get("tag")
        if isinstance(tag, str):
            if not tag.strip().isdigit():
                raise SpecError(here, f"tag {tag!r} is not a non-negative integer")
            tag = int(tag)
        if tag is not None and (not isinstance(tag, int) or isinstance(tag, bool) or tag < 0):
            raise SpecError(here, f"tag {tag!r} is not a non-negative integer")
        if tag is not None and tagged.empty:
            raise SpecError(here, f"field has tag {tag} but no taggedVersions")
        if tag is None and not tagged.empty:
            raise SpecError(here, f"field has taggedVersions {tagged} but no tag")
        if not tagged.empty and not tagged.open_ended:
            raise SpecError(here, f"taggedVersions {tagged} must be open-ended ('N+'), as Kafka requires")
        if tagged not in vers:
            raise SpecError(here, f"taggedVersions {tagged} are not a subset of the field's versions {vers}")
        if not nullable.empty and not ftype.can_be_nullable:
            raise SpecError(here, f"nullableVersions {nullable} given, but a {ftype.text} cannot be null")
        if flexible is not None and ftype.primitive not in ("string", "bytes"):
            raise SpecError(here, "a per-field flexibleVersions override is only allowed on string and bytes")
        zero_copy = bool(obj.get("zeroCopy", False))
        if zero_copy and ftype.primitive != "bytes":
            raise SpecError(here, "zeroCopy is only allowed on bytes fields")
        for flag in ("ignorable", "mapKey", "zeroCopy"):
            if flag in obj and not isinstance(obj[flag], bool):
                raise SpecError(here, f"{flag} must be true or false, not {obj[flag]!r}")
        entity = obj.get("entityType")
        if entity is not None and not isinstance(entity, str):
            raise SpecError(here, f"entityType must be a string, not {entity!r}")
        about = about_text(obj, here)
        default = obj.get("default")
        if default is not None and not isinstance(default, str):
            # Specs write defaults as strings, but tolerate JSON numbers/bools the way Kafka's Jackson does.
            default = str(default).lower() if isinstance(default, bool) else str(default)

        children: tuple[FieldSpec, ...] | None = None
        if "fields" in obj:
            if ftype.struct_name is None:
                raise SpecError(here, f"inline 'fields' given, but type {ftype.text} is not a struct type")
            raw_children = obj["fields"]
            if not isinstance(raw_children, list):
                raise SpecError(here, "'fields' must be a list")
            children = tuple(FieldSpec.from_json(c, here) for c in raw_children)
        spec = FieldSpec(
            name=name, type=ftype, versions=vers, nullable_versions=nullable, tag=tag,
            tagged_versions=tagged, default_text=default, ignorable=bool(obj.get("ignorable", False)),
            map_key=bool(obj.get("mapKey", False)), entity_type=entity, flexible_versions=flexible,
            zero_copy=zero_copy, fields=children, about=about,
        )
        spec.default_value(here)  # validates the default against the type
        return spec

    @property
    def tagged(self) -> bool:
        return self.tag is not None

    @property
    def snake_name(self) -> str:
        return to_snake(self.name)

    @property
    def json_name(self) -> str:
        """Kafka's ``FieldSpec.camelCaseName()``: the name with its first letter lower-cased."""
        return self.name[0].lower() + self.name[1:]

    def default_value(self, where: str = "") -> Any:
        """The default as a Python value (None = null; ``[]`` for arrays; ``STRUCT`` for a default struct).

        Raises ``SpecError`` when the default does not fit the type, as Kafka's generator does.
        """
        here = where or self.name
        text = self.default_text
        t = self.type
        if text == "null":
            if not t.can_be_nullable:
                raise SpecError(here, f"null cannot be the default of a {t.text} field")
            if self.nullable_versions.empty or self.versions not in self.nullable_versions:
                raise SpecError(
                    here,
                    f"null cannot be the default for field {self.name}, because not all versions of "
                    f"this field ({self.versions}) are nullable (nullableVersions {self.nullable_versions})",
                )
            return None
        if t.is_array:
            if text not in (None, ""):
                raise SpecError(here, f"invalid default {text!r} for array field: only '' or 'null' allowed")
            return []
        if t.is_struct:
            if text not in (None, ""):
                raise SpecError(here, f"invalid default {text!r} for struct field: only 'null' allowed")
            return STRUCT
        wire = t.wire
        assert wire is not None
        return _parse_default(wire.name, wire.json, wire.bounds, text, here)


def about_text(obj: dict[str, Any], where: str) -> str | None:
    """The ``about`` of a spec object (a message, struct or field), None if it has none."""
    about = obj.get("about")
    if about is not None and not isinstance(about, str):
        raise SpecError(where, f"about must be a string, not {about!r}")
    return about


def _parse_default(
    p: str, representation: str, bounds: tuple[int, int] | None, text: str | None, here: str
) -> Any:
    """A primitive's default from its spec text, by how the type is represented (the wire-type table)."""
    if representation == "int":
        assert bounds is not None
        if text in (None, ""):
            return 0
        try:
            value = int(text, 16) if text.lower().startswith(("0x", "-0x")) else int(text, 10)
        except ValueError:
            raise SpecError(here, f"invalid default {text!r} for {p} field") from None
        lo, hi = bounds
        if not lo <= value <= hi:
            raise SpecError(here, f"default {text!r} is out of range for {p} ({lo}..{hi})")
        return value
    if representation == "bool":
        if text in (None, ""):
            return False
        if text not in ("true", "false"):
            raise SpecError(here, f"invalid default {text!r} for bool field: use 'true' or 'false'")
        return text == "true"
    if representation == "float":
        if text in (None, ""):
            return 0.0
        try:
            value_f = float(text)
        except ValueError:
            raise SpecError(here, f"invalid default {text!r} for float64 field") from None
        if not math.isfinite(value_f):
            raise SpecError(here, f"default {text!r} for float64 field is not finite")
        return value_f
    if representation == "uuid":
        if text in (None, ""):
            return bytes(16)
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except (binascii.Error, ValueError):
            raise SpecError(here, f"invalid default {text!r} for uuid field: not base64") from None
        if len(raw) != 16:
            raise SpecError(here, f"invalid default {text!r} for uuid field: not 16 bytes")
        return raw
    if representation == "string":
        return text or ""
    # bytes / records
    if text not in (None, ""):
        raise SpecError(here, f"invalid default {text!r} for {p} field: only '' or 'null' allowed")
    return b""


class _StructDefault:
    """Marker: the default of a struct field is a default-constructed struct."""

    def __repr__(self) -> str:
        return "STRUCT"


STRUCT: Any = _StructDefault()


def to_snake(name: str) -> str:
    """``CurrentLeaderEpoch`` -> ``current_leader_epoch``; ``ISRVersion`` -> ``isr_version``."""
    out: list[str] = []
    for i, ch in enumerate(name):
        if ch.isupper():
            prev_lower = i > 0 and (name[i - 1].islower() or name[i - 1].isdigit())
            next_lower = i + 1 < len(name) and name[i + 1].islower()
            if i > 0 and (prev_lower or (next_lower and name[i - 1].isupper())):
                out.append("_")
            out.append(ch.lower())
        else:
            out.append(ch)
    return "".join(out)
