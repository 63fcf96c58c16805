"""The library's parallel decode (:func:`kcodec.capture.parallel.decode_parallel`): the events of
``iter_capture``, decoded by worker processes, and how many workers it chooses by default."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_capture_parallel import RECORDED, _children, busy_capture

from kcodec.capture import CaptureFileError, iter_capture
from kcodec.capture import parallel as par
from kcodec.capture.parallel import WorkerFailed, decode_parallel, default_workers, idle_cores

pytestmark = pytest.mark.skipif(
    not par.can_fork() or not Path("/proc/self/stat").exists(), reason="workers are forked; reads /proc"
)


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("parallel_api") / "busy.pcap"
    busy_capture(path)
    return path


def _mine() -> set[int]:
    """This process's children (running, or ended and not yet waited for): other tests' fixtures in
    the same test process (a broker, Spark's JVM) have theirs, so a test compares before and after."""
    return set(_children(os.getpid()))


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_workers_yield_the_events_of_one_decoder(busy: Path, workers: int) -> None:
    before = _mine()
    one = [e.to_dict() for e in iter_capture(busy)]
    many = [e.to_dict() for e in decode_parallel(busy, workers=workers)]
    assert len(one) > 2000 and any(e["type"] == "issue" for e in one)
    assert many == one
    assert _mine() <= before


def test_recorded_captures_with_two_workers() -> None:
    for path in RECORDED:
        assert [e.to_dict() for e in decode_parallel(path, workers=2)] == [
            e.to_dict() for e in iter_capture(path)
        ], path


def test_options_reach_the_workers(busy: Path) -> None:
    """No Kafka port and no autodetection: no frame (every worker told so)."""
    events = list(decode_parallel(busy, workers=2, ports=(1,), autodetect=False))
    assert events == [e for e in iter_capture(busy, ports=(1,), autodetect=False)] or all(
        e.to_dict()["type"] == "issue" for e in events
    )
    assert not any(e.to_dict()["type"] == "frame" for e in events)


def test_closing_early_stops_the_workers(busy: Path) -> None:
    before = _mine()
    events = decode_parallel(busy, workers=2)
    first = [next(events) for _ in range(5)]
    one = iter_capture(busy)
    assert [e.to_dict() for e in first] == [next(one).to_dict() for _ in range(5)]
    events.close()
    assert _mine() <= before


def test_not_a_capture_is_a_capture_file_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"this is not a capture at all" * 1000)
    before = _mine()
    for workers in (1, 2):
        with pytest.raises(CaptureFileError, match="not a pcap or pcapng file"):
            list(decode_parallel(bad, workers=workers))
    assert _mine() <= before
    with pytest.raises(ValueError, match="at least 1"):
        list(decode_parallel(bad, workers=0))
    assert issubclass(WorkerFailed, Exception)


def test_idle_cores_are_the_cores_less_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    for load, idle in ((0.0, 4), (0.4, 4), (0.6, 3), (1.7, 2), (2.5, 1), (3.6, 1), (9.0, 1)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        assert idle_cores() == idle, load


def test_default_workers_by_size_and_idle_cores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = tmp_path / "small.pcap", tmp_path / "large.pcap"
    small.write_bytes(b"\0" * 1000)
    large.write_bytes(b"\0" * 4000)
    for idle, workers in ((1, 1), (2, 2), (3, 3), (12, 8)):
        monkeypatch.setattr(par, "idle_cores", lambda idle=idle: idle)
        assert default_workers(large, min_bytes=4000) == workers
        assert default_workers(small, min_bytes=4000) == 1  # (smaller than min_bytes)
        assert default_workers(tmp_path, min_bytes=0) == 1  # (not a regular file)
        assert default_workers(tmp_path / "missing", min_bytes=0) == 1
    assert default_workers(small) == 1  # (under MIN_PARALLEL_BYTES)


def test_decode_capture_uses_one_process_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers cost more CPU in all than one process (each reads the whole file; the parent merges):
    ``decode-capture`` starts them for ``-j N`` and ``-j auto`` only, whatever the file and cores."""
    from click.testing import CliRunner

    from kcodec.cli import decode_capture, main

    capture = str(Path(__file__).resolve().parent.parent / "samples" / "sample.pcap")
    started: list[int] = []
    real_jobs = decode_capture._jobs

    def counted_jobs(jobs: int | None, path: str) -> int:
        started.append(real_jobs(jobs, path))
        return started[-1]

    monkeypatch.setattr(decode_capture, "_jobs", counted_jobs)
    # (-j auto on a small file, 3 idle cores: as for a file of 16 MiB or more)
    monkeypatch.setattr(decode_capture, "default_workers", lambda path: default_workers(path, min_bytes=0))
    monkeypatch.setattr(par, "idle_cores", lambda: 3)
    runner = CliRunner()
    one = runner.invoke(main, ["decode-capture", "--json", capture])
    assert one.exit_code == 0 and started == [1]
    for jobs, workers in (("auto", 3), ("2", 2)):
        many = runner.invoke(main, ["decode-capture", "--json", "-j", jobs, capture])
        assert many.exit_code == 0 and many.output == one.output and started[-1] == workers
    for bad in ("0", "65", "two"):
        refused = runner.invoke(main, ["decode-capture", "-j", bad, capture])
        assert refused.exit_code == 2 and "neither a number from 1 to 64 nor 'auto'" in refused.output
