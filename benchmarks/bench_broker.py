"""Produce and fetch throughput of kcodec's mock broker beside librdkafka's mock cluster, with the same
client (confluent-kafka / librdkafka) on 127.0.0.1.

Run: ``python benchmarks/bench_broker.py [--messages N] [--size BYTES] [--rounds R] [--compression C]``.

Each round, for each broker: a fresh cluster with one 1-partition topic; a producer sends N messages
(acks=all, linger.ms=5) and flushes; then a consumer assigned at offset 0 reads them all. Reported:
MB/s of message values, messages/s and requests/s (Produce / Fetch requests the client's own
statistics counted), median over the rounds, and the ratio kcodec / librdkafka mock of each median.
librdkafka's mock keeps only the newest few MB of a partition: the fetch reads what each broker still
has, from its low watermark.

kcodec's broker runs as ``kcodec broker`` in its own process (as users run it; it then shares no GIL
with the client), librdkafka's mock cluster in this process through its C API (its threads take no
GIL). kcodec's broker validates every batch (CRC, record count, records parsed) and keeps the
batches; the librdkafka mock does neither check. No assertions: numbers only.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import confluent_kafka as ck

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from rdkafka_mock import MockCluster as RdkafkaMock
from rdkafka_mock import load_librdkafka

TOPIC = "bench"


@contextmanager
def kcodec_broker() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kcodec.cli", "broker", "--listen", "127.0.0.1:0", "--topic", f"{TOPIC}:1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def rdkafka_mock() -> Iterator[str]:
    lib = load_librdkafka()
    lib.rd_kafka_mock_topic_create.restype = ctypes.c_int
    lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    with RdkafkaMock(brokers=1) as mock:
        err = lib.rd_kafka_mock_topic_create(mock._mcluster, TOPIC.encode(), 1, 1)
        if err:
            raise RuntimeError(f"rd_kafka_mock_topic_create: {err}")
        yield mock.bootstraps


class Stats:
    """The client's latest statistics (librdkafka's JSON), to count the requests it sent."""

    def __init__(self) -> None:
        self.latest: dict[str, Any] = {}

    def __call__(self, text: str) -> None:
        self.latest = json.loads(text)

    def requests(self, kind: str) -> int:
        return sum(int(b.get("req", {}).get(kind, 0)) for b in self.latest.get("brokers", {}).values())


def settle(client: Any, stats: Stats) -> None:
    """Let the client emit statistics that include everything it has sent."""
    stamp = stats.latest.get("ts")
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and stats.latest.get("ts") == stamp:
        client.poll(0.05)


def produce(bootstrap: str, n: int, value: bytes, compression: str) -> tuple[float, int]:
    stats = Stats()
    p = ck.Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "compression.type": compression,
            "statistics.interval.ms": 100,
            "stats_cb": stats,
            "log_level": 0,
        }
    )
    p.list_topics(TOPIC, timeout=10)  # connected, metadata known: not part of the timing
    settle(p, stats)
    before = stats.requests("Produce")
    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(TOPIC, value=value, key=b"%d" % i)
                break
            except BufferError:
                p.poll(0.001)
    if p.flush(120) != 0:
        raise RuntimeError("messages left undelivered")
    elapsed = time.perf_counter() - t0
    settle(p, stats)
    return elapsed, stats.requests("Produce") - before


def fetch(bootstrap: str) -> tuple[float, int, int]:
    """Read every message the broker still has (librdkafka's mock keeps only the newest few MB of a
    partition); returns (seconds, messages, Fetch requests)."""
    stats = Stats()
    c = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 10,
            "statistics.interval.ms": 100,
            "stats_cb": stats,
            "log_level": 0,
        }
    )
    try:
        c.list_topics(TOPIC, timeout=10)
        lo, hi = c.get_watermark_offsets(ck.TopicPartition(TOPIC, 0), timeout=10)
        n = hi - lo
        settle(c, stats)
        before = stats.requests("Fetch")
        t0 = time.perf_counter()
        c.assign([ck.TopicPartition(TOPIC, 0, lo)])
        got = 0
        deadline = time.monotonic() + 120
        while got < n and time.monotonic() < deadline:
            for m in c.consume(10000, 1.0):
                if not m.error():
                    got += 1
        elapsed = time.perf_counter() - t0
        if got < n:
            raise RuntimeError(f"read {got} of {n} messages")
        settle(c, stats)
        return elapsed, n, stats.requests("Fetch") - before
    finally:
        c.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=200, help="bytes per message value")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    args = ap.parse_args(argv)
    value = bytes(range(256)) * (args.size // 256) + bytes(args.size % 256)
    brokers = {"kcodec broker": kcodec_broker, "librdkafka mock": rdkafka_mock}
    results: dict[str, dict[str, list[float]]] = {name: {} for name in brokers}
    for r in range(args.rounds):
        order = list(brokers.items()) if r % 2 == 0 else list(reversed(brokers.items()))
        for name, start in order:
            with start() as bootstrap:
                pt, preq = produce(bootstrap, args.messages, value, args.compression)
                ft, fetched, freq = fetch(bootstrap)
            mb = args.messages * args.size / 1e6
            fmb = fetched * args.size / 1e6
            row = results[name]
            for key, val in (
                ("produce MB/s", mb / pt),
                ("produce msg/s", args.messages / pt),
                ("Produce req/s", preq / pt),
                ("fetch MB/s", fmb / ft),
                ("fetch msg/s", fetched / ft),
                ("Fetch req/s", freq / ft),
            ):
                row.setdefault(key, []).append(val)
            print(
                f"round {r + 1} {name}: produce {pt:.2f} s ({preq} requests), fetch {fetched} messages in "
                f"{ft:.2f} s ({freq} requests)",
                file=sys.stderr,
            )
    print(
        f"{args.messages} messages x {args.size} B, compression {args.compression}, "
        f"{args.rounds} rounds (medians)"
    )
    print(f"{'metric':<16} {'kcodec broker':>14} {'librdkafka mock':>16} {'ratio':>7}")
    for key in results["kcodec broker"]:
        k, m = (
            statistics.median(results["kcodec broker"][key]),
            statistics.median(results["librdkafka mock"][key]),
        )
        print(f"{key:<16} {k:>14,.1f} {m:>16,.1f} {k / m if m else float('nan'):>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
