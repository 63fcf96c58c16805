"""Off-spec frames of real peers, read into their real values (kcodec.protocol.quirks through kcodec.capture).

``tests/captures/mock_quirks.pcap`` was recorded by ``tools/record_quirks_capture.py``: librdkafka
2.16 (confluent-kafka) and kafka-python 3.0.12 against librdkafka's mock cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kcodec.capture import CapturedFrame, CaptureIssue, iter_capture
from kcodec.protocol.quirks import QUIRKS, diagnose_api_versions_reply

CAPTURE = Path(__file__).parent / "captures" / "mock_quirks.pcap"


@pytest.fixture(scope="module")
def frames() -> list[CapturedFrame]:
    events = list(iter_capture(CAPTURE))
    assert not [e for e in events if isinstance(e, CaptureIssue)]  # a clean capture of off-spec peers
    return [e for e in events if isinstance(e, CapturedFrame)]


def _pick(frames: list[CapturedFrame], api: str, direction: str, version: int | None = None) -> list[Any]:
    return [
        f
        for f in frames
        if f.api_name == api and f.direction == direction and (version is None or f.api_version == version)
    ]


def test_every_frame_decodes_and_every_deviation_is_named(frames: list[CapturedFrame]) -> None:
    assert frames and all(f.ok and f.error is None for f in frames)
    odd = [f for f in frames if f.diagnostics]
    assert {(f.api_name, f.direction) for f in odd} == {
        ("ApiVersions", "response"),
        ("Metadata", "response"),
        ("Metadata", "request"),
        ("OffsetFetch", "response"),
    }
    for f in frames:
        d = f.to_dict()
        assert d["diagnostics"] == list(f.diagnostics) and d["error"] is None


def test_api_versions_error_reply_with_a_one_byte_count(frames: list[CapturedFrame]) -> None:
    replies = [f for f in _pick(frames, "ApiVersions", "response") if f.diagnostics]
    assert {f.api_version for f in replies} == {3, 4}  # librdkafka asks v3, kafka-python v4
    for f in replies:
        assert f.to_dict()["body"] == {
            "errorCode": 35,
            "apiKeys": [{"apiKey": 18, "minVersion": 0, "maxVersion": 2}],
            "throttleTimeMs": 0,
        }
        (why,) = f.diagnostics
        assert "1-byte ApiKeys count of 1" in why and "librdkafka's mock cluster" in why
        assert f.header is not None and f.header.correlation_id == f.correlation_id  # type: ignore[attr-defined]
    reading = diagnose_api_versions_reply(replies[0].raw, 3)
    assert reading is not None and reading.quirk == "int8_api_keys_count" and reading.quirk in QUIRKS


def test_offset_fetch_v7_response_with_a_null_topics_array(frames: list[CapturedFrame]) -> None:
    (f,) = _pick(frames, "OffsetFetch", "response", 7)
    assert f.to_dict()["body"] == {"throttleTimeMs": 0, "topics": None, "errorCode": 0}
    (why,) = f.diagnostics
    assert why.startswith("OffsetFetchResponse.topics is null, which OffsetFetchResponse v7 does not allow")
    (req,) = _pick(frames, "OffsetFetch", "request", 7)
    assert req.to_dict()["body"]["topics"] is None and not req.diagnostics  # null is fine in the request


def test_librdkafka_all_topics_metadata_request_placeholder(frames: list[CapturedFrame]) -> None:
    (f,) = [f for f in _pick(frames, "Metadata", "request", 12) if f.diagnostics]
    body = f.to_dict()["body"]
    assert body == {"topics": None, "allowAutoTopicCreation": True, "includeTopicAuthorizedOperations": False}
    (why,) = f.diagnostics
    assert "4-byte placeholder 00 00 00 00" in why and "AllowAutoTopicCreation=True" in why
    assert "3 bytes left over" in why
    others = [g for g in _pick(frames, "Metadata", "request", 12) if not g.diagnostics]
    assert others  # requests for named topics / brokers only are conformant


def test_metadata_response_doubled_tagged_section(frames: list[CapturedFrame]) -> None:
    replies = _pick(frames, "Metadata", "response")
    assert replies and all(f.diagnostics for f in replies)
    for f in replies:
        (why,) = f.diagnostics
        assert "second, empty top-level tagged-field section" in why
        assert f.to_dict()["body"]["brokers"][0]["nodeId"] == 1


def test_strict_mode_takes_no_leniency_but_says_why() -> None:
    frames = [e for e in iter_capture(CAPTURE, strict=True) if isinstance(e, CapturedFrame)]
    lenient = [e for e in iter_capture(CAPTURE) if isinstance(e, CapturedFrame)]
    assert len(frames) == len(lenient)
    for strict, easy in zip(frames, lenient, strict=True):
        if easy.diagnostics:
            assert strict.error is not None
            assert strict.diagnostics[-1] == f"{type(strict.error).__name__}: {strict.error}"
        else:
            assert strict.error is None and not strict.diagnostics
