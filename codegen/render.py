"""Render merged messages and their per-version plans into Python modules with jinja2."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from codegen.merge import MergedMessage, MergedStruct
from codegen.plan import FieldPlan, RunPlan, StructPlan, ValuePlan, default_source, plan_message
from codegen.spec.fields import FieldSpec, to_snake
from codegen.spec.messages import MessageSpec
from codegen.spec.structs import StructSpec
from codegen.spec.versions import Versions

TEMPLATES = Path(__file__).parent / "templates"

_PY_TYPES = {
    "bool": "bool", "int8": "int", "int16": "int", "uint16": "int", "int32": "int", "uint32": "int",
    "int64": "int", "float64": "float", "string": "str", "bytes": "bytes", "records": "bytes | memoryview",
    "uuid": "_Uuid",
}


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["py"] = repr
    return env


def tidy(source: str) -> str:
    """Strip trailing blanks and collapse runs of blank lines left by template whitespace."""
    lines = [line.rstrip() for line in source.splitlines()]
    out: list[str] = []
    blanks = 0
    for line in lines:
        blanks = blanks + 1 if not line else 0
        if blanks <= 2:
            out.append(line)
    return "\n".join(out).strip("\n") + "\n"


def module_name(message: str) -> str:
    return to_snake(message)


def vrange(v: Versions) -> str:
    return "None" if v.empty else f"({v.lowest}, {v.highest})"


@dataclass
class RenderContext:
    """Helpers the templates call: constant names for struct formats, function ids, conditions."""

    function_ids: dict[StructPlan, str]
    message: str = ""
    formats: dict[str, str] = field(default_factory=dict)
    run_infos: dict[str, str] = field(default_factory=dict)
    array_tables: dict[str, str] = field(default_factory=dict)
    shapes: dict[str, str] = field(default_factory=dict)

    def array_table(self, fmt: str, prefix: str = "") -> str:
        """A module constant: ``struct.Struct`` objects for 0..31 elements of ``fmt`` (small arrays),
        after a ``prefix`` value (the array's length) if one is given."""
        pattern = f">{prefix}%d{fmt}"
        if pattern not in self.array_tables:
            name = {"?": "bool"}.get(fmt, fmt)
            self.array_tables[pattern] = f"_A{ {'': '', 'B': 'C', 'i': 'L'}[prefix]}_{name}"
        return self.array_tables[pattern]

    def fmt(self, fmt: str) -> str:
        if fmt not in self.formats:
            self.formats[fmt] = f"_S{len(self.formats)}"
        return self.formats[fmt]

    def run_info(self, run: RunPlan) -> str:
        text = "(" + "".join(f"({f.attr!r}, {f.value.size}, {f.value.fmt!r}), " for f in run.fields) + ")"
        if text not in self.run_infos:
            self.run_infos[text] = f"_R{len(self.run_infos)}"
        return self.run_infos[text]

    def fn(self, plan: StructPlan) -> str:
        return self.function_ids[plan]

    @staticmethod
    def inline_struct(plan: StructPlan) -> bool:
        """Whether array elements of ``plan`` are read in the array's loop instead of by a call: structs
        without struct values of their own (fields, array elements or tagged fields)."""

        def has_struct(v: ValuePlan) -> bool:
            return v.kind == "struct" or (v.element is not None and has_struct(v.element))

        fields = [s for s in plan.steps if isinstance(s, FieldPlan)] + list(plan.tagged)
        return not any(has_struct(f.value) for f in fields)

    def fixed_struct(self, plan: StructPlan) -> dict[str, Any] | None:
        """How to read an array of ``plan`` structs with one ``iter_unpack`` when every element has
        the same width: only fixed-width fields (no uuid), plus an empty tagged-field section in
        flexible versions (its count byte is read with the fields and must be 0). None otherwise."""
        if len(plan.steps) != 1 or not isinstance(plan.steps[0], RunPlan):
            return None
        run = plan.steps[0]
        if any(f.value.prim == "uuid" for f in run.fields):
            return None
        fmt = run.fmt + ("B" if plan.flexible else "")
        return {
            "const": self.fmt(fmt),
            "size": run.size + (1 if plan.flexible else 0),
            "attrs": [f.attr for f in run.fields],
            "defaults": [(a.attr, a.default) for a in plan.absent]
            + [(t.attr, t.default) for t in plan.tagged],
            "flexible": plan.flexible,
        }

    def inline_write(self, plan: StructPlan) -> bool:
        """Whether array elements of ``plan`` are written in the array's loop: structs without known
        tagged fields whose struct values, if any, are arrays of structs written in place themselves
        (so a ListOffsets topic and its partitions are written without a call per topic)."""
        if plan.tagged:
            return False
        if self.inline_struct(plan):
            return True
        for step in plan.steps:
            if not isinstance(step, FieldPlan):
                continue
            v = step.value
            if v.kind == "struct":
                return False
            el = v.element
            if el is not None and el.kind == "struct":
                assert el.struct is not None
                if el.struct.tagged or not self.inline_struct(el.struct):
                    return False
        return True

    def reads_records(self, plan: StructPlan) -> bool:
        """Whether a decoder of ``plan`` reads a records value (a zero-copy memoryview slice) itself or
        in an element read in place: it then takes one ``memoryview`` of the buffer up front."""

        def direct(p: StructPlan) -> bool:
            fields = [s for s in p.steps if isinstance(s, FieldPlan)] + list(p.tagged)
            return any(f.value.kind == "records" for f in fields)

        def inline_elements(p: StructPlan) -> list[StructPlan]:
            out = []
            for step in p.steps:
                el = step.value.element if isinstance(step, FieldPlan) else None
                if el is not None and el.struct is not None and self.inline_struct(el.struct):
                    out.append(el.struct)
            return out

        return direct(plan) or any(direct(el) for el in inline_elements(plan))

    def shaped_struct(self, plan: StructPlan) -> dict[str, Any] | None:
        """How to read and write each element of an array of ``plan`` structs with one ``struct`` call
        when its width varies only through arrays of fixed-width values (e.g. a Metadata partition's
        replica, ISR and offline lists): the generated code asks ``kcodec._wire`` for the
        ``struct.Struct`` of the element's *shape* (its array lengths, one compact-length byte each,
        and an empty tagged-field section), built on first sight and kept in a bounded module dict.
        Flexible versions only; no uuid fields (``16s`` would pad), nullable arrays or tagged fields.
        None when the plan does not qualify."""
        if not plan.flexible or plan.tagged:
            return None
        pattern = ">"
        steps: list[dict[str, Any]] = []
        widths: list[int] = []
        for step in plan.steps:
            if isinstance(step, RunPlan):
                if any(f.value.prim == "uuid" for f in step.fields):
                    return None
                pattern += step.fmt[1:]
                steps.append({"run": [f.attr for f in step.fields]})
                widths.append(len(step.fields))
                continue
            v, el = step.value, step.value.element
            if v.kind != "array" or v.nullable or not v.compact or el is None:
                return None
            if el.kind != "fixed" or el.prim == "uuid":
                return None
            pattern += "B%d" + el.fmt
            steps.append({"array": step.attr})
            widths.append(-1)
        if -1 not in widths:
            return None  # same width every time: fixed_struct's iter_unpack does better
        pattern += "B"
        if pattern not in self.shapes:
            self.shapes[pattern] = str(len(self.shapes))
        return {
            "id": self.shapes[pattern],
            "pattern": pattern,
            "widths": "(" + "".join(f"{w}, " for w in widths) + ")",
            "steps": steps,
            "arrays": [st["array"] for st in steps if "array" in st],
        }

    @staticmethod
    def min_size(v: ValuePlan) -> int:
        if v.kind == "fixed":
            return v.size
        if v.kind == "struct":
            assert v.struct is not None
            return v.struct.min_size
        return 1 if v.compact else (2 if v.kind == "string" else 4)

    @staticmethod
    def nondefault(expr: str, default: str) -> str:
        """A condition that is true when ``expr`` differs from the default (Kafka's write rule)."""
        if default == "None":
            return f"{expr} is not None"
        return f"{expr} != {default}"

    @staticmethod
    def known_tags(plan: StructPlan) -> str:
        """The tags the struct defines at this version (unknown tagged fields may not reuse them)."""
        return "(" + "".join(f"{t.tag}, " for t in plan.tagged) + ")"

    @staticmethod
    def json_name(name: str) -> str:
        return name[0].lower() + name[1:]


def _struct_plans(plan: StructPlan) -> list[StructPlan]:
    """Every struct plan reachable from ``plan``, children first."""
    out: list[StructPlan] = []

    def visit_value(v: ValuePlan) -> None:
        if v.struct is not None:
            visit(v.struct)
        if v.element is not None:
            visit_value(v.element)

    def visit(p: StructPlan) -> None:
        for step in p.steps:
            if isinstance(step, FieldPlan):
                visit_value(step.value)
        for t in p.tagged:
            visit_value(t.value)
        out.append(p)

    visit(plan)
    return out


def _annotation(f: FieldSpec, struct: MergedStruct | None, nullable: bool) -> str:
    t = f.type
    if t.is_array:
        assert t.element is not None
        inner = struct.name if struct is not None else _PY_TYPES[t.element.primitive or ""]
        base = f"list[{inner}]"
    elif struct is not None:
        base = struct.name
    else:
        base = _PY_TYPES[t.primitive or ""]
    return f"{base} | None" if nullable else base


def specs_by_set(merged: MergedMessage) -> dict[str, dict[str, tuple[FieldSpec, ...]]]:
    """For every class, the fields each spec set defines for it (walking each set's spec tree)."""
    out: dict[str, dict[str, tuple[FieldSpec, ...]]] = {name: {} for name in merged.classes}

    def walk(spec: MessageSpec, struct: StructSpec, ms: MergedStruct) -> None:
        out[ms.name].setdefault(spec.source, struct.fields)
        for f in struct.fields:
            if f.type.struct_name is None:
                continue
            mf = ms.get(f.name)
            assert mf is not None and mf.struct is not None
            walk(spec, spec.struct_of(f), mf.struct)

    for spec in reversed(merged.specs):  # oldest first, as sets.json lists them
        walk(spec, spec.root, merged.root)
    return out


def _field_info(f: FieldSpec, merged_struct: MergedStruct, cls: MergedStruct | None) -> str:
    type_text = f.type.text
    if cls is not None and f.type.struct_name is not None:
        type_text = ("[]" if f.type.is_array else "") + cls.name
    default = f.default_value()
    if f.type.is_array:
        default_src = "None" if default is None else "()"
    elif f.type.is_struct:
        default_src = "None" if default is None else "STRUCT_DEFAULT"
    elif f.type.primitive == "uuid":
        default_src = "_ZERO_UUID" if default == bytes(16) else f"_Uuid(bytes.fromhex({default.hex()!r}))"
    else:
        default_src = repr(default)
    parts = [repr(f.name), repr(next(m.attr for m in merged_struct.fields if m.spec.name == f.name)),
             repr(type_text), vrange(f.versions)]
    if not f.nullable_versions.empty:
        parts.append(f"nullable={vrange(f.nullable_versions)}")
    if f.tag is not None:
        parts.append(f"tagged={vrange(f.tagged_versions)}, tag={f.tag}")
    if f.flexible_versions is not None:
        parts.append(f"flexible={vrange(f.flexible_versions)}")
    if f.ignorable:
        parts.append("ignorable=True")
    if f.map_key:
        parts.append("map_key=True")
    if f.entity_type:
        parts.append(f"entity_type={f.entity_type!r}")
    parts.append(f"default={default_src}")
    if f.default_text is not None:
        parts.append(f"default_text={f.default_text!r}")
    return f"FieldInfo({', '.join(parts)})"


def render_message(env: jinja2.Environment, merged: MergedMessage, source_files: dict[str, str]) -> str:
    """The full source of one generated message module."""
    plans = {v: plan_message(merged, v) for v in merged.versions}
    function_ids: dict[StructPlan, str] = {}
    function_versions: dict[StructPlan, list[int]] = {}
    ordered: list[StructPlan] = []
    for v, mp in plans.items():
        for sp in _struct_plans(mp.root):
            if sp not in function_ids:
                function_ids[sp] = f"{sp.class_name}_v{v}"
                function_versions[sp] = []
                ordered.append(sp)
            if v not in function_versions[sp]:
                function_versions[sp].append(v)
    ctx = RenderContext(function_ids, merged.name)
    fields_by_set = specs_by_set(merged)
    classes = []
    for name, ms in merged.classes.items():
        cls_fields = []
        nullable = {
            f.name for fspecs in fields_by_set[name].values() for f in fspecs
            if not f.nullable_versions.empty or f.default_text == "null"
        }
        for mf in ms.fields:
            default = default_source(mf)
            mutable = default == "[]" or default.endswith("()")
            cls_fields.append({
                "attr": mf.attr,
                "annotation": _annotation(mf.spec, mf.struct, mf.spec.name in nullable),
                "default": default,
                "param_default": "MISSING" if mutable else default,
            })
        infos = []
        for set_name, fspecs in fields_by_set[name].items():
            infos.append((set_name, [
                _field_info(f, ms, (ms.get(f.name) or ms.fields[0]).struct) for f in fspecs
            ]))
        classes.append({
            "name": name,
            "is_root": name == merged.name,
            "doc": f"{merged.name} message." if name == merged.name else f"Struct {name} of {merged.name}.",
            "fields": cls_fields,
            "infos": infos,
        })
    classes.reverse()  # children before parents reads better; the root class comes last
    owners = [(v, merged.owner(v).source) for v in merged.versions]
    owner_ranges = []
    for spec in reversed(merged.specs):
        vs = [v for v, s in owners if s == spec.source]
        if vs:
            owner_ranges.append(f"v{vs[0]}-{vs[-1]} from {spec.source}")
    functions = [
        {"id": function_ids[sp], "plan": sp, "versions": _ranges(function_versions[sp])} for sp in ordered
    ]
    context: dict[str, Any] = {
        "name": merged.name,
        "kind": merged.kind,
        "api_key": merged.api_key,
        "versions": str(merged.versions),
        "lowest": merged.versions.lowest,
        "highest": merged.versions.highest,
        "sources": [source_files[s.source] for s in reversed(merged.specs)],
        "owner_ranges": owner_ranges,
        "classes": classes,
        "functions": functions,
        "root_functions": [(v, function_ids[mp.root]) for v, mp in plans.items()],
        "root_ids": {function_ids[mp.root] for mp in plans.values()},
        "owners": owners,
        "flexible": [(s.source, vrange(s.flexible_versions)) for s in reversed(merged.specs)],
        "source_files": [(s.source, source_files[s.source]) for s in reversed(merged.specs)],
        "ctx": ctx,
        "formats": [],
        "run_infos": [],
        "array_tables": [],
        "shapes": [],
    }
    template = env.get_template("message.py.j2")
    template.render(**context)  # first pass registers struct formats and run descriptions
    context["formats"] = list(ctx.formats.items())
    context["run_infos"] = list(ctx.run_infos.items())
    context["array_tables"] = list(ctx.array_tables.items())
    context["shapes"] = list(ctx.shapes.items())
    return tidy(template.render(**context))


def _ranges(versions: list[int]) -> str:
    out: list[str] = []
    start = prev = versions[0]
    for v in [*versions[1:], -1]:
        if v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = v
    return ", ".join(out)


__all__ = ["RenderContext", "environment", "module_name", "render_message"]
