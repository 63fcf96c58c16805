"""Per-version layouts: plain data saying, field by field, how one version of a struct is laid out.

A layout is derived from the spec set that owns the version and from the merged class it fills.
Layouts are frozen and hashable, so identical layouts of neighbouring versions share one generated
function (``kcodec.codegen.planner`` de-duplicates them and decides how each is read and written).
"""

from __future__ import annotations

from dataclasses import dataclass

from kcodec.codegen.merge import MergedField, MergedMessage, MergedStruct
from kcodec.codegen.spec.fields import STRUCT, FieldSpec
from kcodec.codegen.spec.messages import MessageSpec
from kcodec.codegen.spec.types import FieldType
from kcodec.codegen.wire_types import WIRE_TYPES, WireType


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

    @property
    def wire(self) -> WireType | None:
        """The wire type of a primitive value (None for structs and arrays)."""
        return None if self.prim is None else WIRE_TYPES[self.prim]

    @property
    def is_uuid(self) -> bool:
        return self.prim == "uuid"

    @property
    def min_size(self) -> int:
        """The fewest bytes this value can take (bounds array counts before allocating)."""
        if self.kind == "fixed":
            return self.size
        if self.kind == "struct":
            if self.nullable:
                return 1
            assert self.struct is not None
            return self.struct.min_size
        # length-prefixed: compact uvarint (>= 1 byte) or the int16/int32 prefix
        if self.compact:
            return 1
        wire = self.wire
        return 2 if wire is not None and wire.length_fmt == "h" else 4


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
            total += step.size if isinstance(step, RunPlan) else step.value.min_size
        return total


@dataclass(frozen=True, slots=True)
class MessagePlan:
    """The body of one message version."""

    message: str
    version: int
    source: str
    root: StructPlan


def layout_message(merged: MergedMessage, version: int) -> MessagePlan:
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
    wire = ftype.wire
    assert wire is not None
    if wire.fixed_width:
        return ValuePlan("fixed", wire.name, wire.fmt, wire.size, False, compact)
    return ValuePlan(wire.snippet, wire.name, "", 0, nullable, compact)


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
