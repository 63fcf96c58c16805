"""Stage 3 on the executors: one task's spilled events -> its ``frames`` and ``diagnostics`` files,
and its part of the timeline.

Once stage 2 is done the driver knows every connection's number and every topic name stated; the
spill files are dealt into one group per core, of about equal bytes
(:func:`kcodec.pipeline.balance.balanced_groups`: as few tasks as keep every core busy, since each
is a Spark task and a Parquet file per folder), and each stage-3 task reads its spill files
(:mod:`~kcodec.pipeline.spill`) batch by batch and

- numbers the connections (``(key, local)`` -> ``connection``) and resolves topic ids to names, as
  ``decode-capture`` names them (``topics``, the topics of ``partitions``, ``errors`` and
  ``error_codes``; ``topic_names`` for the ids resolved);
- adds ``ts``, ``date`` and ``api`` and writes the frames with pyarrow, in ``date=.../api=...``
  folders (the layout of a Spark table partitioned by ``date`` and ``api``), and the issues and
  flagged frames as ``diagnostics``;
- folds the frames' time, API, size, latency, direction and whether they carry errors into the
  timeline of a :class:`~kcodec.pipeline.partials.Partials`, returned to the driver (its bucket
  width depends on the time span of all the frames; the other aggregates were folded by stage 2).

The header and body JSON columns are passed from the spill to Parquet as Arrow arrays, never turned
into Python strings, nor are the nested columns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from kcodec.capture.record import CLIENT_COLUMNS, FRAME_NAMES
from kcodec.pipeline.decode import event_arrow_schema
from kcodec.pipeline.memory import fewer_collections
from kcodec.pipeline.outputs import Output
from kcodec.pipeline.partials import Partials
from kcodec.pipeline.spill import read_spill

__all__ = [
    "DIAGNOSTIC_COLUMNS",
    "FRAME_COLUMNS",
    "diagnostics_schema",
    "frame_schema",
    "frames_options",
    "write_task",
]

#: Event columns the ``frames`` table takes as they are: a frame's record, what its connection's client
#: said, and its error code (``connection`` and the columns after ``error_name`` are computed here).
FRAME_COLUMNS = (*FRAME_NAMES, *(c.name for c in CLIENT_COLUMNS), "error_code", "error_name")
#: Columns of the ``diagnostics`` table.
DIAGNOSTIC_COLUMNS = (
    "source",
    "kind",
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
    "api_name",
    "api_version",
    "correlation_id",
)


def _relabel(labels: Any, rename: Callable[[Any], Any]) -> Any | None:
    """``labels`` (a string array) with each distinct value ``v`` replaced by ``rename(v)``, computed
    once per distinct value; None when no value changes."""
    import pyarrow as pa
    import pyarrow.compute as pc

    distinct = pc.unique(labels)
    before = distinct.to_pylist()
    after = [rename(v) for v in before]
    if after == before:
        return None
    return pa.array(after, labels.type).take(pc.index_in(labels, distinct))


def _relist(lists: Any, rename: Callable[[Any], Any], field: str | None) -> Any:
    """A list column (of strings, or of structs whose ``field`` holds the labels) with its labels
    renamed, rebuilt around the same offsets and validity; the column itself when nothing changes."""
    import pyarrow as pa
    import pyarrow.compute as pc

    offsets = lists.offsets  # of this (possibly sliced) array: length + 1
    start = offsets[0].as_py()
    values = lists.values.slice(start, offsets[-1].as_py() - start)
    if field is None:
        renamed = _relabel(values, rename)
        if renamed is None:
            return lists
    else:
        children = values.flatten()
        index = values.type.get_field_index(field)
        child = _relabel(children[index], rename)
        if child is None:
            return lists
        children[index] = child
        fields = [values.type.field(i) for i in range(values.type.num_fields)]
        mask = values.is_null() if values.null_count else None
        renamed = pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    if start:
        offsets = pc.subtract(offsets, start)
    mask = lists.is_null() if lists.null_count else None
    return pa.ListArray.from_arrays(offsets, renamed, type=lists.type, mask=mask)


class _Names:
    """Topic ids -> names, applied to a frames batch's topic columns. The labels are renamed on the
    Arrow arrays, once per distinct label of a batch, and a column none of whose labels is an id
    of the directory is passed on as it is (no conversion to Python values and back)."""

    def __init__(self, directory: Mapping[str, str]) -> None:
        self.directory = directory

    def name(self, label: str | None) -> str | None:
        return self.directory.get(label, label) if label is not None else None

    def where(self, where: str | None) -> str | None:
        if where is None:
            return None
        topic, sep, rest = where.partition("/")
        return (self.directory.get(topic, topic) or "") + sep + rest

    def columns(self, batch: Any) -> dict[str, Any]:
        """The renamed ``topics``, ``partitions``, ``errors``, ``error_codes`` and ``topic_names``."""
        import pyarrow as pa

        get = self.directory.get
        out = {
            "topics": _relist(batch.column("topics"), self.name, None),
            "partitions": _relist(batch.column("partitions"), self.name, "topic"),
            "errors": _relist(batch.column("errors"), self.name, "topic"),
            "error_codes": _relist(batch.column("error_codes"), self.where, "where"),
        }
        kind = pa.map_(pa.string(), pa.string())
        ids = batch.column("topic_ids")
        if not any(get(i) is not None for i in _distinct_values(ids)):
            out["topic_names"] = pa.nulls(batch.num_rows, kind)
            return out
        names: list[Any] = []
        for row in ids.to_pylist():
            found = [(i, get(i)) for i in row if get(i) is not None]
            names.append(found or None)
        out["topic_names"] = pa.array(names, type=kind)
        return out


def _distinct_values(lists: Any) -> list[Any]:
    """The distinct values of a list column's lists."""
    import pyarrow.compute as pc

    values: list[Any] = pc.unique(pc.list_flatten(lists)).to_pylist()
    return values


def _dates(ts: Any) -> Any:
    """The UTC date (``YYYY-MM-DD``) of each timestamp, formatted once per distinct day: a batch's
    frames are of one day (stage 2 batches them by day), and ``strftime`` over every row cost 2.2 ms
    per 2048 rows (this: 0.23 ms)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    days = pc.cast(ts, pa.date32())
    distinct = pc.unique(days)
    names = pc.strftime(pc.cast(distinct, ts.type), format="%Y-%m-%d")
    return names.take(pc.index_in(days, distinct))


def _frames(batch: Any, connection: Any, names: _Names | None) -> Any:
    """The frames rows of an event batch (already filtered to frames) as a table with ``date`` and
    ``api`` for the folders."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns: dict[str, Any] = {c: batch.column(c) for c in FRAME_COLUMNS if c != "connection"}
    columns["connection"] = connection
    if names is not None:
        columns.update(names.columns(batch))
    else:
        for column in ("topics", "partitions", "errors", "error_codes"):
            columns[column] = batch.column(column)
        columns["topic_names"] = pa.nulls(batch.num_rows, pa.map_(pa.string(), pa.string()))
    micros = pc.cast(pc.multiply(batch.column("time"), 1e6), pa.int64(), safe=False)
    ts = pc.cast(micros, pa.timestamp("us", tz="UTC"))
    columns["ts"] = ts
    columns["date"] = _dates(ts)
    columns["api"] = pc.coalesce(batch.column("api_name"), pa.scalar("unknown"))
    order = [
        *FRAME_COLUMNS,
        "topics",
        "partitions",
        "errors",
        "error_codes",
        "topic_names",
        "ts",
        "date",
        "api",
    ]
    return pa.table([columns[c] for c in order], names=order)


def _diagnostics(issues: Any, issue_conn: Any, frames: Any, frame_conn: Any) -> Any:
    """The diagnostics rows: the issues, and the frames with diagnostics."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = issues.num_rows
    from_file = pc.is_valid(issues.column("file"))
    first = pa.table(
        {
            "source": pc.if_else(from_file, "file", "stream"),
            "kind": issues.column("issue_kind"),
            "time": issues.column("time"),
            "file": issues.column("file"),
            "file_offset": issues.column("file_offset"),
            "connection": issue_conn,
            "client": issues.column("client"),
            "server": issues.column("server"),
            "direction": issues.column("direction"),
            "stream_offset": issues.column("stream_offset"),
            "length": issues.column("length"),
            "message": issues.column("message"),
            "api_name": pa.nulls(n, pa.string()),
            "api_version": pa.nulls(n, pa.int32()),
            "correlation_id": pa.nulls(n, pa.int32()),
        }
    )
    flagged = pc.greater(pc.list_value_length(frames.column("diagnostics")), 0)
    f = frames.filter(flagged)
    m = f.num_rows
    second = pa.table(
        {
            "source": pa.array(["frame"] * m, pa.string()),
            "kind": pc.if_else(pc.is_valid(f.column("error")), "undecodable", "non-conformant"),
            "time": f.column("time"),
            "file": pa.nulls(m, pa.string()),
            "file_offset": pa.nulls(m, pa.int64()),
            "connection": frame_conn.filter(flagged),
            "client": f.column("client"),
            "server": f.column("server"),
            "direction": f.column("direction"),
            "stream_offset": f.column("stream_offset"),
            "length": pa.nulls(m, pa.int64()),
            "message": pc.binary_join(f.column("diagnostics"), "; "),
            "api_name": f.column("api_name"),
            "api_version": f.column("api_version"),
            "correlation_id": f.column("correlation_id"),
        }
    )
    return pa.concat_tables([first, second])


def diagnostics_schema() -> Any:
    """The schema of the ``diagnostics`` table."""
    import pyarrow as pa

    events = event_arrow_schema()
    return _diagnostics(
        events.empty_table(), pa.array([], pa.int32()), events.empty_table(), pa.array([], pa.int32())
    ).schema


def _numbers(batch: Any, numbers: Mapping[tuple[str, int], int]) -> Any:
    import pyarrow as pa

    keys, locals_ = batch.column("key").to_pylist(), batch.column("local").to_pylist()
    values = [None if n is None else numbers.get((k, n)) for k, n in zip(keys, locals_, strict=True)]
    return pa.array(values, pa.int32())


def frame_schema() -> Any:
    """The schema of the tables :func:`_frames` makes."""
    import pyarrow as pa

    events = event_arrow_schema()
    fields = [events.field(c) for c in FRAME_COLUMNS if c != "connection"]
    fields.insert(FRAME_COLUMNS.index("connection"), pa.field("connection", pa.int32()))
    fields += [events.field(c) for c in ("topics", "partitions", "errors", "error_codes")]
    fields += [
        pa.field("topic_names", pa.map_(pa.string(), pa.string())),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("date", pa.string()),
        pa.field("api", pa.string()),
    ]
    return pa.schema(fields)


class _Task:
    """One spill file's rows, as frames batches (for the writer) and diagnostics and the timeline."""

    def __init__(
        self, numbers: Mapping[tuple[str, int], int], directory: Mapping[str, str], width: float
    ) -> None:
        self.numbers = numbers
        self.names = _Names(directory) if directory else None
        self.partials = Partials(width)
        self.diagnostics: list[Any] = []  # the batches' diagnostics rows (none: no table)
        self.batches = 0

    def frames(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow.compute as pc

        for batch in batches:
            conn = _numbers(batch, self.numbers)
            is_frame = pc.equal(batch.column("kind"), "frame")
            if pc.all(is_frame).as_py():  # the usual batch: frames only (no copy of their JSON)
                frames, frame_conn = batch, conn
                issues, issue_conn = batch.slice(0, 0), conn.slice(0, 0)
            else:
                is_issue = pc.invert(is_frame)
                frames, issues = batch.filter(is_frame), batch.filter(is_issue)
                frame_conn, issue_conn = conn.filter(is_frame), conn.filter(is_issue)
            table = _frames(frames, frame_conn, self.names)
            self.batches += 1
            flagged = pc.greater(pc.list_value_length(frames.column("diagnostics")), 0)
            if issues.num_rows or pc.any(flagged).as_py():  # most batches have no diagnostics rows
                self.diagnostics.append(_diagnostics(issues, issue_conn, frames, frame_conn))
            self.partials.timeline_frames(_timeline_columns(frames))
            yield from table.to_batches()


def _timeline_columns(frames: Any) -> dict[str, list[Any]]:
    """The values :meth:`Partials.timeline_frames` reads, from an events batch of frames."""
    import pyarrow.compute as pc

    columns = {c: frames.column(c).to_pylist() for c in ("time", "api_name", "size", "latency", "direction")}
    with_errors = pc.fill_null(pc.greater(pc.list_value_length(frames.column("errors")), 0), False)
    columns["errors"] = with_errors.to_pylist()
    return columns


#: Columns of ``frames`` written without a dictionary or min/max statistics: JSON text that seldom
#: repeats and is never filtered by range (both cost a pass over every byte of it).
_PLAIN_COLUMNS = frozenset({"header", "body"})


#: Compression of the ``frames`` files: snappy (Spark's own default for Parquet). Zstd's work grows
#: with the level and the files shrink with it, more on compressible JSON than on payloads of random
#: bytes (base64 in the JSON); snappy costs the least on random payloads and writes the smallest
#: files of compressible JSON and of the test captures, 17 % more than zstd -7 of random payloads.
#: Counted in instructions to write the frames of three inputs (beyond writing them uncompressed),
#: and the files' MB:
#:
#: ==========  ==================  =====================  =============
#: codec       12.5 MB, random     5.8 MB, compressible   test captures
#: ==========  ==================  =====================  =============
#: none        0 G, 15.59 MB       0 G, 8.52 MB           1.41 MB
#: zstd -3     0.198 G, 13.56 MB   0.117 G, 4.86 MB       0.75 MB
#: zstd -7     0.118 G, 12.95 MB   0.070 G, 5.23 MB       0.78 MB
#: zstd -10    0.090 G, 12.56 MB   0.081 G, 5.66 MB       0.79 MB
#: zstd -20    0.077 G, 12.60 MB   0.053 G, 5.99 MB       0.84 MB
#: zstd 1      0.445 G, 10.06 MB   0.216 G, 3.11 MB       0.73 MB
#: lz4_raw     0.157 G, 14.39 MB   0.127 G, 4.95 MB       0.72 MB
#: snappy      0.048 G, 15.10 MB   0.084 G, 4.72 MB       0.75 MB
#: ==========  ==================  =====================  =============
#:
#: (Zstd -3 was 13 % of the whole pipeline's instructions on the first input, -7 8 %; snappy took
#: the stage that writes the frames from 0.239 G to 0.166 G instructions on it.) Every Parquet
#: reader (Spark, pyarrow, DuckDB, pandas) reads snappy.
FRAMES_COMPRESSION: tuple[str, int | None] = ("snappy", None)


def frames_options() -> dict[str, Any]:
    """``ParquetWriter`` options of the ``frames`` files."""
    others = [f.name for f in frame_schema() if f.name not in _PLAIN_COLUMNS]
    codec, level = FRAMES_COMPRESSION
    return {
        "use_dictionary": others,
        "write_statistics": others,
        "compression": codec,
        "compression_level": level,
    }


def write_task(
    spills: Iterable[tuple[int, str]],
    output: Output,
    numbers: Mapping[tuple[str, int], int],
    directory: Mapping[str, str],
    width: float,
) -> Iterator[Partials]:
    """RDD ``mapPartitions`` function of stage 3: ``(part, spill file)`` in (one task's group of
    spills), their timeline's partials out. The group's frames go to one file per folder and its
    diagnostics to one file, named after the group's first partition."""
    import pyarrow as pa

    group = list(spills)
    if not group:
        return
    name = f"part-{group[0][0]:05d}"
    task = _Task(numbers, directory, width)

    def batches() -> Iterator[Any]:
        for _part, spill in group:
            yield from task.frames(read_spill(output, spill))

    with fewer_collections():
        options = frames_options()
        output.write_partitioned(batches(), frame_schema(), "frames", ["date", "api"], name, options)
    if task.batches:  # a diagnostics file, even without rows
        rows = pa.concat_tables(task.diagnostics) if task.diagnostics else diagnostics_schema().empty_table()
        output.write_file(rows, "diagnostics", f"{name}.parquet")
    yield task.partials
