"""The roles facts, summaries and filters give a field are the specs' own marks: the ``entityType``
of Kafka's message specs (``topicName``, ``brokerId``, ``groupId``, ``producerId``,
``transactionalId``), read here from the spec files in ``schemas/`` themselves, not from the
planner's tables; and the short list of fields the specs leave unmarked
(``kcodec/data/entity_roles.json``) names only fields the specs leave unmarked.

For every message and version a drawn body is walked along its spec file: every topic name the spec
marks is one of the frame's topics and nothing else is (a CreateTopics config key is not a topic;
ElectLeaders' results name theirs); every group id, producer id and transactional id it marks is a
value of the frame; the broker id of every endpoint is the one it marks; and a request's groups
(``--group``) are the group ids it marks."""

from __future__ import annotations

import json
import keyword
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings

import kcodec
from kcodec.capture import entities
from kcodec.capture.entities import unmarked
from kcodec.capture.facts import frame_facts
from kcodec.capture.groups import GROUP_KEYS, request_groups
from kcodec.codegen.spec.fields import to_snake
from kcodec.protocol import entity_roles, strategies
from kcodec.protocol.codec import message_info

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
_FIND_COORDINATOR = 10


@cache
def _set_dirs() -> dict[str, Path]:
    sets = json.loads((SCHEMAS / "sets.json").read_text(encoding="utf-8"))
    return {s["name"]: SCHEMAS / s["dir"] for s in sets}


@cache
def _spec(set_name: str, message: str) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads((_set_dirs()[set_name] / f"{message}.json").read_text("utf-8"))
    return spec


def _all_specs() -> list[dict[str, Any]]:
    return [json.loads(p.read_text("utf-8")) for d in _set_dirs().values() for p in sorted(d.glob("*.json"))]


def _in(versions: str, v: int) -> bool:
    """Whether ``v`` is in a spec's version range text (``"3+"``, ``"0-2"``, ``"5"``, ``"none"``)."""
    if versions == "none":
        return False
    if versions.endswith("+"):
        return v >= int(versions[:-1])
    lo, _, hi = versions.partition("-")
    return int(lo) <= v <= int(hi or lo)


def _attr(name: str) -> str:
    snake = to_snake(name)
    return snake + "_" if keyword.iskeyword(snake) else snake


def _fields(field: dict[str, Any], spec: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A struct field's own fields (inline, or its common struct's); None for other fields."""
    if "fields" in field:
        fields: list[dict[str, Any]] = field["fields"]
        return fields
    name = field["type"].removeprefix("[]")
    for common in spec.get("commonStructs", ()):
        if common["name"] == name:
            found: list[dict[str, Any]] = common["fields"]
            return found
    return None


class _Marks:
    """The values of the marked fields of one body, found by walking it along its spec file (and of
    the fields of the message in the list of unmarked ones)."""

    def __init__(self, message: str) -> None:
        self.message = message
        self.values: dict[str, list[Any]] = {}  # entityType -> values (arrays flattened), wire order
        self.scalars: list[tuple[str, str]] = []  # (entityType, attribute) of marked non-array values
        self.endpoints: list[tuple[int, str, int]] = []  # (marked broker id, host, port)

    def walk(self, fields: list[dict[str, Any]], obj: Any, spec: dict[str, Any], version: int) -> None:
        here = [f for f in fields if _in(f["versions"], version)]
        names = {f["name"]: f for f in here}
        for f in here:
            value = getattr(obj, _attr(f["name"]))
            if value is None:
                continue
            children = _fields(f, spec)
            entity = f.get("entityType") or unmarked()[0].get((self.message, f["name"]))
            if children is not None:
                for item in value if f["type"].startswith("[]") else [value]:
                    if item is not None:
                        self.walk(children, item, spec, version)
            elif entity is not None:
                array = f["type"].startswith("[]")
                self.values.setdefault(entity, []).extend(value if array else [value])
                if not array:
                    self.scalars.append((entity, _attr(f["name"])))
        if "Host" in names and "Port" in names:
            ids = [f for f in here if f.get("entityType") == "brokerId" and not f["type"].startswith("[]")]
            host, port = obj.host, obj.port
            if ids and host is not None:
                self.endpoints.append((getattr(obj, _attr(ids[0]["name"])), host, port))


def _marks(body: Any, version: int) -> _Marks:
    name = type(body).MESSAGE_NAME
    spec = _spec(message_info(name).owners[version], name)
    marks = _Marks(name)
    marks.walk(spec.get("fields", []), body, spec, version)
    return marks


def _check(body: Any, version: int) -> None:
    name = type(body).MESSAGE_NAME
    where = (name, version)
    marks = _marks(body, version)
    facts = frame_facts(body, version)
    found = {n for n, _ in facts.topics} | {p.topic for p in facts.partitions}
    found.discard(None)
    assert found == set(marks.values.get("topicName", ())), where
    for entity, attr in marks.scalars:
        if entity in entity_roles.KEY_ENTITIES:
            assert attr in facts.values, (where, attr)
    for endpoint in marks.endpoints:
        assert endpoint in facts.brokers, (where, endpoint)
    info = message_info(name)
    if info.kind == "request" and info.api_key is not None and info.api_key != _FIND_COORDINATOR:
        expected = [g for g in marks.values.get("groupId", []) if g]
        assert list(request_groups(info.api_key, version, body)) == expected, where


def test_every_message_and_version_takes_its_roles_from_the_spec() -> None:
    for name, version in strategies.pairs():

        @settings(max_examples=1, deadline=None, database=None, derandomize=True,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(strategies.messages(name, version, max_array_size=2))
        def check(message: Any) -> None:
            _check(message, version)  # noqa: B023

        check()


def test_the_issue_s_cases() -> None:
    # a CreateTopics config key is not a topic; ElectLeaders' results name their topics
    body: Any = kcodec.from_json("CreateTopicsRequest", 7, {
        "topics": [{"name": "orders", "numPartitions": 1, "replicationFactor": 1, "assignments": [],
                    "configs": [{"name": "cleanup.policy", "value": "compact"}]}],
        "timeoutMs": 1000, "validateOnly": False,
    })
    assert frame_facts(body, 7).topics == [("orders", None)]
    body = kcodec.from_json("ElectLeadersResponse", 2, {
        "throttleTimeMs": 0, "errorCode": 0, "replicaElectionResults": [
            {"topic": "orders",
             "partitionResult": [{"partitionId": 3, "errorCode": 84, "errorMessage": None}]},
        ],
    })
    facts = frame_facts(body, 2)
    assert [(p.topic, p.partition, p.error_code) for p in facts.partitions] == [("orders", 3, 84)]
    assert facts.error_codes == [(84, "orders/3")]
    # a consumer's subscription names its topics
    body = kcodec.from_json("ConsumerGroupHeartbeatRequest", 0, {
        "groupId": "g", "memberId": "m", "memberEpoch": 0, "instanceId": None, "rackId": None,
        "rebalanceTimeoutMs": -1, "subscribedTopicNames": ["orders", "audit"], "serverAssignor": None,
        "topicPartitions": None,
    })
    assert frame_facts(body, 0).topics == [("orders", None), ("audit", None)]
    assert request_groups(68, 0, body) == ("g",)
    # AddPartitionsToTxn below v4 names its transaction and producer in fields named for their versions
    body = kcodec.from_json("AddPartitionsToTxnRequest", 3, {
        "v3AndBelowTransactionalId": "tx", "v3AndBelowProducerId": 5, "v3AndBelowProducerEpoch": 1,
        "v3AndBelowTopics": [{"name": "orders", "partitions": [0]}],
    })
    facts = frame_facts(body, 3)
    assert facts.values == {"v3_and_below_transactional_id": "tx", "v3_and_below_producer_id": 5}
    assert facts.topics == [("orders", None)]


def test_the_unmarked_list_names_only_unmarked_fields() -> None:
    fields, names = unmarked()
    specs = _all_specs()

    def every(spec: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        todo = list(spec.get("fields", [])) + [f for c in spec.get("commonStructs", []) for f in c["fields"]]
        while todo:
            f = todo.pop()
            out.append(f)
            todo.extend(f.get("fields", []))
        return out

    for (message, field), entity in fields.items():
        found = [f for s in specs if s["name"] == message for f in every(s) if f["name"] == field]
        assert found, (message, field)
        assert all("entityType" not in f for f in found), (message, field)
        assert entity in ("topicName", "brokerId", "groupId", "producerId", "transactionalId")
    for (field, type_text), (entity, where) in names.items():
        found = [f for s in specs for f in every(s) if f["name"] == field and f["type"] == type_text]
        assert found, field
        assert all("entityType" not in f for f in found), field
        assert (entity, where) in (("topicId", ""), ("partition", "partition")), field
    # the generator plans the extractors, and the runtime builds the others and reads entities, with
    # one copy of the rules and of the list
    assert entities.field_entity is entity_roles.field_entity
    assert entities.unmarked is entity_roles.unmarked


def test_the_group_apis_are_those_whose_requests_name_a_group() -> None:
    fields, _ = unmarked()
    keys = {_FIND_COORDINATOR}
    for spec in _all_specs():
        if spec.get("type") != "request":
            continue
        todo = list(spec.get("fields", [])) + [f for c in spec.get("commonStructs", []) for f in c["fields"]]
        while todo:
            f = todo.pop()
            todo.extend(f.get("fields", []))
            if f.get("entityType") == "groupId" or fields.get((spec["name"], f["name"])) == "groupId":
                keys.add(spec["apiKey"])
    assert keys == GROUP_KEYS
