"""The generator's spec model validates like Kafka's generator and explains what is wrong."""

from __future__ import annotations

import copy
import filecmp
import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

from kcodec.codegen.generate import generate_package, merged_messages
from kcodec.codegen.merge import merge_message
from kcodec.codegen.spec import MessageSpec, SpecError, Versions


def spec(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiKey": 99, "type": "request", "name": "DemoRequest", "validVersions": "0-3", "flexibleVersions": "2+",
        "fields": [
            {"name": "Topics", "type": "[]Topic", "versions": "0+", "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {"name": "Epoch", "type": "int32", "versions": "1+", "default": "-1"},
            ]},
            {"name": "ClusterId", "type": "string", "versions": "2+", "nullableVersions": "2+", "default": "null",
             "taggedVersions": "2+", "tag": 0},
        ],
    }
    base.update(changes)
    return base


def field(obj: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in obj["fields"] if f["name"] == name)


def check(obj: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        MessageSpec.from_json(obj, "DemoRequest.json")


def test_valid_spec_loads() -> None:
    m = MessageSpec.from_json(spec(), "DemoRequest.json")
    assert m.valid_versions == Versions(0, 3) and m.is_flexible(2) and not m.is_flexible(1)
    assert [s.name for s in m.all_structs()] == ["DemoRequest", "Topic"]


def test_versions_parsing() -> None:
    assert str(Versions.parse("3+")) == "3+" and Versions.parse("none").empty
    assert 5 in Versions.parse("3+") and 2 not in Versions.parse("3-4")
    for bad in ("x", "3-1", "-1", "40000"):
        with pytest.raises(ValueError):
            Versions.parse(bad)


def test_tag_without_tagged_versions() -> None:
    s = spec()
    del field(s, "ClusterId")["taggedVersions"]
    s["fields"][1]["versions"] = "2+"
    check(s, "has tag 0 but no taggedVersions")


def test_tagged_versions_without_tag() -> None:
    s = spec()
    del field(s, "ClusterId")["tag"]
    check(s, "taggedVersions 2\\+ but no tag")


def test_tagged_versions_must_be_open_ended() -> None:
    s = spec()
    field(s, "ClusterId").update({"taggedVersions": "2-3", "versions": "2-3"})
    check(s, "must be open-ended")


def test_tagged_versions_outside_flexible_versions() -> None:
    s = spec(flexibleVersions="3+")
    check(s, "outside the message's flexibleVersions 3\\+")


def test_duplicate_tags() -> None:
    s = spec()
    s["fields"].append({"name": "Other", "type": "int32", "versions": "2+", "taggedVersions": "2+", "tag": 0})
    check(s, "duplicate tag 0: already used by field 'ClusterId'")


def test_null_default_needs_nullable_versions() -> None:
    s = spec()
    field(s, "ClusterId")["nullableVersions"] = "3+"
    check(s, "null cannot be the default for field ClusterId, because not all versions")


@pytest.mark.parametrize(
    ("ftype", "default", "message"),
    [
        ("int8", "200", "out of range for int8"),
        ("int32", "abc", "invalid default 'abc' for int32"),
        ("bool", "yes", "use 'true' or 'false'"),
        ("uuid", "not-base64!", "uuid"),
        ("bytes", "abc", "only '' or 'null'"),
        ("float64", "inf", "not finite"),
    ],
)
def test_bad_defaults(ftype: str, default: str, message: str) -> None:
    s = spec()
    s["fields"].append({"name": "X", "type": ftype, "versions": "0+", "default": default})
    check(s, message)


def test_hex_and_base64_defaults() -> None:
    s = spec()
    s["fields"].append({"name": "Max", "type": "int32", "versions": "0+", "default": "0x7fffffff"})
    s["fields"].append({"name": "Id", "type": "uuid", "versions": "0+", "default": "AAECAwQFBgcICQoLDA0ODw"})
    m = MessageSpec.from_json(s, "x")
    assert m.root.fields[2].default_value() == 0x7FFFFFFF
    assert m.root.fields[3].default_value() == bytes(range(16))


def test_unknown_types_and_structs() -> None:
    s = spec()
    s["fields"].append({"name": "X", "type": "int128", "versions": "0+"})
    check(s, "unknown type 'int128'")
    s = spec()
    s["fields"].append({"name": "Y", "type": "[]Nowhere", "versions": "0+"})
    check(s, "unknown type 'Nowhere'")


def test_nullable_int_and_misc_rules() -> None:
    s = spec()
    s["fields"].append({"name": "X", "type": "int32", "versions": "0+", "nullableVersions": "0+"})
    check(s, "cannot be null")
    s = spec()
    s["fields"].append({"name": "X", "type": "int32", "versions": "0+", "flexibleVersions": "none"})
    check(s, "only allowed on string and bytes")
    s = spec()
    s["fields"].append(copy.deepcopy(s["fields"][1]) | {"tag": 5})
    check(s, "duplicate field name 'ClusterId'")
    check(spec(flexibleVersions="1-2"), "must be open-ended")
    check(spec(validVersions="none"), "'none' \\(a removed message\\) has no fields")


def test_a_removed_message_has_no_versions_and_is_left_to_older_sets() -> None:
    """Kafka 4.x keeps the specs of the APIs 4.0 removed with ``validVersions: none`` and no fields."""
    removed = MessageSpec.from_json({"apiKey": 4, "type": "request", "name": "LeaderAndIsrRequest",
                                     "validVersions": "none"}, "x")
    assert removed.removed and list(removed.valid_versions) == [] and removed.root.fields == ()
    messages, _ = merged_messages(ROOT / "schemas")
    leader_and_isr = {m.name: m for m in messages}["LeaderAndIsrRequest"]
    assert leader_and_isr.versions == Versions(0, 7)
    assert [s.source for s in leader_and_isr.specs] == ["3.9.0"]  # 4.4.0's removed spec takes no part


def test_string_tags_and_missing_versions_fall_back_to_tagged_versions() -> None:
    s = spec()
    f = field(s, "ClusterId")
    f["tag"] = "0"
    del f["versions"]
    m = MessageSpec.from_json(s, "x")
    cluster = m.root.fields[1]
    assert cluster.tag == 0 and cluster.versions == Versions.parse("2+")


def test_merge_rejects_conflicting_definitions() -> None:
    old = MessageSpec.from_json(spec(), "old")
    old.source = "old"
    s = spec(validVersions="2-4")
    field(s, "Topics")["fields"][1]["default"] = "-2"
    new = MessageSpec.from_json(s, "new")
    new.source = "new"
    with pytest.raises(SpecError, match="default '-1' conflicts"):
        merge_message([old, new])


def test_merge_takes_each_version_from_the_newest_set() -> None:
    old = MessageSpec.from_json(spec(), "old")
    old.source = "old"
    s = spec(validVersions="2-4")
    s["fields"].append({"name": "New", "type": "int64", "versions": "4+", "ignorable": True})
    new = MessageSpec.from_json(s, "new")
    new.source = "new"
    merged = merge_message([old, new])
    assert [merged.owner(v).source for v in range(5)] == ["old", "old", "new", "new", "new"]
    assert [f.attr for f in merged.root.fields] == ["topics", "cluster_id", "new"]


def test_about_texts_are_carried_by_fields_structs_and_messages() -> None:
    s = spec(about="A demo.", commonStructs=[
        {"name": "Common", "versions": "0+", "about": "Shared.", "fields": [
            {"name": "X", "type": "int8", "versions": "0+", "about": "An \\ \"odd\" text."}]}])
    field(s, "Topics")["about"] = "Each topic."
    field(s, "Topics")["fields"][0]["about"] = "The topic name."
    m = MessageSpec.from_json(s, "DemoRequest.json")
    assert m.about == m.root.about == "A demo."
    topics, cluster = m.root.fields
    assert topics.about == "Each topic." and topics.fields is not None
    assert topics.fields[0].about == "The topic name."
    assert cluster.about is None and m.struct_of(topics).about is None  # an inline struct: its field has it
    common = m.structs.get("Common", "x")
    assert common.about == "Shared." and common.fields[0].about == 'An \\ "odd" text.'
    field(s, "Topics")["about"] = 3
    check(s, "about must be a string")
    check(spec(about=["no"]), "about must be a string")


def test_merge_takes_the_newest_about_and_falls_back_to_older_sets() -> None:
    old_obj = spec(about="Old message.")
    field(old_obj, "Topics")["about"] = "Old topics."
    field(old_obj, "Topics")["fields"][0]["about"] = "Old name."
    field(old_obj, "ClusterId")["about"] = "Old cluster."
    new_obj = spec(validVersions="2-4")
    field(new_obj, "Topics")["about"] = "New topics."
    field(new_obj, "Topics")["fields"][0]["about"] = "New name."
    old, new = MessageSpec.from_json(old_obj, "old"), MessageSpec.from_json(new_obj, "new")
    old.source, new.source = "old", "new"
    merged = merge_message([old, new])
    abouts = {f.attr: f.about for f in merged.root.fields}
    assert abouts == {"topics": "New topics.", "cluster_id": "Old cluster."}  # new has none for ClusterId
    assert merged.classes["Topic"].fields[0].about == "New name."
    assert merged.about == "Old message."


def test_real_schemas_carry_the_newest_about_into_the_generated_classes() -> None:
    import kcodec._generated.produce_request as produce

    messages, _ = merged_messages(ROOT / "schemas")
    merged = next(m for m in messages if m.name == "ProduceRequest")
    newest = json.loads((ROOT / "schemas" / "4.4.0" / "ProduceRequest.json").read_text())
    acks = field(newest, "Acks")["about"]
    assert acks.startswith("The number of acknowledgments") and merged.root.get("Acks").about == acks  # type: ignore[union-attr]
    data = merged.classes["PartitionProduceData"]
    epoch = data.get("CurrentLeaderEpoch")
    assert epoch is not None and epoch.about is not None and "KIP-359" in epoch.about  # the proposal's own
    index = data.get("Index")
    assert index is not None and index.about == "The partition index."  # 4.4.0's: the proposal has none
    # the class docstrings: one line per field, its description after its facts
    doc = produce.ProduceRequest.__doc__ or ""
    assert f"acks: int16, versions 0+; default 0 -- {acks}\n" in doc
    # the runtime field descriptions: every set's table of a struct carries the newest text
    for infos in produce.INFO.structs["ProduceRequest"].by_set.values():
        assert next(f for f in infos if f.name == "Acks").about == acks


def test_real_schemas_merge_and_cover_the_4x_versions() -> None:
    messages, _ = merged_messages(ROOT / "schemas")
    by_name = {m.name: m for m in messages}
    assert by_name["FetchRequest"].versions == Versions(0, 18)
    assert by_name["ProduceRequest"].versions == Versions(0, 14)  # v14: the KIP-359 proposal set
    assert by_name["ProduceRequest"].owner(13).source == "4.4.0"
    assert by_name["ProduceRequest"].owner(14).source == "kip-359-proposal"
    assert by_name["MetadataResponse"].versions == Versions(0, 13)
    assert by_name["StopReplicaRequest"].versions == Versions(0, 4)
    assert by_name["FetchRequest"].owner(3).source == "3.9.0"
    assert by_name["FetchRequest"].owner(4).source == "4.4.0"
    # the APIs and versions only 4.x releases define
    assert by_name["ShareFetchRequest"].versions == Versions(0, 2)
    assert by_name["ShareFetchRequest"].owner(0).source == "3.9.0"  # 3.9.0's unreleased v0
    assert by_name["ShareFetchRequest"].owner(1).source == "4.4.0"
    assert by_name["ConsumerGroupHeartbeatRequest"].versions == Versions(0, 1)
    assert by_name["VoteRequest"].versions == Versions(0, 2)
    assert by_name["ApiVersionsRequest"].versions == Versions(0, 5)
    assert by_name["StreamsGroupHeartbeatRequest"].versions == Versions(0, 1)
    assert by_name["DeleteShareGroupOffsetsResponse"].versions == Versions(0, 0)
    assert "ListConfigResourcesRequest" in by_name and "ListClientMetricsResourcesRequest" in by_name


def test_generation_is_deterministic(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    generate_package(ROOT / "schemas", a)
    generate_package(ROOT / "schemas", b)
    names = sorted(p.name for p in a.rglob("*.py"))
    assert names == sorted(p.name for p in b.rglob("*.py"))
    match, mismatch, errors = filecmp.cmpfiles(a, b, [str(p.relative_to(a)) for p in a.rglob("*.py")], shallow=False)
    assert not mismatch and not errors
    text = (a / "fetch_request.py").read_text()
    assert text.startswith("# Generated by kcodec's codegen from schemas/3.9.0/FetchRequest.json")
    assert "do not edit" in text.splitlines()[0]


def test_sets_json_records_provenance() -> None:
    sets = json.loads((ROOT / "schemas" / "sets.json").read_text())
    assert [s["name"] for s in sets] == ["3.9.0", "4.4.0", "kip-359-proposal"]
    imported = [s for s in sets if "proposal" not in s]
    assert all(s["source"] and s["sha256"] for s in imported)
    for s in imported:  # each from the kafka-clients jar of its Apache Kafka release
        assert s["release"] == f"org.apache.kafka:kafka-clients:{s['name']}"
        assert s["imported_from"] == f"maven:{s['release']}" and s["kafka_version"] == s["name"]
        assert len(s["jar_sha256"]) == 64 and s["commit"] and s["files"] == len(s["sha256"])
    assert [s["proposal"] for s in sets if "proposal" in s] == ["KIP-359"]


def test_a_proposal_set_may_only_add_versions(tmp_path: Path) -> None:
    import shutil

    schemas = tmp_path / "schemas"
    shutil.copytree(ROOT / "schemas", schemas)
    spec_file = schemas / "kip-359-proposal" / "ProduceRequest.json"
    spec_obj = json.loads(spec_file.read_text())
    spec_obj["validVersions"] = "13-14"
    spec_file.write_text(json.dumps(spec_obj))
    with pytest.raises(SpecError, match=r"redefines released versions \[13\]"):
        generate_package(schemas, tmp_path / "out")
