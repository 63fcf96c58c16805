"""Plan each message's facts extractors (``kcodec.capture.facts``): per struct and version, the fields
holding what people look for in a frame and what each one is to the facts.

What a field *is* comes from the spec: its ``entityType`` (``topicName``, ``brokerId``, ``groupId``,
``producerId``, ``transactionalId``), or, for the fields the specs leave unmarked (topic ids,
partition indexes, a few ids), the list in ``kcodec/data/entity_roles.json`` (:func:`field_entity`).
A ``topicName`` string is a topic name, a ``topicName`` array of strings names topics too; a
``topicId`` uuid is a topic id; a ``partition`` int32 is a partition; the ``brokerId`` of a struct
with a ``host`` and a ``port`` is that broker's id (and the root's ``node_id`` is kept as a value);
a ``groupId``, ``producerId`` or ``transactionalId`` (not an array) is a message-level value
(``KEY_ENTITIES``). ``error_code`` anywhere is an error code; ``records`` are counted. What is worth
showing besides is chosen by attribute: a few partition-level values (``PARTITION_VALUES``) in a
partition struct or the message, a few message-level values (``KEY_VALUES``) anywhere. A child
struct is followed when it holds any of these; an array of structs holding none has only its size
kept. Each struct is planned once per message version, the first time it is met (by the field
holding it). Struct layouts planned alike in several versions share one function, named like the
codec functions (``<Struct>_v<first version>``).

Each message also gets *codes* extractors, for what a JSON line needs of the facts: error codes and
where they are, topics, and the partitions that carry a topic id (from which topic ids are named).
They read only the error codes, topic names, topic ids and partition indexes (``CODE_ROLES``), and
follow only the structs holding one of those; everything else in their facts stays empty.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

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
    "member_id",
    "group_instance_id",
    "generation_id",
    "generation_id_or_member_epoch",
    "member_epoch",
    "protocol_name",
    "leader",
    "key",
    "producer_epoch",
    "acks",
    "isolation_level",
    "session_id",
    "session_epoch",
    "cluster_id",
    "controller_id",
    "allow_auto_topic_creation",
)
#: the entities kept as message-level values (by attribute; first one found wins), not in arrays
KEY_ENTITIES = frozenset({"groupId", "producerId", "transactionalId"})
#: a broker's endpoint (with its ``brokerId``: a broker the frame names)
ENDPOINT = ("host", "port")

#: the roles a codes extractor reads (see the module docstring)
CODE_ROLES = frozenset({"error", "topic", "topics", "topic_id", "partition"})

#: the list of roles of fields the specs leave unmarked (read by the runtime too)
ROLES_FILE = Path(__file__).resolve().parents[1] / "data" / "entity_roles.json"


@cache
def _unmarked() -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], tuple[str, str]]]:
    """``(message, field) -> entity`` and ``(field, type) -> (entity, where)`` of ``ROLES_FILE``."""
    data: dict[str, Any] = json.loads(ROLES_FILE.read_text(encoding="utf-8"))
    fields = {(e["message"], e["field"]): e["entity"] for e in data["fields"]}
    names = {(e["field"], e["type"]): (e["entity"], e.get("in", "")) for e in data["names"]}
    return fields, names


def field_entity(message: str, name: str, type_text: str, entity_type: str | None,
                 in_partition: bool) -> str | None:
    """What a field of ``message`` names: its spec's ``entityType``, else its entry in the list of
    unmarked fields (``ROLES_FILE``; ``in_partition``: the field is in a partition struct); None:
    nothing."""
    if entity_type is not None:
        return entity_type
    fields, names = _unmarked()
    found = fields.get((message, name))
    if found is not None:
        return found
    entity, where = names.get((name, type_text), (None, ""))
    return entity if not where or (where == "partition" and in_partition) else None

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
               module: str, versioned: bool = False) -> FactsModulePlan:
    """The facts module of one message: a root extractor per version and the functions it calls,
    and the same for its codes extractors (``versioned``: to be merged into one per struct)."""
    functions, roots = _plan_all(merged, fields_by_set, codes=False)
    codes, codes_roots = _plan_all(merged, fields_by_set, codes=True)
    return FactsModulePlan(name=merged.name, module=module, sources=sources, functions=functions,
                           roots=roots, codes=codes, codes_roots=codes_roots, versioned=versioned)


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
    root = ms.name == message
    in_partition = "partition" in ms.name.lower() or "partition" in parent_field
    steps: list[FactsStep] = []
    children: list[FactsStep] = []
    here = [f for f in fields_by_set[ms.name].get(owner, ()) if version in f.versions]
    endpoint = set(ENDPOINT) <= {f.snake_name for f in here}
    broker_id = False
    for f in here:
        mf = ms.get(f.name)
        assert mf is not None
        a, t = mf.attr, f.type
        entity = field_entity(message, f.name, t.text, f.entity_type, in_partition)
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
        elif entity == "topicId" and t.text == "uuid":
            steps.append(FactsStep(a, "topic_id"))
        elif entity == "topicName" and t.text in ("string", "[]string"):
            steps.append(FactsStep(a, "topics" if t.is_array else "topic"))
        elif entity == "partition" and t.text == "int32":
            steps.append(FactsStep(a, "partition"))
        elif a in PARTITION_VALUES and not t.is_array and (in_partition or root):
            steps.append(FactsStep(a, "value"))
        elif not t.is_array and (entity in KEY_ENTITIES or a in KEY_VALUES):
            steps.append(FactsStep(a, "key"))
        elif entity == "brokerId" and not t.is_array and not broker_id and (
                endpoint or (root and a == "node_id")):
            broker_id = True  # (the first one: a struct names one broker)
            steps.append(FactsStep(a, "node", local="node_id"))
        elif endpoint and a in ENDPOINT and not t.is_array:
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


__all__ = ["CODE_ROLES", "ENDPOINT", "KEY_ENTITIES", "KEY_VALUES", "PARTITION_VALUES", "ROLES_FILE",
           "field_entity", "plan_facts"]
