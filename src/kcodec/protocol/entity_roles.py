"""What each field of a message is to a frame's facts (``kcodec.capture.facts``): the one set of rules
the generator plans the generated extractors with (``kcodec.codegen.plan_facts``) and the runtime
builds the others with (``kcodec.protocol.facts_build``), so that both find the same facts.

What a field *names* comes from the spec: its ``entityType`` (``topicName``, ``brokerId``,
``groupId``, ``producerId``, ``transactionalId``), or, for the fields the specs leave unmarked (topic
ids, partition indexes, a few ids), the list in ``kcodec/data/entity_roles.json``
(:func:`field_entity`). A ``topicName`` string is a topic name, a ``topicName`` array of strings
names topics too; a ``topicId`` uuid is a topic id; a ``partition`` int32 is a partition; the
``brokerId`` of a struct with a ``host`` and a ``port`` is that broker's id (and the root's
``node_id`` is kept as a value); a ``groupId``, ``producerId`` or ``transactionalId`` (not an array)
is a message-level value (``KEY_ENTITIES``). ``error_code`` anywhere is an error code; ``records``
are counted. What is worth showing besides is chosen by attribute: a few partition-level values
(``PARTITION_VALUES``) in a partition struct or the message, a few message-level values
(``KEY_VALUES``) anywhere. A child struct is followed when it holds any of these; an array of
structs holding none has only its size kept (:func:`facts_steps`).

A *codes* extractor (what a JSON line needs of the facts) reads only the error codes, topic names,
topic ids and partition indexes (``CODE_ROLES``), and follows only the structs holding one of those.

This module imports nothing of kcodec: the generator, which runs before the runtime exists, reads it.
"""

from __future__ import annotations

import json
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

__all__ = [
    "CODE_ROLES",
    "ENDPOINT",
    "KEY_ENTITIES",
    "KEY_VALUES",
    "PARTITION_VALUES",
    "ROLES_FILE",
    "FactsStep",
    "facts_steps",
    "field_entity",
    "in_partition",
    "unmarked",
]

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

ROLES_FILE = "entity_roles.json"  # in kcodec/data: the fields the specs leave unmarked


@cache
def unmarked() -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], tuple[str, str]]]:
    """The list of unmarked fields: ``(message, field) -> entity`` and
    ``(field, type) -> (entity, where)`` (``where``: ``"partition"``, only in a partition struct)."""
    raw = pkgutil.get_data("kcodec", f"data/{ROLES_FILE}")  # (importlib.resources imports tempfile)
    assert raw is not None
    data: dict[str, Any] = json.loads(raw)
    fields = {(e["message"], e["field"]): e["entity"] for e in data["fields"]}
    names = {(e["field"], e["type"]): (e["entity"], e.get("in", "")) for e in data["names"]}
    return fields, names


def field_entity(message: str, name: str, type_text: str, entity_type: str | None,
                 in_partition: bool) -> str | None:
    """What a field of ``message`` (spec name ``name``, type ``type_text``) names: its spec's
    ``entityType``, else its entry in the list of unmarked fields (``in_partition``: the field is in
    a partition struct, see :func:`in_partition`); None: nothing."""
    if entity_type is not None:
        return entity_type
    fields, names = unmarked()
    found = fields.get((message, name))
    if found is not None:
        return found
    entity, where = names.get((name, type_text), (None, ""))
    return entity if not where or (where == "partition" and in_partition) else None


def in_partition(struct: str, parent_field: str) -> bool:
    """Whether a struct is a partition struct: its name or the attribute holding it says so
    (``partitions`` makes OffsetForLeaderEpoch's EpochEndOffset one)."""
    return "partition" in struct.lower() or "partition" in parent_field


@dataclass(frozen=True, slots=True)
class FactsStep:
    """One field a facts extractor reads, and what it is to the facts.

    ``role``: ``error`` (an error code), ``topic`` (a topic name), ``topics`` (an array of topic
    names), ``topic_id``, ``partition`` (a partition index), ``value`` (a partition-level value, or a
    message-level one at the root), ``records`` (its size is counted), ``key`` (a message-level
    value, first one wins), ``count`` (an array of structs with nothing of interest: only its size is
    kept), ``node`` (a broker's id, host or port, read into ``local``: ``node_id``, ``node_host``,
    ``node_port``), ``struct`` (a child struct named ``child``, or an array of them; ``counted``: its
    size is kept too). In the generator's plans (``kcodec.codegen.plan_facts``) ``child`` names the
    child's extractor function instead."""

    attr: str
    role: str
    child: str = ""
    is_array: bool = False
    counted: bool = False
    local: str = ""


#: a field as the rules read it: (spec name, attribute, spec type text, entityType)
RoleField = tuple[str, str, str, "str | None"]


def facts_steps(message: str, struct: str, parent_field: str, fields: Iterable[RoleField],
                follow: Callable[[str, str], bool], codes: bool = False
                ) -> tuple[tuple[FactsStep, ...], tuple[FactsStep, ...]]:
    """The steps of the extractor of ``struct`` (in ``message``, held by the attribute
    ``parent_field``; "" for the message) over its ``fields`` at one version, in wire order, and its
    children (``struct`` steps). ``follow(child struct, attribute)`` plans a child struct and says
    whether it holds anything of interest; ``codes``: a codes extractor's steps (``CODE_ROLES``)."""
    fields = tuple(fields)
    root = struct == message
    partition = in_partition(struct, parent_field)
    endpoint = set(ENDPOINT) <= {attr for _, attr, _, _ in fields}
    steps: list[FactsStep] = []
    children: list[FactsStep] = []
    broker_id = False
    for name, a, t, entity_type in fields:
        is_array = t.startswith("[]")
        element = t[2:] if is_array else t
        entity = field_entity(message, name, t, entity_type, partition)
        if element[:1].isupper():
            if follow(element, a):
                cl = element.lower()
                counted = is_array and "topic" not in cl and "partition" not in cl and not codes
                children.append(FactsStep(a, "struct", element, is_array, counted))
            elif is_array and not codes:
                steps.append(FactsStep(a, "count"))
        elif a == "error_code":
            steps.append(FactsStep(a, "error"))
        elif t == "records":
            steps.append(FactsStep(a, "records"))
        elif entity == "topicId" and t == "uuid":
            steps.append(FactsStep(a, "topic_id"))
        elif entity == "topicName" and t in ("string", "[]string"):
            steps.append(FactsStep(a, "topics" if is_array else "topic"))
        elif entity == "partition" and t == "int32":
            steps.append(FactsStep(a, "partition"))
        elif a in PARTITION_VALUES and not is_array and (partition or root):
            steps.append(FactsStep(a, "value"))
        elif not is_array and (entity in KEY_ENTITIES or a in KEY_VALUES):
            steps.append(FactsStep(a, "key"))
        elif entity == "brokerId" and not is_array and not broker_id and (
                endpoint or (root and a == "node_id")):
            broker_id = True  # (the first one: a struct names one broker)
            steps.append(FactsStep(a, "node", local="node_id"))
        elif endpoint and a in ENDPOINT and not is_array:
            steps.append(FactsStep(a, "node", local=f"node_{a}"))
    if codes:
        steps = [s for s in steps if s.role in CODE_ROLES]
    return tuple(steps), tuple(children)
