"""Golden fixtures made by Apache Kafka 3.9.0's own serializer (tests/golden, from ../shared/golden).

For every case: decoding the hex gives Kafka's JsonConverter value and consumes every byte; encoding
the value gives the hex; Kafka's write-time refusals raise the matching kcodec error; ignorable
absent fields are dropped exactly as Kafka drops them; every framed request/response round-trips.
"""

from __future__ import annotations

from typing import Any

import golden_data as g
import pytest
from golden_data import same

import kcodec
from kcodec.protocol.errors import NullValueError, UnsupportedVersionError

MESSAGE_CASES = g.message_cases()


@pytest.mark.parametrize("case", MESSAGE_CASES, ids=[g.case_id(c) for c in MESSAGE_CASES])
def test_decode_then_json_matches_kafka(case: dict[str, Any]) -> None:
    data = bytes.fromhex(case["hex"])
    msg = kcodec.decode(case["message"], case["version"], data)  # strict: every byte consumed
    assert same(kcodec.to_json(msg, case["version"]), case["value"])


@pytest.mark.parametrize("case", MESSAGE_CASES, ids=[g.case_id(c) for c in MESSAGE_CASES])
def test_encode_from_json_matches_kafka(case: dict[str, Any]) -> None:
    msg = kcodec.from_json(case["message"], case["version"], case["value"])
    assert kcodec.encode(msg, case["version"]).hex() == case["hex"]


ERROR_CASES = g.error_cases()


@pytest.mark.parametrize("case", ERROR_CASES, ids=[f"{c['message']}-v{c['version']}-{c['field']}" for c in ERROR_CASES])
def test_kafka_refusals_raise_the_matching_error(case: dict[str, Any]) -> None:
    msg = kcodec.from_json(case["message"], case["json_version"], case["json"])
    if case["exception"].endswith("UnsupportedVersionException"):
        with pytest.raises(UnsupportedVersionError) as exc:
            kcodec.encode(msg, case["version"])
        assert str(exc.value) == case["error"]
    else:
        assert case["exception"] == "java.lang.NullPointerException"
        with pytest.raises(NullValueError) as null_exc:
            kcodec.encode(msg, case["version"])
        leaf = case["field"].split(".")[-1].split("[")[0]
        assert null_exc.value.path.split(".")[-1].split("[")[0].replace("_", "") == leaf.lower()


IGNORED_CASES = g.ignored_cases()


@pytest.mark.parametrize(
    "case", IGNORED_CASES, ids=[f"{c['message']}-v{c['version']}-{c['field']}" for c in IGNORED_CASES]
)
def test_ignorable_absent_fields_are_dropped_like_kafka(case: dict[str, Any]) -> None:
    msg = kcodec.from_json(case["message"], case["json_version"], case["json"])
    assert kcodec.encode(msg, case["version"]).hex() == case["hex"]


FRAMED = g.framed_cases()


@pytest.mark.parametrize("case", FRAMED, ids=[f"{c['api']}-v{c['version']}-{c['direction']}" for c in FRAMED])
def test_frames_decode_and_reencode_exactly(case: dict[str, Any]) -> None:
    data = bytes.fromhex(case["hex"])
    if case["direction"] == "request":
        req = kcodec.decode_request(data)
        assert (req.api_key, req.api_version) == (case["api_key"], case["version"])
        frame: Any = req
        again = kcodec.encode_request(req.body, req.api_version, correlation_id=0, header=req.header)
    else:
        frame = kcodec.decode_response(data, case["api_key"], case["version"])
        again = kcodec.encode_response(frame.body, frame.api_version, correlation_id=0, header=frame.header)
    assert frame.header_version == case["header_version"]
    assert case["header_message"] == type(frame.header).MESSAGE_NAME
    assert same(kcodec.to_json(frame.header, frame.header_version), case["header"])
    assert same(kcodec.to_json(frame.body, case["version"]), case["body_value"])
    assert again == data


def test_header_versions_and_ranges_match_kafkas_api_table() -> None:
    """kcodec's registry agrees with Kafka 3.9.0's ApiMessageType for every 3.9.0 version."""
    for row in g.api_table():
        info = kcodec.api(row["apiKey"])
        # a later spec set may have renamed the API (ListClientMetricsResources -> ListConfigResources)
        assert row["requestMessage"] in (info.request, *info.aliases)
        assert row["responseMessage"] in (info.response, *info.aliases)
        assert info.min_version <= row["lowestSupportedVersion"]
        assert info.max_version >= row["highestSupportedVersion"]
        for v, hv in row["headerVersions"].items():
            assert info.request_header_version(int(v)) == hv["request"], (row["name"], v)
            assert info.response_header_version(int(v)) == hv["response"], (row["name"], v)


def test_every_golden_pair_is_covered() -> None:
    """Every (message, version) of Kafka 3.9.0 has at least one golden case, and all of them ran above,
    but for the versions 3.9.0 had not released that a later release redefined on the wire."""
    pairs = {(c["message"], c["version"]) for c in MESSAGE_CASES}
    redefined = {(c["message"], c["version"]) for c in g.redefined_cases()}
    assert len(MESSAGE_CASES) + len(g.redefined_cases()) == 2831
    for row in g.api_table():
        for v in range(row["lowestSupportedVersion"], row["highestSupportedVersion"] + 1):
            assert (row["requestMessage"], v) in pairs | redefined
            assert (row["responseMessage"], v) in pairs | redefined


def test_only_unreleased_versions_were_redefined() -> None:
    """A released version never changes on the wire: the only 3.9.0 fixtures kcodec cannot match are of
    versions 3.9.0 marked unstable (ReadShareGroupStateSummaryResponse v0: Kafka 4.0 released its v0
    with a LeaderEpoch field 3.9.0's unreleased v0 lacked)."""
    by_key = {row["apiKey"]: row for row in g.api_table()}
    redefined = sorted({(c["message"], c["version"], c["api_key"]) for c in g.redefined_cases()})
    assert [(m, v) for m, v, _ in redefined] == [("ReadShareGroupStateSummaryResponse", 0)]
    for _message, version, key in redefined:
        golden_request = dict(g._sets())[g.GOLDEN_SET][by_key[key]["requestMessage"]]
        assert golden_request.get("latestVersionUnstable") is True
        assert golden_request["validVersions"] == str(version)  # its newest (= unstable) version
        assert kcodec.api(key).source(version) != g.GOLDEN_SET


def test_renamed_fields_come_from_the_specs() -> None:
    """Fields a newer release renamed (same bytes) carry the newer name: the fixtures are read with it."""
    vote = g.renames("VoteRequest", 1)["topics"][1]["partitions"][1]
    assert vote["candidateEpoch"][0] == "replicaEpoch" and vote["candidateId"][0] == "replicaId"
    assert g.renames("TxnOffsetCommitRequest", 3) == {"generationId": ("generationIdOrMemberEpoch", {})}
    assert g.renames("FetchRequest", 4) == {} and g.renames("FetchRequest", 3) == {}
