"""Soak: ``kcodec proxy`` in front of ``kcodec broker`` under load and faults for a given time; prints
messages produced (acknowledged), consumed, lost and duplicated, batches that failed their CRC, the
faults injected, and each process's peak RSS and most open file descriptors.

Run: ``python benchmarks/bench_soak.py [--duration 600] [--clients 32] [--partitions 8]``.

Load: ``--clients`` threads, each an idempotent producer (InitProducerId, then Produce v9 acks=all of
10-record batches with producer id, epoch and sequence) through the proxy; a batch whose connection
fails is sent again on a new connection with the same sequence, so the broker's idempotence check
keeps it from being written twice. Faults, one every ``--fault-every`` seconds, in turn: a client that
disconnects inside a request frame, a 2 GB size prefix, garbage bytes, a connection that goes idle,
and a restart of the proxy (same port: every client connection is cut). At the end one consumer
fetches every partition from offset 0 through the proxy and checks each acknowledged value was read
exactly once. Linux (/proc) for RSS and descriptors. Numbers only, no assertions.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import kcodec
from kcodec.net.client import Connection
from kcodec.records import NewRecord, build_batch, iter_batches

TOPIC = "soak"
BATCH = 10


def _c(name: str) -> Any:
    return kcodec.message_class(name)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kcodec.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


class Processes:
    """The broker and the proxy (restartable on its port), and their peaks."""

    def __init__(self, partitions: int) -> None:
        self.broker = _start(["broker", "--listen", "127.0.0.1:0", "--topic", f"{TOPIC}:{partitions}"])
        assert self.broker.stdout is not None
        self.upstream = self.broker.stdout.readline().strip().split(",")[0]
        self.port = _free_port()
        self.proxy = self._proxy()
        self.peak_fds = {"broker": 0, "proxy": 0}
        self.proxy_rss_peaks: list[int] = []

    def _proxy(self) -> subprocess.Popen[str]:
        proc = _start(["proxy", "--listen", f"127.0.0.1:{self.port}", "--upstream", self.upstream, "--quiet"])
        assert proc.stdout is not None
        proc.stdout.readline()  # the listen address: it is listening
        return proc

    def restart_proxy(self) -> None:
        self.proxy_rss_peaks.append(_peak_rss(self.proxy.pid))
        self.proxy.terminate()
        self.proxy.wait(30)
        self.proxy = self._proxy()

    def sample(self) -> None:
        for name, proc in (("broker", self.broker), ("proxy", self.proxy)):
            fds = _fds(proc.pid)
            self.peak_fds[name] = max(self.peak_fds[name], fds)

    def stop(self) -> dict[str, int]:
        proxy = max([_peak_rss(self.proxy.pid), *self.proxy_rss_peaks])
        peaks = {"broker": _peak_rss(self.broker.pid), "proxy": proxy}
        for proc in (self.proxy, self.broker):
            proc.terminate()
            proc.wait(30)
        return peaks


def _peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


class Producer(threading.Thread):
    """One idempotent producer: acknowledged values in ``acked``."""

    def __init__(self, k: int, port: int, partitions: int, deadline: float) -> None:
        super().__init__(name=f"soak-producer-{k}", daemon=True)
        self.k, self.port, self.partition, self.deadline = k, port, k % partitions, deadline
        self.acked: list[bytes] = []
        self.retries = 0
        self.errors: dict[int, int] = {}

    def _connect(self) -> Connection:
        while True:
            try:
                return Connection("127.0.0.1", self.port, timeout=10).connect()
            except Exception:
                self.retries += 1
                time.sleep(0.2)

    def run(self) -> None:
        conn = self._connect()
        init = _c("InitProducerIdRequest")(transactional_id=None, transaction_timeout_ms=60_000)
        while True:
            try:
                pid: Any = conn.request(init, 4).body
                break
            except Exception:
                conn.close()
                conn = self._connect()
        seq = 0
        while time.monotonic() < self.deadline:
            values = [f"p{self.k}-{seq + i}".encode() for i in range(BATCH)]
            records = build_batch(
                [NewRecord(v) for v in values],
                producer_id=pid.producer_id,
                producer_epoch=pid.producer_epoch,
                base_sequence=seq,
            )
            while True:
                try:
                    error = self._produce(conn, records)
                    break
                except Exception:
                    self.retries += 1
                    conn.close()
                    conn = self._connect()
            if error == 0:
                self.acked += values
                seq += BATCH
            else:
                self.errors[error] = self.errors.get(error, 0) + 1
                time.sleep(0.05)
        conn.close()

    def _produce(self, conn: Connection, records: bytes) -> int:
        r = _c("ProduceRequest")
        pd = r.PartitionProduceData(index=self.partition, records=records)
        req = r(acks=-1, timeout_ms=10_000, topic_data=[r.TopicProduceData(name=TOPIC, partition_data=[pd])])
        body: Any = conn.request(req, 9).body
        return int(body.responses[0].partition_responses[0].error_code)


def consume(port: int, partitions: int) -> tuple[list[bytes], int]:
    """Every value of every partition from offset 0, and the batches that failed their check."""
    conn = Connection("127.0.0.1", port, timeout=30).connect()
    r = _c("FetchRequest")
    values: list[bytes] = []
    bad = 0
    for p in range(partitions):
        offset = 0
        while True:
            fp = r.FetchPartition(partition=p, fetch_offset=offset, partition_max_bytes=1 << 20)
            req = r(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 22, session_epoch=-1,
                    topics=[r.FetchTopic(topic=TOPIC, partitions=[fp])])
            body: Any = conn.request(req, 12).body
            part = body.responses[0].partitions[0]
            if not part.records:
                break
            try:
                for batch in iter_batches(part.records):
                    for rec in batch.records():
                        values.append(bytes(rec.value or b""))
                    offset = batch.last_offset + 1
            except kcodec.KcodecError:
                bad += 1
                break
            if offset >= part.high_watermark:
                break
    conn.close()
    return values, bad


def _fault(kind: str, procs: Processes, held: list[socket.socket]) -> None:
    if kind == "restart proxy":
        procs.restart_proxy()
        return
    try:
        s = socket.create_connection(("127.0.0.1", procs.port), timeout=5)
    except OSError:
        return
    frame = kcodec.encode_request(_c("ApiVersionsRequest")(), 0, correlation_id=1)
    if kind == "cut inside a frame":
        s.sendall(frame[: len(frame) // 2])
    elif kind == "2 GB size prefix":
        s.sendall(struct.pack(">i", 2**31 - 1) + frame[4:])
    elif kind == "garbage":
        s.sendall(random.Random(len(held)).randbytes(4096))
    else:  # an idle connection, kept open until the end
        held.append(s)
        return
    s.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=600.0, help="seconds of load (default 600)")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--fault-every", type=float, default=5.0, help="seconds between faults")
    a = ap.parse_args()
    procs = Processes(a.partitions)
    try:
        run(a, procs)
    finally:
        for proc in (procs.proxy, procs.broker):  # (also when interrupted)
            if proc.poll() is None:
                proc.kill()


def run(a: argparse.Namespace, procs: Processes) -> None:
    deadline = time.monotonic() + a.duration
    producers = [Producer(k, procs.port, a.partitions, deadline) for k in range(a.clients)]
    for p in producers:
        p.start()
    kinds = itertools.cycle(["cut inside a frame", "2 GB size prefix", "garbage", "idle", "restart proxy"])
    faults: dict[str, int] = {}
    held: list[socket.socket] = []
    next_fault = time.monotonic() + a.fault_every
    while time.monotonic() < deadline:
        procs.sample()
        if time.monotonic() >= next_fault:
            kind = next(kinds)
            _fault(kind, procs, held)
            faults[kind] = faults.get(kind, 0) + 1
            next_fault += a.fault_every
        time.sleep(0.2)
    for p in producers:
        p.join(60)
    procs.sample()
    consumed, bad = consume(procs.port, a.partitions)
    for s in held:
        s.close()
    peaks = procs.stop()
    acked = [v for p in producers for v in p.acked]
    got = set(consumed)
    lost = sum(1 for v in acked if v not in got)
    print(f"duration {a.duration:g} s, {a.clients} clients, {a.partitions} partitions")
    print(f"produced (acknowledged) {len(acked)}, consumed {len(consumed)}, lost {lost}, "
          f"duplicated {len(consumed) - len(got)}, unacknowledged but stored {len(got - set(acked))}")
    print(f"batches failing their check {bad}; producer reconnects {sum(p.retries for p in producers)}; "
          f"produce errors {sum(sum(p.errors.values()) for p in producers)}")
    print("faults: " + ", ".join(f"{k} {n}" for k, n in faults.items()))
    for name in ("broker", "proxy"):
        print(f"{name}: peak RSS {peaks[name] / 2**20:.1f} MiB, most open fds {procs.peak_fds[name]}")


if __name__ == "__main__":
    main()
