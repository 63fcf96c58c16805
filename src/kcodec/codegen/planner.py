"""Specs -> one emitter-ready plan of the whole generated package (``kcodec.codegen.program``).

For each merged message: the per-version layouts, de-duplicated into functions with stable ids
(``<Struct>_v<first version>``), each function's read/write/skip operations (``plan_ops``), the classes
with their field docs, the constant pool and the runtime field descriptions (from which the runtime also
builds the construct definitions, ``kcodec.protocol.construct_backend``).
The package plan adds the API registry (``kcodec.codegen.registry``). Planning has no side effects; the
back ends print the result.
"""

from __future__ import annotations

from collections.abc import Collection

from kcodec.codegen.compile import HEADERS, HOT_APIS
from kcodec.codegen.constants import ConstantPool
from kcodec.codegen.layout import FieldPlan, StructPlan, ValuePlan, default_source, layout_message
from kcodec.codegen.merge import MergedMessage, MergedStruct
from kcodec.codegen.plan_facts import plan_facts
from kcodec.codegen.plan_json import plan_json
from kcodec.codegen.plan_ops import OpBuilder
from kcodec.codegen.program import ClassField, ClassPlan, FunctionPlan, ModulePlan, PackagePlan, Target
from kcodec.codegen.registry import index_plan
from kcodec.codegen.spec.fields import FieldSpec, to_snake
from kcodec.codegen.spec.messages import MessageSpec
from kcodec.codegen.spec.structs import StructSpec
from kcodec.codegen.spec.versions import Versions, version_ranges
from kcodec.codegen.strategy import has_records, read_strategy, reads_records, write_strategy, writes_blobs
from kcodec.codegen.wire_types import WIRE_TYPES

#: the messages whose pure-build codecs print every value's read and write inline (the hot APIs and the
#: headers); the others call runtime helpers for strings and bytes
HOT_MESSAGES = frozenset(
    {*HEADERS, *(f"{api}{kind}" for api in HOT_APIS for kind in ("Request", "Response"))}
)

#: the consumer group APIs every client runs (the client's small, frequent messages): like the hot
#: messages, they keep generated JSON converters and facts extractors (a function per layout), which
#: the others build at run time
CLIENT_GROUP_MESSAGES = frozenset(
    f"{api}{kind}"
    for api in (
        "FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit",
        "OffsetFetch", "ConsumerGroupHeartbeat",
    )
    for kind in ("Request", "Response")
)


def versioned_module(compiled: bool) -> bool:
    """Whether a message's codecs are one decoder and encoder per struct branching on the version
    (``kcodec.codegen.vmerge``) rather than a copy per struct layout: where the copies do not pay.

    The rule: a copy per layout pays where a version test would otherwise run per array element, or
    where the code is compiled (mypyc turns each copy into straight native code). In the pure build no
    version test runs per element in a versioned module either: the frequent messages (the hot and
    client group ones, ``Target.switches``) keep each loop whole per element layout and print each run
    of statements the layouts do not share as one ``if``/``elif`` chain, newest versions first, so a
    version is tested a few times per struct, not per statement; the hot ones read and write array
    elements in place as their copies did; the others call the element's function per element. The
    frequent messages' modules are marked ``SPECIALIZE``: the runtime makes a copy per version of them
    at first use, with the version tests decided (``kcodec.protocol.specialize``), so they run as
    their copies per layout did, without some 19,000 generated lines. Every message of the pure
    build is versioned, none of the compiled build."""
    return not compiled


def module_name(message: str) -> str:
    return to_snake(message)


def vrange(v: Versions) -> str:
    return "None" if v.empty else f"({v.lowest}, {v.highest})"


def struct_layouts(root: StructPlan) -> list[StructPlan]:
    """Every struct layout reachable from ``root``, children first."""
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

    visit(root)
    return out


def plan_package(
    messages: list[MergedMessage], source_dirs: dict[str, str], sets: list[dict[str, object]],
    compiled: Collection[str] = (),
) -> PackagePlan:
    """The plan of the whole package; messages named in ``compiled`` are planned for mypyc."""
    modules = []
    stubs = []
    for merged in messages:
        files = {s.source: f"{source_dirs[s.source]}/{merged.name}.json" for s in merged.specs}
        modules.append(plan_module(merged, files, merged.name in compiled))
        if merged.name in compiled:  # (its type stub: the interpreted module with the same functions)
            stubs.append(plan_module(merged, files, layouts_only=True))
    index = index_plan(messages, sorted(source_dirs.values()), sets)
    index["compiled"] = [m.name for m in modules if m.target.compiled]
    return PackagePlan(tuple(modules), index, tuple(stubs))


def plan_module(
    merged: MergedMessage, source_files: dict[str, str], compiled: bool = False, layouts_only: bool = False
) -> ModulePlan:
    """The plan of one message's modules (``compiled``: for mypyc; ``layouts_only``: a function per
    layout whatever ``versioned_module`` says, as the compiled build prints them, for comparisons)."""
    layouts = {v: layout_message(merged, v).root for v in merged.versions}
    ids: dict[StructPlan, str] = {}
    served: dict[StructPlan, list[int]] = {}
    for v, root in layouts.items():
        for sp in struct_layouts(root):
            if sp not in ids:
                ids[sp] = f"{sp.class_name}_v{v}"
                served[sp] = []
            if v not in served[sp]:
                served[sp].append(v)
    roots = set(layouts.values())
    records = any(has_records(root) for root in roots)
    hot = merged.name in HOT_MESSAGES
    helpers = not (compiled or hot)
    versioned = versioned_module(compiled) and not layouts_only
    frequent = hot or merged.name in CLIENT_GROUP_MESSAGES  # the messages every client sends
    target = Target(
        compiled=compiled, bytes_buffer=compiled and not records, helpers=helpers, versioned=versioned,
        switches=versioned and frequent,
    )
    pool = ConstantPool()
    functions = tuple(
        _plan_function(sp, ids, tuple(served[sp]), sp in roots, pool, merged.name, target)
        for sp in ids
    )
    owners = tuple((v, merged.owner(v).source) for v in merged.versions)
    sources = tuple(source_files[s.source] for s in reversed(merged.specs))
    fields_by_set = specs_by_set(merged)
    owner_ranges = []
    for spec in reversed(merged.specs):
        vs = [v for v, s in owners if s == spec.source]
        if vs:
            owner_ranges.append(f"v{vs[0]}-{vs[-1]} from {spec.source}")
    return ModulePlan(
        name=merged.name,
        module=module_name(merged.name),
        kind=merged.kind,
        api_key=merged.api_key,
        versions=str(merged.versions),
        lowest=merged.versions.lowest,
        highest=merged.versions.highest,
        target=target,
        sources=sources,
        owner_ranges=tuple(owner_ranges),
        classes=_plan_classes(merged, fields_by_set, target, _in_place(layouts)),
        functions=functions,
        roots=tuple((v, ids[root]) for v, root in layouts.items()),
        formats=tuple((name, fmt) for fmt, name in pool.formats.items()),
        value_tables=tuple((name, pattern) for pattern, name in pool.tables.items()),
        run_fields=tuple((name, text) for text, name in pool.runs.items()),
        shapes=tuple((r, w, pattern) for pattern, (r, w) in pool.shapes.items()),
        owners=owners,
        flexible=tuple((s.source, vrange(s.flexible_versions)) for s in reversed(merged.specs)),
        source_files=tuple((s.source, source_files[s.source]) for s in reversed(merged.specs)),
        bound_decoders=tuple((v, ids[root]) for v, root in layouts.items()) if target.compiled else (),
        bound_encoders=tuple((v, ids[root]) for v, root in layouts.items()) if target.compiled else (),
        bound_encoders_chunked=any(writes_blobs(root) for root in roots),
        # (the other messages' converters and extractors are built at run time from their INFO, by the
        # same rules: kcodec.protocol.json_build, kcodec.protocol.facts_build)
        json=plan_json(merged, fields_by_set, sources, module_name(merged.name)) if frequent else None,
        facts=plan_facts(merged, fields_by_set, sources, module_name(merged.name)) if frequent else None,
    )


def _strategy_note(sp: StructPlan, is_root: bool, target: Target) -> str:
    if is_root:
        return "message body"
    read = "call" if target.helpers else read_strategy(sp, target.builds_from_locals and target.bytes_buffer)
    written = write_strategy(sp)
    if target.versioned and target.helpers and written == "inline":
        written = "call"
    return f"in arrays: read {read}, written {written}"


def _plan_function(
    sp: StructPlan,
    ids: dict[StructPlan, str],
    served: tuple[int, ...],
    is_root: bool,
    pool: ConstantPool,
    message: str,
    target: Target,
) -> FunctionPlan:
    calls = target.helpers
    decode = OpBuilder(
        pool, ids, message, target.bytes_buffer, target.builds_from_locals, calls_only=calls, target=target
    )
    read = decode.read_steps(sp, "obj")
    read_tagged = decode.read_tagged(sp, "obj") if sp.flexible else None
    read_build = decode.build(sp, "obj", read_tagged)
    version = "v" if target.versioned else str(served[0])  # (versioned: the merged function's version)
    lazy = OpBuilder(
        pool, ids, message, target.bytes_buffer, target.builds_from_locals, calls_only=calls, version=version,
        target=target,
    )
    read_lazy = lazy.read_steps(sp, "obj", lazy=True) if is_root else ()
    lazy_tagged = read_tagged
    if target.builds_from_locals and is_root and sp.flexible:  # its own locals for the tagged fields
        lazy_tagged = lazy.read_tagged(sp, "obj")
    # (versioned modules print no skip functions: lazy decoding skips their structs from INFO)
    skip = () if is_root or target.versioned else OpBuilder(
        pool, ids, message, target.bytes_buffer, target=target
    ).skip_steps(sp)
    # (encoders keep their strategies: an element written in place names a field at fault as today)
    # (versioned modules outside the hot set call the element's encoder where they would write it
    # inline: the hot ones write it in place, each loop whole, Target.switches)
    element_calls = target.versioned and target.helpers
    encode = OpBuilder(
        pool, ids, message, native_elements=target.compiled, calls_only=element_calls, target=target
    )
    return FunctionPlan(
        id=ids[sp],
        cls=sp.class_name,
        versions=version_ranges(list(served)),
        served=served,
        strategy=_strategy_note(sp, is_root, target),
        layout=sp,
        flexible=sp.flexible,
        is_root=is_root,
        records_view=reads_records(sp),
        read=read,
        read_lazy=read_lazy,
        read_defaults=tuple((a.attr, a.default) for a in sp.absent),
        read_tagged=read_tagged,
        skip=skip,
        write_absent=encode.absent_checks(sp, "obj"),
        write=encode.write_steps(sp, "obj"),
        write_tagged=encode.write_tagged(sp) if sp.flexible else None,
        read_build=read_build,
        read_locals=tuple(decode.declared),
        read_lazy_tagged=lazy_tagged if is_root else None,
        read_lazy_build=lazy.build(sp, "obj", lazy_tagged) if is_root else None,
        read_lazy_locals=tuple(lazy.declared),
    )


# --- classes ------------------------------------------------------------------------------------------


def _annotation(f: FieldSpec, struct: MergedStruct | None, nullable: bool) -> str:
    t = f.type
    if t.is_array:
        assert t.element is not None
        inner = struct.name if struct is not None else WIRE_TYPES[t.element.primitive or ""].py_type
        base = f"list[{inner}]"
    elif struct is not None:
        base = struct.name
    else:
        base = WIRE_TYPES[t.primitive or ""].py_type
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
    """Source of the runtime ``FieldInfo`` of one field as one spec set defines it; its ``about`` is
    the merged field's (the newest text), so the sets describing a struct alike share one table."""
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
    merged = next(m for m in merged_struct.fields if m.spec.name == f.name)
    parts = [repr(f.name), repr(merged.attr), repr(type_text), vrange(f.versions)]
    if not f.nullable_versions.empty:
        parts.append(f"nullable={vrange(f.nullable_versions)}")
    if f.tag is not None:
        parts.append(f"tagged={vrange(f.tagged_versions)}, tag={f.tag}")
    if f.flexible_versions is not None:  # the field's own flexibleVersions; "none" is the empty (1, 0)
        fv = f.flexible_versions
        parts.append(f"flexible=({fv.lowest}, {fv.highest})")
    if f.ignorable:
        parts.append("ignorable=True")
    if f.map_key:
        parts.append("map_key=True")
    if f.entity_type:
        parts.append(f"entity_type={f.entity_type!r}")
    parts.append(f"default={default_src}")
    if f.default_text is not None:
        parts.append(f"default_text={f.default_text!r}")
    if merged.about is not None:
        parts.append(f"about={merged.about!r}")
    return f"FieldInfo({', '.join(parts)})"


def _field_doc(attr: str, f: FieldSpec, default: str, about: str | None = None) -> str:
    """One docstring line from the spec facts: type, versions, default, nullable, tagged, and after
    them the spec's description (on the same line, as a docstring may hold it)."""
    parts = [f"{attr}: {f.type.text}, versions {f.versions}", f"default {default}"]
    if not f.nullable_versions.empty:
        parts.append(f"nullable {f.nullable_versions}")
    if f.tag is not None:
        parts.append(f"tagged {f.tagged_versions} (tag {f.tag})")
    if f.ignorable:
        parts.append("ignorable")
    line = "; ".join(parts)
    if about:
        line += " -- " + _doc_text(about)
    return line


def _doc_text(text: str) -> str:
    """A spec's description as docstring text: on one line, its backslashes and quotes escaped."""
    return " ".join(text.split()).replace("\\", "\\\\").replace('"', '\\"')


def _in_place(layouts: dict[int, StructPlan]) -> dict[str, str]:
    """Per class, the source of the version ranges at which arrays of it are written element in place."""
    versions: dict[str, list[int]] = {}
    for v, root in layouts.items():
        for sp in struct_layouts(root):
            if write_strategy(sp) in ("shaped", "inline") and v not in versions.setdefault(sp.class_name, []):
                versions[sp.class_name].append(v)
    out: dict[str, str] = {}
    for name, vs in versions.items():
        ranges: list[list[int]] = []
        for v in sorted(vs):
            if ranges and ranges[-1][1] == v - 1:
                ranges[-1][1] = v
            else:
                ranges.append([v, v])
        if ranges:
            out[name] = "(" + "".join(f"({lo}, {hi}), " for lo, hi in ranges) + ")"
    return out


def _plan_classes(
    merged: MergedMessage,
    fields_by_set: dict[str, dict[str, tuple[FieldSpec, ...]]],
    target: Target,
    in_place: dict[str, str],
) -> tuple[ClassPlan, ...]:
    classes = []
    for name, ms in merged.classes.items():
        nullable = {
            f.name for fspecs in fields_by_set[name].values() for f in fspecs
            if not f.nullable_versions.empty or f.default_text == "null"
        }
        fields = []
        for mf in ms.fields:
            default = default_source(mf)
            mutable = default == "[]" or default.endswith("()")
            annotation = _annotation(mf.spec, mf.struct, mf.spec.name in nullable)
            fields.append(ClassField(
                attr=mf.attr,
                annotation=annotation,
                default=default,
                param_default="MISSING" if mutable else default,
                doc=_field_doc(mf.attr, mf.spec, default, mf.about),
            ))
        infos = tuple(
            (set_name, tuple(_field_info(f, ms, (ms.get(f.name) or ms.fields[0]).struct) for f in fspecs))
            for set_name, fspecs in fields_by_set[name].items()
        )
        is_root = name == merged.name
        doc = f"{merged.name} message." if is_root else f"Struct {name} of {merged.name}."
        if ms.about:  # a message's or common struct's own description (Kafka's specs give none today)
            doc += " " + _doc_text(ms.about)
        classes.append(ClassPlan(name, is_root, doc, tuple(fields), infos, in_place.get(name, "")))
    classes.reverse()  # children before parents reads better; the root class comes last
    return tuple(classes)


__all__ = [
    "CLIENT_GROUP_MESSAGES", "HOT_MESSAGES", "module_name", "plan_module", "plan_package", "struct_layouts",
    "version_ranges", "versioned_module", "vrange",
]
