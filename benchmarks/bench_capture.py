"""Capture decoding speed and memory: ``kcodec decode-capture`` (``--json`` and the table) beside
``tshark -T json`` on the same generated capture (benchmark, not a test).

    python benchmarks/bench_capture.py [--mb 60] [--runs 3] [--capture FILE]
                                       [--compiled PYTHON] [--pure PYTHON]

The capture is made by ``capture_workload.write_capture`` (client/broker sessions: Produce with
record batches, Fetch, Metadata, OffsetCommit, Heartbeat, ...). Each command runs in its own process
with its output sent to /dev/null; its wall time, CPU time (user + system) and peak resident memory
come from ``os.wait4`` (for the commands without ``-j 1``, which run a worker process per core by
default, the CPU time of all of them, and the peak of the largest: each holds its share of the
connections); the commands run in ``--runs`` rounds, each once per round, and the best of each is
kept. MB/s is capture bytes per second; frames/s counts the Kafka frames in the capture.
``kcodec`` is the build installed in the Python that runs this script (``pip install .``: the capture
path compiled; ``pip install -e .`` or ``KCODEC_COMPILE=0``: pure Python); the header names it.
``--compiled PYTHON``: also time the compiled build (``KCODEC_COMPILE=1 pip install .`` into that
Python's environment) in the same run; ``--pure PYTHON``: also time the pure build (``pip install -e .``
or ``KCODEC_COMPILE=0 pip install .``). Debian's ``tshark`` is installed with apt-get if it is missing
(needs root). The machine may be shared: CPU time is the steadier figure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--mb", type=float, default=60.0, help="size of the generated capture (MB)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--capture", type=Path, help="use this capture instead of generating one")
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
    with tempfile.TemporaryDirectory() as tmp:
        path = args.capture
        frames = None
        if path is None:
            path = Path(tmp) / "bench.pcap"
            frames, _ = write_capture(path, args.mb)
        size = path.stat().st_size
        if frames is None:
            out = subprocess.run(
                [*kcodec, str(path), "--summary", "--json"], capture_output=True, env=env, check=True
            )
            frames = int(out.stdout.split(b'"frames":')[1].split(b",")[0])
        measure([*kcodec, str(path), "-c", "1"], env)  # compile and cache kcodec's modules once
        others = {
            build: _other_build(python, build, env)
            for build, python in (("compiled", args.compiled), ("pure", args.pure))
            if python
        }
        commands = {
            "kcodec --json": [*kcodec, str(path), "--json"],  # (by default, a worker per core)
            "kcodec --json -j 1": [*kcodec, str(path), "--json", "-j", "1"],
            "kcodec (table)": [*kcodec, str(path)],
            "kcodec (table) -j 1": [*kcodec, str(path), "-j", "1"],
            "kcodec --summary": [*kcodec, str(path), "--summary"],
            "kcodec --summary -j 1": [*kcodec, str(path), "--summary", "-j", "1"],
        }
        for build, other in others.items():
            commands[f"{build} --json"] = [*other, str(path), "--json"]
            commands[f"{build} --json -j 1"] = [*other, str(path), "--json", "-j", "1"]
            commands[f"{build} (table)"] = [*other, str(path)]
            commands[f"{build} (table) -j 1"] = [*other, str(path), "-j", "1"]
        commands |= {
            "tshark -T json": [tshark, "-r", str(path), "-d", "tcp.port==9092,kafka", "-T", "json"],
            "tshark (text)": [tshark, "-r", str(path), "-d", "tcp.port==9092,kafka"],
        }
        results: dict[str, tuple[float, float, float]] = {}
        # rounds: every command once per round, so that a slow spell of a shared host falls on all
        # of them alike rather than on the commands that happened to run during it
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, cmd in commands.items():
                runs[name].append(measure(cmd, env))
        for name, got in runs.items():
            results[name] = (min(r[0] for r in got), min(r[1] for r in got), max(r[2] for r in got))
    mb = size / 1e6
    print(
        f"capture: {mb:.1f} MB, {frames} Kafka frames; best of {args.runs} runs; "
        f"python {sys.version.split()[0]}; kcodec build: {build_of(sys.executable, env)}"
    )
    base_wall, base_cpu, _ = results["tshark -T json"]
    print(
        f"{'command':<22} {'wall s':>7} {'cpu s':>7} {'MB/s':>7} {'MB/s cpu':>9} {'frames/s':>9} "
        f"{'peak MB':>8} {'x tshark json (wall / cpu)':>27}"
    )
    for name, (wall, cpu, rss) in results.items():
        print(
            f"{name:<22} {wall:>7.2f} {cpu:>7.2f} {mb / wall:>7.1f} {mb / cpu:>9.1f} {frames / wall:>9.0f} "
            f"{rss:>8.0f} {base_wall / wall:>13.1f} / {base_cpu / cpu:<11.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
