"""Record ``tests/captures/consumer_groups.pcap``: two consumer groups of real clients, each with a
rebalance, recorded by tcpdump on the loopback interface (maintainer script; not run by CI or the
tests; tcpdump needs the right to capture, e.g. root).

    python tools/record_groups_capture.py        # needs confluent-kafka, kafka-python and tcpdump

Against kcodec's mock broker (``kcodec.broker.MockCluster``, one broker on 127.0.0.1):

1. a confluent-kafka (librdkafka) producer writes a few records to ``orders`` (4 partitions) and
   ``payments`` (2 partitions);
2. group ``rd-group``: librdkafka consumer ``rd-a`` subscribes to ``orders`` and gets all 4
   partitions; then ``rd-b`` joins, the group rebalances and each holds 2; both leave;
3. group ``py-group``: kafka-python consumer ``py-a`` subscribes to ``payments`` and gets both
   partitions; then ``py-b`` joins, the group rebalances and each holds 1; both leave.

Every step waits for a count of assigned partitions (a deadline only as a safety net). Network use:
loopback only; the clients, the broker and tcpdump are stopped at the end.
"""

from __future__ import annotations

import argparse
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
QUIET = {"log_level": 0}
DEADLINE_S = 60.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _until(done: Callable[[], bool], step: Callable[[], None], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not done():
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {what}")
        step()


def _poll(consumer: Any, timeout: float) -> None:
    consumer.poll(timeout)


def _rdkafka_group(bootstrap: str) -> None:
    from confluent_kafka import Consumer

    conf = {"bootstrap.servers": bootstrap, "group.id": "rd-group", "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "range", "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 1000, **QUIET}  # fmt: skip
    a = Consumer({**conf, "client.id": "rd-a"})
    a.subscribe(["orders"])
    _until(lambda: len(a.assignment()) == 4, lambda: _poll(a, 0.1), "rd-a to hold 4 partitions")
    b = Consumer({**conf, "client.id": "rd-b"})
    b.subscribe(["orders"])

    def both() -> None:
        a.poll(0.05)
        b.poll(0.05)

    _until(lambda: sorted((len(a.assignment()), len(b.assignment()))) == [2, 2], both, "a 2/2 split")
    print("rd-group:", *[sorted(tp.partition for tp in c.assignment()) for c in (a, b)])
    b.close()
    a.close()


def _python_group(bootstrap: str) -> None:
    from kafka import KafkaConsumer

    conf: dict[str, Any] = {"bootstrap_servers": bootstrap, "group_id": "py-group",
                            "auto_offset_reset": "earliest", "session_timeout_ms": 6000,
                            "heartbeat_interval_ms": 1000}  # fmt: skip
    a = KafkaConsumer("payments", client_id="py-a", **conf)
    _until(lambda: len(a.assignment()) == 2, lambda: _poll(a, 100), "py-a to hold 2 partitions")
    b = KafkaConsumer("payments", client_id="py-b", **conf)

    def both() -> None:
        a.poll(50)
        b.poll(50)

    _until(lambda: sorted((len(a.assignment()), len(b.assignment()))) == [1, 1], both, "a 1/1 split")
    split = [sorted(tp.partition for tp in c.assignment()) for c in (a, b)]
    print("py-group:", *split)
    b.close()
    a.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "captures" / "consumer_groups.pcap")
    parser.add_argument("--port", type=int, default=0, help="the broker's port (default: a free one)")
    args = parser.parse_args(argv)

    from confluent_kafka import Producer

    from kcodec.broker import MockCluster

    port = args.port or _free_port()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    dump = subprocess.Popen(
        ["tcpdump", "-i", "lo", "-U", "-s", "0", "-w", str(args.out), f"tcp port {port}"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert dump.stderr is not None
        line = dump.stderr.readline()  # "listening on lo, ...": capturing from here on
        if "listening" not in line:
            raise SystemExit(f"tcpdump did not start: {line.strip()}")
        with MockCluster(brokers=1, host="127.0.0.1", port=port) as cluster:
            cluster.create_topic("orders", 4)
            cluster.create_topic("payments", 2)
            producer = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": "producer", **QUIET})
            for i in range(8):
                producer.produce("orders", key=b"k%d" % i, value=b"order %d" % i, partition=i % 4)
                producer.produce("payments", key=b"k%d" % i, value=b"payment %d" % i, partition=i % 2)
            if producer.flush(20):
                raise SystemExit("the producer did not deliver")
            del producer
            _rdkafka_group(cluster.bootstrap)
            _python_group(cluster.bootstrap)
            time.sleep(0.5)  # the last segments (FIN, ACK) reach the capture
    finally:
        dump.send_signal(signal.SIGINT)
        try:
            dump.wait(10)
        except subprocess.TimeoutExpired:
            dump.kill()
            dump.wait()
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes; broker port {port})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
