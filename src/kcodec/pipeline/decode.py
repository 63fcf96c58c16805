"""Stage 2 on the executors: the segments of whole connections in, frame and issue rows out.

The input of one task is a partition of the stage-1 records, sorted by connection key and then by
capture order (file order, offset: a connection that continues in the next rotated file is one
stream). Each segment says where its payload lies in the input files; the payloads are read back
here (:class:`~kcodec.pipeline.payloads.PayloadReader`). The segments of each key go through a
:class:`kcodec.capture.CaptureDecoder` (which does reassembly, framing, pairing and decoding, and
tells connections apart when a 4-tuple is reused); every frame and stream issue it yields becomes an
:data:`EVENT_COLUMNS` row. File issues from stage 1 pass through.

Connections are numbered ``local`` 1, 2, ... within their key here; the job numbers them across the
whole input afterwards by the position of their first segment (:attr:`Found.starts`), which is how
``kcodec decode-capture`` numbers the connections of one file. :class:`Found` also gathers the topic
names stated (ids resolved across the whole input) and the time span of the frames.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import orjson

from kcodec.capture import CaptureDecoder, CapturedFrame, CaptureEvent, CaptureIssue, Segment, error_dict
from kcodec.capture.record import CLIENT_COLUMNS, FRAME_RECORD
from kcodec.pipeline.flatten import (
    code_struct_fields,
    error_struct_fields,
    flatten,
    pair_struct_fields,
    partition_struct_fields,
)
from kcodec.pipeline.partials import AGGREGATE_COLUMNS, Partials
from kcodec.pipeline.payloads import PayloadReader
from kcodec.pipeline.scan import Record, unpack

__all__ = [
    "CODE_STRUCT",
    "ERROR_STRUCT",
    "EVENT_COLUMNS",
    "PAIR_STRUCT",
    "PARTITION_STRUCT",
    "Found",
    "decode_records",
    "event_arrow_schema",
]

_API_VERSIONS_KEY = 18


def _struct(fields: tuple[tuple[str, str], ...]) -> str:
    return "struct<" + ",".join(f"{n}:{t}" for n, t in fields) + ">"


PARTITION_STRUCT = _struct(partition_struct_fields)
ERROR_STRUCT = _struct(error_struct_fields)
CODE_STRUCT = _struct(code_struct_fields)
PAIR_STRUCT = _struct(pair_struct_fields)

#: (column, Spark type) of a stage-2 row. ``kind`` is ``frame`` or ``issue``. A frame's own columns are
#: its record's (``kcodec.capture.record.FRAME_RECORD``, but for ``connection``, numbered later from
#: ``key``/``local``/``first_*``), then what its connection's client said (``CLIENT_COLUMNS``), then
#: its facts flattened (``kcodec.pipeline.flatten``); an issue's columns come last.
EVENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("kind", "string"),
    ("key", "string"),
    ("local", "int"),
    ("first_order", "int"),
    ("first_offset", "long"),
    *((c.name, c.type) for c in FRAME_RECORD if c.name != "connection"),
    *((c.name, c.type) for c in CLIENT_COLUMNS),
    ("topics", "array<string>"),
    ("error_code", "int"),
    ("error_name", "string"),
    ("partitions", f"array<{PARTITION_STRUCT}>"),
    ("errors", f"array<{ERROR_STRUCT}>"),
    ("error_codes", f"array<{CODE_STRUCT}>"),
    ("topic_pairs", f"array<{PAIR_STRUCT}>"),
    ("topic_ids", "array<string>"),
    ("issue_kind", "string"),
    ("message", "string"),
    ("length", "long"),
    ("file", "string"),
    ("file_offset", "long"),
)
_BATCH_ROWS = 2048
_DAY = 86400.0
#: The batch group of issue rows (frames are batched by API and UTC day, so that a batch goes to one
#: folder of the partitioned ``frames`` table whole: no per-folder copies of its rows in stage 3).
_ISSUES: tuple[Any, ...] = ("", -1.0)
#: A batch's JSON bytes at most (about): small enough that its rows' bytes are still in the CPU's
#: caches when they are copied into Arrow buffers, and that the buffers come from the allocator's
#: free lists rather than fresh pages (32 MB batches cost 0.3-0.5 CPU-s more on 200 MB of input).
_BATCH_BYTES = 4 << 20


def _dumps(obj: Any) -> str | None:
    return None if obj is None else orjson.dumps(obj).decode()


def _json(obj: Any) -> bytes | None:
    """JSON as UTF-8 bytes (the ``header``/``body`` columns are built from bytes: no str round trip)."""
    return None if obj is None else orjson.dumps(obj)


#: Columns whose values are UTF-8 bytes, viewed as Arrow strings.
_BYTES_COLUMNS = frozenset({"header", "body", "embedded"})
_NONE_EMBEDDED = b"[]"


@dataclass(slots=True)
class Found:
    """What one task's decoding found that numbering and naming need across all tasks (small: one
    entry per connection and per topic)."""

    starts: list[tuple[int, int, str, int]] = field(default_factory=list)  # (file order, offset, key, local)
    names: dict[str, tuple[float, str]] = field(default_factory=dict)  # topic id -> (time, name) first stated
    first_time: float | None = None  # of the frames
    last_time: float | None = None
    frames: int = 0

    def merge(self, other: Found) -> None:
        self.starts += other.starts
        for topic_id, (t, name) in other.names.items():
            have = self.names.get(topic_id)
            if have is None or t < have[0]:
                self.names[topic_id] = (t, name)
        if other.first_time is not None:
            self.first_time = (
                other.first_time if self.first_time is None else min(self.first_time, other.first_time)
            )
        if other.last_time is not None:
            self.last_time = (
                other.last_time if self.last_time is None else max(self.last_time, other.last_time)
            )
        self.frames += other.frames

    def __reduce__(self) -> tuple[type[Found], tuple[Any, ...]]:
        # made again from the fields' values: one pickle for the pure and the compiled build (a
        # driver and its executors may run different builds: kcodec.pipeline.ship)
        return Found, tuple(getattr(self, name) for name in _FOUND_FIELDS)

    def numbers(self) -> dict[tuple[str, int], int]:
        """(key, local) -> connection number 1, 2, ... in the order of the connections' first segments."""
        return {(key, local): n for n, (_, _, key, local) in enumerate(sorted(self.starts), start=1)}

    def directory(self) -> dict[str, str]:
        """Topic id -> name (the first name stated for it)."""
        return {topic_id: name for topic_id, (_, name) in self.names.items()}


#: The fields of :class:`Found`, in order (its pickles carry their values).
_FOUND_FIELDS = tuple(f.name for f in fields(Found))


class _Conn:
    """What one connection has said about its client so far (for the rows of later frames)."""

    __slots__ = ("client_id", "first", "software")

    def __init__(self, first: tuple[int, int]) -> None:
        self.first = first
        self.client_id: str | None = None
        self.software: tuple[str | None, str | None] = (None, None)


_COLUMN_INDEX = {name: i for i, (name, _) in enumerate(EVENT_COLUMNS)}
_KEY, _LOCAL = _COLUMN_INDEX["key"], _COLUMN_INDEX["local"]
#: The aggregates' columns as the events have them (``connection``: from ``key`` and ``local``).
_FOLDED = tuple(name for name in AGGREGATE_COLUMNS if name != "connection")


def _row(values: dict[str, Any]) -> tuple[Any, ...]:
    """A row given by column name (the columns not named are null)."""
    row: list[Any] = [None] * len(EVENT_COLUMNS)
    for name, value in values.items():
        row[_COLUMN_INDEX[name]] = value
    return tuple(row)


class _Rows:
    """The rows of the batch being built, as tuples in :data:`EVENT_COLUMNS` order."""

    __slots__ = ("bytes", "rows")

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.bytes = 0

    def columns(self) -> list[Any]:
        """The rows as one sequence of values per column."""
        return list(zip(*self.rows, strict=True)) if self.rows else [() for _ in EVENT_COLUMNS]

    def full(self) -> bool:
        return len(self.rows) >= _BATCH_ROWS or self.bytes >= _BATCH_BYTES


class _Decoder:
    """The decoding of one task's partition: one CaptureDecoder per connection key at a time."""

    def __init__(self, ports: tuple[int, ...], autodetect: bool, strict: bool) -> None:
        self.ports = ports
        self.autodetect = autodetect
        self.strict = strict
        self.groups: dict[tuple[Any, ...], _Rows] = {}  # the batches being built, by group
        self.ready: list[tuple[Any, ...]] = []  # groups whose batch is full
        self.key: str | None = None
        self.decoder: CaptureDecoder | None = None
        self.conns: dict[int, _Conn] = {}
        self.found = Found()
        # the aggregates but the timeline, connections named by (key, local)
        self.partials = Partials(0.0)
        self.pending: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}  # (see Partials.frames)

    def append(self, group: tuple[Any, ...], row: tuple[Any, ...], size: int) -> None:
        """Add a row to the batch of its group (:data:`_ISSUES`, or a frame's API and UTC day)."""
        rows = self.groups.get(group)
        if rows is None:
            rows = self.groups[group] = _Rows()
        rows.rows.append(row)
        rows.bytes += size
        if rows.full() and group not in self.ready:
            self.ready.append(group)

    def take(self, group: tuple[Any, ...]) -> list[Any]:
        """The batch of ``group`` as one sequence of values per column, its frames folded into the
        partials (in the order stage 3 reads them back)."""
        columns = self.groups.pop(group).columns()
        if group != _ISSUES:
            c = {name: columns[_COLUMN_INDEX[name]] for name in _FOLDED}
            keys, locals_ = columns[_KEY], columns[_LOCAL]
            c["connection"] = [None if n is None else (k, n) for k, n in zip(keys, locals_, strict=True)]
            self.partials.frames(c, self.pending, timeline=False)
        return columns

    def start(self, key: str) -> None:
        self.key = key
        self.decoder = CaptureDecoder(ports=self.ports, autodetect=self.autodetect, strict=self.strict)
        self.conns = {}

    def finish_key(self) -> None:
        if self.decoder is not None:
            self.events(self.decoder.finish())
        self.decoder = None
        self.key = None

    def segment(self, seg: Segment, order: int) -> None:
        decoder = self.decoder
        assert decoder is not None
        number = decoder.next_number
        events = decoder.feed(seg)
        if decoder.next_number != number:  # this segment opened connection `number`
            self.conns[number] = _Conn((order, seg.offset))
            assert self.key is not None
            self.found.starts.append((order, seg.offset, self.key, number))
        if events:
            self.events(events)

    def events(self, events: Iterable[CaptureEvent]) -> None:
        for ev in events:
            if isinstance(ev, CapturedFrame):
                self.frame(ev)
            else:
                self.issue(ev)

    def _where(self, number: int | None) -> dict[str, Any]:
        conn = self.conns.get(number) if number is not None else None
        if conn is None:
            return {"key": self.key}
        return {"key": self.key, "local": number, "first_order": conn.first[0], "first_offset": conn.first[1]}

    def frame(self, ev: CapturedFrame) -> None:
        """The frame's row: the values of ``ev.to_dict()`` (``decode-capture --json``'s object), read
        from the frame's attributes without building that dict."""
        header, body = ev.json_objects()
        conn = self.conns.get(ev.connection)
        api_key, direction = ev.api_key, ev.direction
        client_id = None
        software: tuple[str | None, str | None] = (None, None)
        local: int | None = None
        first_order: int | None = None
        first_offset: int | None = None
        if conn is not None:
            if direction == "request" and header is not None and "clientId" in header:
                conn.client_id = header["clientId"]
            if direction == "request" and api_key == _API_VERSIONS_KEY and body:
                name = body.get("clientSoftwareName")
                if name:
                    conn.software = (name, body.get("clientSoftwareVersion"))
            client_id, software = conn.client_id, conn.software
            local, (first_order, first_offset) = ev.connection, conn.first
        flat = flatten(ev.body, api_key, ev.api_version, direction)
        found, t = self.found, ev.timestamp
        found.frames += 1
        if found.first_time is None or t < found.first_time:
            found.first_time = t
        if found.last_time is None or t > found.last_time:
            found.last_time = t
        for topic_id, topic in flat.topic_pairs:
            have = found.names.get(topic_id)
            if have is None or t < have[0]:
                found.names[topic_id] = (t, topic)
        header_text, body_text = _json(header), _json(body)
        api_name = ev.api_name
        self.append(
            (api_name, t // _DAY),
            (  # in EVENT_COLUMNS order (the issue columns at the end are null)
                "frame",
                self.key,
                local,
                first_order,
                first_offset,
                t,
                ev.client,
                ev.server,
                direction,
                ev.stream_offset,
                ev.size,
                api_key,
                api_name,
                ev.api_version,
                ev.correlation_id,
                ev.latency,
                header_text,
                body_text,
                ev.partial is not None,
                None if ev.error is None else _dumps(error_dict(ev.error)),
                list(ev.diagnostics),
                orjson.dumps([e.to_json() for e in ev.embedded]) if ev.embedded else _NONE_EMBEDDED,
                client_id,
                software[0],
                software[1],
                flat.topics,
                flat.error_code,
                flat.error_name,
                flat.partitions,
                flat.errors,
                flat.error_codes,
                flat.topic_pairs,
                flat.topic_ids,
                None,
                None,
                None,
                None,
                None,
            ),
            len(body_text or b"") + len(header_text or b"") + 256,
        )

    def issue(self, ev: CaptureIssue) -> None:
        d = ev.to_dict()
        self._issue_row(
            {
                "kind": "issue",
                **self._where(ev.connection),
                "time": d["time"],
                "client": d["client"],
                "server": d["server"],
                "direction": d["direction"],
                "stream_offset": d["stream_offset"],
                "issue_kind": d["kind"],
                "message": d["message"],
                "length": d["length"],
                "file": d.get("file"),
                "file_offset": d.get("file_offset"),
            }
        )

    def _issue_row(self, values: dict[str, Any]) -> None:
        self.partials.issue(values["issue_kind"], values.get("file"))
        self.append(_ISSUES, _row(values), 256)

    def file_issue(self, text: str) -> None:
        d = json.loads(text)
        self._issue_row(
            {
                "kind": "issue",
                "time": d.get("time"),
                "issue_kind": d["kind"],
                "message": d["message"],
                "length": d.get("length"),
                "file": d.get("file"),
                "file_offset": d.get("file_offset"),
            }
        )


def _arrow_type(spark_type: str) -> Any:
    import pyarrow as pa

    simple = {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "double": pa.float64()}
    simple["boolean"] = pa.bool_()
    if spark_type in simple:
        return simple[spark_type]
    if spark_type == "array<string>":
        return pa.list_(pa.string())
    inner = spark_type[len("array<struct<") : -2]
    fields = [part.split(":") for part in inner.split(",")]
    return pa.list_(pa.struct([(n, simple[t]) for n, t in fields]))


def _arrow_column(values: Sequence[Any], name: str, kind: Any) -> Any:
    """One column of a batch from its Python values (``header``/``body``: UTF-8 bytes; struct
    entries: tuples in the fields' order, which pyarrow converts faster than dicts)."""
    import pyarrow as pa

    if name in _BYTES_COLUMNS:
        return pa.array(values, type=pa.binary()).view(kind)
    return pa.array(values, type=kind)


def event_arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema([(name, _arrow_type(t)) for name, t in EVENT_COLUMNS])


def decode_records(
    records: Iterable[Record],
    paths: Sequence[str],
    ports: tuple[int, ...],
    autodetect: bool = True,
    strict: bool = False,
    found: Found | None = None,
    partials: Partials | None = None,
) -> Iterator[Any]:
    """Stage 2: stage 1's records sorted by their keys in, event batches out. ``paths``: the input
    files by file order (the payloads are read from them). What was found is merged into ``found``,
    the frames' and issues' partial aggregates (but the timeline) into ``partials``."""
    import pyarrow as pa

    schema = event_arrow_schema()
    state = _Decoder(ports, autodetect, strict)
    reader = PayloadReader(paths)

    def flush(group: tuple[Any, ...]) -> Any:
        columns = state.take(group)
        arrays = [_arrow_column(col, f.name, f.type) for col, f in zip(columns, schema, strict=True)]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    try:
        for (key, order, _first), value in records:
            if isinstance(value, str):
                state.file_issue(value)
                continue
            if key != state.key:
                state.finish_key()
                state.start(key)
            a, b = key.split(" ", 2)[:2]  # "client server", and " #capture" after the first capture
            forward, flags, seqs, acks, times, offsets, at, lengths = unpack(value)
            payloads = reader.read_file(order, at, lengths)
            for fw, fl, seq, ack, ts, offset, payload in zip(
                forward, flags, seqs, acks, times, offsets, payloads, strict=True
            ):
                src, dst = (a, b) if fw else (b, a)
                state.segment(Segment(key, src, dst, seq, ack, fl, ts, payload, "", 0, offset), order)
                if state.ready:
                    for group in state.ready:
                        yield flush(group)
                    state.ready.clear()
        state.finish_key()
        for group in list(state.groups):
            yield flush(group)
    finally:
        reader.close()
        if found is not None:
            found.merge(state.found)
        if partials is not None:
            partials.merge(state.partials)
