"""Throughput through ``kcodec proxy`` beside the same clients talking to the broker directly
(benchmark, not a test).

    python benchmarks/bench_proxy.py [--mb 64] [--value-size 1024] [--runs 2]

The broker is librdkafka's mock cluster (in this process, through its C API: tests/rdkafka_mock.py);
the clients are confluent-kafka's Producer (``acks=1``) and Consumer. Each mode produces ``--mb`` MB of
records to a fresh topic (with a partition per 2 MB: the mock keeps only a few MB per partition) and
then consumes them all; MB/s is record-value bytes per second of wall
time (produce: first ``produce`` to ``flush`` done; consume: ``assign`` to the last record). The
proxy runs as its own process (``kcodec proxy``, output to /dev/null) in these modes:

- ``forward``: ``-q`` (no decoding: forwarding and address rewriting only);
- ``forward-norewrite``: ``-q --no-rewrite`` (every frame streamed through as it arrives);
- ``forward+pcap``: ``-q --pcap FILE``;
- ``decode+json``: ``-q --json /dev/null`` (every frame decoded and written as a JSON line);
- ``decode+table``: the table, to /dev/null.

A warm-up (2,000 records each way on another topic) comes first, through the same proxy process. Its
CPU time (``os.wait4`` after SIGTERM) includes start-up and warm-up; its peak resident memory is
``VmHWM``. Ratios are against
``direct`` measured in the same run; the best of ``--runs`` is kept. The machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import confluent_kafka as ck  # noqa: E402
from rdkafka_mock import MockCluster  # noqa: E402

MODES: dict[str, list[str] | None] = {
    "direct": None,
    "forward": ["-q"],
    "forward-norewrite": ["-q", "--no-rewrite"],
    "forward+pcap": ["-q", "--pcap", "{pcap}"],
    "decode+json": ["-q", "--json", os.devnull],
    "decode+table": [],
}


def produce(bootstrap: str, topic: str, count: int, value: bytes) -> float:
    producer = ck.Producer(
        {"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5, "log_level": 0, "batch.size": 1 << 20}
    )
    start = time.perf_counter()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value=value, key=b"%d" % i)
                break
            except BufferError:
                producer.poll(0.01)
    left = producer.flush(120)
    elapsed = time.perf_counter() - start
    if left:
        raise SystemExit(f"{left} records not delivered")
    return elapsed


def consume(bootstrap: str, topic: str, count: int) -> float:
    consumer = ck.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench", "log_level": 0, "enable.auto.commit": False}
    )
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    start = time.perf_counter()
    consumer.assign([ck.TopicPartition(topic, p, 0) for p in partitions])
    got = 0
    deadline = time.monotonic() + 300
    while got < count and time.monotonic() < deadline:
        for msg in consumer.consume(1000, 0.5):
            if not msg.error():
                got += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    if got < count:
        raise SystemExit(f"consumed {got} of {count} records")
    return elapsed


def start_proxy(upstream: tuple[str, int], args: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    cmd = [sys.executable, "-m", "kcodec.cli", "proxy", "--listen", "127.0.0.1:0"]
    cmd += ["--upstream", f"{upstream[0]}:{upstream[1]}", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    first = proc.stdout.readline().decode()
    if not first.startswith("kcodec proxy listening on "):
        raise SystemExit(f"kcodec proxy did not start: {first!r}")
    # the rest of its output goes nowhere, read so that it never blocks on a full pipe
    import threading

    threading.Thread(target=lambda: proc.stdout.read() if proc.stdout else None, daemon=True).start()
    return proc, first.split()[4].rstrip(",")


def stop_proxy(proc: subprocess.Popen[bytes]) -> tuple[float, float]:
    """(CPU seconds, peak resident MB) of the proxy process. The peak is read from /proc (VmHWM):
    ``ru_maxrss`` would count the pages of this process that the child had before it exec'd."""
    with open(f"/proc/{proc.pid}/status") as f:
        status_lines = dict(line.split(":", 1) for line in f)
    peak = int(status_lines["VmHWM"].split()[0]) / 1024
    proc.send_signal(signal.SIGTERM)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime, peak


def run_mode(
    mock: MockCluster, mode: str, args: list[str] | None, n: int, value: bytes, tmp: Path
) -> dict[str, Any]:
    topic = f"bench-{mode}-{time.monotonic_ns()}"
    # the mock keeps only a few MB per partition: enough partitions that nothing is dropped
    mock.create_topic(topic, max(4, int(n * len(value) / 2e6) + 1))
    upstream = mock.brokers[0]
    proc = None
    bootstrap = f"{upstream[0]}:{upstream[1]}"
    if args is not None:
        proc, bootstrap = start_proxy(upstream, [a.format(pcap=tmp / f"{topic}.pcap") for a in args])
    try:
        # warm-up on another topic: connections made, codecs loaded (PYTHONDONTWRITEBYTECODE makes
        # every process compile the generated modules it imports)
        mock.create_topic(topic + "-warm", 4)
        produce(bootstrap, topic + "-warm", 2000, value)
        consume(bootstrap, topic + "-warm", 2000)
        t_produce = produce(bootstrap, topic, n, value)
        t_consume = consume(bootstrap, topic, n)
    finally:
        cpu, rss = stop_proxy(proc) if proc is not None else (0.0, 0.0)
    mb = n * len(value) / 1e6
    return {"produce": mb / t_produce, "consume": mb / t_consume, "cpu": cpu, "rss": rss}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=64.0, help="MB of record values per mode")
    ap.add_argument("--value-size", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=2)
    opts = ap.parse_args()
    value = os.urandom(opts.value_size)
    n = int(opts.mb * 1e6 / opts.value_size)
    best: dict[str, dict[str, Any]] = {}
    with MockCluster(brokers=1) as mock, tempfile.TemporaryDirectory() as tmp:
        for _ in range(opts.runs):
            for mode, args in MODES.items():
                result = run_mode(mock, mode, args, n, value, Path(tmp))
                prev = best.get(mode)
                if prev is None:
                    best[mode] = result
                else:
                    for key in ("produce", "consume"):
                        prev[key] = max(prev[key], result[key])
                    prev["cpu"], prev["rss"] = (
                        min(prev["cpu"], result["cpu"]),
                        min(prev["rss"], result["rss"]),
                    )
    base = best["direct"]
    print(f"{n} records of {opts.value_size} B ({n * opts.value_size / 1e6:.0f} MB), best of {opts.runs}")
    head = f"{'mode':<14} {'produce MB/s':>13} {'ratio':>6} {'consume MB/s':>13} {'ratio':>6}"
    print(f"{head} {'proxy CPU s':>12} {'proxy RSS MB':>13}")
    for mode, r in best.items():
        print(
            f"{mode:<14} {r['produce']:>13.1f} {r['produce'] / base['produce']:>6.2f} {r['consume']:>13.1f} "
            f"{r['consume'] / base['consume']:>6.2f} {r['cpu']:>12.2f} {r['rss']:>13.0f}"
        )


if __name__ == "__main__":
    main()
