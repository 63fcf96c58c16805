"""The worker processes of ``decode-capture -j N`` (:mod:`kcodec.capture.parallel.forked`): real forks
and pipes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kcodec.capture.parallel.forked import PipeReader, PipeWriter, can_fork, start

pytestmark = pytest.mark.skipif(not can_fork(), reason="workers are forked")

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "sample.pcap"


def _python(script: str) -> subprocess.CompletedProcess[str]:
    """``script`` run by this Python in a process of its own (which must exit 0)."""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done


def _all(reader: PipeReader) -> list[bytes]:
    out: list[bytes] = []
    try:
        while True:
            out.append(reader.recv_bytes())
    except EOFError:
        return out


def test_messages_of_every_size_arrive_whole_and_in_order() -> None:
    sizes = [0, 1, 3, 4, 5, (1 << 14) - 4, 1 << 14, (1 << 14) + 1, 65536, 3 * 65536 + 7, 1 << 21]
    messages = [bytes([i % 251]) * n for i, n in enumerate(sizes)]

    def send(out: PipeWriter) -> None:
        for m in messages:
            out.send_bytes(memoryview(bytearray(m)))  # (a view, as the parallel decoder sends)
        out.close()

    worker = start(send, [], 1 << 20)
    got = _all(worker.reader)  # (read as written: the large ones do not fit in the pipe)
    worker.join(10)
    worker.reader.close()
    assert got == messages
    assert worker.status is not None and os.waitstatus_to_exitcode(worker.status) == 0


def test_a_message_cut_short_is_the_end_of_the_pipe() -> None:
    r, w = os.pipe()
    os.write(w, (100).to_bytes(4, "big") + b"only this")
    os.close(w)
    reader = PipeReader(r)
    with pytest.raises(EOFError):
        reader.recv_bytes()
    reader.close()


def test_a_worker_that_raises_exits_1_and_runs_nothing_of_the_parents() -> None:
    """The child leaves by ``os._exit``: the parent's buffered output is not written again by it,
    and its ``finally`` blocks and ``atexit`` handlers do not run in it."""
    script = (
        "import atexit, sys\n"
        "from kcodec.capture.parallel.forked import start\n"
        "atexit.register(lambda: sys.stdout.write('atexit\\n'))\n"
        "sys.stdout.write('buffered before the fork\\n')\n"
        "def fail(out):\n"
        "    raise RuntimeError('worker failed')\n"
        "try:\n"
        "    w = start(fail, [])\n"
        "    w.join(10)\n"
        "    sys.stdout.write(f'status {w.status >> 8}\\n')\n"
        "finally:\n"
        "    sys.stdout.write('finally\\n')\n"
    )
    done = _python(script)
    assert done.stdout == "buffered before the fork\nstatus 1\nfinally\natexit\n"
    assert "RuntimeError: worker failed" in done.stderr  # (its traceback, from the child)


def test_terminate_stops_a_worker_and_join_kills_one_that_ignores_it() -> None:
    def sleep(out: PipeWriter) -> None:
        out.send_bytes(b"started")
        time.sleep(60)

    def stubborn(out: PipeWriter) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        out.send_bytes(b"started")
        time.sleep(60)

    for target, expected in ((sleep, signal.SIGTERM), (stubborn, signal.SIGKILL)):
        worker = start(target, [])
        assert worker.reader.recv_bytes() == b"started"
        t = time.monotonic()
        worker.terminate()
        worker.join(0.5)
        assert time.monotonic() - t < 30  # stopped, not waited for: the worker sleeps for 60 s
        assert not worker.is_alive() and worker.status is not None
        assert os.WIFSIGNALED(worker.status) and os.WTERMSIG(worker.status) == expected
        worker.reader.close()


def test_a_worker_whose_parent_stopped_reading_gets_a_broken_pipe() -> None:
    result: list[str] = []
    r, w = os.pipe()
    reader, writer = PipeReader(r), PipeWriter(w)
    reader.close()

    def send() -> None:
        try:
            writer.send_bytes(b"x" * 100)
        except BrokenPipeError:
            result.append("broken")

    thread = threading.Thread(target=send)
    thread.start()
    thread.join(10)
    writer.close()
    assert result == ["broken"]


def test_a_later_worker_does_not_hold_an_earlier_workers_pipe() -> None:
    """Each child closes the reading ends of the pipes of the workers started before it."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("reads /proc")

    def links() -> list[str]:
        out = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                out.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                pass
        return out

    first = start(lambda out: out.send_bytes(b"first"), [])
    pipe = os.readlink(f"/proc/self/fd/{first.reader.fileno()}")
    assert pipe.startswith("pipe:")
    second = start(lambda out: out.send_bytes("\n".join(links()).encode()), [first.reader.fileno()])
    held = second.reader.recv_bytes().decode().splitlines()
    assert first.reader.recv_bytes() == b"first"
    for w in (first, second):
        w.join(10)
        w.reader.close()
    assert pipe not in held and any(link.startswith("pipe:") for link in held)


def test_a_parallel_run_does_not_import_multiprocessing() -> None:
    script = (
        "import os, sys\n"
        "from kcodec.cli import main\n"
        "os.dup2(os.open(os.devnull, os.O_WRONLY), 1)\n"
        "try:\n"
        f"    main(['decode-capture', '-j', '2', {str(SAMPLE)!r}], standalone_mode=False)\n"
        "except SystemExit:\n"
        "    pass\n"
        "assert 'kcodec.capture.parallel.engine' in sys.modules\n"
        "sys.stderr.write(' '.join(m for m in ('multiprocessing', 'tempfile') if m in sys.modules))\n"
    )
    assert _python(script).stderr == ""


def test_a_worker_that_cannot_be_started_is_one_line_and_nothing_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fork failing for the second worker (a limit on processes reached): WorkerFailed, the first
    worker stopped and reaped, and no descriptor of the run left open."""
    import io

    from kcodec.capture import DEFAULT_PORTS
    from kcodec.capture.parallel import forked
    from kcodec.capture.parallel.engine import ParallelRun, WorkerFailed
    from kcodec.cli.capture_filters import EventFilter
    from kcodec.cli.parallel_items import ShardItems
    from kcodec.cli.parallel_sink import MergedOutput

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("reads /proc")
    real_fork = os.fork
    forks: list[int] = []

    def fork() -> int:
        if forks:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        pid = real_fork()
        if pid:
            forks.append(pid)
        return pid

    monkeypatch.setattr(forked.os, "fork", fork)
    before = set(os.listdir("/proc/self/fd"))
    options = {"ports": tuple(DEFAULT_PORTS), "autodetect": True, "strict": False}
    out = MergedOutput(flt=EventFilter(), jsonout=io.BytesIO(), table=None, count=None)
    run = ParallelRun(str(SAMPLE), 2, lambda: ShardItems(EventFilter(), "raw", "json", False), options)
    with pytest.raises(WorkerFailed, match="could not start worker process 2 of 2: .*Resource temporarily"):
        run.run(out.add)
    assert len(forks) == 1
    with pytest.raises(ChildProcessError):  # (reaped: no child of this process is left)
        os.waitpid(forks[0], os.WNOHANG)
    assert set(os.listdir("/proc/self/fd")) <= before


def test_no_thread_runs_when_the_workers_are_forked_even_with_a_progress_bar() -> None:
    """A thread running at a fork may hold a lock (stderr's among them) that the child then never
    gets: the progress bar's refresh thread starts only after the workers are forked."""
    script = (
        "import os, sys, threading\n"
        "from kcodec.capture.parallel import forked\n"
        "from kcodec.cli import main\n"
        "real = os.fork\n"
        "seen = []\n"
        "def fork():\n"
        "    seen.append(threading.active_count())\n"
        "    return real()\n"
        "forked.os.fork = fork\n"
        "os.dup2(os.open(os.devnull, os.O_WRONLY), 1)\n"
        "try:\n"
        f"    main(['decode-capture', '--progress', '-j', '2', {str(SAMPLE)!r}], standalone_mode=False)\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(seen, file=sys.stderr)\n"
    )
    assert _python(script).stderr.strip().splitlines()[-1] == "[1, 1]"
