"""Apache Kafka as a test component (tests/apache_kafka*.py, tools/apache_kafka.py): fetching, start-up
failure reporting, the 3-node cluster's per-node stop and start, and skip-or-fail where Kafka cannot run."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from apache_kafka import ApacheKafkaBrokers, KafkaCluster, unavailable
from apache_kafka_broker import KafkaStartError
from apache_kafka_fetch import KafkaUnavailable, cached_classpath, missing_requirements

from kcodec.net.client import Connection
from kcodec.protocol.messages import MetadataRequest, MetadataResponse

ROOT = Path(__file__).resolve().parent.parent


def _brokers(connection: Connection) -> set[int]:
    body = connection.request(MetadataRequest(topics=[]), 9).body
    assert isinstance(body, MetadataResponse)
    return {b.node_id for b in body.brokers}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("ci", ["true", ""])
def test_missing_kafka_skips_on_a_user_machine_and_fails_in_ci(
    ci: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", ci)
    expected = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(expected, match="java is not installed"):
        unavailable("java is not installed")


def test_tool_names_what_is_missing(tmp_path: Path) -> None:
    # No java and no mvn on PATH: one line on stderr, exit status 2, no traceback.
    env = {**os.environ, "PATH": str(Path(sys.executable).parent), "KCODEC_CACHE_DIR": str(tmp_path)}
    env.pop("JAVA_HOME", None)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "apache_kafka.py"), "fetch"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "java is not installed" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.apache_kafka
def test_a_broker_that_cannot_start_is_reported_with_its_log() -> None:
    if (missing := missing_requirements()) is not None:
        unavailable(missing)
    try:
        cluster = KafkaCluster("4.4")
    except KafkaUnavailable as e:
        unavailable(str(e))
    assert cached_classpath(cluster.version) is not None
    root = cluster.root
    with socket.socket() as taken:  # the broker's listener port is taken: it exits while starting
        taken.bind(("127.0.0.1", cluster.nodes[1].port))
        taken.listen()
        with pytest.raises(
            KafkaStartError, match=r"(?s)node 1 exited while starting.*kafka\.log:\n.+"
        ) as raised:
            cluster.start()
    assert "Address already in use" in str(raised.value)
    assert cluster.nodes[1].process is None and not root.exists()


@pytest.mark.apache_kafka
def test_cluster_nodes_stop_and_start(apache_kafka_cluster: KafkaCluster) -> None:
    cluster = apache_kafka_cluster
    assert len(cluster.nodes) == 3 and len(cluster.bootstrap.split(",")) == 3
    with Connection(*cluster.nodes[1].address, timeout=10) as conn:
        assert _brokers(conn) == {1, 2, 3}
    pid = cluster.nodes[3].pid
    assert pid is not None
    cluster.stop_node(3)
    try:
        assert not cluster.nodes[3].running and not _pid_alive(pid)
        with Connection(*cluster.nodes[1].address, timeout=10) as conn:
            # a broker that shut down in a controlled way is unregistered (fenced) by the controller
            for _ in range(600):
                if _brokers(conn) == {1, 2}:
                    break
                time.sleep(0.1)
            assert _brokers(conn) == {1, 2}
    finally:
        cluster.start_node(3)
    new_pid = cluster.nodes[3].pid
    assert new_pid is not None and new_pid != pid and _pid_alive(new_pid)
    with Connection(*cluster.nodes[3].address, timeout=10) as conn:
        assert _brokers(conn) == {1, 2, 3}


def test_failed_start_is_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    # A release that cannot be started is tried once per session, then reported again without retrying.
    calls: list[tuple[object, ...]] = []

    class Failing(KafkaCluster):
        def __init__(self, *args: object, **kwargs: object) -> None:
            calls.append(args)
            raise KafkaStartError("node 1 exited while starting")

    monkeypatch.setattr("apache_kafka.KafkaCluster", Failing)
    brokers = ApacheKafkaBrokers()
    for _ in range(2):
        with pytest.raises(pytest.fail.Exception, match="exited while starting"):
            brokers.broker("4.4")
    assert len(calls) == 1
