"""Every released version of every message of Apache Kafka 3.9.x and 4.x is defined by ``schemas/``.

The releases' own specs come from their ``kafka-clients`` jars (``tools/release_specs.py``); the
merged spec sets own each version as the code generator takes it (the newest set defining it).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from release_jars import release_jar, tool

from kcodec.codegen.generate import merged_messages
from kcodec.codegen.spec import MessageSpec

ROOT = Path(__file__).resolve().parent.parent
rs = tool("release_specs")
jars = tool("kafka_jars")

#: fields a newer release renamed in versions an older release shipped (TxnOffsetCommitRequest's
#: GenerationId -> GenerationIdOrMemberEpoch in 4.4, VoteRequest's Candidate* -> Replica* in 4.0,
#: StreamsGroupHeartbeatResponse's AcceptableRecoveryLag -> AcceptableRecoveryLagLegacy in 4.4); the
#: bytes are the same (the comparison proves it), kcodec names them as the newest set does
OLD_39 = {
    ("TxnOffsetCommitRequest", 3), ("TxnOffsetCommitRequest", 4),
    ("VoteRequest", 0), ("VoteRequest", 1),
}
RENAMES: dict[str, set[tuple[str, int]]] = {
    "3.9.0": OLD_39,
    "3.9.2": OLD_39,
    "4.0.2": {("TxnOffsetCommitRequest", v) for v in (3, 4, 5)},
    "4.1.2": {("TxnOffsetCommitRequest", v) for v in (3, 4, 5)},
    "4.2.2": {("TxnOffsetCommitRequest", v) for v in (3, 4, 5)} | {("StreamsGroupHeartbeatResponse", 0)},
    "4.3.1": {("TxnOffsetCommitRequest", v) for v in (3, 4, 5)} | {("StreamsGroupHeartbeatResponse", 0)},
    "4.4.0": set(),
}


@pytest.fixture(scope="module")
def owners() -> Any:
    return rs.merged_owners(ROOT / "schemas")


@pytest.mark.parametrize("release", sorted(RENAMES))
def test_every_released_version_is_defined_with_the_same_wire_schema(release: str, owners: Any) -> None:
    assert set(RENAMES) == {"3.9.0", *jars.LAST_PATCH_RELEASES}
    found = rs.compare_release(release, rs.release_specs(release_jar(release)), owners)
    assert found.problems == []
    assert found.checked > 550  # every request, response, header and data spec version
    renamed = {(line.split()[1], int(line.split()[2][1:])) for line in found.renames}
    assert renamed == RENAMES[release], found.renames


def test_the_newest_release_is_imported_whole() -> None:
    """Every spec of the newest release's jar is in schemas/ as the importer writes it."""
    jar = release_jar("4.4.0")
    for spec in rs.release_specs(jar):
        assert json.loads((ROOT / "schemas" / "4.4.0" / f"{spec['name']}.json").read_text()) == spec
    assert len(list((ROOT / "schemas" / "4.4.0").glob("*.json"))) == len(jar.specs) == 203


SPEC: dict[str, Any] = {
    "apiKey": 99, "type": "request", "name": "DemoRequest", "validVersions": "0-2", "flexibleVersions": "2+",
    "latestVersionUnstable": True,
    "fields": [
        {"name": "Id", "type": "int32", "versions": "0+"},
        {"name": "Topics", "type": "[]Topic", "versions": "1+",
         "fields": [{"name": "Name", "type": "string", "versions": "1+", "entityType": "topicName"}]},
    ],
}


def test_the_comparison_finds_missing_changed_and_renamed_versions() -> None:
    owners = {"DemoRequest": {0: ("a", SPEC), 1: ("a", SPEC)}}
    assert rs.released_versions(SPEC) == [0, 1]  # v2 is unstable: not released
    assert rs.compare_release("r", [SPEC], owners).problems == []
    assert rs.compare_release("r", [SPEC], {}).problems == [
        "r: DemoRequest v0 is not defined by any set", "r: DemoRequest v1 is not defined by any set"
    ]
    changed = copy.deepcopy(SPEC)
    changed["fields"][1]["fields"][0]["nullableVersions"] = "1+"
    assert rs.compare_release("r", [changed], owners).problems == [
        "r: DemoRequest v1 differs on the wire from set a's"
    ]
    renamed = copy.deepcopy(SPEC)
    renamed["fields"][1]["fields"][0]["name"] = "TopicName"
    found = rs.compare_release("r", [renamed], owners)
    assert found.problems == []
    assert found.renames == ["r: DemoRequest v1 fields renamed by set a: TopicName->Name"]
    hint = copy.deepcopy(SPEC)
    hint["fields"][1]["fields"][0]["entityType"] = "groupId"  # a Java-side hint: not a wire change
    assert rs.compare_release("r", [hint], owners).renames == []


def test_a_response_follows_its_requests_unstable_flag() -> None:
    response = {**SPEC, "type": "response", "name": "DemoResponse", "latestVersionUnstable": False}
    found = rs.compare_release("r", [SPEC, response], {})
    assert found.checked == 4  # v0 and v1 of each: the response's v2 is as unreleased as the request's


def test_entity_type_survives_import_into_the_spec_model() -> None:
    """The specs' entityType marks (topicName, brokerId, ...) are kept by the importer and the model."""
    fetch = json.loads((ROOT / "schemas" / "4.4.0" / "FetchRequest.json").read_text())
    by_name = {f["name"]: f for f in fetch["fields"]}
    assert by_name["ReplicaId"]["entityType"] == "brokerId"
    topic = next(f for f in by_name["Topics"]["fields"] if f["name"] == "Topic")
    assert topic["entityType"] == "topicName"
    spec = MessageSpec.from_json(fetch, "4.4.0/FetchRequest.json")
    root = {f.name: f for f in spec.root.fields}
    assert root["ReplicaId"].entity_type == "brokerId"
    assert {f.name: f for f in spec.struct_of(root["Topics"]).fields}["Topic"].entity_type == "topicName"
    assert root["MaxWaitMs"].entity_type is None
    merged = {m.name: m for m in merged_messages(ROOT / "schemas")[0]}["FetchRequest"]
    topics = merged.root.get("Topics")
    assert topics is not None and topics.struct is not None
    merged_topic = topics.struct.get("Topic")
    assert merged_topic is not None and merged_topic.spec.entity_type == "topicName"
    assert {f.spec.entity_type for f in merged.classes["FetchPartition"].fields} == {None}
    kinds = {
        f.spec.entity_type for m in merged_messages(ROOT / "schemas")[0] for s in m.classes.values()
        for f in s.fields if f.spec.entity_type
    }
    assert {"topicName", "brokerId", "groupId", "producerId", "transactionalId"} <= kinds
