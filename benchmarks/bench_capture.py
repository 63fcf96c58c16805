"""Capture decoding speed and memory: ``kcodec decode-capture`` (the table, ``--json`` and
``--summary``) beside ``tshark -T json`` on the same generated captures (benchmark, not a test).

    python benchmarks/bench_capture.py [--workload large|small|both] [--mb 60] [--small-mb 50]
                                       [--runs 3] [--capture FILE] [--json]
                                       [--compiled PYTHON] [--pure PYTHON]

Two workloads: large frames, made by ``capture_workload.write_capture`` (client/broker sessions:
Produce with record batches, Fetch, Metadata, OffsetCommit, Heartbeat, ...; frames average about
3.6 KB), and small frames, made by ``capture_small_workload.write_small_capture`` (many short
connections of a client's start-up: ApiVersions, Metadata, FindCoordinator, JoinGroup/SyncGroup,
then Heartbeats, OffsetCommits, ListOffsets, empty Fetches and small Produces; about 210 capture
bytes a frame). Each command runs in its own process with its output sent to /dev/null; its wall
time, CPU time (user + system) and peak resident memory come from ``os.wait4`` (for ``-j 2``, which
runs worker processes, the CPU time of all of them, and the peak of the largest); the commands run
in ``--runs`` rounds, each once per round, and the best of each is kept. Every kcodec mode runs as
``decode-capture`` does by default (one process) and with two workers (``-j 2``); the figures give
each command's ratio to ``tshark -T json`` (wall and CPU) and the two workers' CPU and wall time
against one process's. MB/s is capture bytes per second; frames/s counts the Kafka frames.
``--json``: the figures as one JSON object instead of the tables.
``kcodec`` is the build installed in the Python that runs this script (``pip install .``: the capture
path compiled; ``pip install -e .`` or ``KCODEC_COMPILE=0``: pure Python); the header names it.
``--compiled PYTHON``: also time the compiled build (``KCODEC_COMPILE=1 pip install .`` into that
Python's environment) in one process in the same run; ``--pure PYTHON``: the pure build likewise
(``pip install -e .`` or ``KCODEC_COMPILE=0 pip install .``). Debian's ``tshark`` is installed with
apt-get if it is missing (needs root). The machine may be shared: CPU time is the steadier figure,
and instructions counted by callgrind (``callgrind_capture.py``) steadier still.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from capture_small_workload import write_small_capture  # noqa: E402
from capture_workload import write_capture  # noqa: E402


def ensure_tshark() -> str:
    found = shutil.which("tshark")
    if found:
        return found
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    print("installing tshark (apt-get install -y -q tshark) ...", file=sys.stderr)
    subprocess.run(["apt-get", "update", "-q"], check=False, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(
        ["apt-get", "install", "-y", "-q", "tshark"], check=True, env=env, stdout=subprocess.DEVNULL
    )
    found = shutil.which("tshark")
    if not found:
        raise SystemExit("tshark could not be installed")
    return found


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one run of ``cmd``."""
    with open(os.devnull, "wb") as null:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=null, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _other_build(python: str, build: str, env: dict[str, str]) -> list[str]:
    """decode-capture run by ``python``, which must have kcodec's ``build`` (``compiled`` or ``pure``)."""
    got = build_of(python, env)
    if got != build:
        raise SystemExit(f"--{build} {python}: no {build} build of kcodec there (kcodec.build: {got})")
    return [python, "-m", "kcodec.cli", "decode-capture"]


def build_of(python: str, env: dict[str, str]) -> str:
    """Which build of kcodec ``python`` has (``kcodec.build``: pure, capture or compiled)."""
    # (kcodec.compiled for a kcodec older than kcodec.build, whose default wheel was pure)
    code = "import kcodec as k; print(getattr(k, 'build', None) or ('compiled' if k.compiled else 'pure'))"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env)
    return out.stdout.strip() or "unknown"


MODES = {"table": [], "--json": ["--json"], "--summary": ["--summary"]}


def _commands(
    kcodec: list[str], path: Path, others: dict[str, list[str]], tshark: str
) -> dict[str, list[str]]:
    """The commands timed on one capture: kcodec's table, --json and --summary in one process (the
    default) and with -j 2, the other builds' (if asked for), tshark -T json and tshark's text."""
    commands: dict[str, list[str]] = {}
    for mode, args in MODES.items():
        commands[f"kcodec {mode}"] = [*kcodec, str(path), *args]  # (one process: the default)
        commands[f"kcodec {mode} -j 2"] = [*kcodec, str(path), *args, "-j", "2"]
    for build, other in others.items():
        for mode, args in MODES.items():
            commands[f"{build} {mode}"] = [*other, str(path), *args]
    commands["tshark -T json"] = [tshark, "-r", str(path), "-d", "tcp.port==9092,kafka", "-T", "json"]
    commands["tshark (text)"] = [tshark, "-r", str(path), "-d", "tcp.port==9092,kafka"]
    return commands


def _time(
    commands: dict[str, list[str]], runs: int, env: dict[str, str]
) -> dict[str, tuple[float, float, float]]:
    """Best wall and CPU time and the largest peak of each command over ``runs`` rounds: every
    command once per round, so that a slow spell of a shared host falls on all of them alike rather
    than on the commands that happened to run during it."""
    got: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            got[name].append(measure(cmd, env))
    return {
        name: (min(r[0] for r in rs), min(r[1] for r in rs), max(r[2] for r in rs))
        for name, rs in got.items()
    }


def _frames(kcodec: list[str], path: Path, env: dict[str, str]) -> int:
    out = subprocess.run(
        [*kcodec, str(path), "--summary", "--json"], capture_output=True, env=env, check=True
    )
    return int(out.stdout.split(b'"frames":')[1].split(b",")[0])


def _figures(results: dict[str, tuple[float, float, float]], size: int, frames: int) -> dict[str, Any]:
    """Each command's figures, its ratio to tshark -T json (wall, CPU), and for each kcodec mode the
    two workers' CPU and wall time against one process's."""
    base_wall, base_cpu, _ = results["tshark -T json"]
    mb = size / 1e6
    out: dict[str, Any] = {"commands": {}, "j2_vs_one": {}}
    for name, (wall, cpu, rss) in results.items():
        out["commands"][name] = {
            "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "mb_per_s": round(mb / wall, 2),
            "mb_per_cpu_s": round(mb / cpu, 2), "frames_per_s": round(frames / wall), "peak_mb": round(rss),
            "x_tshark_json_wall": round(base_wall / wall, 2), "x_tshark_json_cpu": round(base_cpu / cpu, 2),
        }  # fmt: skip
    for mode in MODES:
        one, many = results[f"kcodec {mode}"], results[f"kcodec {mode} -j 2"]
        out["j2_vs_one"][mode] = {"cpu": round(many[1] / one[1], 3), "wall": round(many[0] / one[0], 3)}
    return out


def _print(name: str, size: int, frames: int, figures: dict[str, Any]) -> None:
    print(f"\n{name}: {size / 1e6:.1f} MB, {frames} Kafka frames, {size / frames:.0f} bytes a frame")
    print(
        f"{'command':<24} {'wall s':>7} {'cpu s':>7} {'MB/s':>7} {'MB/s cpu':>9} {'frames/s':>9} "
        f"{'peak MB':>8} {'x tshark json (wall / cpu)':>27}"
    )
    for cmd, f in figures["commands"].items():
        print(
            f"{cmd:<24} {f['wall_s']:>7.2f} {f['cpu_s']:>7.2f} {f['mb_per_s']:>7.1f} "
            f"{f['mb_per_cpu_s']:>9.1f} "
            f"{f['frames_per_s']:>9} {f['peak_mb']:>8} {f['x_tshark_json_wall']:>13.1f} / "
            f"{f['x_tshark_json_cpu']:<11.1f}"
        )
    for mode, f in figures["j2_vs_one"].items():
        print(
            f"kcodec {mode}: two workers against one process: {f['cpu']:.2f}x the CPU, "
            f"{f['wall']:.2f}x the wall time"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument(
        "--mb", type=float, default=60.0, help="size of the generated large-frame capture (MB)"
    )
    parser.add_argument(
        "--small-mb", type=float, default=50.0, help="size of the generated small-frame capture (MB)"
    )
    parser.add_argument(
        "--workload", choices=("large", "small", "both"), default="both", help="which captures to time"
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--capture", type=Path, help="time this capture instead of the generated ones")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument(
        "--compiled", metavar="PYTHON", help="a Python with kcodec's compiled build installed: time it too"
    )
    parser.add_argument(
        "--pure", metavar="PYTHON", help="a Python with kcodec's pure build installed: time it too"
    )
    args = parser.parse_args()

    tshark = ensure_tshark()
    # as a user runs it: .pyc files used (an installed package has them), stdout buffered as Python
    # buffers a pipe or file (PYTHONUNBUFFERED, set in some CI and container images, would make it
    # one write system call per JSON line: 17,952 here, about 5 % of the run)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")}
    kcodec = [sys.executable, "-m", "kcodec.cli", "decode-capture"]
    others = {
        build: _other_build(python, build, env)
        for build, python in (("compiled", args.compiled), ("pure", args.pure))
        if python
    }
    report: dict[str, Any] = {
        "python": sys.version.split()[0],
        "kcodec_build": build_of(sys.executable, env),
        "runs": args.runs,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "workloads": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        captures: list[tuple[str, Path, int | None]] = []
        if args.capture is not None:
            captures.append((args.capture.name, args.capture, None))
        else:
            if args.workload in ("large", "both"):
                path = Path(tmp) / "large.pcap"
                captures.append(("large frames", path, write_capture(path, args.mb)[0]))
            if args.workload in ("small", "both"):
                path = Path(tmp) / "small.pcap"
                captures.append(("small frames", path, write_small_capture(path, args.small_mb)[0]))
        for name, path, frames in captures:
            size = path.stat().st_size
            frames = frames if frames is not None else _frames(kcodec, path, env)
            measure([*kcodec, str(path), "-c", "1"], env)  # compile and cache kcodec's modules once
            results = _time(_commands(kcodec, path, others, tshark), args.runs, env)
            figures = _figures(results, size, frames)
            report["workloads"][name] = {"bytes": size, "frames": frames, **figures}
            if not args.json:
                _print(name, size, frames, figures)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(
            f"\nbest of {args.runs} runs; python {report['python']}; kcodec build: {report['kcodec_build']}; "
            f"{report['cores']} cores, load average {report['load_average']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
