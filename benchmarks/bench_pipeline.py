"""The Spark pipeline's CPU per MB and its 2-core speed-up, beside single-process decode-capture.

    python benchmarks/bench_pipeline.py [--mb 200] [--files 16] [--repeat 1] [--dir DIR] [--json FILE]

1. Generates (once; kept in --dir, default /tmp/kcodec-bench-pipeline) a multi-file capture
   dataset of at least --mb MB: --files pcap files cut from one stream the way ``tcpdump -C``
   rotates (connections continue into the next file), 1448-byte TCP segments with ACKs, of many
   client connections to three brokers doing Produce (v9, 4-16 KiB record batches built by
   kcodec.records, 64 distinct ones of each size), Fetch (v12, record batches in the response),
   Metadata (v12) and Heartbeat, every request answered.
2. Runs ``kcodec decode-capture --json`` on the whole stream in one process (output to /dev/null),
   and on a 1 MB capture (its fixed cost).
3. Runs ``kcodec.pipeline.run_pipeline`` in a fresh process per configuration, master ``local[1]``
   and ``local[2]``: Spark's start-up and the job apart, with the CPU of the driver, the JVM and
   the Python workers during the job; and the same on the 1 MB input (the fixed cost of a run).
4. Prints the two goals' ratios: the pipeline's CPU per MB over decode-capture's, both beyond the
   fixed cost of a run (the 1 MB run's CPU subtracted, and its MB), goal <= 1.5x; and the 2-core job's
   speed over the 1-core job's, goal >= 1.8x. Then MB/s and frames/s with and without Spark's
   start-up, and the CPU per MB by kind of process. ``--json FILE`` writes the figures as JSON.

CPU is user + system time of every process of a run. decode-capture's run: ``getrusage`` of the
child process. A pipeline job (the goal's figure): the difference of two snapshots (from ``/proc``,
in the run's own process, before and after the job) of the CPU of the process tree, each process's
own and that of its children it has reaped (so Python workers that exit during the job count). A
pipeline's whole run (Spark's start-up included): its process tree sampled every 0.1 s. The machine's
other load is reported (os.getloadavg, around every run): it moves the wall times much more than
the CPU. ``--repeat N`` runs decode-capture and each pipeline configuration N times, interleaved
(a round: decode-capture, then ``local[1]``, then ``local[2]``), and keeps the fastest pipeline job
and the least CPU of decode-capture; it also prints, per configuration, the median over the rounds
of the round's pipeline CPU over its decode-capture CPU (paired runs meet the same spells of load).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
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


#: Distinct record batches per batch size: real payloads hardly repeat, and with a handful of
#: batches Parquet's dictionary encoding would store every body once (frames files 100x smaller
#: than the input, and cheaper to write, than with real traffic).
VARIANTS = 64


def _exchanges(rng: random.Random) -> list[list[tuple[object, int, object]]]:
    """Kinds of exchange, each a list of (request body, version, response body) variants."""
    kinds: list[list[tuple[object, int, object]]] = []
    for size in (4096, 8192, 16384):
        variants = [_data_exchanges(rng, size) for _ in range(VARIANTS)]
        kinds.append([v[0] for v in variants])
        kinds.append([v[1] for v in variants])
    kinds += [[t] for t in _control_exchanges()]
    return kinds


def _data_exchanges(rng: random.Random, size: int) -> list[tuple[object, int, object]]:
    """A Produce and a Fetch exchange carrying one record batch of ``size`` bytes of values."""
    P = kcodec.message_class("ProduceRequest")
    PR = kcodec.message_class("ProduceResponse")
    F = kcodec.message_class("FetchRequest")
    FR = kcodec.message_class("FetchResponse")
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
                partition_responses=[PR.PartitionProduceResponse(index=size % 3, base_offset=1000 + size)],
            )
        ]
    )
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
    return [(produce, 9, produce_resp), (fetch, 12, fetch_resp)]


def _control_exchanges() -> list[tuple[object, int, object]]:
    """A Metadata and a Heartbeat exchange."""
    M = kcodec.message_class("MetadataRequest")
    MR = kcodec.message_class("MetadataResponse")
    H = kcodec.message_class("HeartbeatRequest")
    HR = kcodec.message_class("HeartbeatResponse")
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
    return [(meta, 12, meta_resp), (H(group_id="g", generation_id=3, member_id="m"), 4, HR())]


def generate(folder: Path, megabytes: int, files: int, seed: int = 11) -> list[Path]:
    """Write the dataset (``files`` rotated pcap files, ``megabytes`` MB in all); returns the paths."""
    rng = random.Random(seed)
    kinds = _exchanges(rng)
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
        variants = kinds[rng.randrange(len(kinds))]
        req, version, resp = variants[rng.randrange(len(variants))]
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


def _tree_cpu(root: int) -> dict[int, tuple[str, float, float]]:
    """(kind, own CPU seconds, CPU seconds with its reaped children's) so far of ``root`` and every
    process below it, by pid (from /proc): user + system time of the process, and that plus the
    time of its children it has waited for (a Python worker that exited and was reaped by Spark's
    daemon counts in the daemon's). Kind: ``driver`` (root), ``jvm`` (java), ``python`` (Spark's
    Python daemon and workers)."""
    parents: dict[int, int] = {}
    cpu: dict[int, tuple[str, float, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                head, _, rest = f.read().rpartition(")")
                fields = rest.split()
        except OSError:
            continue
        pid = int(entry)
        parents[pid] = int(fields[1])
        name = head.partition("(")[2]
        kind = "driver" if pid == root else "jvm" if name == "java" else "python"
        own = (int(fields[11]) + int(fields[12])) / _TICK  # utime stime
        cpu[pid] = (kind, own, own + (int(fields[13]) + int(fields[14])) / _TICK)  # cutime cstime
    out: dict[int, tuple[str, float, float]] = {}
    for pid in cpu:
        p = pid
        while p > 1 and p != root:
            p = parents.get(p, 0)
        if p == root:
            out[pid] = cpu[pid]
    return out


def _by_kind(seen: dict[int, tuple[str, float, float]]) -> dict[str, float]:
    """CPU seconds by kind of process, reaped children's included (a snapshot of the live tree)."""
    out = {"driver": 0.0, "jvm": 0.0, "python": 0.0}
    for kind, _own, seconds in seen.values():
        out[kind] += seconds
    return out


#: The commands' environment, as in a user's shell: cached bytecode used, stdout buffered (this
#: machine's image sets PYTHONUNBUFFERED, which makes decode-capture write each JSON line with its
#: own system call, and PYTHONDONTWRITEBYTECODE, which makes every process compile kcodec's modules).
_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run_measured(cmd: list[str]) -> tuple[float, float, float, bytes]:
    """Wall seconds, CPU seconds, standard output of ``cmd``. CPU twice: ``getrusage`` of the
    command once it is waited for (itself and the descendants waited for down the line: not a JVM
    whose parent exits without waiting for it, nor what that JVM did not wait for), and the sum over
    every process seen in its tree, sampled every 0.1 s (missing at most the last 0.1 s of each)."""
    cpu = _children_cpu()
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=_ENV)
        seen: dict[int, float] = {}
        while proc.poll() is None:
            seen.update((pid, own) for pid, (_, own, _) in _tree_cpu(proc.pid).items())
            time.sleep(0.1)
        wall = time.perf_counter() - start
        if proc.returncode:
            raise subprocess.CalledProcessError(proc.returncode, cmd)
        out.seek(0)
        return wall, _children_cpu() - cpu, sum(seen.values()), out.read()


def time_decode_capture(merged: Path) -> tuple[float, int, float]:
    wall, cpu, _sampled, stdout = _run_measured(
        [sys.executable, "-m", "kcodec.cli", "decode-capture", "--json", "-j", "1", str(merged)]
    )  # one process: getrusage counts it whole
    frames = sum(1 for line in stdout.splitlines() if line.startswith(b'{"type":"frame"'))
    return wall, frames, cpu


def child(master: str, folder: str, out: str) -> None:
    """In a fresh process: start Spark (timed), run the pipeline once (timed, with the CPU of the
    driver, the JVM and the Python workers during the job), print the result as JSON."""
    t0 = time.perf_counter()
    from kcodec.pipeline.session import spark_session

    spark = spark_session(master)
    startup = time.perf_counter() - t0
    from kcodec.pipeline import run_pipeline

    before = _by_kind(_tree_cpu(os.getpid()))
    run = run_pipeline([folder], out, progress=False)
    after = _by_kind(_tree_cpu(os.getpid()))
    result = {
        "startup": startup,
        "seconds": run.result.seconds,
        "frames": run.result.summary["frames"],
        "timings": run.result.timings,
        "job_cpu": {k: after[k] - before[k] for k in after},
    }
    spark.stop()
    print(json.dumps(result))


def time_pipeline(master: str, folder: Path, out: Path) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", master, str(folder), str(out)]
    load = os.getloadavg()[0]
    _wall, _reaped, cpu, stdout = _run_measured(cmd)
    result: dict[str, Any] = json.loads(stdout.decode().strip().splitlines()[-1])
    result["cpu"] = cpu  # driver, JVM and Python workers, Spark's start-up included (sampled)
    result["load"] = (load, os.getloadavg()[0])
    return result


def _dataset(folder: Path, mb: int, files: int) -> list[Path]:
    if not folder.exists() or not any(folder.iterdir()):
        t = time.perf_counter()
        paths = generate(folder, mb, files)
        print(f"generated {len(paths)} files in {time.perf_counter() - t:.1f} s")
    return sorted(folder.iterdir())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/kcodec-bench-pipeline"))
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of each pipeline configuration (best kept)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file as JSON")
    parser.add_argument("--child", nargs=3, metavar=("MASTER", "INPUT", "OUTPUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0
    data = args.dir / f"data-{args.mb}mb-{args.files}-v{VARIANTS}"
    paths = _dataset(data, args.mb, args.files)
    tiny = _dataset(args.dir / "data-1mb-1", 1, 1)  # for the fixed cost of a run
    total = sum(p.stat().st_size for p in paths)
    print(
        f"dataset: {len(paths)} files, {total / 1e6:.1f} MB ({data}); load average {os.getloadavg()[0]:.1f}"
    )
    merged = _merged(
        sorted(paths, key=lambda p: len(p.name) * 1000 + int("0" + p.name[len("capture.pcap") :])),
        args.dir / "merged.pcap",
    )
    runs: dict[int, dict[str, Any]] = {}
    fixed: dict[int, dict[str, Any]] = {}
    dc_best: tuple[float, int, float] | None = None
    dc_tiny_cpu = float("inf")
    rounds: list[dict[str, float]] = []  # per round: CPU-s beyond the fixed cost, by command
    for _ in range(args.repeat):  # interleaved, so that all see the same spells of other load
        load = os.getloadavg()[0]
        dc_s, dc_frames, dc_cpu = time_decode_capture(merged)
        after = os.getloadavg()[0]
        print(f"decode-capture: {dc_s:.1f} s, {dc_cpu:.1f} CPU-s (load average {load:.1f} -> {after:.1f})")
        tiny_cpu = time_decode_capture(tiny[0])[2]
        this_round = {"decode-capture": dc_cpu - tiny_cpu}
        if dc_best is None or dc_cpu < dc_best[2]:
            dc_best = (dc_s, dc_frames, dc_cpu)
        dc_tiny_cpu = min(dc_tiny_cpu, tiny_cpu)
        rounds.append(this_round)
        for cores in (1, 2):
            tiny_run = time_pipeline(f"local[{cores}]", tiny[0].parent, args.dir / f"out-tiny-{cores}")
            run = time_pipeline(f"local[{cores}]", data, args.dir / f"out-{cores}")
            print(
                f"local[{cores}]: job {run['seconds']:.1f} s, {sum(run['job_cpu'].values()):.1f} CPU-s"
                f" (load average {run['load'][0]:.1f} -> {run['load'][1]:.1f})",
                flush=True,
            )
            this_round[f"local[{cores}]"] = sum(run["job_cpu"].values()) - sum(tiny_run["job_cpu"].values())
            if cores not in runs or run["seconds"] < runs[cores]["seconds"]:
                runs[cores] = run
            if cores not in fixed or tiny_run["seconds"] < fixed[cores]["seconds"]:
                fixed[cores] = tiny_run
    assert dc_best is not None
    dc_s, dc_frames, dc_cpu = dc_best
    if args.repeat > 1:
        print(f"best of {args.repeat} runs of each")
    _report(total, dc_s, dc_frames, dc_cpu, runs, fixed)
    mb = total / 1e6 - sum(p.stat().st_size for p in tiny) / 1e6
    figures = _goals(mb, dc_cpu - dc_tiny_cpu, runs, fixed)
    figures["pipeline_over_decode_capture_median"] = _paired(rounds)
    figures.update(
        mb=round(total / 1e6, 1),
        frames={"decode-capture": dc_frames, **{f"local[{c}]": r["frames"] for c, r in runs.items()}},
        job_seconds={f"local[{c}]": round(r["seconds"], 2) for c, r in runs.items()},
        startup_seconds={f"local[{c}]": round(r["startup"], 2) for c, r in runs.items()},
        decode_capture_seconds=round(dc_s, 2),
        load_average=round(os.getloadavg()[0], 1),
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


def _goals(
    mb: float, dc_cpu: float, runs: dict[int, dict[str, Any]], fixed: dict[int, dict[str, Any]]
) -> dict[str, Any]:
    """Print and return the goals' figures: CPU per MB beyond the fixed cost of a run (the 1 MB run's
    CPU subtracted; ``mb`` is the big input's MB less the 1 MB input's) of decode-capture and of the
    pipeline's jobs (by kind of process; and of the pipeline's whole runs, Spark's start-up
    included), their ratios, and the 2-core speed-up."""
    print(f"CPU-ms per MB beyond the fixed cost of a run (big run minus the 1 MB run; {mb:.0f} MB):")
    dc = 1000 * dc_cpu / mb
    print(f"  decode-capture --json {dc:6.1f}")
    job: dict[str, float] = {}
    whole: dict[str, float] = {}
    kinds: dict[str, dict[str, float]] = {}
    for cores, r in runs.items():
        f, name = fixed[cores], f"local[{cores}]"
        by_kind = {k: 1000 * (r["job_cpu"][k] - f["job_cpu"][k]) / mb for k in r["job_cpu"]}
        job[name], kinds[name] = sum(by_kind.values()), by_kind
        whole[name] = 1000 * (r["cpu"] - f["cpu"]) / mb
        parts = ", ".join(f"{k} {v:.1f}" for k, v in by_kind.items())
        print(f"  pipeline {name} job      {job[name]:6.1f}  ({parts}); whole run {whole[name]:.1f}")
    ratios = {name: value / dc for name, value in job.items()}
    speedup = runs[1]["seconds"] / runs[2]["seconds"]
    for name, ratio in ratios.items():
        print(f"pipeline {name} / decode-capture --json, CPU per MB: {ratio:.2f}x (goal <= 1.5x)")
    print(f"local[2] / local[1] speed (job time): {speedup:.2f}x (goal >= 1.8x)")
    return {
        "cpu_ms_per_mb": {"decode-capture": round(dc, 2), **{k: round(v, 2) for k, v in job.items()}},
        "cpu_ms_per_mb_whole_run": {k: round(v, 2) for k, v in whole.items()},
        "cpu_ms_per_mb_by_kind": {k: {n: round(v, 2) for n, v in d.items()} for k, d in kinds.items()},
        "pipeline_over_decode_capture": {k: round(v, 3) for k, v in ratios.items()},
        "speedup_2_over_1": round(speedup, 3),
    }


def _paired(rounds: list[dict[str, float]]) -> dict[str, float]:
    """Print and return the median over the rounds of each round's pipeline CPU over its decode-capture
    CPU (both beyond their fixed costs): runs in one round meet the same spells of other load, so the
    median of these paired ratios moves less than a ratio of the least CPU of each."""
    out: dict[str, float] = {}
    for name in ("local[1]", "local[2]"):
        ratios = sorted(r[name] / r["decode-capture"] for r in rounds)
        out[name] = round(ratios[len(ratios) // 2], 3)
        shown = ", ".join(f"{x:.2f}" for x in ratios)
        print(f"pipeline {name} / decode-capture --json, CPU per round: median {out[name]:.2f}x ({shown})")
    return out


def _report(
    total: int,
    dc_s: float,
    dc_frames: int,
    dc_cpu: float,
    runs: dict[int, dict[str, Any]],
    fixed: dict[int, dict[str, Any]],
) -> None:
    mb = total / 1e6
    print(
        f"{'':34} {'job s':>6} {'MB/s':>6} {'frames/s':>8} {'+start-up':>9} {'MB/s':>6}"
        f" {'CPU s':>6} {'MB/CPU-s':>8} {'cores used':>10}"
    )
    print(
        f"{'decode-capture --json (1 process)':34} {dc_s:6.1f} {mb / dc_s:6.1f} {dc_frames / dc_s:8.0f}"
        f" {dc_s:9.1f} {mb / dc_s:6.1f} {dc_cpu:6.1f} {mb / dc_cpu:8.1f} {dc_cpu / dc_s:10.2f}"
    )
    for cores, r in runs.items():
        whole = r["seconds"] + r["startup"]
        used = sum(r["job_cpu"].values()) / r["seconds"]  # the job's CPU over its wall time
        print(
            f"{'pipeline local[' + str(cores) + ']':34} {r['seconds']:6.1f} {mb / r['seconds']:6.1f}"
            f" {r['frames'] / r['seconds']:8.0f} {whole:9.1f} {mb / whole:6.1f} {r['cpu']:6.1f}"
            f" {mb / r['cpu']:8.1f} {used:10.2f}"
        )
    for cores, r in runs.items():
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in r["timings"].items())
        cpu = ", ".join(f"{k} {v:.1f}" for k, v in r["job_cpu"].items())
        f = fixed[cores]
        print(f"local[{cores}]: Spark start-up {r['startup']:.1f} s; job: {phases}; job CPU-s: {cpu}")
        print(
            f"local[{cores}] on a 1 MB input (the fixed cost of a run): start-up {f['startup']:.1f} s, "
            f"job {f['seconds']:.1f} s, {f['cpu']:.1f} CPU-s in all"
        )
    dc_frames_ok = all(r["frames"] == dc_frames for r in runs.values())
    print(f"frames: decode-capture {dc_frames}, pipeline {runs[1]['frames']} (equal: {dc_frames_ok})")
    one, two = runs[1], runs[2]
    print(
        f"2 cores vs 1 core: {one['seconds'] / two['seconds']:.2f}x job time, "
        f"{(one['seconds'] + one['startup']) / (two['seconds'] + two['startup']):.2f}x with start-up; "
        f"the 2-core job kept {sum(two['job_cpu'].values()) / two['seconds']:.2f} cores busy"
    )
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    sys.exit(main())
