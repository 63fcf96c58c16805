"""The aggregate tables, from the tasks' merged :class:`~kcodec.pipeline.partials.Partials` (computed
from the final ``frames`` and ``diagnostics`` rows), as plain rows with their Arrow schemas.

- ``api_stats``: per API and version: requests, responses, their bytes (size prefix included),
  undecodable and non-conformant frames, first and last time.
- ``latency``: per API and version, over responses matched to their request: count, mean, p50, p90,
  p99 (nearest rank; exact below 10000 responses per group, see :mod:`~kcodec.pipeline.partials`)
  and max, in ms.
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

from collections.abc import Callable
from itertools import pairwise
from typing import Any

from kcodec.pipeline.partials import Partials

__all__ = ["SCHEMAS", "aggregate_tables", "arrow_schema", "bucket_width"]

Row = dict[str, Any]

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

#: (column, type) of each table: ``int``/``long``/``double``/``string``, ``array<int>``.
SCHEMAS: dict[str, tuple[tuple[str, str], ...]] = {
    "summary": (
        ("files", "long"),
        ("input_bytes", "long"),
        ("frames", "long"),
        ("requests", "long"),
        ("responses", "long"),
        ("connections", "long"),
        ("undecodable", "long"),
        ("non_conformant", "long"),
        ("client_ids", "long"),
        ("apis", "long"),
        ("first_time", "double"),
        ("last_time", "double"),
        ("stream_issues", "long"),
        ("file_issues", "long"),
        ("unreadable_files", "long"),
    ),
    "api_stats": (
        ("api_key", "int"),
        ("api_name", "string"),
        ("api_version", "int"),
        ("requests", "long"),
        ("responses", "long"),
        ("request_bytes", "long"),
        ("response_bytes", "long"),
        ("undecodable", "long"),
        ("non_conformant", "long"),
        ("first_time", "double"),
        ("last_time", "double"),
    ),
    "latency": (
        ("api_key", "int"),
        ("api_name", "string"),
        ("api_version", "int"),
        ("count", "long"),
        ("mean_ms", "double"),
        ("p50_ms", "double"),
        ("p90_ms", "double"),
        ("p99_ms", "double"),
        ("max_ms", "double"),
    ),
    "errors": (
        ("api_name", "string"),
        ("topic", "string"),
        ("error_code", "int"),
        ("error_name", "string"),
        ("count", "long"),  # entries carrying the code: top level, per topic, per partition
        ("responses", "long"),  # responses carrying it at least once (for this API and topic)
        ("first_time", "double"),
        ("last_time", "double"),
    ),
    "clients": (
        ("client_id", "string"),
        ("client_software_name", "string"),
        ("client_software_version", "string"),
        ("api_key", "int"),
        ("api_name", "string"),
        ("versions", "array<int>"),
        ("requests", "long"),
        ("connections", "long"),
    ),
    "fencing": (
        ("time", "double"),
        ("topic", "string"),
        ("partition", "int"),
        ("event", "string"),
        ("api_name", "string"),
        ("connection", "int"),
        ("client", "string"),
        ("server", "string"),
        ("client_id", "string"),
        ("leader_epoch", "int"),
        ("previous_leader_epoch", "int"),
        ("current_leader_epoch", "int"),
    ),
    "timeline": (
        ("bucket", "double"),
        ("bucket_seconds", "double"),
        ("api_name", "string"),
        ("requests", "long"),
        ("requests_per_second", "double"),
        ("responses", "long"),
        ("bytes", "long"),
        ("error_responses", "long"),
        ("latency_p50_ms", "double"),
        ("latency_p99_ms", "double"),
    ),
}


def bucket_width(span: float, buckets: int = 150) -> float:
    """The timeline's bucket width for a capture lasting ``span`` seconds."""
    for w in _WIDTHS:
        if span / w <= buckets:
            return float(w)
    return float(_WIDTHS[-1])


def _asc(*values: Any) -> tuple[Any, ...]:
    """Sort key, ascending with None first (as Spark's ``orderBy``)."""
    return tuple((v is not None, v) for v in values)


def summary(p: Partials, files: int, input_bytes: int) -> list[Row]:
    frames, requests, responses, undecodable, flagged, first, last = p.totals
    return [
        {
            "files": files,
            "input_bytes": input_bytes,
            "frames": frames,
            "requests": requests,
            "responses": responses,
            "connections": len(p.connections),
            "undecodable": undecodable,
            "non_conformant": flagged,
            "client_ids": len(p.client_ids),
            "apis": len(p.apis),
            "first_time": first,
            "last_time": last,
            "stream_issues": p.stream_issues,
            "file_issues": p.file_issues,
            "unreadable_files": len(p.unreadable),
        }
    ]


def api_stats(p: Partials) -> list[Row]:
    names = [name for name, _ in SCHEMAS["api_stats"]]
    rows = [dict(zip(names, (*group, *s), strict=True)) for group, s in p.api_stats.items()]
    return sorted(rows, key=lambda r: _asc(r["api_key"], r["api_version"]))


def latency(p: Partials) -> list[Row]:
    rows = []
    for (key, name, version), (count, total, top, sketch) in p.latency.items():
        p50, p90, p99 = sketch.quantiles((0.5, 0.9, 0.99))
        rows.append(
            {
                "api_key": key,
                "api_name": name,
                "api_version": version,
                "count": count,
                "mean_ms": total / count,
                "p50_ms": p50,
                "p90_ms": p90,
                "p99_ms": p99,
                "max_ms": top,
            }
        )
    return sorted(rows, key=lambda r: _asc(r["api_key"], r["api_version"]))


def errors(p: Partials) -> list[Row]:
    names = [name for name, _ in SCHEMAS["errors"]]
    rows = [dict(zip(names, (*key, *c), strict=True)) for key, c in p.errors.items()]
    rows.sort(key=lambda r: _asc(r["api_name"], r["topic"], r["error_code"]))
    rows.sort(key=lambda r: -r["count"])  # stable: count descending, then the rest ascending
    return rows


def clients(p: Partials) -> list[Row]:
    rows = [
        {
            "client_id": cid,
            "client_software_name": sw_name,
            "client_software_version": sw_version,
            "api_key": key,
            "api_name": name,
            "versions": sorted(versions),
            "requests": requests,
            "connections": len(conns),
        }
        for (cid, sw_name, sw_version, key, name), (versions, requests, conns) in p.clients.items()
    ]
    return sorted(rows, key=lambda r: _asc(r["client_id"], r["client_software_name"], r["api_key"]))


def fencing(p: Partials) -> list[Row]:
    """The fencing answers, and every change of a partition's stated leader epoch (each statement in
    order of time, connection and stream offset, compared with the one before it)."""
    rows = list(p.fenced)
    for (topic, partition), stated in p.stated.items():
        stated.sort(key=lambda s: _asc(s[0], s[1], s[2]))
        for before, now in pairwise(stated):
            if now[3] != before[3]:
                t, conn, _offset, epoch, api_name, client, server, client_id = now
                rows.append(
                    {
                        "time": t,
                        "topic": topic,
                        "partition": partition,
                        "event": "LEADER_EPOCH_CHANGE",
                        "api_name": api_name,
                        "connection": conn,
                        "client": client,
                        "server": server,
                        "client_id": client_id,
                        "leader_epoch": epoch,
                        "previous_leader_epoch": before[3],
                        "current_leader_epoch": None,
                    }
                )
    return sorted(rows, key=lambda r: _asc(r["time"], r["topic"], r["partition"], r["event"]))


def timeline(p: Partials) -> list[Row]:
    width = p.width
    rows = []
    for (bucket, api_name), (requests, responses, nbytes, errs, sketch) in p.timeline.items():
        p50, p99 = sketch.quantiles((0.5, 0.99))
        rows.append(
            {
                "bucket": bucket,
                "bucket_seconds": width,
                "api_name": api_name,
                "requests": requests,
                "requests_per_second": requests / width,
                "responses": responses,
                "bytes": nbytes,
                "error_responses": errs,
                "latency_p50_ms": p50,
                "latency_p99_ms": p99,
            }
        )
    return sorted(rows, key=lambda r: _asc(r["bucket"], r["api_name"]))


_TABLES: dict[str, Callable[[Partials], list[Row]]] = {
    "api_stats": api_stats,
    "latency": latency,
    "errors": errors,
    "clients": clients,
    "fencing": fencing,
    "timeline": timeline,
}


def aggregate_tables(p: Partials, files: int, input_bytes: int) -> dict[str, list[Row]]:
    """Every aggregate table by name, ``summary`` first."""
    out = {"summary": summary(p, files, input_bytes)}
    out.update({name: build(p) for name, build in _TABLES.items()})
    return out


def arrow_schema(name: str) -> Any:
    """The pyarrow schema of table ``name``."""
    import pyarrow as pa

    types = {
        "int": pa.int32(),
        "long": pa.int64(),
        "double": pa.float64(),
        "string": pa.string(),
        "array<int>": pa.list_(pa.int32()),
    }
    return pa.schema([(column, types[t]) for column, t in SCHEMAS[name]])
