"""`kcodec broker` and `kcodec broker-ctl` as a person runs them (subprocesses on 127.0.0.1, stopped
by the test), and the pytest fixtures the kcodec.broker plugin gives users' own tests."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from kcodec import message_class
from kcodec.broker import MockCluster
from kcodec.net.client import Connection, parse_host_port
from kcodec.net.negotiation import handshake

KCODEC = [sys.executable, "-m", "kcodec.cli"]


def start_broker(*args: str) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen([*KCODEC, "broker", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    lines = [proc.stdout.readline().strip()]
    if "--control" in args:
        lines.append(proc.stdout.readline().strip())
    return proc, lines


def stop(proc: subprocess.Popen[str], sig: int = signal.SIGTERM) -> int:
    proc.send_signal(sig)
    try:
        return proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


@pytest.fixture
def running() -> Iterator[tuple[list[tuple[str, int]], str]]:
    proc, lines = start_broker("--listen", "127.0.0.1:0", "--brokers", "2", "--topic", "t:2",
                               "--control", "127.0.0.1:0")
    try:
        bootstrap = [parse_host_port(a) for a in lines[0].split(",")]
        assert lines[1].startswith("control 127.0.0.1:")
        yield bootstrap, lines[1].split()[1]
    finally:
        assert stop(proc) == 0


def ctl(control: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KCODEC, "broker-ctl", control, *args], capture_output=True, text=True, timeout=30)


def test_broker_prints_its_bootstrap_list_and_serves(running: tuple[list[tuple[str, int]], str]) -> None:
    brokers, control = running
    assert len(brokers) == 2 and all(host == "127.0.0.1" for host, _ in brokers)
    with Connection(*brokers[1], timeout=5) as conn:
        assert handshake(conn).ok
    described = json.loads(ctl(control, "describe", "t", "1").stdout)
    assert (described["leader"], described["leader_epoch"], described["replicas"]) == (2, 0, [2, 1])
    moved = json.loads(ctl(control, "move-leader", "t", "1").stdout)
    assert (moved["leader"], moved["leader_epoch"]) == (1, 1)
    elected = json.loads(ctl(control, "unclean-election", "t", "1", "--truncate-to", "0", "--record", "a",
                             "--record", "b").stdout)
    assert (elected["leader_epoch"], elected["log_end_offset"], elected["epochs"]) == (2, 2, [[2, 0]])
    assert json.loads(ctl(control, "topics").stdout) == {"t": 2}
    missing = ctl(control, "describe", "nope")
    assert missing.returncode == 1 and missing.stderr.strip().count("\n") == 0
    assert "no partition nope-0 (UNKNOWN_TOPIC_OR_PARTITION)" in missing.stderr
    assert "Handshake" not in missing.stderr and "Traceback" not in missing.stderr


def test_broker_ctl_injects_faults(running: tuple[list[tuple[str, int]], str]) -> None:
    brokers, control = running

    def run(*args: str) -> object:
        done = ctl(control, *args)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert run("inject-errors", "Fetch", "6", "6", "--broker", "2") == 2
    assert run("inject-errors", "3", "0", "--latency-ms", "10") == 1  # by key; latency only
    run("broker-down", "1")
    run("move-leader", "t", "1")  # partition 1: leader 2 -> 1, epoch 1
    run("stale-metadata", "2")
    assert run("faults") == {"pending": {"2/1": 2, "any/3": 1}, "down": [1], "stale": {"2": 1}}
    with Connection(*brokers[1], timeout=5) as conn:  # broker 2: stale, shows partition 1 at epoch 0
        request = message_class("MetadataRequest")(topics=None)
        partitions = conn.request(request, 12).body.topics[0].partitions
        assert sorted((p.partition_index, p.leader_id, p.leader_epoch) for p in partitions) == [(0, 1, 0), (1, 2, 0)]
    with pytest.raises(OSError), Connection(*brokers[0], timeout=5) as down:
        down.request(message_class("MetadataRequest")(topics=None), 12)
    run("broker-up", "1")
    run("clear-faults")
    assert run("faults") == {"pending": {}, "down": [], "stale": {}}
    bad = ctl(control, "inject-errors", "NoSuchApi", "6")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "no API 'NoSuchApi'" in bad.stderr
    bad = ctl(control, "broker-down", "9")
    assert bad.returncode == 1 and "no broker 9" in bad.stderr and "Traceback" not in bad.stderr


def test_ctrl_c_exits_130() -> None:
    proc, lines = start_broker("--listen", "127.0.0.1:0")
    assert lines[0].startswith("127.0.0.1:")
    assert stop(proc, signal.SIGINT) == 130


@pytest.mark.parametrize(
    "args",
    [["--listen", "nope"], ["--listen", "127.0.0.1:70000"], ["--brokers", "0"], ["--topic", "t:x"]],
)
def test_bad_arguments_are_usage_errors(args: list[str]) -> None:
    done = subprocess.run([*KCODEC, "broker", *args], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stdout == ""


def test_a_port_in_use_is_one_line_and_exit_1() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        done = subprocess.run([*KCODEC, "broker", "--listen", f"127.0.0.1:{port}"], capture_output=True, text=True,
                              timeout=30)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and done.stderr.startswith("kcodec broker: ")


def test_broker_ctl_without_a_broker() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = ctl(f"127.0.0.1:{port}", "topics")
    assert done.returncode == 1 and done.stderr.startswith("kcodec broker-ctl: ") and "Traceback" not in done.stderr


# --- the pytest plugin ---------------------------------------------------------------------------------


def test_the_fixture_gives_a_running_cluster(kcodec_broker: MockCluster) -> None:
    assert len(kcodec_broker.addresses) == 1
    with Connection(*kcodec_broker.addresses[0], timeout=5) as conn:
        assert handshake(conn).broker_ranges[0] == (3, 13)


@pytest.mark.kcodec_broker(brokers=3, proposals=True)
def test_the_marker_configures_the_cluster(kcodec_broker: MockCluster) -> None:
    assert len(kcodec_broker.addresses) == 3
    with Connection(*kcodec_broker.addresses[2], timeout=5) as conn:
        assert handshake(conn).broker_ranges[0] == (3, 14)


def test_the_factory_stops_what_it_started(kcodec_broker_factory: object) -> None:
    assert callable(kcodec_broker_factory)
    a = kcodec_broker_factory()
    b = kcodec_broker_factory(brokers=2)
    assert a.bootstrap != b.bootstrap
