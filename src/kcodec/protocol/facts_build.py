"""Facts extractors built at run time from a message's description (``INFO``): for the messages the
generator writes no extractors for (``kcodec._generated.facts_`` holds those of the hot and the
consumer group messages), ``kcodec.capture.facts`` builds them here, once per message, version and
kind (facts or codes), and finds exactly what a generated one would.

What each field is to the facts comes from the rules the generator plans with
(``kcodec.protocol.entity_roles.facts_steps``); each struct's extractor is a closure over the
attributes it reads, grouped by what it does with them, resolved when it is built (no look-up in
the description per call). What a step does is what the generated extractors do (their template,
``facts.py.j2``): an extractor adds to a ``Facts`` its error codes and where they are, topics and
topic-partitions with their values, brokers, key values, the sizes of records and of other arrays
of structs; a codes extractor only the error codes, topics and the partitions carrying a topic id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from kcodec.protocol.codec import message_info
from kcodec.protocol.entity_roles import FactsStep, facts_steps
from kcodec.protocol.facts_model import Facts, PartitionFacts, where
from kcodec.protocol.json_values import uuid_text
from kcodec.protocol.schema import MessageInfo

__all__ = ["build_extractor"]

Extractor = Callable[[Any, Facts], None]


class _StructExtractor(Protocol):
    """A struct's extractor: the struct, the facts, the topic and topic id of the struct holding it
    (none for the message)."""

    def __call__(self, o: Any, facts: Facts, topic: str | None = None, topic_id: str | None = None,
                 /) -> None: ...


def build_extractor(message: str, version: int, codes: bool = False) -> Extractor:
    """The facts extractor of ``message`` at ``version`` (``codes``: its codes extractor), built from
    its description (the caller checks that the message has the version)."""
    info = message_info(message)
    built: dict[str, _StructExtractor | None] = {}
    root = _struct(info, message, version, "", codes, built)
    if root is None:
        return _nothing
    return root


def _nothing(o: Any, facts: Facts) -> None:
    """The extractor of a message holding nothing of interest."""


def _struct(info: MessageInfo, struct: str, version: int, parent_field: str, codes: bool,
            built: dict[str, _StructExtractor | None]) -> _StructExtractor | None:
    """The extractor of ``struct`` at ``version`` (None: it holds nothing of interest), built once per
    message version, the first time it is met (as the generator plans it)."""
    if struct in built:
        return built[struct]
    built[struct] = None  # (no recursive structs in Kafka's specs; this guards anyway)

    def follow(child: str, attr: str) -> bool:
        return _struct(info, child, version, attr, codes, built) is not None

    rows = [(f.name, f.attr, f.type, f.entity_type) for f in info.fields_at(struct, version)]
    steps, children = facts_steps(info.name, struct, parent_field, rows, follow, codes)
    if not steps and not children:
        return None
    kids = tuple((c.attr, built[c.child], c.is_array, c.counted) for c in children)
    fn = built[struct] = _extractor(steps, kids, struct == info.name, codes)
    return fn


def _attrs(steps: tuple[FactsStep, ...], role: str) -> tuple[str, ...]:
    return tuple(s.attr for s in steps if s.role == role)


def _node(steps: tuple[FactsStep, ...], local: str) -> str | None:
    return next((s.attr for s in steps if s.role == "node" and s.local == local), None)


def _extractor(steps: tuple[FactsStep, ...], children: tuple[tuple[str, Any, bool, bool], ...],
               root: bool, codes: bool) -> _StructExtractor:
    """One struct's extractor: its steps grouped by role (each group writes its own part of the facts
    or its own local, so the order of the facts is the wire order the generated code keeps)."""
    counts, errors, records_ = _attrs(steps, "count"), _attrs(steps, "error"), _attrs(steps, "records")
    topic_, topics_, ids = _attrs(steps, "topic"), _attrs(steps, "topics"), _attrs(steps, "topic_id")
    partitions, values_, keys = _attrs(steps, "partition"), _attrs(steps, "value"), _attrs(steps, "key")
    node_id_attr, host_attr, port_attr = (_node(steps, n) for n in ("node_id", "node_host", "node_port"))
    # a broker's endpoint (a struct with a host has a port: see entity_roles.facts_steps)
    endpoint = None if host_attr is None or port_attr is None else (host_attr, port_attr)
    root_values = root and bool(values_)
    root_node_id = root and node_id_attr is not None

    def extract(o: Any, facts: Facts, topic: str | None = None, topic_id: str | None = None) -> None:
        values: dict[str, Any] = {}
        partition: int | None = None
        records: int | None = None
        error_code = 0
        new_topic = False
        node_id = None if node_id_attr is None else getattr(o, node_id_attr)
        for a in counts:
            if v := getattr(o, a):
                facts.counts[a] = facts.counts.get(a, 0) + len(v)
        for a in errors:
            if v := getattr(o, a):
                error_code = v
        for a in topic_:
            if (v := getattr(o, a)) is not None:
                topic, new_topic = v, True
        for a in topics_:
            if (v := getattr(o, a)) is not None:
                facts.topics.extend((t, None) for t in v)
        for a in ids:
            if (v := getattr(o, a)) is not None:
                topic_id, new_topic = uuid_text(v), True
        for a in partitions:
            if (v := getattr(o, a)) is not None:
                partition = v
        for a in values_:
            if (v := getattr(o, a)) is not None:
                values[a] = v
        for a in records_:
            if (v := getattr(o, a)) is not None:
                records = len(v)
                facts.records_bytes += records
        for a in keys:
            if (v := getattr(o, a)) is not None:
                facts.values.setdefault(a, v)
        if new_topic and partition is None:
            facts.topics.append((topic, topic_id))
        if partition is not None and (not codes or topic_id is not None):
            facts.partitions.append(PartitionFacts(topic, topic_id, partition, error_code, values, records))
        elif root_values:
            for k, v in values.items():
                facts.values.setdefault(k, v)
        if endpoint is not None and (host := getattr(o, endpoint[0])) is not None and (
                port := getattr(o, endpoint[1])) is not None:
            facts.brokers.append((int(node_id if node_id is not None else -1), host, port))
        elif root_node_id and node_id is not None:
            facts.values.setdefault("node_id", node_id)
        if error_code:
            facts.error_codes.append((error_code, where(topic or topic_id, partition)))
        for a, child, is_array, counted in children:
            if is_array:
                if items := getattr(o, a):
                    if counted:
                        facts.counts[a] = facts.counts.get(a, 0) + len(items)
                    for x in items:
                        if x is not None:
                            child(x, facts, topic, topic_id)
            elif (v := getattr(o, a)) is not None:
                child(v, facts, topic, topic_id)

    return extract
