"""Apache Kafka's own message classes as a live oracle for every message and version (issue 35).

For Kafka 4.4.0 and the newest 3.9.x, one JVM per release runs ``tests/oracle/KafkaOracle.java``
(``tests/kafka_oracle.py``).  For every message kcodec defines (requests, responses, headers and the
``data`` specs) and every version that both kcodec and the release define, a seeded, count-bounded
draw of ``kcodec.protocol.strategies`` examples must agree both ways:

- Kafka decodes kcodec's bytes (``new <Name>Data(new ByteBufferAccessor(buf), version)``), consumes
  every byte, and its ``<Name>DataJsonConverter.write`` JSON equals ``kcodec.to_json``;
- Kafka encodes kcodec's JSON (``<Name>DataJsonConverter.read`` then ``size``/``write``) to the bytes
  ``kcodec.encode`` gives for the same JSON.

The JSON is compared exactly as the golden tests do (``golden_data.same``: 1 is not 1.0, -0.0 is not
0.0).  One normalisation, in the oracle itself: Kafka's JsonConverter writes every non-null ``records``
field as an empty value (KIP-673), so the oracle puts the record bytes of the decoded message there.
Unknown tagged fields are drawn too: Kafka keeps them out of its JSON as kcodec does, so the decode
direction covers them; the encode direction compares with kcodec's encoding of the JSON (which, like
Kafka's, has none).

kcodec takes every version from the newest spec set that defines it (4.4.0 over 3.9.0). Where an
older release names a field differently at the same version (3.9's TxnOffsetCommitRequest v3-5
GenerationId, 4.4's GenerationIdOrMemberEpoch; Vote v0), kcodec's JSON is compared under the
release's names (``kafka_oracle.release_json``: fields paired in wire order, types checked). A version
the release marks unstable (``ApiMessageType.latestVersionUnstable``) and a later release redefined
on the wire is not compared (3.9's ReadShareGroupStateSummaryResponse v0); any other redefinition is a
disagreement. Versions from a spec set marked as a proposal (``schemas/sets.json``), not from a Kafka
release, are not compared.  No Java/javac/Maven on a user's machine: the tests skip with one line;
with ``CI`` set they fail instead.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import kafka_oracle as ko
import pytest
from golden_data import same
from hypothesis import HealthCheck, Phase, given, seed, settings

import kcodec
from kcodec.protocol import strategies
from kcodec.protocol.codec import message_info, message_names
from kcodec.protocol.model import Message

pytestmark = pytest.mark.xdist_group("kafka-oracle")  # one worker: one JVM per release per test run

# The release lines: the newest 4.x, and the newest 3.9.x (the last line with the versions 4.0 removed).
RELEASES = {"4.4": ("4.4.0",), "3.9": ("3.9.2", "3.9.1")}

EXAMPLES_PER_VERSION = 4
# KIP-320 (leader epochs in fetch, offsets and metadata): the APIs kcodec's fencing work relies on.
KIP_320_APIS = ("Fetch", "ListOffsets", "OffsetForLeaderEpoch", "Metadata", "OffsetCommit", "OffsetFetch")
KIP_320_EXAMPLES_PER_VERSION = 8

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


@pytest.fixture(scope="session", params=sorted(RELEASES), ids=lambda line: f"kafka-{line}")
def oracle(request: pytest.FixtureRequest) -> Iterator[ko.Oracle]:
    try:
        running = ko.start(RELEASES[request.param])
    except ko.OracleUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"Kafka oracle unavailable in CI: {exc}")
        pytest.skip(f"Kafka oracle unavailable: {exc}")
    try:
        yield running
    finally:
        running.stop()


@cache
def proposal_sets() -> frozenset[str]:
    sets = json.loads((SCHEMAS / "sets.json").read_text())
    return frozenset(s["name"] for s in sets if s.get("proposal"))


def examples_per_version(name: str) -> int:
    api = name.removesuffix("Request").removesuffix("Response")
    return KIP_320_EXAMPLES_PER_VERSION if api in KIP_320_APIS else EXAMPLES_PER_VERSION


@cache
def examples(name: str, version: int) -> tuple[Message, ...]:
    """A seeded draw of at most ``examples_per_version(name)`` messages (the same on every run)."""
    drawn: list[Message] = []

    @seed(zlib.crc32(f"{name}-v{version}".encode()))
    @settings(
        max_examples=examples_per_version(name), phases=[Phase.generate], database=None,
        deadline=None, suppress_health_check=list(HealthCheck), derandomize=False,
    )
    @given(strategies.messages(name, version))
    def collect(msg: Message) -> None:
        drawn.append(msg)

    collect()
    return tuple(drawn)


def checked_pairs(oracle: ko.Oracle) -> dict[str, list[int]]:
    """kcodec message name -> the versions both kcodec (from a release's specs) and Kafka define."""
    skip_sets = proposal_sets()
    pairs: dict[str, list[int]] = {}
    for name in message_names():
        kafka = oracle.kafka_class(name)
        if kafka is None:
            continue
        owners = message_info(name).owners
        versions = [v for v in sorted(owners) if kafka.lowest <= v <= kafka.highest]
        versions = [v for v in versions if owners[v] not in skip_sets]
        if versions:
            pairs[name] = versions
    return pairs


def release_set(oracle: ko.Oracle) -> str | None:
    """kcodec's spec set imported from this release line (e.g. 3.9.0 for Kafka 3.9.2), if any."""
    line = ".".join(oracle.release.split(".")[:2]) + "."
    names = [s["name"] for s in json.loads((SCHEMAS / "sets.json").read_text())]
    return next((n for n in names if n.startswith(line)), None)


def kafka_pairs_kcodec_lacks(oracle: ko.Oracle) -> list[str]:
    known = {n: set(message_info(n).owners) for n in message_names()}
    missing: list[str] = []
    for cls in oracle.classes.values():
        name = cls.name.removesuffix("Data") if cls.name.removesuffix("Data") in known else cls.name
        have = known.get(name, set())
        lacking = [v for v in range(cls.lowest, cls.highest + 1) if v not in have]
        if lacking:
            span = f"v{lacking[0]}-{lacking[-1]}" if len(lacking) > 1 else f"v{lacking[0]}"
            missing.append(f"{name} {span}")
    return missing


class Outcome:
    """What one direction of the comparison found for one release."""

    def __init__(self) -> None:
        self.disagreements: list[str] = []
        self.messages: set[str] = set()
        self.versions: set[tuple[str, int]] = set()
        self.examples = 0
        self.unstable_redefined: set[tuple[str, int]] = set()

    def agreed(self, name: str, version: int) -> None:
        self.messages.add(name)
        self.versions.add((name, version))
        self.examples += 1

    def disagree(self, name: str, version: int, data: bytes, detail: str) -> None:
        self.disagreements.append(f"{name} v{version} hex={data.hex()}: {detail}")

    def check(self, what: str, release: str) -> None:
        print(f"Kafka {release} {what}: {len(self.messages)} messages, {len(self.versions)} versions, "
              f"{self.examples} examples agree; not compared (unstable in {release}, redefined since): "
              f"{sorted(self.unstable_redefined)}")
        shown = "\n".join(self.disagreements[:30])
        count = len(self.disagreements)
        assert not self.disagreements, f"{count} disagreements with Kafka {release}:\n{shown}"
        assert self.examples > 0


def cases(oracle: ko.Oracle, outcome: Outcome) -> Iterator[tuple[str, str, int, Message, Any]]:
    """(name, Kafka class, version, message, its JSON in the release's names) of every example.

    A version the release marks unstable and kcodec's newer spec set redefines on the wire is not
    compared (recorded in ``outcome.unstable_redefined``); any other redefinition is a disagreement.
    """
    own_set = release_set(oracle)
    for name, versions in checked_pairs(oracle).items():
        cls = oracle.kafka_class(name)
        assert cls is not None
        info = message_info(name)
        for v in versions:
            for msg in examples(name, v):
                try:
                    value = ko.release_json(info, v, own_set, kcodec.to_json(msg, v))
                except ko.Redefined as exc:
                    if v in oracle.unstable.get(cls.name, ()):
                        outcome.unstable_redefined.add((name, v))
                    else:
                        outcome.disagree(name, v, kcodec.encode(msg, v), f"redefined: {exc}")
                    continue
                yield name, cls.name, v, msg, value


def test_kafka_decodes_kcodec_bytes_to_kcodec_json(oracle: ko.Oracle) -> None:
    """Kafka's classes read kcodec's bytes (every byte) and write the JSON ``kcodec.to_json`` writes."""
    outcome = Outcome()
    items: list[dict[str, Any]] = []
    expected: list[tuple[str, int, bytes, Any]] = []
    for name, cls, v, msg, value in cases(oracle, outcome):
        data = kcodec.encode(msg, v)
        items.append({"op": "decode", "class": cls, "version": v, "hex": data.hex()})
        expected.append((name, v, data, value))
    for (name, v, data, want), got in zip(expected, oracle.batch(items), strict=True):
        if "error" in got:
            outcome.disagree(name, v, data, f"Kafka refused: {got['error']}")
        elif got["remaining"] != 0:
            outcome.disagree(name, v, data, f"Kafka left {got['remaining']} bytes")
        elif not same(got["json"], want):
            outcome.disagree(name, v, data, f"Kafka JSON {got['json']} != kcodec {want}")
        else:
            outcome.agreed(name, v)
    outcome.check("decode", oracle.kafka_version)


def test_kafka_encodes_kcodec_json_to_kcodec_bytes(oracle: ko.Oracle) -> None:
    """Kafka's classes read kcodec's JSON and write the bytes ``kcodec.encode`` writes for it."""
    outcome = Outcome()
    items: list[dict[str, Any]] = []
    expected: list[tuple[str, int, bytes, Any]] = []
    for name, cls, v, msg, value in cases(oracle, outcome):
        ours = kcodec.to_json(msg, v)
        items.append({"op": "encode", "class": cls, "version": v, "json": value})
        expected.append((name, v, kcodec.encode(kcodec.from_json(name, v, ours), v), value))
    for (name, v, want, value), got in zip(expected, oracle.batch(items), strict=True):
        if "error" in got:
            outcome.disagree(name, v, want, f"Kafka refused {value}: {got['error']}")
        elif got["hex"] != want.hex():
            outcome.disagree(name, v, want, f"Kafka wrote {got['hex']} for {value}")
        else:
            outcome.agreed(name, v)
    outcome.check("encode", oracle.kafka_version)


def test_the_oracle_covers_the_release(oracle: ko.Oracle) -> None:
    """The release is the one asked for, and kcodec has a codec for every message and version it defines."""
    assert oracle.kafka_version == oracle.release
    assert len(oracle.classes) > 150
    lacking = kafka_pairs_kcodec_lacks(oracle)
    print(f"Kafka {oracle.kafka_version}: kcodec lacks {lacking}")
    assert not lacking


def test_the_oracle_answers_errors_and_keeps_running(oracle: ko.Oracle) -> None:
    """A refused item is an error answer for that item only; the process keeps answering."""
    answers = oracle.batch([
        {"op": "decode", "class": "FetchRequestData", "version": 12, "hex": "00"},
        {"op": "decode", "class": "NoSuchMessageData", "version": 0, "hex": ""},
        {"op": "encode", "class": "FetchRequestData", "version": 12, "json": {}},
        {"op": "decode", "class": "ApiVersionsRequestData", "version": 3, "hex": "0261026200"},
    ])
    assert [("error" in a) for a in answers] == [True, True, True, False]
    assert "unable to locate field" in answers[2]["error"]
    assert answers[3] == {"json": {"clientSoftwareName": "a", "clientSoftwareVersion": "b"}, "remaining": 0}
    with pytest.raises(ko.OracleError, match="Kafka oracle"):
        oracle._call({"op": "no-such-op"})
    assert oracle.batch([{"op": "encode", "class": "ApiVersionsRequestData", "version": 3,
                                      "json": answers[3]["json"]}]) == [{"hex": "0261026200"}]


def test_release_names_follow_the_older_spec_set() -> None:
    """Kafka 3.9's JsonConverter names TxnOffsetCommitRequest v3's int32 GenerationId (4.0 renamed it
    GenerationIdOrMemberEpoch; same type, same place): kcodec's JSON is compared under 3.9's names.
    ReadShareGroupStateSummaryResponse v0, unstable in 3.9, changed on the wire since: not comparable."""
    info = message_info("TxnOffsetCommitRequest")
    partition = {"partitionIndex": 0, "committedOffset": 1, "committedLeaderEpoch": -1,
                 "committedMetadata": None}
    value = {"transactionalId": "t", "groupId": "g", "producerId": 1, "producerEpoch": 2,
             "generationIdOrMemberEpoch": 5, "memberId": "m", "groupInstanceId": None,
             "topics": [{"name": "x", "partitions": [partition]}]}
    renamed = ko.release_json(info, 3, "3.9.0", value)
    assert list(renamed) == ["transactionalId", "groupId", "producerId", "producerEpoch", "generationId",
                             "memberId", "groupInstanceId", "topics"]
    assert renamed["generationId"] == 5 and renamed["topics"] == value["topics"]
    assert ko.release_json(info, 3, info.owners[3], value) is value
    summary = message_info("ReadShareGroupStateSummaryResponse")
    with pytest.raises(ko.Redefined):
        ko.release_json(summary, 0, "3.9.0", {"results": []})
