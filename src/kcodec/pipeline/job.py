"""The Spark job: input files -> segment positions -> events -> Parquet tables and aggregates.

1. list the inputs and plan byte-range splits (:mod:`~kcodec.pipeline.inputs`), dealt into a few
   tasks per core of about equal bytes (:func:`~kcodec.pipeline.balance.scan_groups`: small files
   share a task); a task reads each of its splits into records of TCP segments packed per
   connection, each segment with the *position* of its payload in the file
   (:mod:`~kcodec.pipeline.scan`), written to a stash file under the output folder; the task
   returns an index of them (:mod:`~kcodec.pipeline.stash`);
2. the driver weighs the records per connection key, deals the keys into partitions of about
   equal weight (:mod:`~kcodec.pipeline.balance`) and sorts each partition's references by capture
   order;
   one task per partition reads the payloads back from the input files and decodes whole
   connections (:mod:`~kcodec.pipeline.decode`), keeps its events in a spill file under the output
   folder and returns what it found: connection starts, topic names, the time span
   (:mod:`~kcodec.pipeline.spill`), and its partial aggregates but the timeline, folded while its
   rows were Python values (:mod:`~kcodec.pipeline.partials`);
3. the driver numbers the connections across the input by their first segment and merges the topic
   names; the spill files are dealt into one task per core, of about equal bytes, and each task
   writes its ``frames`` (partitioned by ``date`` and ``api``) and ``diagnostics`` files and returns
   its part of the timeline (:mod:`~kcodec.pipeline.write`);
4. the driver merges the partials, puts the connections' numbers and the topics' names in, and
   turns them into the small aggregate tables and writes them (:mod:`~kcodec.pipeline.aggregates`).

Three Spark jobs in all (stages 1, 2 and 3), on the RDD API, and no shuffle: Spark schedules the
tasks and carries their small results; no query is planned or compiled, and the segment
positions, payloads, events and Parquet files never pass through the JVM. Nothing is read by the
driver but the file listing, and it holds only small things: one reference per connection and
split (its key, where its record lies and its weight), one entry per connection and per topic, and
the partial aggregates.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any

from kcodec.capture import DEFAULT_PORTS
from kcodec.pipeline.aggregates import aggregate_tables, arrow_schema, bucket_width
from kcodec.pipeline.balance import assign_keys, balanced_groups, scan_groups
from kcodec.pipeline.decode import Found
from kcodec.pipeline.inputs import DEFAULT_SPLIT_SIZE, InputFile, list_inputs, splits
from kcodec.pipeline.outputs import SPILL, Output
from kcodec.pipeline.partials import Partials
from kcodec.pipeline.progress import ProgressDisplay, ProgressTracker
from kcodec.pipeline.spill import decode_task
from kcodec.pipeline.stash import Ref, read_stashed, stash_task, weigh
from kcodec.pipeline.write import diagnostics_schema, write_task

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "PARTITIONS_PER_CORE",
    "PARTITION_BYTES",
    "TABLES",
    "PipelineResult",
    "default_partitions",
    "run_job",
]

#: Connection partitions per core at most, by default.
PARTITIONS_PER_CORE = 4
#: Input bytes per connection partition at least, by default.
PARTITION_BYTES = 16 << 20


def default_partitions(input_bytes: int, cores: int) -> int:
    """Connection partitions for ``input_bytes`` of input on ``cores`` cores: a few per core, as a
    task decodes whole connections, which differ in size: the connections are dealt into partitions
    of about equal weight, heaviest first (:mod:`~kcodec.pipeline.balance`), and Spark hands the
    next task to the first free core, so the last tasks are the lightest; but no more than one per
    :data:`PARTITION_BYTES` of input, and no fewer than one per core, since every task costs
    scheduling and a spill file (on a 1 MB input, 16 partitions instead of 2 cost 0.6 CPU-s more,
    most of it the JVM's)."""
    cores = max(cores, 1)
    return max(cores, min(PARTITIONS_PER_CORE * cores, input_bytes // PARTITION_BYTES))

#: The tables written under the output folder, in the order they are written.
TABLES = (
    "frames",
    "diagnostics",
    "summary",
    "api_stats",
    "latency",
    "errors",
    "clients",
    "fencing",
    "timeline",
)


@dataclass(slots=True)
class PipelineResult:
    output: str
    files: list[InputFile]
    input_bytes: int
    seconds: float
    summary: dict[str, Any]
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # the small aggregate tables
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase of the job


@dataclass(slots=True)
class _Settings:
    ports: tuple[int, ...]
    autodetect: bool
    strict: bool
    split_size: int
    partitions: int


def _decode(
    spark: SparkSession, files: list[InputFile], tracker: ProgressTracker, out: Output, run: str, s: _Settings
) -> tuple[Found, list[tuple[tuple[int, str], int]], Partials]:
    """Stages 1 and 2 (two Spark jobs: the scan, whose records are stashed in files and weighed per
    connection key; then the decoding, one task per partition of about equal weight): what the
    tasks found, merged, their spill files (``((part, path), bytes)``) and their partial aggregates,
    merged (connections and topics as stage 2 names them: :meth:`Partials.resolved`)."""
    plan = splits(files, s.split_size)
    done = tracker.callback()
    paths = [f.path for f in sorted(files, key=lambda f: f.order)]
    ports, autodetect, strict = s.ports, s.autodetect, s.strict
    sc = spark.sparkContext
    groups = scan_groups(plan, sc.defaultParallelism, s.split_size)
    stashed = (
        sc.parallelize(groups, len(groups))
        .map(lambda group: [ref for split in group for ref in stash_task(split, out, run, done)])
        .collect()
    )
    tracker.stage = 1
    refs = [ref for task_refs in stashed for ref in task_refs]
    assignment = assign_keys(weigh(refs), s.partitions)
    parts: list[list[Ref]] = [[] for _ in range(s.partitions)]
    for ref in sorted(refs, key=lambda ref: ref[0]):  # by connection key, file order, first offset
        parts[assignment[ref[0][0]]].append(ref)
    results = (
        sc.parallelize(parts, len(parts))
        .mapPartitionsWithIndex(
            lambda part, it: decode_task(
                part, read_stashed(chain.from_iterable(it), out), out, run, paths, ports, autodetect, strict
            )
        )
        .collect()
    )
    found, partials = Found(), Partials(0.0)
    for _part, _spill, task_found, _bytes, task_partials in results:
        found.merge(task_found)
        partials.merge(task_partials)
    spills = sorted(((part, spill), nbytes) for part, spill, _, nbytes, _ in results if spill)
    return found, spills, partials


def _write(
    spark: SparkSession, out: Output, spills: list[tuple[tuple[int, str], int]], found: Found
) -> Partials:
    """Stage 3 (one Spark job): the frames and diagnostics files; the merged timeline partials (all
    that stage 2 could not fold: its bucket width depends on the time span of all the frames). The
    spill files are dealt into one task per core, of about equal bytes."""
    span = (found.last_time or 0.0) - (found.first_time or 0.0)
    width = bucket_width(span)
    merged = Partials(width)
    out.clear("frames")
    out.clear("diagnostics")
    if not spills:
        out.write_file(diagnostics_schema().empty_table(), "diagnostics", "part-00000.parquet")
        return merged
    sc = spark.sparkContext
    numbers = sc.broadcast(found.numbers())
    directory = found.directory()
    groups = balanced_groups(spills, sc.defaultParallelism)
    try:
        partials = (
            sc.parallelize(groups, len(groups))
            .flatMap(lambda group: group)
            .mapPartitions(lambda it: write_task(it, out, numbers.value, directory, width))
            .collect()
        )
    finally:
        numbers.unpersist()
    for p in partials:
        merged.merge(p)
    return merged


def run_job(
    spark: SparkSession,
    inputs: list[str],
    output: str,
    *,
    ports: Sequence[int] = (),
    autodetect: bool = True,
    strict: bool = False,
    split_size: int = DEFAULT_SPLIT_SIZE,
    partitions: int | None = None,
    progress: bool | None = None,
    captures_by: str = "auto",
) -> PipelineResult:
    """Run the pipeline on ``inputs`` into ``output`` (its tables overwritten). ``progress``: show it
    on standard error (None: when that is a terminal). ``captures_by``: how the files are grouped
    into captures (:data:`~kcodec.pipeline.inputs.CAPTURES_BY`)."""
    started = time.monotonic()
    files = list_inputs(spark, inputs, captures_by)
    parallelism = spark.sparkContext.defaultParallelism
    input_bytes = sum(f.size for f in files)
    settings = _Settings(
        tuple(dict.fromkeys((*DEFAULT_PORTS, *ports))),
        autodetect,
        strict,
        split_size,
        partitions or default_partitions(input_bytes, parallelism),
    )
    tracker = ProgressTracker(spark.sparkContext, files)
    out = Output.resolve(output)
    run = uuid.uuid4().hex[:12]
    timings: dict[str, float] = {}
    lap = time.monotonic()

    def phase(name: str) -> None:
        nonlocal lap
        now = time.monotonic()
        timings[name] = now - lap
        lap = now

    with ProgressDisplay(tracker, force=bool(progress)) if progress is not False else _Null():
        try:
            found, spills, decoded = _decode(spark, files, tracker, out, run, settings)
            phase("read and decode")
            tracker.stage = 2
            partials = _write(spark, out, spills, found)
            partials.merge(decoded.resolved(found.numbers(), found.directory()))
            phase("write frames and diagnostics")
        except BaseException:
            _remove_spill(out, run)
            raise
        # the spill and stash files (about the input's size) are deleted while the driver computes
        # and writes the small tables
        removal = _Background(_remove_spill, out, run)
        try:
            tracker.stage = 3
            tables = aggregate_tables(partials, len(files), input_bytes)
            for name, rows in tables.items():
                _write_small(out, name, rows)
        finally:
            removal.join()
        phase("aggregates")
    totals_row = tables["summary"][0]
    out.check_rows("frames", int(totals_row["frames"]))
    return PipelineResult(
        out.root, files, input_bytes, time.monotonic() - started, totals_row, tables, timings
    )


def _remove_spill(out: Output, run: str) -> None:
    out.remove(f"{SPILL}/{run}")
    out.remove_if_empty(SPILL)


class _Background:
    """``fn(*args)`` in a thread; :meth:`join` waits for it and raises what it raised."""

    def __init__(self, fn: Callable[..., None], *args: Any) -> None:
        self._error: BaseException | None = None

        def run() -> None:
            try:
                fn(*args)
            except BaseException as e:  # handed to join()
                self._error = e

        self._thread = threading.Thread(target=run, name="kcodec-background", daemon=True)
        self._thread.start()

    def join(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


def _write_small(out: Output, name: str, rows: list[dict[str, Any]]) -> None:
    """Write a small table as one Parquet file (by the driver, with pyarrow)."""
    import pyarrow as pa

    out.clear(name)
    out.write_file(pa.Table.from_pylist(rows, schema=arrow_schema(name)), name, "part-00000.parquet")


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
