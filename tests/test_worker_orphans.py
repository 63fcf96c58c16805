"""``decode-capture -j 2`` leaves no worker behind: SIGKILL to the parent (the kernel kills its workers:
PR_SET_PDEATHSIG) and SIGTERM (stops like Ctrl-C: workers stopped, "terminated", status 143). The
summary mode keeps its workers decoding without writing much to the parent, the case where they used
to run on alone; stopped (SIGSTOP) before the parent is killed, only the kernel can end them. Waits
are counted polls of /proc (a generous safety net, no time measured)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from capture_workload import write_capture
from test_capture_parallel import _children

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")

POLLS = 1200  # each 0.05 s: a minute at most, for a loaded machine
CAPTURE_MB = 24


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("orphans") / "work.pcap"
    write_capture(path, CAPTURE_MB)
    return path


def _state(pid: int) -> str | None:
    """The process's state letter (Z: ended, not yet reaped), None if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _running(pids: list[int]) -> list[int]:
    return [p for p in pids if _state(p) not in (None, "Z")]


def _start(capture: Path) -> tuple[subprocess.Popen[bytes], list[int]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kcodec.cli", "decode-capture", "--summary", "-j", "2", str(capture)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    for _ in range(POLLS):
        workers = _children(proc.pid)
        if len(workers) == 2:
            return proc, workers
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise AssertionError("the workers did not start")


def _gone(workers: list[int]) -> bool:
    for _ in range(POLLS):
        if not _running(workers):
            return True
        time.sleep(0.05)
    return False


def _stop_leftovers(workers: list[int]) -> None:
    for pid in _running(workers):  # (only if the test failed: this test's own workers, by pid)
        os.kill(pid, signal.SIGKILL)


def test_sigkill_to_the_parent_ends_its_workers(capture: Path) -> None:
    proc, workers = _start(capture)
    try:
        if proc.poll() is not None:
            pytest.fail(f"the run ended before it was killed: make the capture larger than {CAPTURE_MB} MB")
        for pid in workers:  # stopped, they can neither finish their shard nor meet a closed pipe
            os.kill(pid, signal.SIGSTOP)
        proc.kill()
        proc.wait(timeout=60)
        assert _gone(workers), f"workers {_running(workers)} outlived their parent"
    finally:
        _stop_leftovers(workers)


def test_sigterm_stops_like_ctrl_c(capture: Path) -> None:
    proc, workers = _start(capture)
    try:
        if proc.poll() is not None:
            pytest.fail(f"the run ended before SIGTERM: make the capture larger than {CAPTURE_MB} MB")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert err.decode().strip().splitlines()[-1] == "terminated" and b"Traceback" not in err
        assert _gone(workers)
    finally:
        _stop_leftovers(workers)
