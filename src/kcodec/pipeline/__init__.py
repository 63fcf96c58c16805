"""The data pipeline: many packet captures -> Parquet tables, aggregates and a report, on Spark.

Quick use::

    from kcodec.pipeline import run_pipeline
    result = run_pipeline(["captures/"], "out/")          # local Spark on this machine's cores
    print("\\n".join(result.lines))                          # the text summary

    run_pipeline(["hdfs:///captures/2024-06-01/"], "hdfs:///kafka-traffic/", master="yarn")

``kcodec pipeline INPUT... --output DIR`` is the same on the command line, and ``kcodec report DIR``
renders the tables as an HTML page.

The job (:mod:`~kcodec.pipeline.job`) runs the stages of :mod:`kcodec.capture` on Spark: files are
cut into byte ranges read by parallel tasks into TCP segment rows (:mod:`~kcodec.pipeline.scan`);
the rows are grouped by connection across files (rotated captures) and each connection is
reassembled, framed, paired and decoded by the capture package (:mod:`~kcodec.pipeline.decode`),
exactly as ``kcodec decode-capture`` does for one file. Outputs under the output folder:

- ``frames``: one row per request/response: the ``decode-capture --json`` fields (header, body and
  the embedded consumer protocol, ``embedded``, as JSON strings) and columns read out of them
  (:mod:`~kcodec.pipeline.flatten`): topics, partitions with error codes and leader epochs, errors,
  client id and client software; partitioned by ``date`` and ``api``;
- ``diagnostics``: unreadable files, damaged capture records, stream problems, non-conformant and
  undecodable frames;
- ``api_stats``, ``latency``, ``errors``, ``clients``, ``fencing``, ``timeline``, ``summary``
  (:mod:`~kcodec.pipeline.aggregates`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kcodec.pipeline.inputs import DEFAULT_SPLIT_SIZE, PipelineInputError, check_local_inputs
from kcodec.pipeline.java import JavaNotFoundError
from kcodec.pipeline.job import TABLES, PipelineResult, run_job
from kcodec.pipeline.outputs import OutputCheckError
from kcodec.pipeline.summary import summary_lines

__all__ = [
    "DEFAULT_SPLIT_SIZE",
    "TABLES",
    "JavaNotFoundError",
    "OutputCheckError",
    "PipelineInputError",
    "PipelineResult",
    "PipelineRun",
    "run_pipeline",
    "summary_lines",
]


@dataclass(slots=True)
class PipelineRun:
    """What :func:`run_pipeline` returns: the job's result, its text summary, and whether the run
    started its Spark session (False when it used one already running in the process: a test's, a
    notebook's, spark-submit's, which the caller must leave running)."""

    result: PipelineResult
    lines: list[str]
    started_session: bool = False


def run_pipeline(
    inputs: Sequence[str],
    output: str,
    *,
    master: str | None = None,
    ports: Sequence[int] = (),
    autodetect: bool = True,
    strict: bool = False,
    split_size: int = DEFAULT_SPLIT_SIZE,
    partitions: int | None = None,
    progress: bool | None = None,
    ship: bool = False,
    captures_by: str = "auto",
) -> PipelineRun:
    """Decode the captures under ``inputs`` (files, folders, globs; any path Spark reads) into Parquet
    tables under ``output``. ``master``: a Spark master URL (default: the running session, or
    ``local[*]``). ``ports``: Kafka ports besides 9092 (other connections are auto-detected unless
    ``autodetect=False``). Raises :class:`PipelineInputError` for missing or empty inputs and
    :class:`JavaNotFoundError` when Spark has no Java to run on. ``ship``: send the installed kcodec
    package to the executors (:mod:`~kcodec.pipeline.ship`), for a cluster whose nodes lack it.
    ``captures_by``: how the files are grouped into captures (:mod:`~kcodec.pipeline.inputs`)."""
    from kcodec.pipeline.session import spark_session

    paths = [str(p) for p in inputs]
    check_local_inputs(paths)
    from pyspark.sql import SparkSession

    started = SparkSession.getActiveSession() is None
    spark = spark_session(master)
    if ship:
        from kcodec.pipeline.ship import ship_package

        ship_package(spark)
    result = run_job(
        spark,
        paths,
        output,
        ports=ports,
        autodetect=autodetect,
        strict=strict,
        split_size=split_size,
        partitions=partitions,
        progress=progress,
        captures_by=captures_by,
    )
    return PipelineRun(result, summary_lines(result.tables), started)
