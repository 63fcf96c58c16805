"""Plan each message's conversion to Kafka JSON (``JsonConverter.write``): per struct and version, the
members in spec order, the expression converting each value and when a tagged one is written.

The rules (those of ``kcodec.protocol.jsonconv``, and of Kafka's generated converters): a member per field
present at the version, named by the field's camelCase name; tagged fields only when their value is
not the default of the spec set owning the version; null stays null whatever the field; arrays are
copied element by element; bytes and records are standard base64 (records may be expanded by a
converter the caller passes, ``rec``); uuids are Kafka's URL-safe base64 text; numbers, booleans and
strings are themselves. Struct layouts that convert alike in several versions share one function,
named like the codec functions (``<Struct>_v<first version>``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kcodec.codegen.merge import MergedMessage, MergedStruct
from kcodec.codegen.program import JsonField, JsonFunction, JsonModulePlan
from kcodec.codegen.spec.fields import STRUCT, FieldSpec
from kcodec.codegen.spec.versions import version_ranges
from kcodec.codegen.wire_types import WIRE_TYPES

#: names a converter's locals must not take: its parameters, the element of a comprehension, the
#: dict being built, and the builtins it calls
RESERVED = frozenset({"o", "d", "rec", "x", "list", "len"})

#: the helper a primitive's JSON representation calls (those missing are written as they are)
HELPERS = {"base64": "_b64", "uuid": "_uuid"}

FieldsBySet = dict[str, dict[str, tuple[FieldSpec, ...]]]  # class -> spec set -> its fields there


@dataclass(slots=True)
class _Module:
    """What planning one message's JSON module collects: functions (children first), ids, imports."""

    ids: dict[tuple[object, ...], str] = field(default_factory=dict)
    functions: dict[str, JsonFunction] = field(default_factory=dict)
    served: dict[str, list[int]] = field(default_factory=dict)
    classes: dict[str, None] = field(default_factory=dict)
    defaults: dict[str, str] = field(default_factory=dict)
    uses: set[str] = field(default_factory=set)


def plan_json(merged: MergedMessage, fields_by_set: FieldsBySet, sources: tuple[str, ...],
              module: str) -> JsonModulePlan:
    """The JSON module of one message: a root converter per version and the functions it calls."""
    out = _Module()
    roots = []
    for v in merged.versions:
        roots.append((v, _function(merged.root, v, merged.owner(v).source, fields_by_set, out)))
    functions = tuple(
        JsonFunction(f.id, f.cls, version_ranges(out.served[f.id]), f.records, f.literal, f.members,
                     tuple(out.served[f.id]))
        for f in out.functions.values()
    )
    return JsonModulePlan(
        name=merged.name, module=module, sources=sources, classes=tuple(sorted(out.classes)),
        defaults=tuple(out.defaults.items()), uses=tuple(sorted(out.uses)), functions=functions,
        roots=tuple(roots), records_versions=tuple(v for v, fid in roots if out.functions[fid].records),
    )


def _function(ms: MergedStruct, version: int, owner: str, fields_by_set: FieldsBySet, out: _Module) -> str:
    """The id of the converter of ``ms`` at ``version`` (planned, with its children, on first need)."""
    literal: list[JsonField] = []
    members: list[JsonField] = []
    records = False
    for f in fields_by_set[ms.name].get(owner, ()):
        if version not in f.versions:
            continue
        mf = ms.get(f.name)
        assert mf is not None
        local = mf.attr if mf.attr not in RESERVED else f"{mf.attr}_value"
        child = None
        if mf.struct is not None:
            child = _function(mf.struct, version, owner, fields_by_set, out)
            records = records or out.functions[child].records
        records = records or f.type.primitive == "records"
        if version in f.tagged_versions:
            expr = _value(f, local, child, out, bind=False)
            condition = _not_default(f, local, mf.struct, out)
            members.append(JsonField(f.json_name, expr, condition, local, mf.attr))
        else:
            expr = _value(f, f"o.{mf.attr}", child, out, bind=True, local=local)
            (members if members else literal).append(JsonField(f.json_name, expr))
    key = (ms.name, records, tuple(literal), tuple(members))
    fid = out.ids.get(key)
    if fid is None:
        fid = out.ids[key] = f"{ms.name}_v{version}"
        out.functions[fid] = JsonFunction(fid, ms.name, "", records, tuple(literal), tuple(members))
        out.served[fid] = []
        out.classes[ms.name] = None
        if records:
            out.uses.add("b64")  # rec's default: Kafka's format, one base64 string
    if version not in out.served[fid]:
        out.served[fid].append(version)
    return fid


def _value(f: FieldSpec, source: str, child: str | None, out: _Module, *, bind: bool, local: str = "") -> str:
    """The expression converting ``source`` (a local already read, or ``o.<attr>`` read once into
    ``local`` when ``bind``) to JSON; None stays None whatever the field's type."""
    t = f.type
    prim = t.element.primitive if t.is_array and t.element is not None else t.primitive
    if child is not None:
        records = out.functions[child].records
        convert = f"j_{child}({{0}}, rec)" if records else f"j_{child}({{0}})"
    elif prim == "records":
        convert = "rec({0})"
    else:
        helper = HELPERS.get(WIRE_TYPES[prim or ""].json)
        if helper is not None:
            out.uses.add(helper[1:])
        convert = f"{helper}({{0}})" if helper else ""
    if not t.is_array and not convert:
        return source
    value = f"({local} := {source})" if bind else source
    name = local if bind else source
    if t.is_array:
        element = convert.format("x")
        items = f"[None if x is None else {element} for x in {name}]" if convert else f"list({name})"
        return f"None if {value} is None else {items}"
    return f"None if {value} is None else {convert.format(name)}"


#: struct-valued tagged fields of at most this many fields are compared with their default inline
_INLINE_FIELDS = 8


def _not_default(f: FieldSpec, local: str, struct: MergedStruct | None, out: _Module) -> str:
    """When a tagged field is written: its value differs from the owning spec set's default."""
    default = f.default_value()
    if default is None:
        return f"{local} is not None"
    if f.type.is_array:
        return f"{local} is None or len({local}) != 0"
    if default is STRUCT:
        assert struct is not None
        name = f"_DEFAULT_{struct.name}"
        out.defaults[name] = f"{struct.name}()"
        out.classes[struct.name] = None
        if len(struct.fields) > _INLINE_FIELDS:
            return f"{local} != {name}"
        # ``!=`` spelt out (Struct.__eq__ without its call and loop): another type, a field off its
        # default, or tagged fields kcodec does not know
        differs = [f"type({local}) is not {struct.name}"]
        differs += [f"{local}.{mf.attr} != {name}.{mf.attr}" for mf in struct.fields]
        differs.append(f"{local}._unknown_tagged_fields")
        return " or ".join(differs)
    if f.type.primitive == "uuid":
        assert isinstance(default, bytes)
        out.uses.add("Uuid")
        if default == bytes(16):
            out.defaults["_ZERO_UUID"] = "_Uuid.ZERO"
            return f"{local} != _ZERO_UUID"
        return f"{local} != _Uuid(bytes.fromhex({default.hex()!r}))"
    return f"{local} != {default!r}"


__all__ = ["RESERVED", "plan_json"]
