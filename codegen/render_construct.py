"""Render each message's per-version plans as ``construct`` definitions (the second, independent codec).

One module per message, ``kcodec._generated.construct_.<snake_message>``, defines ``SCHEMAS =
{version: <construct>}`` from the same plans (``codegen.plan.plan_message``) as the fast codec. The
modules are declarative: construct primitives plus the Kafka pieces of ``kcodec.construct_backend``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jinja2

from codegen.merge import MergedMessage
from codegen.plan import FieldPlan, RunPlan, StructPlan, ValuePlan, plan_message
from codegen.render import _ranges, _struct_plans, tidy

#: construct primitive of every fixed-width Kafka type.
FIXED: dict[str, str] = {
    "bool": "Flag",
    "int8": "Int8sb",
    "int16": "Int16sb",
    "uint16": "Int16ub",
    "int32": "Int32sb",
    "uint32": "Int32ub",
    "int64": "Int64sb",
    "float64": "Float64b",
    "uuid": "Bytes(16)",
}
UNKNOWN_TAGGED_FIELDS = "unknown_tagged_fields"  # kcodec.construct_backend.UNKNOWN_TAGGED_FIELDS


@dataclass
class ConstructContext:
    """Helpers the construct template calls; records the names each module has to import."""

    names: dict[StructPlan, str]
    construct_names: set[str] = field(default_factory=set)
    backend_names: set[str] = field(default_factory=set)

    def _construct(self, name: str) -> str:
        self.construct_names.add(name.split("(")[0])
        return name

    def _backend(self, *names: str) -> None:
        self.backend_names.update(names)

    def struct_name(self, plan: StructPlan) -> str:
        return self.names[plan]

    def value(self, v: ValuePlan) -> str:
        """A construct expression reading and writing one value laid out as ``v``."""
        if v.kind == "fixed":
            assert v.prim is not None
            return self._construct(FIXED[v.prim])
        prefix = "COMPACT" if v.compact else ("LEN16" if v.kind == "string" else "LEN32")
        nullable = ", nullable=True" if v.nullable else ""
        if v.kind == "string":
            self._backend("KafkaString", prefix)
            return f"KafkaString({prefix}{nullable})"
        if v.kind in ("bytes", "records"):
            self._backend("KafkaBytes", prefix)
            return f"KafkaBytes({prefix}{nullable})"
        if v.kind == "struct":
            assert v.struct is not None
            name = self.names[v.struct]
            if v.nullable:
                self._backend("NullableStruct")
                return f"NullableStruct({name})"
            return name
        if v.kind == "array":
            assert v.element is not None
            self._backend("KafkaArray", prefix)
            return f"KafkaArray({prefix}, {self.value(v.element)}{nullable})"
        raise ValueError(f"unknown value kind {v.kind!r}")

    @staticmethod
    def fields(plan: StructPlan) -> list[FieldPlan]:
        return fields_of(plan)

    @staticmethod
    def default(f: FieldPlan) -> str:
        return default_literal(f)


def fields_of(plan: StructPlan) -> list[FieldPlan]:
    """The untagged fields of a struct plan in wire order (runs of fixed-width fields flattened)."""
    out: list[FieldPlan] = []
    for step in plan.steps:
        if isinstance(step, RunPlan):
            out.extend(step.fields)
        else:
            out.append(step)
    return out


def default_literal(f: FieldPlan) -> str:
    """A tagged field's default as plain data (Container values): structs as dicts, uuids as bytes."""
    return _default(f.value, f.default)


def _default(v: ValuePlan, source: str) -> str:
    if source == "None":
        return "None"
    if v.kind == "struct":
        assert v.struct is not None
        sp = v.struct
        items = [f"{f.attr!r}: {_default(f.value, f.default)}" for f in (*fields_of(sp), *sp.tagged)]
        if sp.flexible:
            items.append(f"{UNKNOWN_TAGGED_FIELDS!r}: []")
        return "{" + ", ".join(items) + "}"
    if source == "_ZERO_UUID":
        return "bytes(16)"
    if source.startswith("_Uuid(") and source.endswith(")"):
        return source[len("_Uuid("):-1]
    if source in ("nan", "inf", "-inf"):
        return f"float({source!r})"
    return source


def render_construct(env: jinja2.Environment, merged: MergedMessage, source_files: dict[str, str]) -> str:
    """The full source of one generated construct module."""
    plans = {v: plan_message(merged, v) for v in merged.versions}
    names: dict[StructPlan, str] = {}
    versions: dict[StructPlan, list[int]] = {}
    ordered: list[StructPlan] = []
    for v, mp in plans.items():
        for sp in _struct_plans(mp.root):
            if sp not in names:
                names[sp] = f"{sp.class_name}_v{v}"
                versions[sp] = []
                ordered.append(sp)
            if v not in versions[sp]:
                versions[sp].append(v)
    ctx = ConstructContext(names)
    ctx.construct_names.add("Struct")
    if any(sp.flexible for sp in ordered):
        ctx.backend_names.add("Flexible")
    if any(sp.tagged for sp in ordered):
        ctx.backend_names.add("TaggedField")
    context: dict[str, Any] = {
        "name": merged.name,
        "kind": merged.kind,
        "api_key": merged.api_key,
        "versions": str(merged.versions),
        "sources": [source_files[s.source] for s in reversed(merged.specs)],
        "structs": [{"name": names[sp], "plan": sp, "versions": _ranges(versions[sp])} for sp in ordered],
        "schemas": [(v, names[mp.root]) for v, mp in plans.items()],
        "ctx": ctx,
        "construct_names": [],
        "backend_names": [],
    }
    template = env.get_template("construct.py.j2")
    template.render(**context)  # first pass records the names to import
    context["construct_names"] = sorted(ctx.construct_names)
    context["backend_names"] = sorted(ctx.backend_names, key=lambda n: (not n.isupper(), n))
    return tidy(template.render(**context))


_INDEX = '''# Generated by kcodec's codegen from {{ sources | join(", ") }}; do not edit.
"""construct definitions of every message, one module per message (see kcodec.construct_backend).

Each module defines ``SCHEMAS = {version: <construct>}``; ``kcodec.construct_schema`` imports them lazily.
"""
'''


def render_construct_index(env: jinja2.Environment, sources: list[str]) -> str:
    """``construct_/__init__.py``: just a header (the message modules are imported by name, lazily)."""
    return tidy(env.from_string(_INDEX).render(sources=sources))


__all__ = ["ConstructContext", "default_literal", "fields_of", "render_construct", "render_construct_index"]
