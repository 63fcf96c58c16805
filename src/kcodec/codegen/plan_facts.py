"""Plan each message's facts extractors (``kcodec.capture.facts``): per struct and version, the fields
holding what people look for in a frame and what each one is to the facts.

What each field is to the facts, and which child structs are followed, is decided by
``kcodec.protocol.entity_roles`` (:func:`~kcodec.protocol.entity_roles.facts_steps`: the specs'
``entityType``, a short list of the fields they leave unmarked, and a few values chosen by
attribute), the rules the runtime also builds the extractors of the other messages with
(``kcodec.protocol.facts_build``). Each struct is planned once per message version, the first time
it is met (by the field holding it). Struct layouts planned alike in several versions share one
function, named like the codec functions (``<Struct>_v<first version>``).

Each message also gets *codes* extractors, for what a JSON line needs of the facts: error codes and
where they are, topics, and the partitions that carry a topic id (from which topic ids are named).
They read only the error codes, topic names, topic ids and partition indexes (``CODE_ROLES``), and
follow only the structs holding one of those; everything else in their facts stays empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kcodec.codegen.merge import MergedMessage, MergedStruct
from kcodec.codegen.program import FactsFunction, FactsModulePlan
from kcodec.codegen.spec.fields import FieldSpec
from kcodec.codegen.spec.versions import version_ranges
from kcodec.protocol.entity_roles import FactsStep, RoleField, facts_steps

FieldsBySet = dict[str, dict[str, tuple[FieldSpec, ...]]]  # class -> spec set -> its fields there


@dataclass(slots=True)
class _Planned:
    """One struct planned at one version: its function id ("" if it holds nothing of interest)."""

    fid: str


@dataclass(slots=True)
class _Module:
    ids: dict[tuple[object, ...], str] = field(default_factory=dict)
    functions: dict[str, FactsFunction] = field(default_factory=dict)
    served: dict[str, list[int]] = field(default_factory=dict)


def plan_facts(merged: MergedMessage, fields_by_set: FieldsBySet, sources: tuple[str, ...],
               module: str) -> FactsModulePlan:
    """The facts module of one message: a root extractor per version and the functions it calls,
    and the same for its codes extractors."""
    functions, roots = _plan_all(merged, fields_by_set, codes=False)
    codes, codes_roots = _plan_all(merged, fields_by_set, codes=True)
    return FactsModulePlan(name=merged.name, module=module, sources=sources, functions=functions,
                           roots=roots, codes=codes, codes_roots=codes_roots)


def _plan_all(merged: MergedMessage, fields_by_set: FieldsBySet, codes: bool
              ) -> tuple[tuple[FactsFunction, ...], tuple[tuple[int, str], ...]]:
    out = _Module()
    roots = []
    for v in merged.versions:
        planned: dict[str, _Planned] = {}
        fid = _struct(merged.root, merged.name, v, merged.owner(v).source, fields_by_set, planned, out, "",
                      codes)
        roots.append((v, fid or _empty_root(merged.root, v, out)))
    functions = tuple(
        FactsFunction(f.id, f.cls, version_ranges(out.served[f.id]), f.root, f.steps, f.children,
                      f.locals_, f.broker, f.node_id, f.codes, tuple(out.served[f.id]))
        for f in out.functions.values()
    )
    return functions, tuple(roots)


def _empty_root(ms: MergedStruct, version: int, out: _Module) -> str:
    """The extractor of a message holding nothing of interest (it finds nothing)."""
    return _register(out, FactsFunction(f"{ms.name}_v{version}", ms.name, "", True, (), (), ()), version)


def _register(out: _Module, fn: FactsFunction, version: int) -> str:
    key = (fn.cls, fn.root, fn.steps, fn.children, fn.locals_, fn.broker, fn.node_id, fn.codes)
    fid = out.ids.get(key)
    if fid is None:
        fid = out.ids[key] = fn.id
        out.functions[fid] = fn
        out.served[fid] = []
    if version not in out.served[fid]:
        out.served[fid].append(version)
    return fid


def _struct(ms: MergedStruct, message: str, version: int, owner: str, fields_by_set: FieldsBySet,
            planned: dict[str, _Planned], out: _Module, parent_field: str, codes: bool = False) -> str:
    """The id of the extractor of ``ms`` at ``version`` ("" if it holds nothing of interest);
    ``parent_field``: the attribute holding it (``partitions`` makes it a partition struct whatever
    its name, e.g. OffsetForLeaderEpoch's EpochEndOffset); ``codes``: a codes extractor's (only
    ``CODE_ROLES``)."""
    found = planned.get(ms.name)
    if found is not None:
        return found.fid
    planned[ms.name] = _Planned("")  # (no recursive structs in Kafka's specs; this guards anyway)
    rows: list[RoleField] = []
    subs: dict[str, MergedStruct] = {}
    for f in fields_by_set[ms.name].get(owner, ()):
        mf = ms.get(f.name)
        if version in f.versions and mf is not None:
            rows.append((f.name, mf.attr, f.type.text, f.entity_type))
            if mf.struct is not None:
                subs[mf.struct.name] = mf.struct

    def follow(child: str, attr: str) -> bool:
        return bool(_struct(subs[child], message, version, owner, fields_by_set, planned, out, attr, codes))

    read, kids = facts_steps(message, ms.name, parent_field, rows, follow, codes)
    steps = [FactsStep(s.attr, s.role, local=s.local) for s in read]
    children = [FactsStep(c.attr, "struct", planned[c.child].fid, c.is_array, c.counted) for c in kids]
    if not steps and not children:
        return ""
    fn = _function(ms.name, version, ms.name == message, steps, children, codes)
    fid = planned[ms.name].fid = _register(out, fn, version)
    return fid


def _function(cls: str, version: int, root: bool, steps: list[FactsStep],
              children: list[FactsStep], codes: bool = False) -> FactsFunction:
    roles = {s.role for s in steps}
    nodes = {s.local for s in steps if s.role == "node"}
    locals_ = tuple(
        name
        for name, role in (("values", "value"), ("partition", "partition"), ("error_code", "error"),
                           ("records", "records"), ("new_topic", "topic"))
        if role in roles or (name == "new_topic" and "topic_id" in roles)
    ) + tuple(local for local in ("node_id", "node_host", "node_port") if local in nodes)
    broker = ""
    if "node_host" in nodes:  # (a struct with a host has a port: see _struct)
        broker = "node_id if node_id is not None else -1" if "node_id" in nodes else "-1"
    node_id = "node_id" if root and "node_id" in nodes else ""
    return FactsFunction(f"{cls}_v{version}", cls, "", root, tuple(steps), tuple(children), locals_,
                         broker, node_id, codes)


__all__ = ["plan_facts"]
