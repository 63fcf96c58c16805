"""``kcodec.capture.facts.frame_facts`` runs the extractors the generator wrote
(``kcodec._generated.facts_``, planned by ``kcodec.codegen.plan_facts``, for the hot and client group
messages) or built from the message's description (``kcodec.protocol.facts_build``, for the others),
by the rules of ``kcodec.protocol.entity_roles``; what they find must be
exactly what the generic walker (``facts_reference``, what ``frame_facts`` ran before they were
generated) finds, field for field and in the same order, on every API and version."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import golden_data as g
import pytest
from facts_reference import reference_facts
from hypothesis import HealthCheck, Phase, given, settings

import kcodec
from kcodec.capture.facts import (
    Facts,
    PartitionFacts,
    codes_extractor,
    event_codes,
    event_facts,
    extractor,
    facts_reader,
    frame_codes,
    frame_facts,
)
from kcodec.capture.topics import TopicDirectory, named_ids, unnamed_ids
from kcodec.protocol import strategies
from kcodec.protocol.errors import UnknownMessageError, UnsupportedVersionError


def _ordered(facts: Any) -> Any:
    """The facts as plain data with every dict's key order made visible (the table shows that order)."""

    def fix(value: Any) -> Any:
        if isinstance(value, dict):
            return [(k, fix(v)) for k, v in value.items()]
        if isinstance(value, list | tuple):
            return [fix(v) for v in value]
        return value

    return fix(asdict(facts))


def _check(message: Any, version: int) -> None:
    full = frame_facts(message, version)
    where = (type(message).MESSAGE_NAME, version)
    assert _ordered(full) == _ordered(reference_facts(message, version)), where
    _check_codes(message, version, full)


def _check_codes(message: Any, version: int, full: Facts) -> None:
    """The codes extractor finds exactly the error codes, topics and id-carrying partitions (without
    their values) that the facts extractor finds, and nothing else; so the topic ids named and unnamed,
    and the names a directory resolves, are the same."""
    where = (type(message).MESSAGE_NAME, version)
    codes = frame_codes(message, version)
    assert codes.error_codes == full.error_codes, where
    assert codes.topics == full.topics, where
    assert codes.partitions == [
        PartitionFacts(p.topic, p.topic_id, p.partition, p.error_code, {}, None)
        for p in full.partitions
        if p.topic_id is not None
    ], where
    assert (codes.brokers, codes.values, codes.counts, codes.records_bytes) == ([], {}, {}, 0), where
    assert named_ids(codes) == named_ids(full), where
    assert unnamed_ids(codes) == unnamed_ids(full), where
    directory = TopicDirectory()
    directory.learn_pairs([(i, f"name-of-{i}") for i in unnamed_ids(full)])
    assert directory.resolve(codes) == directory.resolve(full), where
    assert codes.error_codes == full.error_codes, where


GOLDEN = g.message_cases()


def test_every_golden_case_has_the_reference_facts() -> None:
    for case in GOLDEN:
        name, version = case["message"], case["version"]
        _check(kcodec.decode(name, version, bytes.fromhex(case["hex"])), version)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.message_and_version(max_array_size=3))
def test_drawn_messages_have_the_reference_facts(pair: tuple[Any, int]) -> None:
    _check(*pair)


def test_every_message_and_version_has_the_reference_facts() -> None:
    # one drawn message for each pair (the golden cases do not cover them all)
    for name, version in strategies.pairs():

        @settings(max_examples=1, deadline=None, database=None, derandomize=True,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(strategies.messages(name, version, max_array_size=2))
        def check(message: Any) -> None:
            _check(message, version)  # noqa: B023

        check()


def _fetch_response_v13() -> Any:
    """A FetchResponse v13 with one partition (error 6, 3 bytes of records) of a topic named by id."""
    return kcodec.from_json("FetchResponse", 13, {
        "throttleTimeMs": 0, "errorCode": 0, "sessionId": 7,
        "responses": [{"topicId": "AQIDBAUGBwgJCgsMDQ4PEA", "partitions": [
            {"partitionIndex": 3, "errorCode": 6, "highWatermark": 10, "lastStableOffset": -1,
             "logStartOffset": 0, "abortedTransactions": None, "preferredReadReplica": -1,
             "records": "AAAA"},
        ]}],
    })


def test_a_fetch_response_s_facts() -> None:
    body = _fetch_response_v13()
    facts = frame_facts(body, 13)
    assert facts.error_codes == [(6, "AQIDBAUGBwgJCgsMDQ4PEA/3")]
    assert facts.values == {"session_id": 7}
    assert facts.records_bytes == 3
    [p] = facts.partitions
    assert (p.topic, p.topic_id, p.partition, p.error_code, p.records_bytes) == (
        None, "AQIDBAUGBwgJCgsMDQ4PEA", 3, 6, 3
    )
    assert p.values == {"high_watermark": 10, "last_stable_offset": -1, "log_start_offset": 0}


def test_lookup_errors() -> None:
    with pytest.raises(UnsupportedVersionError):
        extractor("FetchRequest", 999)
    with pytest.raises(UnknownMessageError):
        extractor("NoSuchRequest", 0)
    assert extractor("FetchRequest", 12) is extractor("FetchRequest", 12)


def test_a_fetch_response_s_codes() -> None:
    # the codes extractor (what JSON lines need): the error code and the topic id, no values
    body = _fetch_response_v13()
    codes = frame_codes(body, 13)
    assert codes.error_codes == [(6, "AQIDBAUGBwgJCgsMDQ4PEA/3")]
    assert codes.topics == [(None, "AQIDBAUGBwgJCgsMDQ4PEA")]
    assert codes.partitions == [PartitionFacts(None, "AQIDBAUGBwgJCgsMDQ4PEA", 3, 6, {}, None)]
    assert (codes.values, codes.records_bytes) == ({}, 0)
    assert codes_extractor("FetchResponse", 13) is not extractor("FetchResponse", 13)
    with pytest.raises(UnsupportedVersionError):
        codes_extractor("FetchRequest", 999)
    # decode-capture reads the codes only for JSON lines without --topic
    assert facts_reader(True, False) is event_codes
    assert facts_reader(True, True) is facts_reader(False, False) is facts_reader(False, True) is event_facts
