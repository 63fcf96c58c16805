"""Per-version plans: plain data saying, field by field, how one version of a struct is laid out.

A plan is derived from the spec set that owns the version and from the merged class it fills. Plans
are frozen and hashable, so identical plans for neighbouring versions share one generated function.
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen.merge import MergedField, MergedMessage, MergedStruct
from codegen.spec.fields import STRUCT, FieldSpec
from codegen.spec.messages import MessageSpec
from codegen.spec.types import FIXED_WIDTH, FieldType


@dataclass(frozen=True, slots=True)
class ValuePlan:
    """How one value (a field, or an array element) is written.

    ``kind`` is ``fixed`` (``prim``/``fmt``/``size`` set), ``string``, ``bytes``, ``records``,
    ``struct`` (``struct`` set) or ``array`` (``element`` set).
    """

    kind: str
    prim: str | None
    fmt: str
    size: int
    nullable: bool
    compact: bool
    struct: StructPlan | None = None
    element: ValuePlan | None = None


@dataclass(frozen=True, slots=True)
class FieldPlan:
    """A field present at the version: its attribute, value layout and (if tagged) tag."""

    name: str
    attr: str
    value: ValuePlan
    tag: int | None
    default: str  # Python source of the default value (a fresh object for lists and structs)


@dataclass(frozen=True, slots=True)
class AbsentPlan:
    """A class attribute that does not exist at the version: defaulted on decode, checked on encode."""

    name: str
    attr: str
    default: str  # Python source of the default value
    ignorable: bool


@dataclass(frozen=True, slots=True)
class RunPlan:
    """Adjacent fixed-width fields read and written with one ``struct`` call."""

    fields: tuple[FieldPlan, ...]

    @property
    def fmt(self) -> str:
        return ">" + "".join(f.value.fmt for f in self.fields)

    @property
    def size(self) -> int:
        return sum(f.value.size for f in self.fields)


@dataclass(frozen=True, slots=True)
class StructPlan:
    """One struct (or the message body) at one version."""

    class_name: str
    flexible: bool
    steps: tuple[RunPlan | FieldPlan, ...]
    tagged: tuple[FieldPlan, ...]  # ascending tag order
    absent: tuple[AbsentPlan, ...]

    @property
    def min_size(self) -> int:
        """The fewest bytes an encoding can take (bounds array counts before allocating)."""
        total = 1 if self.flexible else 0
        for step in self.steps:
            if isinstance(step, RunPlan):
                total += step.size
            else:
                total += _min_value_size(step.value)
        return total


def _min_value_size(v: ValuePlan) -> int:
    if v.kind == "fixed":
        return v.size
    if v.kind == "struct":
        if v.nullable:
            return 1
        assert v.struct is not None
        return v.struct.min_size
    # length-prefixed: compact uvarint (>= 1 byte) or int16/int32 prefix
    if v.compact:
        return 1
    return 2 if v.kind == "string" else 4


@dataclass(frozen=True, slots=True)
class MessagePlan:
    """The body of one message version."""

    message: str
    version: int
    source: str
    root: StructPlan


def plan_message(merged: MergedMessage, version: int) -> MessagePlan:
    spec = merged.owner(version)
    root = _plan_struct(spec, spec.root.fields, merged.root, version, merged.classes)
    return MessagePlan(merged.name, version, spec.source, root)


def _plan_struct(
    spec: MessageSpec,
    fields: tuple[FieldSpec, ...],
    merged: MergedStruct,
    version: int,
    classes: dict[str, MergedStruct],
) -> StructPlan:
    flexible = spec.is_flexible(version)
    present: list[FieldPlan] = []
    tagged: list[FieldPlan] = []
    by_name = {f.name: f for f in fields}
    for f in fields:
        if version not in f.versions:
            continue
        mf = merged.get(f.name)
        assert mf is not None
        is_tagged = flexible and version in f.tagged_versions
        value = _plan_value(spec, f, f.type, version, mf.struct, classes, flexible)
        plan = FieldPlan(f.name, mf.attr, value, f.tag if is_tagged else None, default_source(mf))
        (tagged if is_tagged else present).append(plan)
    absent: list[AbsentPlan] = []
    for mf in merged.fields:
        own = by_name.get(mf.spec.name)
        if own is not None and version in own.versions:
            continue
        info = own if own is not None else mf.spec  # this set's definition if it has one, else the newest
        absent.append(AbsentPlan(mf.spec.name, mf.attr, default_source(mf), info.ignorable))
    steps: list[RunPlan | FieldPlan] = []
    run: list[FieldPlan] = []
    for p in present:
        if p.value.kind == "fixed":
            run.append(p)
            continue
        if run:
            steps.append(RunPlan(tuple(run)))
            run = []
        steps.append(p)
    if run:
        steps.append(RunPlan(tuple(run)))
    tagged.sort(key=lambda p: p.tag or 0)
    return StructPlan(merged.name, flexible, tuple(steps), tuple(tagged), tuple(absent))


def _plan_value(
    spec: MessageSpec,
    f: FieldSpec,
    ftype: FieldType,
    version: int,
    merged_struct: MergedStruct | None,
    classes: dict[str, MergedStruct],
    flexible: bool,
) -> ValuePlan:
    nullable = version in f.nullable_versions
    compact = flexible if f.flexible_versions is None else version in f.flexible_versions
    if ftype.is_array:
        assert ftype.element is not None
        elem = _plan_value(spec, f, ftype.element, version, merged_struct, classes, flexible)
        elem = ValuePlan(elem.kind, elem.prim, elem.fmt, elem.size, False, elem.compact, elem.struct)
        return ValuePlan("array", None, "", 0, nullable, compact, None, elem)
    if ftype.struct_name is not None:
        assert merged_struct is not None
        child = spec.struct_of(f)
        sp = _plan_struct(spec, child.fields, merged_struct, version, classes)
        return ValuePlan("struct", None, "", 0, nullable, compact, sp)
    prim = ftype.primitive
    assert prim is not None
    if prim in FIXED_WIDTH:
        fmt, size = FIXED_WIDTH[prim]
        return ValuePlan("fixed", prim, fmt, size, False, compact)
    return ValuePlan(prim, prim, "", 0, nullable, compact)


def default_source(mf: MergedField) -> str:
    """Python source for a field's default, from the newest definition (the class's default)."""
    value = mf.spec.default_value()
    if value is STRUCT:
        assert mf.struct is not None
        return f"{mf.struct.name}()"
    if mf.spec.type.primitive == "uuid":
        assert isinstance(value, bytes)
        return "_ZERO_UUID" if value == bytes(16) else f"_Uuid(bytes.fromhex({value.hex()!r}))"
    return repr(value)
