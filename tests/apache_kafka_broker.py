"""Apache Kafka brokers on 127.0.0.1, run from Maven Central's jars (see apache_kafka_fetch.py).

A :class:`KafkaCluster` of ``nodes`` KRaft nodes, each a combined controller+broker JVM
(``java -cp CP kafka.Kafka server.properties``) with its own free ports and directory, all of them
voters of one controller quorum (``controller.quorum.voters``). One node is a single broker, three a
cluster whose nodes can be stopped and started one at a time (a stopped node keeps its ports and
data, so it comes back as itself)::

    with KafkaCluster("4.4.0") as kafka:           # one broker
        kafka.bootstrap                             # "127.0.0.1:PORT"
    with KafkaCluster("4.4.0", nodes=3) as cluster:
        cluster.stop_node(2); cluster.start_node(2)

Start-up formats each node's storage with ``kafka.tools.StorageTool format`` (one cluster id), starts
the JVMs and waits until every node answers ApiVersions (kcodec's own handshake) and, with several
nodes, until Metadata lists them all: bounded by a count of attempts. A node that exits or never
answers raises :class:`KafkaStartError` with the tail of its log, after every process started has been
stopped. Stopping is by pid: SIGTERM, then SIGKILL if it lingers; the directory is removed. Nodes
still running when the Python process exits are stopped then (atexit); on Linux a node is also sent
SIGTERM by the kernel if the process that started it dies without that (PR_SET_PDEATHSIG).

Settings for tests: internal topics replicated ``nodes`` times with min.insync.replicas 1,
``group.initial.rebalance.delay.ms=0``, automatic topic creation on; ``overrides`` adds or replaces
any server property (e.g. ``{"unclean.leader.election.enable": "true"}``). :meth:`KafkaCluster.tool`
runs one of Kafka's command-line tools (``org.apache.kafka.tools.TopicCommand``...) from the same jars;
:meth:`~KafkaCluster.create_topic`, :meth:`~KafkaCluster.describe_topic` (kafka-topics) and
:meth:`~KafkaCluster.quorum_status` (kafka-metadata-quorum) use them (:class:`KafkaToolError` when
they fail).
"""

from __future__ import annotations

import atexit
import base64
import ctypes
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from apache_kafka_fetch import KafkaUnavailable, fetch, java_binary, resolve_release

from kcodec.net.client import Connection
from kcodec.net.client_errors import ClientError
from kcodec.net.negotiation import handshake
from kcodec.protocol.errors import KcodecError
from kcodec.protocol.messages import MetadataRequest, MetadataResponse

__all__ = [
    "DEFAULT_XMX",
    "KafkaCluster",
    "KafkaNode",
    "KafkaStartError",
    "KafkaToolError",
    "KafkaUnavailable",
]

HOST = "127.0.0.1"
DEFAULT_XMX = "512m"
TOOL_XMX = "256m"
# Readiness: attempts, each a connection with a short timeout then a pause (the count bounds the wait).
READY_ATTEMPTS = 1500
READY_PAUSE_S = 0.2
STOP_WAIT_S = 60.0  # safety net for a clean shutdown before SIGKILL
JVM_OPTS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")

_LOG4J2 = """status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.target = {target}
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.out.ref = OUT
"""
_LOG4J1 = """log4j.rootLogger={level}, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.Target=System.{stream}
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


def _parent_death_signal() -> Callable[[], None] | None:
    """On Linux: a function for the child, between fork and exec, that asks the kernel to SIGTERM it
    when its parent dies, so that a test run killed outright leaves no broker behind."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1

    def set_signal() -> None:
        prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)

    return set_signal


_die_with_parent = _parent_death_signal()


class KafkaStartError(KafkaUnavailable):
    """A broker did not start; the message ends with the tail of its log."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def random_cluster_id() -> str:
    # Kafka's Uuid.randomUuid().toString(): URL-safe base64 of 16 bytes without padding, never "-"-first.
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def log_tail(path: Path, lines: int = 25) -> str:
    """The last ``lines`` lines of a log, preceded by its first ERROR lines (the cause, which a shutdown
    logs many lines before it ends)."""
    try:
        text = path.read_text(errors="replace").rstrip().splitlines()
    except OSError:
        return "(no log)"
    tail = text[-lines:]
    head = text[: len(text) - len(tail)]
    errors: list[str] = []
    for i, line in enumerate(head):
        if (" ERROR " in line or " FATAL " in line) and len(errors) < 6:
            # the error line and, when it is an exception's, the exception's message
            errors += [
                line,
                *(head[i + 1 : i + 2] if i + 1 < len(head) and not head[i + 1].startswith("[") else []),
            ]
    return "\n".join([*errors, *(["..."] if errors else []), *tail]) or "(empty log)"


def _java_command(classpath: Path, workdir: Path, xmx: str, log_level: str = "INFO") -> list[str]:
    """``java`` with the classpath and a log configuration (both log4j 2 and log4j 1: each release uses
    the one its jars read) that writes to the console."""
    # The broker logs to stdout (its log file); tools log warnings only, to stderr.
    stream = "out" if log_level == "INFO" else "err"
    log4j2 = workdir / f"log4j2-{stream}.properties"
    log4j2.write_text(_LOG4J2.format(level=log_level, target=f"SYSTEM_{stream.upper()}"))
    log4j1 = workdir / f"log4j-{stream}.properties"
    log4j1.write_text(_LOG4J1.format(level=log_level, stream=stream))
    return [
        java_binary(),
        f"-Xmx{xmx}",
        *JVM_OPTS,
        f"-Dlog4j2.configurationFile={log4j2}",
        f"-Dlog4j.configuration=file:{log4j1}",
        f"-Dkafka.logs.dir={workdir / 'logs'}",
        "-cp",
        classpath.read_text().strip(),
    ]


class KafkaNode:
    """One combined controller+broker JVM of a :class:`KafkaCluster` (its ports and directory are fixed
    for its lifetime: a stopped node restarts as itself)."""

    def __init__(self, node_id: int, root: Path) -> None:
        self.node_id = node_id
        self.port = free_port()
        self.controller_port = free_port()
        self.dir = root / f"node-{node_id}"
        self.dir.mkdir(parents=True)
        self.log_path = self.dir / "kafka.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> tuple[str, int]:
        return HOST, self.port

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def properties(self, voters: str, nodes: int, overrides: Mapping[str, str]) -> dict[str, str]:
        replicas = str(nodes)
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://{HOST}:{self.port},CONTROLLER://{HOST}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.dir / "data"),
            "num.partitions": "1",
            "default.replication.factor": replicas,
            "min.insync.replicas": "1",
            "offsets.topic.replication.factor": replicas,
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "4",
            "share.coordinator.state.topic.replication.factor": replicas,
            "share.coordinator.state.topic.min.isr": "1",
            "share.coordinator.state.topic.num.partitions": "4",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "true",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
            "log.cleaner.dedupe.buffer.size": str(4 * 1024 * 1024),
        }
        props.update(overrides)
        return props

    def write_config(self, props: Mapping[str, str]) -> Path:
        path = self.dir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    def launch(self, java: Sequence[str]) -> None:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [*java, "kafka.Kafka", str(self.dir / "server.properties")],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.dir,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )

    def signal_stop(self) -> None:
        if self.running and self.process is not None:
            self.process.send_signal(signal.SIGTERM)

    def wait_stopped(self, wait_s: float = STOP_WAIT_S) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(wait_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)
        self.process = None

    def answers_api_versions(self) -> bool:
        try:
            with Connection(HOST, self.port, timeout=2, client_id="kcodec-readiness") as conn:
                return handshake(conn).ok
        except (ClientError, KcodecError, OSError):
            return False


_LIVE: set[KafkaCluster] = set()


@atexit.register
def _stop_leftovers() -> None:
    for cluster in list(_LIVE):
        cluster.stop()


class KafkaCluster:
    """Apache Kafka ``version`` (an exact release or a line such as "3.9") as ``nodes`` combined KRaft
    nodes on 127.0.0.1. A context manager; :meth:`start` and :meth:`stop` too."""

    def __init__(
        self,
        version: str = "4.4",
        nodes: int = 1,
        *,
        xmx: str = DEFAULT_XMX,
        overrides: Mapping[str, str] | None = None,
    ) -> None:
        if nodes < 1:
            raise ValueError(f"a cluster needs at least one node, not {nodes}")
        self.version = resolve_release(version)
        self.classpath = fetch(self.version)
        self.xmx = xmx
        self.overrides = dict(overrides or {})
        self.cluster_id = random_cluster_id()
        self.root = Path(tempfile.mkdtemp(prefix=f"kcodec-kafka-{self.version}-"))
        self.nodes: dict[int, KafkaNode] = {i: KafkaNode(i, self.root) for i in range(1, nodes + 1)}
        voters = ",".join(f"{n.node_id}@{HOST}:{n.controller_port}" for n in self.nodes.values())
        for node in self.nodes.values():
            node.write_config(node.properties(voters, nodes, self.overrides))

    def __repr__(self) -> str:
        return f"KafkaCluster({self.version!r}, nodes={len(self.nodes)}, bootstrap={self.bootstrap!r})"

    # -- addresses -------------------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """The bootstrap servers, comma-separated (every node)."""
        return ",".join(n.bootstrap for n in self.nodes.values())

    @property
    def address(self) -> tuple[str, int]:
        """The first running node's (host, port)."""
        running = [n for n in self.nodes.values() if n.running] or list(self.nodes.values())
        return running[0].address

    @property
    def pids(self) -> list[int]:
        return [n.pid for n in self.nodes.values() if n.pid is not None]

    # -- life cycle ------------------------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def java(self, log_level: str = "INFO", xmx: str | None = None) -> list[str]:
        return _java_command(self.classpath, self.root, xmx or self.xmx, log_level)

    def _format(self) -> None:
        java = self.java("WARN", TOOL_XMX)
        procs = []
        for node in self.nodes.values():
            command = [*java, "kafka.tools.StorageTool", "format", "-t", self.cluster_id]
            command += ["-c", str(node.dir / "server.properties"), "--ignore-formatted"]
            procs.append((node, subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
        failures = []
        for node, proc in procs:
            out, _ = proc.communicate(timeout=600)
            if proc.returncode != 0:
                failures.append(f"node {node.node_id}: {out.decode(errors='replace').strip()[-1500:]}")
        if failures:
            raise KafkaStartError(
                f"formatting Apache Kafka {self.version}'s storage failed: " + "; ".join(failures)
            )

    def start(self) -> Self:
        """Format the storage, start every node and wait until all of them serve clients."""
        _LIVE.add(self)
        try:
            self._format()
            java = self.java()
            for node in self.nodes.values():
                node.launch(java)
            self.wait_ready(self.nodes.values())
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self, nodes: Iterable[KafkaNode]) -> None:
        pending = list(nodes)
        for _ in range(READY_ATTEMPTS):
            for node in list(pending):
                if not node.running:
                    raise self._failure(node, "exited while starting")
                if node.answers_api_versions():
                    pending.remove(node)
            if not pending and self._all_brokers_registered():
                return
            time.sleep(READY_PAUSE_S)
        names = ", ".join(str(n.node_id) for n in pending) or "(metadata)"
        raise self._failure(
            pending[0] if pending else next(iter(self.nodes.values())), f"not ready ({names})"
        )

    def _all_brokers_registered(self) -> bool:
        if len(self.nodes) == 1:
            return True
        running = {n.node_id for n in self.nodes.values() if n.running}
        try:
            with Connection(*self.address, timeout=2) as conn:
                body = conn.request(MetadataRequest(topics=[]), 9).body
        except (ClientError, KcodecError, OSError):
            return False
        return isinstance(body, MetadataResponse) and running <= {b.node_id for b in body.brokers}

    def _failure(self, node: KafkaNode, what: str) -> KafkaStartError:
        code = node.process.poll() if node.process is not None else None
        status = f" (exit code {code})" if code is not None else ""
        tail = log_tail(node.log_path)
        return KafkaStartError(
            f"Apache Kafka {self.version} node {node.node_id} {what}{status}; "
            f"the end of {node.log_path}:\n{tail}"
        )

    def stop(self) -> None:
        """Stop every node (by pid) and remove the cluster's directory."""
        for node in self.nodes.values():
            node.signal_stop()
        for node in self.nodes.values():
            node.wait_stopped()
        shutil.rmtree(self.root, ignore_errors=True)
        _LIVE.discard(self)

    def stop_node(self, node_id: int, *, kill: bool = False) -> None:
        """Stop one node (SIGTERM: a controlled shutdown; ``kill``: SIGKILL, a crash). Its data stays."""
        node = self.nodes[node_id]
        if kill and node.process is not None:
            node.process.kill()
        node.signal_stop()
        node.wait_stopped()

    def start_node(self, node_id: int) -> None:
        """Start a stopped node again (same id, ports and data) and wait until it serves clients."""
        node = self.nodes[node_id]
        if node.running:
            return
        node.launch(self.java())
        try:
            self.wait_ready([node])
        except BaseException:
            node.signal_stop()
            node.wait_stopped()
            raise

    # -- Kafka's tools -----------------------------------------------------------------------------------

    def tool(self, main_class: str, *args: str, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
        """Run one of Kafka's command-line tools from the same jars, e.g.
        ``tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", b, "--describe")``."""
        command = [*self.java("WARN", TOOL_XMX), main_class, *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)

    def _checked_tool(self, main_class: str, *args: str) -> str:
        proc = self.tool(main_class, "--bootstrap-server", self.bootstrap, *args)
        if proc.returncode != 0:
            name = main_class.rsplit(".", 1)[-1]
            raise KafkaToolError(
                f"{name} {' '.join(args)} exited with {proc.returncode}: {proc.stderr[-2000:]}"
            )
        return proc.stdout

    def create_topic(
        self,
        topic: str,
        partitions: int = 1,
        replication_factor: int = 1,
        configs: Mapping[str, str] | None = None,
    ) -> None:
        """Create a topic with Kafka's kafka-topics (TopicCommand)."""
        args = ["--create", "--topic", topic, "--partitions", str(partitions)]
        args += ["--replication-factor", str(replication_factor)]
        for key, value in (configs or {}).items():
            args += ["--config", f"{key}={value}"]
        self._checked_tool(TOPIC_COMMAND, *args)

    def describe_topic(self, topic: str) -> dict[str, object]:
        """kafka-topics --describe, parsed: ``{"topic_id": str, "partition_count": int, "partitions":
        {partition: {"leader": int, "replicas": [int], "isr": [int]}}}``."""
        out = self._checked_tool(TOPIC_COMMAND, "--describe", "--topic", topic)
        result: dict[str, object] = {}
        partitions: dict[int, dict[str, object]] = {}
        for line in out.splitlines():
            fields = dict(_tool_fields(line))
            if "Partition" in fields:
                partitions[int(fields["Partition"])] = {
                    "leader": int(fields["Leader"]),
                    "replicas": _ids(fields["Replicas"]),
                    "isr": _ids(fields["Isr"]),
                }
            elif "PartitionCount" in fields:
                result["topic_id"] = fields["TopicId"]
                result["partition_count"] = int(fields["PartitionCount"])
        result["partitions"] = partitions
        return result

    def quorum_status(self) -> dict[str, str]:
        """kafka-metadata-quorum describe --status, parsed: ``{"ClusterId": ..., "LeaderId": ..., ...}``."""
        out = self._checked_tool(QUORUM_COMMAND, "describe", "--status")
        pairs = (line.split(":", 1) for line in out.splitlines() if ":" in line)
        return {k.strip(): v.strip() for k, v in pairs}


TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
QUORUM_COMMAND = "org.apache.kafka.tools.MetadataQuorumCommand"


class KafkaToolError(RuntimeError):
    """One of Kafka's command-line tools failed; the message has its exit status and stderr."""


def _tool_fields(line: str) -> list[tuple[str, str]]:
    # "Topic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\t..." -> [("Topic", "t"), ...]
    pairs = []
    for part in line.strip().split("\t"):
        key, sep, value = part.partition(":")
        if sep:
            pairs.append((key.strip(), value.strip()))
    return pairs


def _ids(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]
