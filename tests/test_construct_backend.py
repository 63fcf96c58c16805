"""The construct backend: a second, independent codec built at run time from the messages' runtime model.

For every golden case, ``construct_schema(name, v).parse`` consumes every byte and agrees with
``kcodec.decode``, and building the Container of the decoded message gives exactly Kafka's bytes.
Cases are grouped per message (one test per message, listing every failing case) to stay fast.
"""

from __future__ import annotations

import io
from collections import defaultdict
from typing import Any

import golden_data as g
import pytest
from construct import ConstructError, Container

import kcodec
from kcodec.protocol.construct_backend import (
    UNKNOWN_TAGGED_FIELDS,
    construct_schema,
    from_container,
    to_container,
)
from kcodec.protocol.errors import UnknownMessageError, UnsupportedVersionError
from kcodec.protocol.model import Uuid

_BY_MESSAGE: dict[str, list[dict[str, Any]]] = defaultdict(list)
for _case in g.message_cases():
    _BY_MESSAGE[_case["message"]].append(_case)
MESSAGES = sorted(_BY_MESSAGE)


def cls(name: str, *path: str) -> Any:
    c = kcodec.message_class(name)
    for p in path:
        c = getattr(c, p)
    return c


def _parse_failure(case: dict[str, Any]) -> str | None:
    name, version, data = case["message"], case["version"], bytes.fromhex(case["hex"])
    try:
        stream = io.BytesIO(data)
        parsed = construct_schema(name, version).parse_stream(stream)
        if stream.tell() != len(data):
            return f"consumed {stream.tell()} of {len(data)} bytes"
        decoded = kcodec.decode(name, version, data)
        if from_container(name, version, parsed) != decoded:
            return "from_container(parsed) != kcodec.decode"
        if to_container(decoded, version) != parsed:
            return "to_container(kcodec.decode) != parsed"
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


def _build_failure(case: dict[str, Any]) -> str | None:
    name, version, hexdata = case["message"], case["version"], case["hex"]
    try:
        schema = construct_schema(name, version)
        decoded = kcodec.decode(name, version, bytes.fromhex(hexdata))
        built = schema.build(to_container(decoded, version)).hex()
        if built != hexdata:
            return f"built {built[:80]}... != golden {hexdata[:80]}..."
        rebuilt = schema.build(schema.parse(bytes.fromhex(hexdata))).hex()
        if rebuilt != hexdata:
            return "build(parse(bytes)) differs from the golden bytes"
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


def _failures(name: str, check: Any) -> list[str]:
    out = []
    for i, case in enumerate(_BY_MESSAGE[name]):
        reason = check(case)
        if reason is not None:
            out.append(f"{name} v{case['version']} case {i}: {reason}")
    return out


@pytest.mark.parametrize("name", MESSAGES)
def test_construct_parse_agrees_with_decode(name: str) -> None:
    failures = _failures(name, _parse_failure)
    assert not failures, f"{len(failures)}/{len(_BY_MESSAGE[name])} cases fail:\n" + "\n".join(failures[:20])


@pytest.mark.parametrize("name", MESSAGES)
def test_construct_build_gives_golden_bytes(name: str) -> None:
    failures = _failures(name, _build_failure)
    assert not failures, f"{len(failures)}/{len(_BY_MESSAGE[name])} cases fail:\n" + "\n".join(failures[:20])


def test_every_message_version_has_a_schema() -> None:
    from kcodec._generated import MESSAGES

    for name, (_module, _kind, _key, lo, hi) in MESSAGES.items():
        for v in range(lo, hi + 1):
            assert construct_schema(name, v) is not None


# --- containers ---------------------------------------------------------------------------------------


def test_container_keys_are_attribute_names() -> None:
    data = kcodec.encode(cls("FetchRequest")(cluster_id="c", replica_id=3), 12)
    parsed = construct_schema("FetchRequest", 12).parse(data)
    assert isinstance(parsed, Container)
    assert parsed.cluster_id == "c" and parsed.replica_id == 3 and parsed.topics == []
    assert parsed[UNKNOWN_TAGGED_FIELDS] == []
    empty = kcodec.encode(cls("FetchRequest")(), 12)
    assert construct_schema("FetchRequest", 12).parse(empty).cluster_id is None  # tagged, default
    v15 = construct_schema("FetchRequest", 15).parse(kcodec.encode(cls("FetchRequest")(), 15))
    assert v15.replica_state == {"replica_id": -1, "replica_epoch": -1, UNKNOWN_TAGGED_FIELDS: []}
    assert "replica_id" not in v15  # absent at v15 (moved into ReplicaState)
    assert construct_schema("FetchRequest", 3).parse(kcodec.encode(cls("FetchRequest")(), 3)).keys() >= {
        "replica_id", "max_wait_ms", "min_bytes", "max_bytes", "topics"
    }


def test_nulls() -> None:
    msg = cls("MetadataRequest")(topics=None)
    for v in (1, 9):  # int32 count -1, then compact count 0
        data = kcodec.encode(msg, v)
        parsed = construct_schema("MetadataRequest", v).parse(data)
        assert parsed.topics is None
        assert construct_schema("MetadataRequest", v).build(parsed) == data


def test_unknown_message_and_version() -> None:
    with pytest.raises(UnknownMessageError):
        construct_schema("NoSuchRequest", 0)
    with pytest.raises(UnsupportedVersionError, match="kcodec knows 0-18"):
        construct_schema("FetchRequest", 19)
    with pytest.raises(UnsupportedVersionError):
        construct_schema("FetchRequest", True)
    with pytest.raises(UnsupportedVersionError):
        to_container(cls("FetchRequest")(), 99)
    with pytest.raises(UnknownMessageError):
        from_container("NoSuchRequest", 0, Container())


def test_truncated_input_raises_a_construct_error() -> None:
    data = kcodec.encode(cls("FetchRequest")(cluster_id="c"), 12)
    with pytest.raises(ConstructError):
        construct_schema("FetchRequest", 12).parse(data[:-3])


# --- tagged fields -------------------------------------------------------------------------------------


def test_unknown_tagged_fields_are_kept_and_built_back_in_tag_order() -> None:
    req = cls("ApiVersionsRequest")(client_software_name="x", client_software_version="y")
    req.unknown_tagged_fields.extend([(3, b""), (7, b"\x01\x02")])
    data = kcodec.encode(req, 3)
    schema = construct_schema("ApiVersionsRequest", 3)
    parsed = schema.parse(data)
    assert parsed[UNKNOWN_TAGGED_FIELDS] == [(3, b""), (7, b"\x01\x02")]
    assert schema.build(parsed) == data
    assert from_container("ApiVersionsRequest", 3, parsed) == kcodec.decode("ApiVersionsRequest", 3, data)
    parsed[UNKNOWN_TAGGED_FIELDS] = [(7, b"\x01\x02"), (3, b"")]  # any order: written sorted by tag
    assert schema.build(parsed) == data


def test_unknown_tags_merge_with_known_ones_in_ascending_order() -> None:
    # FetchRequest v12: ClusterId is tag 0 (known). Unknown tags 1 (not known at v12) and 5.
    schema = construct_schema("FetchRequest", 12)
    container = to_container(cls("FetchRequest")(cluster_id="c"), 12)
    container[UNKNOWN_TAGGED_FIELDS] = [(5, b"\x09"), (1, b"\x08")]
    data = schema.build(container)
    assert data.endswith(b"\x03" + b"\x00\x02\x02c" + b"\x01\x01\x08" + b"\x05\x01\x09")
    back = schema.parse(data)
    assert back.cluster_id == "c" and back[UNKNOWN_TAGGED_FIELDS] == [(1, b"\x08"), (5, b"\x09")]
    fast = kcodec.decode("FetchRequest", 12, data)
    assert fast.unknown_tagged_fields == [(1, b"\x08"), (5, b"\x09")]
    assert kcodec.encode(from_container("FetchRequest", 12, back), 12) == data


def test_unknown_tagged_fields_of_nested_structs() -> None:
    partition = cls("FetchRequest", "FetchPartition")(partition=4)
    partition.unknown_tagged_fields.append((9, b"\xaa\xbb"))
    topic_id = Uuid(bytes(range(16)))
    topic = cls("FetchRequest", "FetchTopic")(topic_id=topic_id, partitions=[partition])
    msg = cls("FetchRequest")(topics=[topic])
    data = kcodec.encode(msg, 13)
    schema = construct_schema("FetchRequest", 13)
    parsed = schema.parse(data)
    assert parsed.topics[0].partitions[0][UNKNOWN_TAGGED_FIELDS] == [(9, b"\xaa\xbb")]
    assert parsed.topics[0][UNKNOWN_TAGGED_FIELDS] == []
    assert schema.build(parsed) == data
    assert from_container("FetchRequest", 13, parsed) == msg


def test_known_tagged_fields_are_written_only_when_not_default() -> None:
    # FetchResponse v12: partitions carry tagged structs (DivergingEpoch 0, CurrentLeader 1, SnapshotId 2).
    resp_cls = cls("FetchResponse")
    part = cls("FetchResponse", "PartitionData")(partition_index=1, records=b"")
    topic = cls("FetchResponse", "FetchableTopicResponse")(topic="t", partitions=[part])
    schema = construct_schema("FetchResponse", 12)
    plain = schema.build(to_container(resp_cls(responses=[topic]), 12))
    assert plain == kcodec.encode(resp_cls(responses=[topic]), 12)
    parsed = schema.parse(plain)
    leader = parsed.responses[0].partitions[0].current_leader
    assert leader == {"leader_id": -1, "leader_epoch": -1, UNKNOWN_TAGGED_FIELDS: []}  # the default
    leader.leader_epoch = 5
    data = schema.build(parsed)
    assert len(data) > len(plain)
    back = kcodec.decode("FetchResponse", 12, data)
    assert back.responses[0].partitions[0].current_leader.leader_epoch == 5
    assert kcodec.encode(back, 12) == data
    # an unknown tagged field inside a tagged struct makes it non-default too
    leader.leader_epoch = -1
    leader[UNKNOWN_TAGGED_FIELDS] = [(3, b"\x01")]
    data = schema.build(parsed)
    nested = kcodec.decode("FetchResponse", 12, data).responses[0].partitions[0].current_leader
    assert nested.unknown_tagged_fields == [(3, b"\x01")]
    reparsed = schema.parse(data).responses[0].partitions[0].current_leader
    assert reparsed[UNKNOWN_TAGGED_FIELDS] == [(3, b"\x01")]


def _tagged_sections(c: Any) -> list[Any]:
    """Every known-tag list of the Flexible structs inside a construct definition, outermost first."""
    from kcodec.protocol.construct_backend import Flexible

    found = [c.tagged] if isinstance(c, Flexible) and c.tagged else []
    inner = [*getattr(c, "subcons", ()), *([c.subcon] if hasattr(c, "subcon") else [])]
    inner += [t.subcon for t in getattr(c, "tagged", ())]
    for sub in inner:
        found.extend(_tagged_sections(sub))
    return found


def test_known_tags_carry_their_spec_names_and_container_defaults() -> None:
    # FetchResponse v12's PartitionData: three tagged structs, built from the runtime model (INFO)
    sections = _tagged_sections(construct_schema("FetchResponse", 12))
    tagged = next(t for t in sections if t[0].name == "diverging_epoch")
    assert [(t.tag, t.name, t.spec_name) for t in tagged] == [
        (0, "diverging_epoch", "DivergingEpoch"), (1, "current_leader", "CurrentLeader"),
        (2, "snapshot_id", "SnapshotId"),
    ]
    assert tagged[1].default == {"leader_id": -1, "leader_epoch": -1, UNKNOWN_TAGGED_FIELDS: []}
    assert construct_schema("FetchResponse", 12) is construct_schema("FetchResponse", 12)  # built once
