"""Stage 1 on the executors: byte ranges of capture files in, TCP segment rows out (Arrow batches).

Each input row is one split of one file (``path``, ``file_order``, ``start``, ``end``; ``end`` -1 for
"to the end of the file"). The split is read as a stream by
:func:`kcodec.capture.iter_segments` (the capture package's packet and segment stages) and every
segment becomes a row of :data:`SEGMENT_COLUMNS`: its TCP facts and *where its payload lies* in the
file (``payload_offset``, ``payload_length``), not the payload itself, which stage 2 reads back
(:mod:`~kcodec.pipeline.payloads`): the shuffle carries about 100 bytes per segment instead of
its payload. Problems with the file (a damaged or cut record,
a file that is no capture at all, a read error) become rows too, with ``issue`` set to the issue's
JSON and ``key`` set to :data:`ISSUE_KEY_PREFIX` + the path, so that they travel with the segments
to stage 2 and on to the ``diagnostics`` table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kcodec.capture import CaptureFileError, CaptureIssue, Segment, iter_segments
from kcodec.pipeline.sources import open_input

__all__ = ["ISSUE_KEY_PREFIX", "SEGMENT_COLUMNS", "SPLIT_COLUMNS", "scan_batches", "unreadable"]

#: (column, Spark type) of a stage-1 row.
SEGMENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("key", "string"),
    ("src", "string"),
    ("dst", "string"),
    ("seq", "long"),
    ("ack", "long"),
    ("flags", "int"),
    ("timestamp", "double"),
    ("file_order", "int"),
    ("offset", "long"),
    ("payload_offset", "long"),
    ("payload_length", "int"),
    ("issue", "string"),
)
#: (column, Spark type) of a split row (stage 1's input).
SPLIT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("path", "string"),
    ("file_order", "int"),
    ("start", "long"),
    ("end", "long"),
    ("size", "long"),
)
#: Keys of rows that carry a file's issue rather than a segment (no TCP key starts with it).
ISSUE_KEY_PREFIX = "\x00file "
_BATCH_ROWS = 16384

Done = Callable[[int, int], None]  # (file order, bytes of the split)


def unreadable(path: str, message: str, offset: int | None = None) -> dict[str, Any]:
    """The issue JSON of a file that cannot be read at all (kind ``unreadable-file``)."""
    return {
        "type": "issue",
        "time": None,
        "kind": "unreadable-file",
        "message": message,
        "file": path,
        "file_offset": offset,
    }


class _Columns:
    """Column lists of the batch being built."""

    def __init__(self) -> None:
        self.cols: list[list[Any]] = [[] for _ in SEGMENT_COLUMNS]
        self.rows = 0

    def segment(self, seg: Segment, order: int) -> None:
        c = self.cols
        c[0].append(seg.key)
        c[1].append(seg.src)
        c[2].append(seg.dst)
        c[3].append(seg.seq)
        c[4].append(seg.ack)
        c[5].append(seg.flags)
        c[6].append(seg.timestamp)
        c[7].append(order)
        c[8].append(seg.offset)
        c[9].append(seg.payload_offset)
        c[10].append(len(seg.payload))
        c[11].append(None)
        self.rows += 1

    def issue(self, path: str, order: int, offset: int, issue: dict[str, Any]) -> None:
        values = (ISSUE_KEY_PREFIX + path, None, None, None, None, None, None, order, offset, -1, 0)
        for col, value in zip(self.cols, values, strict=False):
            col.append(value)
        self.cols[11].append(json.dumps(issue, ensure_ascii=False))
        self.rows += 1

    def full(self) -> bool:
        return self.rows >= _BATCH_ROWS


def _arrow_schema() -> Any:
    import pyarrow as pa

    types = {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "double": pa.float64()}
    return pa.schema([(name, types[t]) for name, t in SEGMENT_COLUMNS])


def _split_items(path: str, start: int, end: int | None) -> Iterator[Segment | CaptureIssue | dict[str, Any]]:
    """The segments and issues of one split; a file that cannot be read gives one issue dict (from
    its first split only, so that it is reported once)."""
    try:
        source = open_input(path)
    except OSError as e:
        if start == 0:
            yield unreadable(path, str(e))
        return
    try:
        yield from iter_segments(source, start=start, end=end, name=path)
    except CaptureFileError as e:
        if start == 0:
            yield unreadable(path, str(e))
    except OSError as e:
        yield unreadable(path, f"read error: {e}")
    finally:
        source.close()


def scan_batches(splits: Iterable[Any], done: Done | None = None) -> Iterator[Any]:
    """mapInArrow function of stage 1: batches of split rows in, batches of segment rows out."""
    import pyarrow as pa

    schema = _arrow_schema()
    cols = _Columns()

    def flush() -> Any:
        nonlocal cols
        batch = pa.RecordBatch.from_arrays(
            [pa.array(values, type=f.type) for values, f in zip(cols.cols, schema, strict=True)],
            schema=schema,
        )
        cols = _Columns()
        return batch

    for batch in splits:
        for row in batch.to_pylist():
            path, order, start, end = row["path"], row["file_order"], row["start"], row["end"]
            for item in _split_items(path, start, None if end < 0 else end):
                if isinstance(item, Segment):
                    cols.segment(item, order)
                elif isinstance(item, CaptureIssue):
                    cols.issue(path, order, item.file_offset or 0, item.to_dict())
                else:
                    cols.issue(path, order, item.get("file_offset") or 0, item)
                if cols.full():
                    yield flush()
            if done is not None:
                done(order, (end if end >= 0 else row["size"]) - start)
    if cols.rows:
        yield flush()
