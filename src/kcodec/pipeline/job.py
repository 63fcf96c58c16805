"""The Spark job: input files -> segment rows -> frame and issue rows -> Parquet tables.

1. list the inputs and plan byte-range splits (:mod:`~kcodec.pipeline.inputs`); one task per split
   reads it into TCP segment rows (:mod:`~kcodec.pipeline.scan`);
2. the rows are repartitioned by connection key and sorted by capture order within each partition;
   one pass over each partition decodes whole connections (:mod:`~kcodec.pipeline.decode`);
3. connections are numbered across the input by their first segment; ``frames`` (partitioned by
   ``date`` and ``api``) and ``diagnostics`` are written; the aggregates are computed from the
   ``frames`` table as written (:mod:`~kcodec.pipeline.aggregates`).

Nothing is read by the driver but the file listing and the small aggregate tables.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kcodec.capture import DEFAULT_PORTS
from kcodec.pipeline.aggregates import aggregate_tables, summary
from kcodec.pipeline.decode import EVENT_COLUMNS, decode_batches
from kcodec.pipeline.inputs import DEFAULT_SPLIT_SIZE, InputFile, list_inputs, splits
from kcodec.pipeline.progress import ProgressDisplay, ProgressTracker
from kcodec.pipeline.scan import SEGMENT_COLUMNS, SPLIT_COLUMNS, scan_batches
from kcodec.pipeline.sources import local_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["TABLES", "PipelineResult", "run_job"]

#: The tables written under the output folder, in the order they are written.
TABLES = (
    "frames",
    "diagnostics",
    "api_stats",
    "latency",
    "errors",
    "clients",
    "fencing",
    "timeline",
    "summary",
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


def _ddl(columns: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"`{name}` {t}" for name, t in columns)


def _events(
    spark: SparkSession,
    files: list[InputFile],
    tracker: ProgressTracker,
    *,
    ports: tuple[int, ...],
    autodetect: bool,
    strict: bool,
    split_size: int,
    partitions: int,
) -> DataFrame:
    plan = splits(files, split_size)
    rdd = spark.sparkContext.parallelize(plan, len(plan))
    split_df = spark.createDataFrame(rdd, _ddl(SPLIT_COLUMNS))
    done = tracker.callback()
    segments = split_df.mapInArrow(lambda it: scan_batches(it, done), _ddl(SEGMENT_COLUMNS))
    return (
        segments.repartition(partitions, "key")
        .sortWithinPartitions("key", "file_order", "offset")
        .mapInArrow(lambda it: decode_batches(it, ports, autodetect, strict), _ddl(EVENT_COLUMNS))
    )


def _numbered(events: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Events with ``connection``: 1, 2, ... by the capture position of each connection's first
    segment; and the (cached) table of those numbers, to unpersist after use."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    conns = (
        events.where(F.col("local").isNotNull())
        .select("key", "local", "first_order", "first_offset")
        .distinct()
    )
    order = Window.orderBy("first_order", "first_offset", "key", "local")
    numbers = conns.withColumn("connection", F.row_number().over(order)).select("key", "local", "connection")
    numbers = numbers.cache()  # one row per connection, used by every table
    return events.join(F.broadcast(numbers), ["key", "local"], "left"), numbers


_FRAME_COLUMNS = (
    "time",
    "connection",
    "client",
    "server",
    "direction",
    "stream_offset",
    "size",
    "api_key",
    "api_name",
    "api_version",
    "correlation_id",
    "latency",
    "header",
    "body",
    "partial",
    "error",
    "diagnostics",
    "client_id",
    "client_software_name",
    "client_software_version",
    "error_code",
    "error_name",
)


def _topic_directory(events: DataFrame) -> dict[str, str]:
    """Topic id -> name, from every frame that states both (the first name stated wins). Small: one
    entry per topic, collected to the driver."""
    from pyspark.sql import functions as F

    rows = (
        events.where(F.col("kind") == "frame")
        .select("time", F.explode("topic_pairs").alias("p"))
        .groupBy(F.col("p.id").alias("id"))
        .agg(F.min_by("p.name", "time").alias("name"))
        .collect()
    )
    return {r["id"]: r["name"] for r in rows}


def _frames(events: DataFrame, directory: dict[str, str]) -> DataFrame:
    """The frame rows, topic ids resolved to names with ``directory`` (as decode-capture resolves them
    with the names learned from the capture: ``topic_names``, the topics of ``partitions``, ``errors``
    and ``error_codes``)."""
    from itertools import chain

    from pyspark.sql import functions as F

    cols = [F.col(c) for c in ("topics", "partitions", "errors", "error_codes")]
    topic_names = F.lit(None).cast("map<string,string>")
    if directory:
        names = F.create_map(*[F.lit(x) for x in chain.from_iterable(directory.items())])

        def named(c: Any) -> Any:
            return F.coalesce(F.try_element_at(names, c), c)

        found = F.filter(
            F.transform(
                "topic_ids", lambda i: F.struct(i.alias("key"), F.try_element_at(names, i).alias("value"))
            ),
            lambda e: e["value"].isNotNull(),
        )
        topic_names = F.when(F.size(found) > 0, F.map_from_entries(found))

        def where_topic(e: Any) -> Any:
            return F.regexp_extract(e["where"], "^([^/]*)", 1)

        def where_rest(e: Any) -> Any:
            return F.regexp_extract(e["where"], "^[^/]*(.*)$", 1)

        cols = [
            F.transform("topics", named),
            F.transform("partitions", lambda p: p.withField("topic", named(p["topic"]))),
            F.transform("errors", lambda e: e.withField("topic", named(e["topic"]))),
            F.transform(
                "error_codes",
                lambda e: e.withField("where", F.concat(named(where_topic(e)), where_rest(e))),
            ),
        ]
    return events.where(F.col("kind") == "frame").select(
        *_FRAME_COLUMNS,
        cols[0].alias("topics"),
        cols[1].alias("partitions"),
        cols[2].alias("errors"),
        cols[3].alias("error_codes"),
        topic_names.alias("topic_names"),
        F.timestamp_seconds("time").alias("ts"),
        F.date_format(F.timestamp_seconds("time"), "yyyy-MM-dd").alias("date"),
        F.coalesce("api_name", F.lit("unknown")).alias("api"),
    )


def _diagnostics(events: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    issues = events.where(F.col("kind") == "issue").select(
        F.when(F.col("file").isNotNull(), "file").otherwise("stream").alias("source"),
        F.col("issue_kind").alias("kind"),
        "time",
        "file",
        "file_offset",
        "connection",
        "client",
        "server",
        "direction",
        "stream_offset",
        "length",
        "message",
        F.lit(None).cast("string").alias("api_name"),
        F.lit(None).cast("int").alias("api_version"),
        F.lit(None).cast("int").alias("correlation_id"),
    )
    frames = events.where((F.col("kind") == "frame") & (F.size("diagnostics") > 0)).select(
        F.lit("frame").alias("source"),
        F.when(F.col("error").isNotNull(), "undecodable").otherwise("non-conformant").alias("kind"),
        "time",
        F.lit(None).cast("string").alias("file"),
        F.lit(None).cast("long").alias("file_offset"),
        "connection",
        "client",
        "server",
        "direction",
        "stream_offset",
        F.lit(None).cast("long").alias("length"),
        F.array_join("diagnostics", "; ").alias("message"),
        "api_name",
        "api_version",
        "correlation_id",
    )
    return issues.unionByName(frames)


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
) -> PipelineResult:
    """Run the pipeline on ``inputs`` into ``output`` (overwritten). ``progress``: show it on standard
    error (None: when that is a terminal)."""
    from pyspark import StorageLevel

    started = time.monotonic()
    files = list_inputs(spark, inputs)
    all_ports = tuple(dict.fromkeys((*DEFAULT_PORTS, *ports)))
    parallelism = spark.sparkContext.defaultParallelism
    tracker = ProgressTracker(spark.sparkContext, files)
    out = output.rstrip("/")
    with ProgressDisplay(tracker, force=bool(progress)) if progress is not False else _Null():
        events = _events(
            spark,
            files,
            tracker,
            ports=all_ports,
            autodetect=autodetect,
            strict=strict,
            split_size=split_size,
            partitions=partitions or max(2 * parallelism, 2),
        )
        cached = events.persist(StorageLevel.MEMORY_AND_DISK)
        events, numbers = _numbered(cached)
        timings: dict[str, float] = {}
        lap = time.monotonic()

        def phase(name: str) -> None:
            nonlocal lap
            now = time.monotonic()
            timings[name] = now - lap
            lap = now

        input_bytes = sum(f.size for f in files)
        tables: dict[str, list[dict[str, Any]]] = {}
        try:
            directory = _topic_directory(events)  # the first action: reads, shuffles and decodes all
            phase("read and decode")
            tracker.phase = "writing frames and diagnostics"
            frames = _frames(events, directory)
            diagnostics = _diagnostics(events)
            frames_out = frames.write.mode("overwrite").partitionBy("date", "api")
            diagnostics_out = diagnostics.coalesce(1).write.mode("overwrite")
            with ThreadPoolExecutor(2) as pool:  # two Spark jobs at once over the cached events
                writes = [
                    pool.submit(frames_out.parquet, f"{out}/frames"),
                    pool.submit(diagnostics_out.parquet, f"{out}/diagnostics"),
                ]
                for write in writes:
                    write.result()
            phase("write frames and diagnostics")
            # The aggregates read the same cached events (their columns only), not the files written.
            tracker.phase = "aggregating"
            slim = frames.drop("header", "body")
            totals = summary(slim, diagnostics, len(files), input_bytes)
            tables["summary"] = _write_small(spark, totals, f"{out}/summary")
            first = tables["summary"][0]
            span = (first["last_time"] or 0.0) - (first["first_time"] or 0.0) if first["frames"] else 0.0
            with ThreadPoolExecutor(4) as pool:  # small jobs: run them side by side
                computed = {
                    name: pool.submit(_write_small, spark, df, f"{out}/{name}")
                    for name, df in aggregate_tables(slim, span).items()
                }
                for name, result in computed.items():
                    tables[name] = result.result()
            phase("aggregates")
        finally:
            numbers.unpersist()
            cached.unpersist()
    totals_row = tables["summary"][0] if tables["summary"] else {}
    return PipelineResult(out, files, input_bytes, time.monotonic() - started, totals_row, tables, timings)


def _write_small(spark: SparkSession, df: DataFrame, path: str) -> list[dict[str, Any]]:
    """Compute a small table once, write it as one Parquet file and return its rows. Local outputs
    are written by the driver with pyarrow (no Spark job); others through Spark."""
    rows = df.collect()  # small: bounded by APIs, topics, errors and time buckets
    local = local_path(path)
    if local is None:
        spark.createDataFrame(rows, df.schema).coalesce(1).write.mode("overwrite").parquet(path)
    else:
        import shutil

        import pyarrow as pa
        import pyarrow.parquet as pq
        from pyspark.sql.pandas.types import to_arrow_schema

        schema = to_arrow_schema(df.schema)
        table = pa.Table.from_pylist([r.asDict(recursive=True) for r in rows], schema=schema)
        shutil.rmtree(local, ignore_errors=True)
        os.makedirs(local)
        pq.write_table(table, os.path.join(local, "part-00000.parquet"))
    return [r.asDict(recursive=True) for r in rows]


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
