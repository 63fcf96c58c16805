"""Plan each message's facts extractors (``kcodec.capture.facts``): per struct and version, the fields
holding what people look for in a frame and what each one is to the facts.

The rules: a field is recognised by its attribute, its type and the struct it is in. ``error_code``
anywhere is an error code; ``name``/``topic``/``topic_name`` (a string) in a topic struct (a struct
other than the message whose name says ``topic``) is a topic name; a uuid ``topic_id`` is a topic id;
``partition_index``/``partition``/``index``/``partition_id`` (an int32) in a partition struct (its
name, or the field holding it, says ``partition``) is a partition; a few partition-level values
(``PARTITION_VALUES``) in a partition struct or the message; a few message-level values
(``KEY_VALUES``) anywhere; a broker's ``node_id``/``host``/``port``/``broker_id``; ``records`` are
counted. A child struct is followed when it holds any of these; an array of structs holding none has
only its size kept. Each struct is planned once per message version, the first time it is met (by
the field holding it). Struct layouts planned alike in several versions share one function, named
like the codec functions (``<Struct>_v<first version>``).

Each message also gets *codes* extractors, for what a JSON line needs of the facts: error codes and
where they are, topics, and the partitions that carry a topic id (from which topic ids are named).
They read only the error codes, topic names, topic ids and partition indexes (``CODE_ROLES``), and
follow only the structs holding one of those; everything else in their facts stays empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kcodec.codegen.merge import MergedMessage, MergedStruct
from kcodec.codegen.program import FactsFunction, FactsModulePlan, FactsStep
from kcodec.codegen.spec.fields import FieldSpec
from kcodec.codegen.spec.versions import version_ranges

#: partition-level values worth showing, by attribute (the order they are shown in)
PARTITION_VALUES = (
    "leader_id",
    "leader_epoch",
    "current_leader_epoch",
    "committed_leader_epoch",
    "last_fetched_epoch",
    "fetch_offset",
    "base_offset",
    "committed_offset",
    "high_watermark",
    "last_stable_offset",
    "log_start_offset",
    "timestamp",
    "offset",
    "end_offset",
    "epoch",
)
#: message-level values worth showing (any depth outside topics/partitions, first one found wins)
KEY_VALUES = (
    "client_software_name",
    "client_software_version",
    "group_id",
    "member_id",
    "group_instance_id",
    "generation_id",
    "generation_id_or_member_epoch",
    "member_epoch",
    "protocol_name",
    "leader",
    "key",
    "transactional_id",
    "producer_id",
    "producer_epoch",
    "acks",
    "isolation_level",
    "session_id",
    "session_epoch",
    "cluster_id",
    "controller_id",
    "allow_auto_topic_creation",
)
TOPIC_NAMES = ("name", "topic", "topic_name")
PARTITION_IDS = ("partition_index", "partition", "index", "partition_id")
NODE_FIELDS = ("node_id", "host", "port", "broker_id")

#: the roles a codes extractor reads (see the module docstring)
CODE_ROLES = frozenset({"error", "topic", "topic_id", "partition"})

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
                      f.locals_, f.broker, f.node_id, f.codes)
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
    lower = ms.name.lower()
    root = ms.name == message
    in_topic = "topic" in lower and not root
    in_partition = "partition" in lower or "partition" in parent_field
    steps: list[FactsStep] = []
    children: list[FactsStep] = []
    for f in fields_by_set[ms.name].get(owner, ()):
        if version not in f.versions:
            continue
        mf = ms.get(f.name)
        assert mf is not None
        a, t = mf.attr, f.type
        if mf.struct is not None:
            child = _struct(mf.struct, message, version, owner, fields_by_set, planned, out, a, codes)
            if child:
                cl = mf.struct.name.lower()
                counted = t.is_array and "topic" not in cl and "partition" not in cl and not codes
                children.append(FactsStep(a, "struct", child, t.is_array, counted))
            elif t.is_array and not codes:
                steps.append(FactsStep(a, "count"))
        elif a == "error_code":
            steps.append(FactsStep(a, "error"))
        elif t.text == "records":
            steps.append(FactsStep(a, "records"))
        elif a == "topic_id" and t.text == "uuid":
            steps.append(FactsStep(a, "topic_id"))
        elif in_topic and a in TOPIC_NAMES and t.text == "string":
            steps.append(FactsStep(a, "topic"))
        elif in_partition and a in PARTITION_IDS and t.text == "int32":
            steps.append(FactsStep(a, "partition"))
        elif a in PARTITION_VALUES and not t.is_array and (in_partition or root):
            steps.append(FactsStep(a, "value"))
        elif a in KEY_VALUES and not t.is_array:
            steps.append(FactsStep(a, "key"))
        elif a in NODE_FIELDS and not t.is_array:
            steps.append(FactsStep(a, "node", local=f"node_{a}"))
    if codes:
        steps = [s for s in steps if s.role in CODE_ROLES]
    if not steps and not children:
        return ""
    fn = _function(ms.name, version, root, steps, children, codes)
    fid = planned[ms.name].fid = _register(out, fn, version)
    return fid


def _function(cls: str, version: int, root: bool, steps: list[FactsStep],
              children: list[FactsStep], codes: bool = False) -> FactsFunction:
    roles = {s.role for s in steps}
    nodes = {s.attr: s.local for s in steps if s.role == "node"}
    locals_ = tuple(
        name
        for name, role in (("values", "value"), ("partition", "partition"), ("error_code", "error"),
                           ("records", "records"), ("new_topic", "topic"))
        if role in roles or (name == "new_topic" and "topic_id" in roles)
    ) + tuple(nodes.values())
    broker = ""
    if "host" in nodes and "port" in nodes:
        ids = [nodes[a] for a in ("node_id", "broker_id") if a in nodes]
        broker = "-1"
        for local in reversed(ids):
            broker = f"{local} if {local} is not None else {broker}"
    node_id = nodes.get("node_id", "") if root else ""
    return FactsFunction(f"{cls}_v{version}", cls, "", root, tuple(steps), tuple(children), locals_,
                         broker, node_id, codes)


__all__ = ["CODE_ROLES", "KEY_VALUES", "PARTITION_IDS", "PARTITION_VALUES", "TOPIC_NAMES", "plan_facts"]
