"""One pipeline run with a per-task timeline: where a local[N] run leaves cores idle.

    python benchmarks/pipeline_timeline.py local[2] /tmp/kcodec-bench-pipeline/data-1000mb-16-v64 /tmp/out

Runs ``kcodec.pipeline.run_pipeline`` once with Spark's event log on (in a scratch folder), then
prints from the log each job's span, each stage's tasks (launch and finish relative to the job's
start, run time, the JVM's CPU for the task), the task slots kept busy on average, and the gaps
between the jobs (the driver's serial work); and the JVM's CPU during the job by thread (from
/proc), to see what the JVM spends beside the tasks. Spark's event log itself costs the JVM's
listener thread a little CPU.
"""

from __future__ import annotations

import collections
import glob
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _threads(pid: int) -> dict[tuple[str, str], float]:
    """CPU seconds per thread (id, name) of a process, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[tuple[str, str], float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        out[(tid, name)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def _events(folder: str) -> list[dict[str, Any]]:
    logs = sorted(glob.glob(f"{folder}/*"))
    path = logs[-1]
    files = sorted(glob.glob(f"{path}/events_*")) if os.path.isdir(path) else [path]
    return [json.loads(line) for f in files for line in Path(f).read_text().splitlines() if line]


def _report(events: list[dict[str, Any]], base: float, job_seconds: float) -> None:
    tasks: list[tuple[int, int, float, float, float, float]] = []
    stages: dict[int, tuple[float, float, int, str]] = {}
    jobs: dict[int, list[float]] = {}
    for e in events:
        kind = e["Event"]
        if kind == "SparkListenerTaskEnd":
            info, metrics = e["Task Info"], e.get("Task Metrics", {})
            tasks.append(
                (
                    e["Stage ID"],
                    info["Index"],
                    info["Launch Time"] / 1000 - base,
                    info["Finish Time"] / 1000 - base,
                    metrics.get("Executor Run Time", 0) / 1000,
                    metrics.get("Executor CPU Time", 0) / 1e9,
                )
            )
        elif kind == "SparkListenerStageCompleted":
            s = e["Stage Info"]
            stages[s["Stage ID"]] = (
                s.get("Submission Time", 0) / 1000 - base,
                s.get("Completion Time", 0) / 1000 - base,
                s["Number of Tasks"],
                s["Stage Name"].split(" at ")[0],
            )
        elif kind == "SparkListenerJobStart":
            jobs[e["Job ID"]] = [e["Submission Time"] / 1000 - base, 0.0]
        elif kind == "SparkListenerJobEnd":
            jobs[e["Job ID"]][1] = e["Completion Time"] / 1000 - base
    last = 0.0
    for job, (start, end) in sorted(jobs.items()):
        print(f"job {job}: {start:6.2f} .. {end:6.2f} s (driver before it: {start - last:.2f} s)")
        last = end
    print(f"after the last job: {job_seconds - last:.2f} s")
    for sid, (start, end, count, name) in sorted(stages.items()):
        print(f"stage {sid} ({name}, {count} tasks): {start:.2f} .. {end:.2f} s")
        mine = sorted((t for t in tasks if t[0] == sid), key=lambda t: t[2])
        for _s, index, launch, finish, run, cpu in mine:
            print(f"  task {index:3d} {launch:7.2f} .. {finish:7.2f}  run {run:5.2f} s  JVM CPU {cpu:.2f} s")
    marks = sorted([(t[2], 1) for t in tasks] + [(t[3], -1) for t in tasks])
    busy, at, area = 0, 0.0, 0.0
    for x, d in marks:
        area += busy * (x - at)
        at, busy = x, busy + d
    print(f"job {job_seconds:.2f} s; task slots busy {area:.2f} slot-s, {area / job_seconds:.2f} on average")


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    master, folder, out = sys.argv[1:]
    scratch = tempfile.mkdtemp(prefix="kcodec-timeline-")
    conf = Path(scratch, "conf")
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        f"spark.eventLog.enabled true\nspark.eventLog.dir file://{scratch}\n"
        "spark.eventLog.compress false\nspark.eventLog.rolling.enabled false\n"
    )
    os.environ["SPARK_CONF_DIR"] = str(conf)
    from kcodec.pipeline import run_pipeline
    from kcodec.pipeline.session import spark_session

    spark = spark_session(master)
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    pid = int(jvm.java.lang.ProcessHandle.current().pid())
    before = _threads(pid)
    started = time.time()
    run = run_pipeline([folder], out, progress=False)
    seconds = time.time() - started
    after = _threads(pid)
    spark.stop()
    by_name: collections.Counter[str] = collections.Counter()
    for key, cpu in after.items():
        by_name[re.sub(r"[0-9]+", "#", key[1])] += cpu - before.get(key, 0.0)
    print(f"phases: {', '.join(f'{k} {v:.2f} s' for k, v in run.result.timings.items())}")
    print(f"JVM CPU during the job: {sum(by_name.values()):.2f} s; by thread (names cut at 15 characters):")
    print("  " + ", ".join(f"{name} {cpu:.2f}" for name, cpu in by_name.most_common(8)))
    _report(_events(scratch), started, seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
