"""Stage 2 on the executors: the segments of whole connections in, frame and issue rows out.

The input of one task is a partition of the stage-1 rows, sorted by connection key and then by
capture order (``file_order``, ``offset``: a connection that continues in the next rotated file is
one stream). The segments of each key go through a :class:`kcodec.capture.CaptureDecoder` (which
does reassembly, framing, pairing and decoding, and tells connections apart when a 4-tuple is
reused); every frame and stream issue it yields becomes an :data:`EVENT_COLUMNS` row. File issues
from stage 1 pass through.

Connections are numbered ``local`` 1, 2, ... within their key here; the job numbers them across the
whole input afterwards by the position of their first segment (``first_order``, ``first_offset``),
which is how ``kcodec decode-capture`` numbers the connections of one file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from kcodec.capture import CaptureDecoder, CapturedFrame, CaptureEvent, CaptureIssue, Segment
from kcodec.pipeline.flatten import flatten, partition_struct_fields

__all__ = [
    "CODE_STRUCT",
    "ERROR_STRUCT",
    "EVENT_COLUMNS",
    "PAIR_STRUCT",
    "PARTITION_STRUCT",
    "decode_batches",
]

_API_VERSIONS_KEY = 18

PARTITION_STRUCT = "struct<" + ",".join(f"{n}:{t}" for n, t in partition_struct_fields) + ">"
ERROR_STRUCT = "struct<topic:string,partition:int,error_code:int,error_name:string>"
CODE_STRUCT = "struct<code:int,name:string,where:string>"
PAIR_STRUCT = "struct<id:string,name:string>"

#: (column, Spark type) of a stage-2 row. ``kind`` is ``frame`` or ``issue``.
EVENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("kind", "string"),
    ("key", "string"),
    ("local", "int"),
    ("first_order", "int"),
    ("first_offset", "long"),
    ("time", "double"),
    ("client", "string"),
    ("server", "string"),
    ("direction", "string"),
    ("stream_offset", "long"),
    ("size", "long"),
    ("api_key", "int"),
    ("api_name", "string"),
    ("api_version", "int"),
    ("correlation_id", "int"),
    ("latency", "double"),
    ("header", "string"),
    ("body", "string"),
    ("partial", "boolean"),
    ("error", "string"),
    ("diagnostics", "array<string>"),
    ("client_id", "string"),
    ("client_software_name", "string"),
    ("client_software_version", "string"),
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
_INDEX = {name: i for i, (name, _) in enumerate(EVENT_COLUMNS)}
_BATCH_ROWS = 2048
_BATCH_BYTES = 32 << 20


def _dumps(obj: Any) -> str | None:
    return None if obj is None else orjson.dumps(obj).decode()


class _Conn:
    """What one connection has said about its client so far (for the rows of later frames)."""

    __slots__ = ("client_id", "first", "software")

    def __init__(self, first: tuple[int, int]) -> None:
        self.first = first
        self.client_id: str | None = None
        self.software: tuple[str | None, str | None] = (None, None)


class _Rows:
    """The rows of the batch being built, as column lists."""

    def __init__(self) -> None:
        self.cols: list[list[Any]] = [[] for _ in EVENT_COLUMNS]
        self.rows = 0
        self.bytes = 0

    def add(self, values: dict[str, Any]) -> None:
        index = _INDEX
        row: list[Any] = [None] * len(EVENT_COLUMNS)
        for name, value in values.items():
            row[index[name]] = value
        for col, value in zip(self.cols, row, strict=True):
            col.append(value)
        self.rows += 1

    def full(self) -> bool:
        return self.rows >= _BATCH_ROWS or self.bytes >= _BATCH_BYTES


class _Decoder:
    """The decoding of one task's partition: one CaptureDecoder per connection key at a time."""

    def __init__(self, ports: tuple[int, ...], autodetect: bool, strict: bool) -> None:
        self.ports = ports
        self.autodetect = autodetect
        self.strict = strict
        self.rows = _Rows()
        self.key: str | None = None
        self.decoder: CaptureDecoder | None = None
        self.conns: dict[int, _Conn] = {}

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
        d = ev.to_dict()
        conn = self.conns.get(ev.connection)
        header, body = d["header"], d["body"]
        client_id = None
        software: tuple[str | None, str | None] = (None, None)
        if conn is not None:
            if ev.direction == "request" and header is not None and "clientId" in header:
                conn.client_id = header["clientId"]
            if ev.direction == "request" and ev.api_key == _API_VERSIONS_KEY and body:
                name = body.get("clientSoftwareName")
                if name:
                    conn.software = (name, body.get("clientSoftwareVersion"))
            client_id, software = conn.client_id, conn.software
        flat = flatten(ev.body, ev.api_key, ev.api_version, ev.direction)
        header_text, body_text = _dumps(header), _dumps(body)
        self.rows.add(
            {
                "kind": "frame",
                **self._where(ev.connection),
                "time": d["time"],
                "client": d["client"],
                "server": d["server"],
                "direction": d["direction"],
                "stream_offset": d["stream_offset"],
                "size": d["size"],
                "api_key": d["api_key"],
                "api_name": d["api_name"],
                "api_version": d["api_version"],
                "correlation_id": d["correlation_id"],
                "latency": d.get("latency"),
                "header": header_text,
                "body": body_text,
                "partial": d["partial"],
                "error": _dumps(d["error"]),
                "diagnostics": d["diagnostics"],
                "client_id": client_id,
                "client_software_name": software[0],
                "client_software_version": software[1],
                "topics": flat.topics,
                "error_code": flat.error_code,
                "error_name": flat.error_name,
                "partitions": flat.partitions,
                "errors": flat.errors,
                "error_codes": flat.error_codes,
                "topic_pairs": flat.topic_pairs,
                "topic_ids": flat.topic_ids,
            }
        )
        self.rows.bytes += len(body_text or "") + len(header_text or "") + 256

    def issue(self, ev: CaptureIssue) -> None:
        d = ev.to_dict()
        self.rows.add(
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

    def file_issue(self, text: str) -> None:
        d = json.loads(text)
        self.rows.add(
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


def event_arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema([(name, _arrow_type(t)) for name, t in EVENT_COLUMNS])


def decode_batches(
    batches: Iterable[Any], ports: tuple[int, ...], autodetect: bool = True, strict: bool = False
) -> Iterator[Any]:
    """mapInArrow function of stage 2: sorted segment batches in, event batches out."""
    import pyarrow as pa

    schema = event_arrow_schema()
    state = _Decoder(ports, autodetect, strict)

    def flush() -> Any:
        rows = state.rows
        state.rows = _Rows()
        arrays = [pa.array(col, type=f.type) for col, f in zip(rows.cols, schema, strict=True)]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    for batch in batches:
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        for key, src, dst, seq, ack, flags, ts, payload, order, offset, issue in zip(*columns, strict=True):
            if issue is not None:
                state.file_issue(issue)
            else:
                if key != state.key:
                    state.finish_key()
                    state.start(key)
                state.segment(Segment(key, src, dst, seq, ack, flags, ts, payload, "", 0, offset), order)
            if state.rows.full():
                yield flush()
    state.finish_key()
    if state.rows.rows:
        yield flush()
