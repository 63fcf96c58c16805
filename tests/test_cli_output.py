"""What every ``kcodec`` command does when its output cannot be written (handled once, at the entry
point): a full disk (``> /dev/full``) is one line and exit status 1, never a traceback; a reader that
goes away (``| head -1``) ends the command quietly with exit status 0, every time, however far the
output got. Subprocesses, as a shell runs them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_broker_cli import start_broker, stop

from kcodec.broker import MockCluster

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = str(ROOT / "samples" / "sample.pcap")
KCODEC = [sys.executable, "-m", "kcodec.cli"]

pytestmark = pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")

OFFLINE = [
    ["describe", "FetchRequest"],
    ["describe", "FetchRequest", "--json"],
    ["apis"],
    ["apis", "--json"],
    ["decode-capture", SAMPLE],
    ["decode-capture", "--json", SAMPLE],
    ["decode-capture", "--summary", SAMPLE],
    ["decode-capture", "--summary", "--json", SAMPLE],
    ["decode-capture", "-V", SAMPLE],
    ["decode-capture", "--records", "text", SAMPLE],
    ["decode-capture", "-c", "5", SAMPLE],
    ["decode-capture", "-j", "2", SAMPLE],
    ["decode-capture", "-j", "2", "--json", SAMPLE],
]


def _to_dev_full(args: list[str]) -> subprocess.CompletedProcess[str]:
    with open("/dev/full", "w") as full:
        return subprocess.run([*KCODEC, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)


def _one_line_no_space(done: subprocess.CompletedProcess[str], command: str) -> None:
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.splitlines()  # (the program name: "python -m kcodec.cli" here, else "kcodec")
    assert line.endswith(f" {command}: cannot write the output: No space left on device"), line


@pytest.mark.parametrize("args", OFFLINE, ids=" ".join)
def test_a_full_disk_is_one_line_and_exit_1(args: list[str]) -> None:
    _one_line_no_space(_to_dev_full(args), args[0])


@pytest.fixture
def control() -> Iterator[str]:
    proc, lines = start_broker("--listen", "127.0.0.1:0", "--topic", "t:2", "--control", "127.0.0.1:0")
    try:
        yield lines[1].split()[1]
    finally:
        assert stop(proc) == 0


def test_a_full_disk_for_the_commands_that_ask_a_broker(kcodec_broker: MockCluster, control: str) -> None:
    target = kcodec_broker.bootstrap.split(",")[0]
    for args in (["metadata", target], ["metadata", target, "--json"], ["versions", target],
                 ["versions", target, "--json"], ["broker-ctl", control, "topics"],
                 ["broker-ctl", control, "describe", "t", "0"]):
        _one_line_no_space(_to_dev_full(args), args[0])


def _read_one_line_then_close(args: list[str]) -> tuple[int, str]:
    proc = subprocess.Popen([*KCODEC, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.readline()
        proc.stdout.close()  # as `| head -1` does
        err = proc.stderr.read().decode()
        return proc.wait(120), err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    ("args", "times"),
    [
        (["apis"], 10),
        (["describe", "FetchRequest"], 3),
        (["decode-capture", SAMPLE], 3),
        (["decode-capture", "--json", SAMPLE], 3),
        (["decode-capture", "-V", SAMPLE], 3),
        (["decode-capture", "-j", "2", SAMPLE], 3),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else str(v),
)
def test_a_reader_that_goes_away_ends_the_command_quietly_with_0(args: list[str], times: int) -> None:
    for _ in range(times):  # whether the reader was gone before the last write or not: the same
        code, err = _read_one_line_then_close(args)
        assert (code, err) == (0, "")
