"""The test oracle of ``kcodec.capture.facts``: the generic walker the generated extractors replaced.

It reads the schema at run time (``message_info``) and walks a decoded body field by field, with
the roles of ``kcodec.protocol.entity_roles`` (``field_entity``: a field's ``entityType``, or its
entry in the list of unmarked fields) and its value tables; the tests check that the extractors
(generated, or built at run time) find exactly what it finds (``test_facts_extractors``), and that
those roles are the specs' marks (``test_facts_roles``, which reads the spec files themselves).

The facts people look for in a frame, pulled out of its body: error codes (and where), the
topic-partitions it is about with their offsets and leader epochs, brokers, and key fields (group,
member, generation, client software, ...). Shared by the summaries, the filters and the statistics
of ``kcodec decode-capture``, and by anything that flattens frames into table rows.

:func:`frame_facts` walks only the parts of a body that hold such fields, by a plan made once per
(message, version) from the schema: a field is recognised by its name and the struct it is in
(``ErrorCode`` anywhere; topic names, topic ids, partitions, brokers, groups, producers and
transactions by their role; leader epochs, offsets, ...).
"""

from __future__ import annotations

from typing import Any

from kcodec.protocol.codec import message_info
from kcodec.protocol.entity_roles import (
    ENDPOINT,
    KEY_ENTITIES,
    KEY_VALUES,
    PARTITION_VALUES,
    field_entity,
)
from kcodec.protocol.facts_model import Facts, PartitionFacts
from kcodec.protocol.model import Message, Uuid

# plan entry: (attr, role, child struct or None, is array); role "count": an array of structs with
# nothing of interest in them (only its length is kept)
_Plan = tuple[tuple[str, str, str | None, bool], ...]
_plan_sets: dict[tuple[str, int], dict[str, _Plan]] = {}


def _plans(message: str, version: int) -> dict[str, _Plan]:
    """The plan of every struct of ``message`` at ``version`` (built once)."""
    key = (message, version)
    found = _plan_sets.get(key)
    if found is None:
        found = _plan_sets[key] = {}
        _build(message, message, version, found)
    return found


def _build(
    message: str, struct: str, version: int, plans: dict[str, _Plan], parent_field: str = ""
) -> bool:
    """Make the plan of ``struct`` (and its children); True if it holds anything of interest.
    ``parent_field``: the field holding it (``partitions`` makes it a partition struct whatever its
    name, e.g. OffsetForLeaderEpoch's EpochEndOffset)."""
    if struct in plans:
        return bool(plans[struct])
    plans[struct] = ()  # (no recursive structs in Kafka's specs; this guards anyway)
    info = message_info(message)
    in_partition = "partition" in struct.lower() or "partition" in parent_field
    root = struct == message
    out: list[tuple[str, str, str | None, bool]] = []
    here = info.fields_at(struct, version)
    endpoint = set(ENDPOINT) <= {f.attr for f in here}
    broker_id = False
    for f in here:
        child = f.struct_name
        a = f.attr
        entity = field_entity(message, f.name, f.type, f.entity_type, in_partition)
        if child is not None:
            if _build(message, child, version, plans, a):
                out.append((a, "struct", child, f.is_array))
            elif f.is_array:
                out.append((a, "count", child, True))
        elif a == "error_code":
            out.append((a, "error", None, False))
        elif f.type == "records":
            out.append((a, "records", None, False))
        elif entity == "topicId" and f.type == "uuid":
            out.append((a, "topic_id", None, False))
        elif entity == "topicName" and f.type == "string":
            out.append((a, "topic", None, False))
        elif entity == "topicName" and f.type == "[]string":
            out.append((a, "topics", None, False))
        elif entity == "partition" and f.type == "int32":
            out.append((a, "partition", None, False))
        elif a in PARTITION_VALUES and not f.is_array and (in_partition or root):
            out.append((a, "value", None, False))
        elif not f.is_array and (entity in KEY_ENTITIES or a in KEY_VALUES):
            out.append((a, "key", None, False))
        elif entity == "brokerId" and not f.is_array and not broker_id and (
                endpoint or (root and a == "node_id")):
            broker_id = True
            out.append((a, "node_id", None, False))
        elif endpoint and a in ENDPOINT and not f.is_array:
            out.append((a, "node", None, False))
    plans[struct] = tuple(out)
    return bool(out)


class _Walker:
    __slots__ = ("facts", "plans")

    def __init__(self, message: str, version: int) -> None:
        self.plans = _plans(message, version)
        self.facts = Facts()

    def walk(self, struct: str, obj: Any, topic: str | None, topic_id: str | None, depth: int) -> None:
        facts = self.facts
        plan = self.plans[struct]
        children: list[tuple[str, str, Any, bool]] = []
        errors: list[int] = []
        part: PartitionFacts | None = None
        node: dict[str, Any] = {}
        values: dict[str, Any] = {}
        records: int | None = None
        new_topic = False
        for attr, role, child, is_array in plan:
            value = getattr(obj, attr)
            if value is None:
                continue
            if role == "struct":
                assert child is not None
                children.append((attr, child, value, is_array))
            elif role == "count":
                if value:
                    facts.counts[attr] = facts.counts.get(attr, 0) + len(value)
            elif role == "error":
                if value:
                    errors.append(value)
            elif role == "topic":
                topic, new_topic = value, True
            elif role == "topics":
                facts.topics.extend((t, None) for t in value)
            elif role == "topic_id":
                topic_id, new_topic = str(value if isinstance(value, Uuid) else Uuid(value)), True
            elif role == "partition":
                part = PartitionFacts(topic, topic_id, value)
            elif role == "value":
                values[attr] = value
            elif role == "records":
                records = len(value)
                facts.records_bytes += records
            elif role == "key":
                facts.values.setdefault(attr, value)
            elif role == "node_id":
                node["node_id"] = value
            else:
                node[attr] = value
        if new_topic and part is None:
            facts.topics.append((topic, topic_id))
        if part is not None:
            part.topic, part.topic_id = topic, topic_id
            part.values = values
            part.records_bytes = records
            if errors:
                part.error_code = errors[0]
            facts.partitions.append(part)
        elif values and depth == 0:
            for k, v in values.items():
                facts.values.setdefault(k, v)
        if "host" in node and "port" in node:
            facts.brokers.append(
                (int(node.get("node_id", -1)), node["host"], node["port"])
            )
        elif "node_id" in node and depth == 0:
            facts.values.setdefault("node_id", node["node_id"])
        if errors:
            where = _where(topic or topic_id, part.partition if part is not None else None)
            facts.error_codes.extend((code, where) for code in errors)
        for attr, child, value, is_array in children:
            if is_array:
                if not value:
                    continue
                if "topic" not in child.lower() and "partition" not in child.lower():
                    facts.counts[attr] = facts.counts.get(attr, 0) + len(value)
                for item in value:
                    if item is not None:
                        self.walk(child, item, topic, topic_id, depth + 1)
            else:
                self.walk(child, value, topic, topic_id, depth + 1)


def _where(topic: str | None, partition: int | None) -> str:
    if topic is None and partition is None:
        return ""
    return f"{topic or '?'}" + ("" if partition is None else f"/{partition}")


def reference_facts(body: Message, version: int) -> Facts:
    """The facts of a decoded body, found by walking it generically (see the module docstring)."""
    name = type(body).MESSAGE_NAME
    walker = _Walker(name, version)
    walker.walk(name, body, None, None, 0)
    return walker.facts
