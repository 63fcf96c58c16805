"""The pipeline's three stages run in one process, without Spark, beside ``kcodec decode-capture``:
where the pipeline's Python CPU goes, per stage, against the single-process decoder on the same data.

    python benchmarks/pipeline_stages.py DATASET_DIR [--runs 3] [--profile stage1|stage2|stage3]

DATASET_DIR holds rotated pcap files (``bench_pipeline.py`` writes one: ``capture.pcap``,
``capture.pcap1``, ...). Each run, in a fresh process: stage 1 (:func:`kcodec.pipeline.stash.stash_task`
per split), the driver's dealing of connection keys into partitions, stage 2
(:func:`kcodec.pipeline.spill.decode_task` per partition) and stage 3
(:func:`kcodec.pipeline.write.write_task` on all spills), each timed (CPU seconds of the process),
into a scratch output folder; then ``kcodec decode-capture --json`` on the files merged into one
(output to /dev/null), timed as a child process. Before the stages, the process is set up as Spark's
Python daemon sets up the workers it forks (:mod:`kcodec.pipeline.daemon`: the allocators' settings,
the libraries and the pipeline's modules imported), so that imports are not counted in a stage.
Prints the least CPU of ``--runs`` runs of each, the stages' sum and its ratio to decode-capture's
CPU (the goal asks at most 1.5 of the whole pipeline, the JVM's and the driver's CPU on top:
``bench_pipeline.py``); decode-capture's CPU on an empty capture (start-up, imports) is subtracted,
as the stages' figures leave them out. Then the frames' Parquet encoding alone: the files stage 3
wrote, read back and encoded once more with the same options (the least any pipeline writing that
table spends on it, part of stage 3's figure). ``--profile`` prints a cProfile of one stage instead
(CPU time, inflated by the profiler). Neither Spark nor the JVM takes part: what this measures is
the Python work a pipeline task does.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _as_a_worker() -> None:
    """Set this process up as :mod:`kcodec.pipeline.daemon` sets up a worker before it forks it."""
    import pyspark.worker  # noqa: F401  (the daemon imports it; the stages' tasks import from pyspark)

    import kcodec.pipeline.daemon as daemon
    import kcodec.pipeline.scan
    import kcodec.pipeline.spill
    import kcodec.pipeline.stash
    import kcodec.pipeline.write  # noqa: F401

    daemon._import_libraries()


def _stages(folder: Path, out_dir: Path, profile: str) -> dict[str, float]:
    """One in-process run of the three stages; CPU seconds per stage."""
    _as_a_worker()
    from kcodec.capture import DEFAULT_PORTS
    from kcodec.pipeline.aggregates import bucket_width
    from kcodec.pipeline.balance import assign_keys
    from kcodec.pipeline.decode import Found
    from kcodec.pipeline.inputs import DEFAULT_SPLIT_SIZE, InputFile, natural_key, splits
    from kcodec.pipeline.outputs import Output
    from kcodec.pipeline.spill import decode_task
    from kcodec.pipeline.stash import Ref, read_stashed, stash_task, weigh
    from kcodec.pipeline.write import write_task

    paths = sorted(folder.iterdir(), key=lambda p: natural_key(str(p)))
    files = [InputFile("file:" + str(p), p.stat().st_size, i) for i, p in enumerate(paths)]
    out = Output(str(out_dir))
    cpu: dict[str, float] = {}

    def stage(name: str, fn: Any) -> Any:
        c = _cpu()
        if profile == name:
            prof = cProfile.Profile(time.process_time)
            result = prof.runcall(fn)
            pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(30)
        else:
            result = fn()
        cpu[name] = _cpu() - c
        return result

    plan = splits(files, DEFAULT_SPLIT_SIZE)
    refs = stage("stage1", lambda: [ref for split in plan for ref in stash_task(split, out, "run")])
    parts_n = max(1, len(files))
    assignment = assign_keys(weigh(refs), parts_n)
    parts: list[list[Ref]] = [[] for _ in range(parts_n)]
    for ref in sorted(refs, key=lambda ref: ref[0]):
        parts[assignment[ref[0][0]]].append(ref)
    names = [f.path for f in files]

    def decode() -> list[Any]:
        return [
            result
            for i, part in enumerate(parts)
            for result in decode_task(
                i, read_stashed(part, out), out, "run", names, DEFAULT_PORTS, True, False
            )
        ]

    results = stage("stage2", decode)
    found = Found()
    for _part, _spill, task_found, _bytes, _partials in results:
        found.merge(task_found)
    spills = [(part, spill) for part, spill, _, _, _ in results if spill]
    width = bucket_width((found.last_time or 0.0) - (found.first_time or 0.0))
    stage("stage3", lambda: list(write_task(spills, out, found.numbers(), found.directory(), width)))
    cpu["frames"] = found.frames
    cpu["parquet"] = _parquet_alone(out_dir / "frames", out_dir / "frames-again")
    return cpu


def _parquet_alone(frames: Path, again: Path) -> float:
    """CPU seconds of encoding the ``frames`` files stage 3 wrote once more, alone: each file's row
    groups, read back into memory first (not counted), written with the pipeline's options to a file
    of their own. The least any pipeline that writes this table can spend on it."""
    import pyarrow.parquet as pq

    from kcodec.pipeline.write import frames_options

    options = frames_options()
    again.mkdir(parents=True, exist_ok=True)
    spent = 0.0
    for i, path in enumerate(sorted(frames.rglob("*.parquet"))):
        source = pq.ParquetFile(path)
        groups = [source.read_row_group(g) for g in range(source.num_row_groups)]
        c = _cpu()
        with pq.ParquetWriter(again / f"{i}.parquet", source.schema_arrow, **options) as writer:
            for table in groups:
                writer.write_table(table, row_group_size=max(table.num_rows, 1))
        spent += _cpu() - c
    return spent


def _decode_capture(folder: Path, scratch: Path) -> tuple[float, int]:
    """CPU seconds and frames of ``kcodec decode-capture --json`` on the files merged into one,
    less its CPU on an empty capture (start-up and imports, which the stages' figures leave out)."""
    from kcodec.pipeline.inputs import natural_key

    merged, empty = scratch / "merged.pcap", scratch / "empty.pcap"
    if not merged.exists():
        with open(merged, "wb") as out:
            for i, p in enumerate(sorted(folder.iterdir(), key=lambda p: natural_key(str(p)))):
                data = p.read_bytes()
                out.write(data if i == 0 else data[24:])
                if i == 0:
                    empty.write_bytes(data[:24])
    cpu, frames = _run_cpu(merged)
    return cpu - _run_cpu(empty)[0], frames


def _run_cpu(path: Path) -> tuple[float, int]:
    """CPU seconds of ``kcodec decode-capture --json PATH`` (a child process) and the frames it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "kcodec.cli", "decode-capture", "--json", "-j", "1", str(path)],
        check=True,
        capture_output=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    frames = sum(1 for line in done.stdout.splitlines() if line.startswith(b'{"type":"frame"'))
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), frames


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", choices=("stage1", "stage2", "stage3"), default="")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_stages(args.dataset, Path(args.child), args.profile)))
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="kcodec-stages-"))
    try:
        best: dict[str, float] = {}
        dc_best = float("inf")
        frames = dc_frames = 0
        parquet = float("inf")
        for run in range(1 if args.profile else args.runs):
            out = scratch / f"out-{run}"
            cmd = [sys.executable, __file__, str(args.dataset), "--child", str(out)]
            cmd += ["--profile", args.profile] if args.profile else []
            t = time.perf_counter()
            done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE)
            cpu = json.loads(done.stdout)
            frames = int(cpu.pop("frames"))
            parquet = min(parquet, cpu.pop("parquet"))
            for name, value in cpu.items():
                best[name] = min(best.get(name, value), value)
            shutil.rmtree(out, ignore_errors=True)
            dc, dc_frames = _decode_capture(args.dataset, scratch)
            dc_best = min(dc_best, dc)
            print(
                f"run {run + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items())
                + f" CPU-s ({time.perf_counter() - t:.1f} s); decode-capture {dc:.2f} CPU-s"
                + f" (load average {os.getloadavg()[0]:.1f})",
                flush=True,
            )
        mb = sum(p.stat().st_size for p in args.dataset.iterdir()) / 1e6
        total = sum(best.values())
        print(f"{mb:.1f} MB, frames: pipeline {frames}, decode-capture {dc_frames}; least CPU-s of the runs:")
        for name, value in best.items():
            print(f"  {name:<16} {value:6.2f}  ({value * 1000 / mb:5.1f} CPU-ms/MB)")
        print(f"  {'stages in all':<16} {total:6.2f}  ({total * 1000 / mb:5.1f} CPU-ms/MB)")
        print(f"  {'decode-capture':<16} {dc_best:6.2f}  ({dc_best * 1000 / mb:5.1f} CPU-ms/MB)")
        ratio = total / dc_best
        print(f"stages / decode-capture: {ratio:.2f}x (the goal: <= 1.5x with Spark's costs on top)")
        print(
            f"of which the frames' Parquet encoding alone: {parquet:.2f} CPU-s"
            f" ({parquet * 1000 / mb:.1f} CPU-ms/MB, {parquet / dc_best:.2f}x decode-capture's CPU)"
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
