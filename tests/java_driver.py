"""Kafka's Java clients in the tests: runs ``tests/java_clients/KafkaClientDriver.java`` (KafkaConsumer,
KafkaProducer from kafka-clients 4.4.0) as a subprocess that prints one JSON object per line.

kafka-clients comes from Maven through ``apache_kafka_fetch`` (its classpath is cached); the driver is
compiled with ``javac`` once per source version (classes cached outside the repository, keyed by the
source's hash). Without java, javac or Maven the tests skip with one line, and fail when CI is set.
Every run is bounded: the driver's own loops end on counts (with a cap on polls) and the process is
killed by pid after a generous safety net."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from apache_kafka import in_ci
from apache_kafka_fetch import KafkaUnavailable, cache_dir, fetch, java_binary

KAFKA_CLIENTS = "4.4.0"
SOURCE = Path(__file__).resolve().parent / "java_clients" / "KafkaClientDriver.java"
MAIN_CLASS = "KafkaClientDriver"
#: the jars the clients need at run time: no logging backend (slf4j falls back to no output)
JARS = ("kafka-clients-", "slf4j-api-", "zstd-jni-", "lz4-java-", "snappy-java-")
JAVA_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
SAFETY_S = 600.0  # a safety net only: the driver ends on counts


def _classpath() -> list[str]:
    entries = fetch(KAFKA_CLIENTS).read_text().strip().split(os.pathsep)
    return [e for e in entries if Path(e).name.startswith(JARS)]


def _compiled(jars: list[str]) -> Path:
    key = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    target = cache_dir().parent / "java-clients" / f"{KAFKA_CLIENTS}-{key}"
    if (target / f"{MAIN_CLASS}.class").is_file():
        return target
    javac = shutil.which("javac")
    if javac is None:
        raise KafkaUnavailable(
            "javac is not installed: install a JDK 17+ (e.g. apt-get install default-jdk-headless)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix="build-", dir=target.parent))
    done = subprocess.run(
        [javac, "-nowarn", "-encoding", "UTF-8", "-cp", os.pathsep.join(jars), "-d", str(build), str(SOURCE)],
        capture_output=True,
        text=True,
        timeout=SAFETY_S,
        check=False,
    )
    if done.returncode != 0:
        shutil.rmtree(build, ignore_errors=True)
        raise AssertionError(f"javac failed on {SOURCE.name}:\n{done.stderr[-4000:]}")
    try:
        os.replace(build, target)
    except OSError:  # compiled meanwhile by another process
        shutil.rmtree(build, ignore_errors=True)
    return target


def java_command() -> list[str]:
    """The command that runs the driver (skips, or fails in CI, without java/javac/Maven)."""
    try:
        java = java_binary()
        jars = _classpath()
        classes = _compiled(jars)
    except KafkaUnavailable as e:
        if in_ci():
            pytest.fail(f"Kafka's Java clients are required in CI: {e}", pytrace=False)
        pytest.skip(f"Kafka's Java clients unavailable: {e}")
    return [java, *JAVA_OPTIONS, "-cp", os.pathsep.join([str(classes), *jars]), MAIN_CLASS]


class JavaRun:
    """One driver process: iterate :meth:`events` (parsed JSON lines) while it runs; :meth:`stop` kills
    it by pid. ``stderr`` goes to a file whose tail is shown when the driver fails."""

    def __init__(self, *args: object) -> None:
        self._err: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop())
        self.proc = subprocess.Popen(
            [*java_command(), *map(str, args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            text=True,
        )
        self._watchdog = threading.Timer(SAFETY_S, self.proc.kill)
        self._watchdog.start()

    def events(self) -> Iterator[dict[str, Any]]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                yield json.loads(line)

    def send(self, line: str) -> None:
        """A line to the driver's stdin (the copy scenario waits for one when it pauses)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def stderr_tail(self) -> str:
        self._err.seek(0)
        return self._err.read().decode(errors="replace")[-3000:]

    def finish(self) -> list[dict[str, Any]]:
        """The remaining events until the driver ends; asserts it ended well (its last line: done)."""
        rest = list(self.events())
        code = self.proc.wait(SAFETY_S)
        ok = code == 0 and rest and rest[-1] == {"done": True}
        tail = "" if ok else self.stderr_tail()
        self.stop()
        assert ok, (code, rest[-3:], tail)
        return rest

    def stop(self) -> None:
        self._watchdog.cancel()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        self._err.close()


def run(*args: object) -> list[dict[str, Any]]:
    """Run the driver to its end; its events."""
    r = JavaRun(*args)
    try:
        return r.finish()
    finally:
        r.stop()


def records(events: list[dict[str, Any]]) -> list[tuple[int, int, int, str]]:
    """(partition, offset, leader epoch, value) of each record the driver consumed."""
    return [tuple(e["record"]) for e in events if "record" in e]


def needs_java() -> None:
    """Call first in a test: skip it (fail in CI) when the driver cannot run."""
    java_command()
