"""Apache Kafka from Maven Central, on 127.0.0.1, for trying kcodec against the real broker.

    python tools/apache_kafka.py fetch [--version V ...]   # jars into ~/.m2, a classpath file cached
    python tools/apache_kafka.py start [--version V]       # one combined controller+broker node
    python tools/apache_kafka.py cluster [--version V] [--nodes 3]
    python tools/apache_kafka.py stop                      # stops what start/cluster runs

``start`` and ``cluster`` print the bootstrap address and the broker pids, then run until Ctrl-C or
``stop``; the brokers are stopped by pid and their directory removed. A version is an exact release
(4.4.0, 3.9.2) or a release line: 4.4 (the default) or 3.9 (3.9.2, else 3.9.1). Needs Java 17+ and
Maven (mvn); what is missing is said in one line, with a non-zero exit status.

The same code runs the test suite's Apache Kafka fixtures (tests/apache_kafka.py).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from apache_kafka_broker import DEFAULT_XMX, KafkaCluster, KafkaStartError
from apache_kafka_fetch import (
    NEWEST_3_9,
    NEWEST_4X,
    KafkaUnavailable,
    cache_dir,
    fetch,
    resolve_release,
)

PROG = "apache_kafka"


def _state_file() -> Path:
    return cache_dir() / "running.json"


class _Stop(Exception):
    pass


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise _Stop


def cmd_fetch(versions: list[str]) -> int:
    for requested in versions or [NEWEST_4X, NEWEST_3_9]:
        version = resolve_release(requested)
        print(f"Apache Kafka {version}: {fetch(version)}")
    return 0


def _write_state(cluster: KafkaCluster) -> None:
    state = {"pid": os.getpid(), "bootstrap": cluster.bootstrap, "broker_pids": cluster.pids}
    states = _read_states()
    states.append(state)
    _state_file().parent.mkdir(parents=True, exist_ok=True)
    _state_file().write_text(json.dumps(states))


def _read_states() -> list[dict[str, object]]:
    try:
        states = json.loads(_state_file().read_text())
    except (OSError, ValueError):
        return []
    return [s for s in states if isinstance(s, dict) and _alive(s.get("pid"))]


def _alive(pid: object) -> bool:
    if not isinstance(pid, int):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"apache_kafka" in cmdline


def cmd_run(version: str, nodes: int, xmx: str) -> int:
    cluster = KafkaCluster(version, nodes, xmx=xmx)
    signal.signal(signal.SIGTERM, _on_signal)
    try:
        cluster.start()
        _write_state(cluster)
        what = "broker" if nodes == 1 else f"cluster of {nodes} nodes"
        print(f"Apache Kafka {cluster.version} {what}: bootstrap {cluster.bootstrap}", flush=True)
        for node in cluster.nodes.values():
            print(f"  node {node.node_id}: {node.bootstrap} pid {node.pid} log {node.log_path}", flush=True)
        print("Ctrl-C or `python tools/apache_kafka.py stop` stops it.", flush=True)
        while any(n.running for n in cluster.nodes.values()):
            time.sleep(1)
        print(f"{PROG}: the broker exited", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, _Stop):
        return 0
    finally:
        cluster.stop()
        _state_file().write_text(json.dumps([s for s in _read_states() if s.get("pid") != os.getpid()]))


def cmd_stop() -> int:
    states = _read_states()
    if not states:
        print(f"{PROG}: no Apache Kafka started by this tool is running")
        return 0
    for state in states:
        pid = state["pid"]
        assert isinstance(pid, int)
        os.kill(pid, signal.SIGTERM)
        print(f"stopping Apache Kafka at {state['bootstrap']} (tool pid {pid})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/apache_kafka.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fetch", help="fetch releases into ~/.m2 and cache their classpath")
    f.add_argument("--version", action="append", default=[], help="repeatable; default: 4.4 and 3.9")
    for name, nodes in (("start", 1), ("cluster", 3)):
        p = sub.add_parser(name, help=f"run {'one broker' if nodes == 1 else 'a cluster'} until stopped")
        p.add_argument("--version", default=NEWEST_4X)
        p.add_argument("--xmx", default=DEFAULT_XMX, help=f"heap per node (default {DEFAULT_XMX})")
        if nodes > 1:
            p.add_argument("--nodes", type=int, default=nodes)
    sub.add_parser("stop", help="stop what start/cluster runs")
    args = parser.parse_args(argv)
    try:
        if args.command == "fetch":
            return cmd_fetch(args.version)
        if args.command == "stop":
            return cmd_stop()
        if getattr(args, "nodes", 1) < 1:
            parser.error("--nodes must be at least 1")
        return cmd_run(args.version, getattr(args, "nodes", 1), args.xmx)
    except KafkaStartError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    except KafkaUnavailable as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
