"""How arrays of a struct are read and written: the planner's speed decisions, one function each.

All of them look at one struct layout (``kcodec.codegen.layout.StructPlan``) and return plain data;
none of them prints anything.

Reading an array of structs, fastest first:

- ``shaped``: an element whose width varies only through arrays of fixed-width values (a Metadata
  partition) is read with one ``unpack_from`` by the struct of its *shape* (the array lengths);
- ``same_width``: elements of one width (only fixed-width fields) are read with one ``iter_unpack``;
- ``inline``: elements without struct values of their own are read in the array's loop, no call;
- ``call``: anything else calls the element's decoder.

Writing: ``same_width`` (one pack per element), ``shaped``, ``inline`` (also for elements whose only
struct values are arrays of elements written in place themselves), ``call``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kcodec.codegen.layout import FieldPlan, RunPlan, StructPlan, ValuePlan

#: the fewest same-width elements read with one ``iter_unpack`` (shorter arrays: element by element)
ITER_UNPACK_MIN = 4


def _fields(plan: StructPlan) -> list[FieldPlan]:
    """The struct's non-run fields and its tagged fields."""
    return [s for s in plan.steps if isinstance(s, FieldPlan)] + list(plan.tagged)


def _has_struct(v: ValuePlan) -> bool:
    return v.kind == "struct" or (v.element is not None and _has_struct(v.element))


def reads_inline(plan: StructPlan) -> bool:
    """Elements of ``plan`` can be read in the array's loop: no struct values of their own."""
    return not any(_has_struct(f.value) for f in _fields(plan))


@dataclass(frozen=True, slots=True)
class SameWidthLayout:
    fmt: str  # one element's struct format (with the tagged-field count byte if flexible)
    size: int
    attrs: tuple[str, ...]
    defaults: tuple[tuple[str, str], ...]  # absent and tagged fields: (attr, default)
    flexible: bool


def same_width(plan: StructPlan) -> SameWidthLayout | None:
    """Every element has the same width: only fixed-width fields (no uuid, whose ``16s`` would make
    a copy per element), plus an empty tagged-field section in flexible versions. None otherwise."""
    if len(plan.steps) != 1 or not isinstance(plan.steps[0], RunPlan):
        return None
    run = plan.steps[0]
    if any(f.value.is_uuid for f in run.fields):
        return None
    return SameWidthLayout(
        fmt=run.fmt + ("B" if plan.flexible else ""),
        size=run.size + (1 if plan.flexible else 0),
        attrs=tuple(f.attr for f in run.fields),
        defaults=tuple((a.attr, a.default) for a in plan.absent)
        + tuple((t.attr, t.default) for t in plan.tagged),
        flexible=plan.flexible,
    )


def writes_inline(plan: StructPlan) -> bool:
    """Elements of ``plan`` can be written in the array's loop: no known tagged fields, and struct
    values only as arrays of elements that are written in place themselves (a ListOffsets topic)."""
    if plan.tagged:
        return False
    if reads_inline(plan):
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
            if el.struct.tagged or not reads_inline(el.struct):
                return False
    return True


def reads_records(plan: StructPlan) -> bool:
    """A decoder of ``plan`` reads a records value itself or in an element read in place: it then
    takes one ``memoryview`` of the buffer up front and slices records from it."""

    def direct(p: StructPlan) -> bool:
        return any(f.value.kind == "records" for f in _fields(p))

    inline_elements = [
        step.value.element.struct
        for step in plan.steps
        if isinstance(step, FieldPlan)
        and step.value.element is not None
        and step.value.element.struct is not None
        and reads_inline(step.value.element.struct)
    ]
    return direct(plan) or any(direct(el) for el in inline_elements)


def has_records(plan: StructPlan) -> bool:
    """Whether any value reachable from ``plan`` is records (the message then keeps the caller's buffer)."""
    return _reaches(plan, ("records",))


def writes_blobs(plan: StructPlan) -> bool:
    """Whether any value reachable from ``plan`` is bytes or records: values its encoder hands to a
    ``ChunkedOut`` uncopied when they are large (without them a plain ``bytearray`` does)."""
    return _reaches(plan, ("bytes", "records"))


def _reaches(plan: StructPlan, kinds: tuple[str, ...]) -> bool:
    def value(v: ValuePlan) -> bool:
        if v.kind in kinds:
            return True
        if v.struct is not None and _reaches(v.struct, kinds):
            return True
        return v.element is not None and value(v.element)

    return any(value(f.value) for f in _fields(plan))


@dataclass(frozen=True, slots=True)
class ShapeLayout:
    pattern: str  # struct format with one %d per array
    widths: tuple[int, ...]  # per step: fields in a run, -1 for an array
    steps: tuple[tuple[str, ...] | str, ...]  # per step: run attrs, or the array attr


def shape(plan: StructPlan) -> ShapeLayout | None:
    """Elements of ``plan`` vary in width only through arrays of fixed-width values: flexible versions,
    no uuid fields (``16s`` would pad), nullable arrays or tagged fields, and at least one array."""
    if not plan.flexible or plan.tagged:
        return None
    pattern = ">"
    steps: list[tuple[str, ...] | str] = []
    widths: list[int] = []
    for step in plan.steps:
        if isinstance(step, RunPlan):
            if any(f.value.is_uuid for f in step.fields):
                return None
            pattern += step.fmt[1:]
            steps.append(tuple(f.attr for f in step.fields))
            widths.append(len(step.fields))
            continue
        v, el = step.value, step.value.element
        if v.kind != "array" or v.nullable or not v.compact or el is None:
            return None
        if el.kind != "fixed" or el.is_uuid:
            return None
        pattern += "B%d" + el.fmt
        steps.append(step.attr)
        widths.append(-1)
    if -1 not in widths:
        return None  # same width every time: same_width's iter_unpack does better
    return ShapeLayout(pattern + "B", tuple(widths), tuple(steps))


def read_strategy(plan: StructPlan, arithmetic: bool = False) -> str:
    """How an array of ``plan`` elements is read: shaped, same_width, inline or call.

    ``arithmetic``: compiled code reading a ``bytes`` buffer, where reading same-width elements in
    place (integer arithmetic, one constructor call) beats ``iter_unpack`` (a tuple per element)."""
    if shape(plan) is not None:
        return "shaped"
    if same_width(plan) is not None and not arithmetic:
        return "same_width"
    return "inline" if reads_inline(plan) else "call"


def write_strategy(plan: StructPlan) -> str:
    """How an array of ``plan`` elements is written: same_width, shaped, inline or call."""
    sw = same_width(plan)
    if sw is not None and not sw.defaults:
        return "same_width"
    if shape(plan) is not None:
        return "shaped"
    return "inline" if writes_inline(plan) else "call"
