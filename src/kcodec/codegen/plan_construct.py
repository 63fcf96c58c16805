"""The construct back end's part of a module plan: each de-duplicated struct layout as a construct.

The construct definitions (``kcodec._generated.construct_``) are built from the same layouts and carry
the same ids as the Python functions; this module decides each value's construct expression and the
names each module imports.
"""

from __future__ import annotations

from kcodec.codegen.layout import FieldPlan, RunPlan, StructPlan, ValuePlan
from kcodec.codegen.program import ConstructStruct
from kcodec.codegen.wire_types import WIRE_TYPES

UNKNOWN_TAGGED_FIELDS = "unknown_tagged_fields"  # kcodec.protocol.construct_backend.UNKNOWN_TAGGED_FIELDS


def fields_of(plan: StructPlan) -> list[FieldPlan]:
    """The untagged fields of a struct layout in wire order (runs of fixed-width fields flattened)."""
    out: list[FieldPlan] = []
    for step in plan.steps:
        if isinstance(step, RunPlan):
            out.extend(step.fields)
        else:
            out.append(step)
    return out


class ConstructPlanner:
    """Construct expressions for one module; records the names the module has to import."""

    def __init__(self, names: dict[StructPlan, str]) -> None:
        self.names = names
        self.construct_names: set[str] = {"Struct"}
        self.backend_names: set[str] = set()

    def value(self, v: ValuePlan) -> str:
        """A construct expression reading and writing one value laid out as ``v``."""
        if v.kind == "fixed":
            assert v.prim is not None
            expr = WIRE_TYPES[v.prim].construct
            self.construct_names.add(expr.split("(")[0])
            return expr
        prefix = "COMPACT" if v.compact else ("LEN16" if v.kind == "string" else "LEN32")
        nullable = ", nullable=True" if v.nullable else ""
        if v.kind in ("string", "bytes", "records"):
            assert v.prim is not None
            factory = WIRE_TYPES[v.prim].construct
            self.backend_names.update((factory, prefix))
            return f"{factory}({prefix}{nullable})"
        if v.kind == "struct":
            assert v.struct is not None
            name = self.names[v.struct]
            if v.nullable:
                self.backend_names.add("NullableStruct")
                return f"NullableStruct({name})"
            return name
        assert v.kind == "array" and v.element is not None
        self.backend_names.update(("KafkaArray", prefix))
        return f"KafkaArray({prefix}, {self.value(v.element)}{nullable})"

    def struct(self, plan: StructPlan, versions: str) -> ConstructStruct:
        if plan.flexible:
            self.backend_names.add("Flexible")
        if plan.tagged:
            self.backend_names.add("TaggedField")
        return ConstructStruct(
            name=self.names[plan],
            cls=plan.class_name,
            versions=versions,
            plural="," in versions or "-" in versions,
            flexible=plan.flexible,
            members=tuple((f.attr, self.value(f.value)) for f in fields_of(plan)),
            tagged=tuple(
                (t.tag or 0, t.attr, self.value(t.value), default_literal(t.value, t.default), t.name)
                for t in plan.tagged
            ),
        )

    def imports(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        backend = sorted(self.backend_names, key=lambda n: (not n.isupper(), n))
        return tuple(sorted(self.construct_names)), tuple(backend)


def default_literal(v: ValuePlan, source: str) -> str:
    """A tagged field's default as plain data (Container values): structs as dicts, uuids as bytes."""
    if source == "None":
        return "None"
    if v.kind == "struct":
        assert v.struct is not None
        sp = v.struct
        items = [f"{f.attr!r}: {default_literal(f.value, f.default)}" for f in (*fields_of(sp), *sp.tagged)]
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
