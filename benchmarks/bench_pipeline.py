"""The Spark pipeline's throughput with 1 and 2 local cores, beside single-process decode-capture.

    python benchmarks/bench_pipeline.py [--mb 200] [--files 8] [--dir /tmp/kcodec-bench-pipeline]

1. Generates (once; kept in --dir) a multi-file capture dataset of at least --mb MB: --files pcap
   files cut from one stream the way ``tcpdump -C`` rotates (connections continue into the next
   file), 1448-byte TCP segments with ACKs, of many client connections to three brokers doing
   Produce (v9, 4-16 KiB record batches built by kcodec.records), Fetch (v12, record batches in the
   response), Metadata (v12) and Heartbeat, every request answered.
2. Times ``kcodec decode-capture --json`` on the whole stream in one process (output to /dev/null).
3. Times ``kcodec.pipeline.run_pipeline`` in a fresh process per configuration, master ``local[1]``
   and ``local[2]`` (job time, Spark start-up not included; shown apart).
4. Prints MB/s and frames/s for each, 2-core speed-up over 1 core, and 1-core pipeline vs
   decode-capture (per core). Goals: 2 cores >= 1.8x 1 core; pipeline per core >= decode-capture.

The machine's other load is reported (os.getloadavg) because it moves every number.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import kcodec
from kcodec.records import NewRecord, build_batch

MSS = 1448
BROKERS = [("10.0.0.1", 9092), ("10.0.0.2", 9092), ("10.0.0.3", 9092)]
_ETH = b"\x00" * 12 + b"\x08\x00"


def _packet(
    src: tuple[str, int], dst: tuple[str, int], seq: int, ack: int, flags: int, payload: bytes
) -> bytes:
    tcp = struct.pack(
        ">HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 0x50, flags, 65535, 0, 0
    )
    ip = struct.pack(
        ">BBHHHBBH4s4s",
        0x45,
        0,
        40 + len(payload),
        0,
        0x4000,
        64,
        6,
        0,
        socket.inet_aton(src[0]),
        socket.inet_aton(dst[0]),
    )
    return _ETH + ip + tcp + payload


def _record(ts: float, data: bytes) -> bytes:
    sec = int(ts)
    return struct.pack("<IIII", sec, int((ts - sec) * 1e6), len(data), len(data)) + data


class Conn:
    def __init__(self, n: int, rng: random.Random, t0: float) -> None:
        self.client = (f"10.1.{n // 250}.{n % 250 + 1}", 40000 + n)
        self.server = BROKERS[n % len(BROKERS)]
        self.cseq, self.sseq = rng.getrandbits(32), rng.getrandbits(32)
        self.corr = 0
        self.t = t0
        self.opened = False

    def open(self) -> list[tuple[float, bytes]]:
        self.opened = True
        c, s = self.client, self.server
        out = [
            (self.t, _packet(c, s, self.cseq, 0, 0x02, b"")),
            (self.t + 1e-5, _packet(s, c, self.sseq, self.cseq + 1, 0x12, b"")),
            (self.t + 2e-5, _packet(c, s, self.cseq + 1, self.sseq + 1, 0x10, b"")),
        ]
        self.cseq += 1
        self.sseq += 1
        return out

    def send(self, data: bytes, from_client: bool, ts: float) -> list[tuple[float, bytes]]:
        src, dst = (self.client, self.server) if from_client else (self.server, self.client)
        out = []
        for i in range(0, len(data), MSS):
            part = data[i : i + MSS]
            if from_client:
                out.append((ts, _packet(src, dst, self.cseq, self.sseq, 0x18, part)))
                self.cseq += len(part)
                out.append((ts + 2e-6, _packet(dst, src, self.sseq, self.cseq, 0x10, b"")))
            else:
                out.append((ts, _packet(src, dst, self.sseq, self.cseq, 0x18, part)))
                self.sseq += len(part)
                out.append((ts + 2e-6, _packet(dst, src, self.cseq, self.sseq, 0x10, b"")))
        return out


def _exchanges(rng: random.Random) -> list[tuple[object, int, object]]:
    """(request body, version, response body) templates."""
    P = kcodec.message_class("ProduceRequest")
    PR = kcodec.message_class("ProduceResponse")
    F = kcodec.message_class("FetchRequest")
    FR = kcodec.message_class("FetchResponse")
    M = kcodec.message_class("MetadataRequest")
    MR = kcodec.message_class("MetadataResponse")
    H = kcodec.message_class("HeartbeatRequest")
    HR = kcodec.message_class("HeartbeatResponse")
    out: list[tuple[object, int, object]] = []
    for size in (4096, 8192, 16384):
        values = [rng.randbytes(256) for _ in range(size // 256)]
        batch = build_batch([NewRecord(v, key=b"k%d" % i) for i, v in enumerate(values)], base_offset=0)
        produce = P(
            acks=-1,
            timeout_ms=30000,
            topic_data=[
                P.TopicProduceData(
                    name="orders", partition_data=[P.PartitionProduceData(index=size % 3, records=batch)]
                )
            ],
        )
        produce_resp = PR(
            responses=[
                PR.TopicProduceResponse(
                    name="orders",
                    partition_responses=[
                        PR.PartitionProduceResponse(index=size % 3, base_offset=1000 + size)
                    ],
                )
            ]
        )
        out.append((produce, 9, produce_resp))
        fetch = F(
            replica_id=-1,
            max_wait_ms=500,
            min_bytes=1,
            max_bytes=1 << 20,
            topics=[
                F.FetchTopic(
                    topic="orders",
                    partitions=[F.FetchPartition(partition=0, current_leader_epoch=7, fetch_offset=1000)],
                )
            ],
        )
        fetch_resp = FR(
            responses=[
                FR.FetchableTopicResponse(
                    topic="orders",
                    partitions=[FR.PartitionData(partition_index=0, high_watermark=5000, records=batch)],
                )
            ]
        )
        out.append((fetch, 12, fetch_resp))
    meta = M(topics=[M.MetadataRequestTopic(name="orders")])
    meta_resp = MR(
        brokers=[MR.MetadataResponseBroker(node_id=i, host=h, port=p) for i, (h, p) in enumerate(BROKERS)],
        topics=[
            MR.MetadataResponseTopic(
                name="orders",
                partitions=[
                    MR.MetadataResponsePartition(
                        partition_index=i,
                        leader_id=i,
                        leader_epoch=7,
                        replica_nodes=[0, 1, 2],
                        isr_nodes=[0, 1, 2],
                    )
                    for i in range(3)
                ],
            )
        ],
    )
    out.append((meta, 12, meta_resp))
    out.append((H(group_id="g", generation_id=3, member_id="m"), 4, HR()))
    return out


def generate(folder: Path, megabytes: int, files: int, seed: int = 11) -> list[Path]:
    """Write the dataset (``files`` rotated pcap files, ``megabytes`` MB in all); returns the paths."""
    rng = random.Random(seed)
    templates = _exchanges(rng)
    folder.mkdir(parents=True, exist_ok=True)
    target = megabytes * 1_000_000
    per_file = target // files + 1
    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)
    t = 1_700_000_000.0
    conns = [Conn(n, rng, t) for n in range(64)]
    paths: list[Path] = []
    written = 0
    index = 0
    f = None
    size = 0
    while written < target:
        if f is None or size >= per_file:
            if f is not None:
                f.close()
            index += 1
            path = folder / f"capture.pcap{index - 1 if index > 1 else ''}"
            paths.append(path)
            f = open(path, "wb")  # noqa: SIM115 (one file after another, closed when the next opens)
            f.write(header)
            size = 24
        conn = conns[rng.randrange(len(conns))]
        packets = [] if conn.opened else conn.open()
        req, version, resp = templates[rng.randrange(len(templates))]
        conn.corr += 1
        t += 0.0002
        request = kcodec.encode_request(
            req, version, correlation_id=conn.corr, client_id=f"app-{id(conn) % 7}"
        )
        response = kcodec.encode_response(resp, version, correlation_id=conn.corr)
        packets += conn.send(request, True, t)
        packets += conn.send(response, False, t + 0.001 + rng.random() * 0.004)
        blob = b"".join(_record(ts, data) for ts, data in packets)
        f.write(blob)
        size += len(blob)
        written += len(blob)
    assert f is not None
    f.close()
    return paths


def _merged(paths: list[Path], target: Path) -> Path:
    with open(target, "wb") as out:
        for i, p in enumerate(paths):
            data = p.read_bytes()
            out.write(data if i == 0 else data[24:])
    return target


_TICK = os.sysconf("SC_CLK_TCK")


def _tree_cpu(root: int) -> dict[int, float]:
    """CPU seconds (user + system) so far of ``root`` and every process below it, by pid (/proc)."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        parents[pid] = int(fields[1])
        cpu[pid] = (int(fields[11]) + int(fields[12])) / _TICK
    out: dict[int, float] = {}
    for pid in cpu:
        p = pid
        while p > 1 and p != root:
            p = parents.get(p, 0)
        if p == root:
            out[pid] = cpu[pid]
    return out


def _run_measured(cmd: list[str]) -> tuple[float, float, bytes]:
    """Wall seconds, CPU seconds of the whole process tree (sampled every 0.1 s, so a process that
    lives less than that may be missed) and standard output of ``cmd``."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        seen: dict[int, float] = {}
        while proc.poll() is None:
            seen.update(_tree_cpu(proc.pid))
            time.sleep(0.1)
        wall = time.perf_counter() - start
        if proc.returncode:
            raise subprocess.CalledProcessError(proc.returncode, cmd)
        out.seek(0)
        return wall, sum(seen.values()), out.read()


def time_decode_capture(merged: Path) -> tuple[float, int, float]:
    wall, cpu, stdout = _run_measured(
        [sys.executable, "-m", "kcodec.cli", "decode-capture", "--json", str(merged)]
    )
    frames = sum(1 for line in stdout.splitlines() if line.startswith(b'{"type":"frame"'))
    return wall, frames, cpu


_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from kcodec.pipeline.session import spark_session
spark = spark_session(sys.argv[1])
started = time.perf_counter() - t0
from kcodec.pipeline import run_pipeline
run = run_pipeline([sys.argv[2]], sys.argv[3], progress=False)
print(json.dumps({"startup": started, "seconds": run.result.seconds, "frames": run.result.summary["frames"],
                  "timings": run.result.timings}))
"""


def time_pipeline(master: str, folder: Path, out: Path) -> dict[str, Any]:
    _wall, cpu, stdout = _run_measured([sys.executable, "-c", _CHILD, master, str(folder), str(out)])
    result: dict[str, Any] = json.loads(stdout.decode().strip().splitlines()[-1])
    result["cpu"] = cpu  # driver, JVM and Python workers, Spark start-up included
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/kcodec-bench-pipeline"))
    args = parser.parse_args()
    data = args.dir / f"data-{args.mb}mb-{args.files}"
    if not data.exists() or not any(data.iterdir()):
        t = time.perf_counter()
        paths = generate(data, args.mb, args.files)
        print(f"generated {len(paths)} files in {time.perf_counter() - t:.1f} s")
    paths = sorted(data.iterdir())
    total = sum(p.stat().st_size for p in paths)
    print(
        f"dataset: {len(paths)} files, {total / 1e6:.1f} MB ({data}); load average {os.getloadavg()[0]:.1f}"
    )
    merged = _merged(
        sorted(paths, key=lambda p: len(p.name) * 1000 + int("0" + p.name[len("capture.pcap") :])),
        args.dir / "merged.pcap",
    )
    dc_s, dc_frames, dc_cpu = time_decode_capture(merged)
    rows: list[tuple[str, float, int, float | None, float]] = [
        ("decode-capture --json (1 process)", dc_s, dc_frames, None, dc_cpu)
    ]
    phases: list[str] = []
    for cores in (1, 2):
        r = time_pipeline(f"local[{cores}]", data, args.dir / f"out-{cores}")
        rows.append((f"pipeline local[{cores}]", r["seconds"], int(r["frames"]), r["startup"], r["cpu"]))
        phases.append(f"local[{cores}]: " + ", ".join(f"{k} {v:.1f} s" for k, v in r["timings"].items()))
    print(
        f"{'':36} {'seconds':>8} {'MB/s':>7} {'frames/s':>9} {'frames':>8} {'CPU s':>7} {'MB/CPU-s':>8}"
        "  spark start-up"
    )
    for name, secs, frames, startup, cpu in rows:
        extra = f"  {startup:.1f} s" if startup is not None else ""
        print(
            f"{name:36} {secs:8.1f} {total / 1e6 / secs:7.2f} {frames / secs:9.0f} {frames:8d} {cpu:7.1f} "
            f"{total / 1e6 / cpu:8.2f}{extra}"
        )
    for line in phases:
        print(line)
    one, two = rows[1][1], rows[2][1]
    print(f"2 cores vs 1 core: {one / two:.2f}x (goal >= 1.8x)")
    print(
        f"pipeline on 1 core vs decode-capture: {dc_s / one:.2f}x wall, {dc_cpu / rows[1][4]:.2f}x CPU "
        "(goal >= 1.0x)"
    )
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
