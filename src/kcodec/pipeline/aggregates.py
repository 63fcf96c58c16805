"""The aggregate tables, computed by Spark from the ``frames`` table (as written) and ``diagnostics``.

- ``api_stats``: per API and version: requests, responses, their bytes (size prefix included),
  undecodable and non-conformant frames, first and last time.
- ``latency``: per API and version, over responses matched to their request: count, mean, p50, p90,
  p99 (``percentile_approx``, accuracy 10000: exact below 10000 responses per group) and max, in ms.
- ``errors``: per API, topic and error: how many times a non-zero error code was answered.
- ``clients``: per client id and client software (ApiVersions v3+), per API: the versions used,
  requests and connections.
- ``fencing``: FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH answers per topic-partition (with the
  ``currentLeaderEpoch`` the request carried) and every change of a partition's leader epoch as the
  brokers stated it, in time order.
- ``timeline``: per time bucket and API: requests, responses, bytes, errors, latency p50/p99.
- ``summary``: one row of totals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcodec.error_codes import ErrorCode
from kcodec.sentinels import NO_LEADER_EPOCH

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["aggregate_tables", "bucket_width", "summary"]

_FENCING = (int(ErrorCode.FENCED_LEADER_EPOCH), int(ErrorCode.UNKNOWN_LEADER_EPOCH))
_ACCURACY = 10000
#: Time bucket widths (seconds) the timeline picks from: the first giving at most ~150 buckets.
_WIDTHS = (
    0.01,
    0.02,
    0.05,
    0.1,
    0.2,
    0.5,
    1,
    2,
    5,
    10,
    15,
    30,
    60,
    120,
    300,
    600,
    900,
    1800,
    3600,
    7200,
    21600,
    43200,
    86400,
)


def bucket_width(span: float, buckets: int = 150) -> float:
    """The timeline's bucket width for a capture lasting ``span`` seconds."""
    for w in _WIDTHS:
        if span / w <= buckets:
            return float(w)
    return float(_WIDTHS[-1])


def _frame_bytes() -> Column:
    from pyspark.sql import functions as F

    return F.when(F.col("size").isNotNull(), F.col("size") + 4).otherwise(F.lit(0))


def api_stats(frames: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    req = F.col("direction") == "request"
    resp = F.col("direction") == "response"
    return (
        frames.groupBy("api_key", "api_name", "api_version")
        .agg(
            F.count(F.when(req, 1)).alias("requests"),
            F.count(F.when(resp, 1)).alias("responses"),
            F.sum(F.when(req, _frame_bytes()).otherwise(0)).alias("request_bytes"),
            F.sum(F.when(resp, _frame_bytes()).otherwise(0)).alias("response_bytes"),
            F.count(F.when(F.col("error").isNotNull(), 1)).alias("undecodable"),
            F.count(F.when(F.size("diagnostics") > 0, 1)).alias("non_conformant"),
            F.min("time").alias("first_time"),
            F.max("time").alias("last_time"),
        )
        .orderBy("api_key", "api_version")
    )


def latency(frames: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    ms = F.col("latency") * 1000.0
    q = F.percentile_approx(ms, [0.5, 0.9, 0.99], _ACCURACY)
    return (
        frames.where((F.col("direction") == "response") & F.col("latency").isNotNull())
        .groupBy("api_key", "api_name", "api_version")
        .agg(
            F.count("*").alias("count"), F.mean(ms).alias("mean_ms"), q.alias("q"), F.max(ms).alias("max_ms")
        )
        .select(
            "api_key",
            "api_name",
            "api_version",
            "count",
            "mean_ms",
            F.col("q")[0].alias("p50_ms"),
            F.col("q")[1].alias("p90_ms"),
            F.col("q")[2].alias("p99_ms"),
            "max_ms",
        )
        .orderBy("api_key", "api_version")
    )


def errors(frames: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return (
        frames.select("api_name", "time", F.explode("errors").alias("e"))
        .groupBy(
            "api_name",
            F.col("e.topic").alias("topic"),
            F.col("e.error_code").alias("error_code"),
            F.col("e.error_name").alias("error_name"),
        )
        .agg(F.count("*").alias("count"), F.min("time").alias("first_time"), F.max("time").alias("last_time"))
        .orderBy(F.desc("count"), "api_name", "topic", "error_code")
    )


def clients(frames: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return (
        frames.where((F.col("direction") == "request") & F.col("api_key").isNotNull())
        .groupBy("client_id", "client_software_name", "client_software_version", "api_key", "api_name")
        .agg(
            F.array_sort(F.collect_set("api_version")).alias("versions"),
            F.count("*").alias("requests"),
            F.countDistinct("connection").alias("connections"),
        )
        .orderBy("client_id", "client_software_name", "api_key")
    )


def fencing(frames: DataFrame) -> DataFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    who = ["connection", "client", "server", "client_id"]
    answered = (
        frames.where(F.col("direction") == "response")
        .select("time", "api_name", "correlation_id", *who, F.explode("errors").alias("e"))
        .where(F.col("e.error_code").isin(*_FENCING) & F.col("e.partition").isNotNull())
        .select(
            "time",
            "api_name",
            "correlation_id",
            *who,
            F.col("e.topic").alias("topic"),
            F.col("e.partition").alias("partition"),
            F.col("e.error_name").alias("event"),
        )
    )
    asked = (
        frames.where(F.col("direction") == "request")
        .select("connection", "correlation_id", F.explode("partitions").alias("p"))
        .select(
            "connection",
            "correlation_id",
            F.col("p.topic").alias("topic"),
            F.col("p.partition").alias("partition"),
            F.col("p.current_leader_epoch").alias("current_leader_epoch"),
        )
    )
    keys = ["connection", "correlation_id", "topic", "partition"]
    fenced = (
        F.broadcast(answered)
        .join(asked, keys, "left")
        .select(
            "time",
            "topic",
            "partition",
            "event",
            "api_name",
            *who,
            F.lit(None).cast("int").alias("leader_epoch"),
            F.lit(None).cast("int").alias("previous_leader_epoch"),
            "current_leader_epoch",
        )
    )
    stated = (
        frames.select("time", "api_name", "stream_offset", *who, F.explode("partitions").alias("p"))
        .where(F.col("p.leader_epoch") > NO_LEADER_EPOCH)
        .select(
            "time",
            "api_name",
            "stream_offset",
            *who,
            F.col("p.topic").alias("topic"),
            F.col("p.partition").alias("partition"),
            F.col("p.leader_epoch").alias("leader_epoch"),
        )
    )
    order = Window.partitionBy("topic", "partition").orderBy("time", "connection", "stream_offset")
    changes = (
        stated.withColumn("previous_leader_epoch", F.lag("leader_epoch").over(order))
        .where(
            F.col("previous_leader_epoch").isNotNull()
            & (F.col("previous_leader_epoch") != F.col("leader_epoch"))
        )
        .select(
            "time",
            "topic",
            "partition",
            F.lit("LEADER_EPOCH_CHANGE").alias("event"),
            "api_name",
            *who,
            "leader_epoch",
            "previous_leader_epoch",
            F.lit(None).cast("int").alias("current_leader_epoch"),
        )
    )
    return fenced.unionByName(changes).orderBy("time", "topic", "partition", "event")


def timeline(frames: DataFrame, width: float) -> DataFrame:
    from pyspark.sql import functions as F

    bucket = (F.floor(F.col("time") / width) * width).alias("bucket")
    ms = F.col("latency") * 1000.0
    req = F.col("direction") == "request"
    q = F.percentile_approx(ms, [0.5, 0.99], _ACCURACY)
    return (
        frames.groupBy(bucket, F.coalesce("api_name", F.lit("unknown")).alias("api_name"))
        .agg(
            F.count(F.when(req, 1)).alias("requests"),
            F.count(F.when(~req, 1)).alias("responses"),
            F.sum(_frame_bytes()).alias("bytes"),
            F.count(F.when(F.size("errors") > 0, 1)).alias("error_responses"),
            q.alias("q"),
        )
        .select(
            "bucket",
            F.lit(width).alias("bucket_seconds"),
            "api_name",
            "requests",
            (F.col("requests") / width).alias("requests_per_second"),
            "responses",
            "bytes",
            "error_responses",
            F.col("q")[0].alias("latency_p50_ms"),
            F.col("q")[1].alias("latency_p99_ms"),
        )
        .orderBy("bucket", "api_name")
    )


def summary(frames: DataFrame, diagnostics: DataFrame, files: int, input_bytes: int) -> DataFrame:
    from pyspark.sql import functions as F

    f = frames.agg(
        F.count("*").alias("frames"),
        F.count(F.when(F.col("direction") == "request", 1)).alias("requests"),
        F.count(F.when(F.col("direction") == "response", 1)).alias("responses"),
        F.countDistinct("connection").alias("connections"),
        F.count(F.when(F.col("error").isNotNull(), 1)).alias("undecodable"),
        F.count(F.when(F.size("diagnostics") > 0, 1)).alias("non_conformant"),
        F.countDistinct("client_id").alias("client_ids"),
        F.countDistinct("api_name").alias("apis"),
        F.min("time").alias("first_time"),
        F.max("time").alias("last_time"),
    )
    d = diagnostics.agg(
        F.count(F.when(F.col("source") == "stream", 1)).alias("stream_issues"),
        F.count(F.when((F.col("source") == "file") & (F.col("kind") != "unreadable-file"), 1)).alias(
            "file_issues"
        ),
        F.countDistinct(F.when(F.col("kind") == "unreadable-file", F.col("file"))).alias("unreadable_files"),
    )
    return f.crossJoin(d).select(F.lit(files).alias("files"), F.lit(input_bytes).alias("input_bytes"), "*")


def aggregate_tables(frames: DataFrame, span: float) -> dict[str, DataFrame]:
    """Every aggregate table but ``summary`` by name (``timeline``'s bucket width from ``span``, the
    capture's time span in seconds, which the summary gives)."""
    return {
        "api_stats": api_stats(frames),
        "latency": latency(frames),
        "errors": errors(frames),
        "clients": clients(frames),
        "fencing": fencing(frames),
        "timeline": timeline(frames, bucket_width(span)),
    }
