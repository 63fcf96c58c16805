"""A captured frame's record is declared once (``kcodec.capture.record.FRAME_RECORD``): its JSON line
(``CapturedFrame.to_dict``), the pipeline's event rows, ``frames`` table and aggregate columns (their
names, order and Arrow types), and a parallel decode's table rows (``parallel_items.Row``) all agree
with it, member for member and value for value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kcodec.capture import CapturedFrame, iter_capture
from kcodec.capture.record import (
    CLIENT_COLUMNS,
    FRAME_NAMES,
    FRAME_RECORD,
    PLAIN_NAMES,
    TABLE_ROW,
    column,
    table_row_values,
)
from kcodec.cli.capture_table import RowSource
from kcodec.cli.parallel_items import Row, _row
from kcodec.protocol.errors import DecodeError

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "sample.pcap"


def _frames() -> list[CapturedFrame]:
    with open(SAMPLE, "rb") as f:
        return [ev for ev in iter_capture(f) if isinstance(ev, CapturedFrame)]


def test_to_dict_has_the_record_s_members_in_its_order() -> None:
    frames = _frames()
    assert len(frames) >= 10
    for ev in frames:
        d = ev.to_dict()
        names = [n for n in FRAME_NAMES if n != "latency" or ev.latency is not None]
        assert list(d) == ["type", *names]
        for c in FRAME_RECORD:
            if c.kind == "plain":
                assert d[c.name] == getattr(ev, c.attr), c
        assert list(ev.to_dict(body=False)) == ["type", *(n for n in names if n not in ("header", "body"))]
    assert any(ev.latency is not None for ev in frames) and any(ev.latency is None for ev in frames)
    assert FRAME_NAMES[: len(PLAIN_NAMES)] == PLAIN_NAMES  # (a parallel decode's JSON head: time, connection)
    assert FRAME_NAMES[:2] == ("time", "connection")


def test_a_table_row_is_the_record_s_row_columns() -> None:
    assert Row._fields == tuple(c.attr for c in TABLE_ROW)
    assert TABLE_ROW[-1].name == "error"  # (made a flag by table_row_values)
    for name in Row._fields:  # what the table reads of a row (RowSource), a frame has too
        assert hasattr(CapturedFrame, name)
    protocol = [n for n in vars(RowSource) if not n.startswith("_")]
    assert set(protocol) <= set(Row._fields)
    ev = _frames()[1]
    row = _row(ev)
    assert type(row) is Row and tuple(row) == table_row_values(ev)
    assert [getattr(row, n) for n in Row._fields[:-1]] == [getattr(ev, n) for n in Row._fields[:-1]]
    assert row.error is None
    ev.fail(DecodeError("bad", 0, "body"))
    assert _row(ev).error is True


def test_the_pipeline_s_columns_are_made_of_the_record() -> None:
    pytest.importorskip("pyarrow", reason="the pipeline's schemas need pip install -e '.[spark]'")
    from kcodec.pipeline.decode import EVENT_COLUMNS, _arrow_type, event_arrow_schema
    from kcodec.pipeline.partials import AGGREGATE_COLUMNS
    from kcodec.pipeline.write import FRAME_COLUMNS, frame_schema

    events = dict(EVENT_COLUMNS)
    frame_part = [(n, t) for n, t in EVENT_COLUMNS if n in FRAME_NAMES]
    assert frame_part == [(c.name, c.type) for c in FRAME_RECORD if c.name != "connection"]
    for c in CLIENT_COLUMNS:
        assert events[c.name] == c.type
    schema = event_arrow_schema()
    for c in FRAME_RECORD + CLIENT_COLUMNS:
        if c.name != "connection":
            assert schema.field(c.name).type == _arrow_type(c.type), c
    assert FRAME_COLUMNS[: len(FRAME_NAMES)] == FRAME_NAMES
    frames = frame_schema()
    assert frames.names[: len(FRAME_NAMES)] == list(FRAME_NAMES)
    for c in FRAME_RECORD + CLIENT_COLUMNS:
        assert frames.field(c.name).type == _arrow_type(c.type), c
    assert set(AGGREGATE_COLUMNS) <= set(frames.names)
    assert column("connection").type == "int" and column("client_id") in CLIENT_COLUMNS
    with pytest.raises(KeyError):
        column("no_such_column")


def _from_table(c: Any, value: Any) -> Any:
    """A table's value of a record column as ``to_dict`` has it (JSON text parsed)."""
    if c.name in ("header", "body", "error", "embedded") and value is not None:
        return json.loads(value)
    return value


def test_the_pipeline_s_frame_rows_hold_the_json_lines_values() -> None:
    pytest.importorskip("pyarrow", reason="the pipeline's rows need pip install -e '.[spark]'")
    from kcodec.pipeline.decode import decode_records
    from kcodec.pipeline.scan import ISSUE_KEY_PREFIX, scan_split

    size = SAMPLE.stat().st_size
    records = sorted(
        (r for r in scan_split((str(SAMPLE), 0, 0, -1, size, 0)) if not r[0][0].startswith(ISSUE_KEY_PREFIX)),
        key=lambda r: r[0],
    )
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for batch in decode_records(records, [str(SAMPLE)], (9092,)):
        for row in batch.to_pylist():
            if row["kind"] == "frame":
                rows[(row["client"], row["server"], row["direction"], row["stream_offset"])] = row
    frames = _frames()
    assert len(rows) == len(frames)
    for ev in frames:
        d = ev.to_dict()
        row = rows[(ev.client, ev.server, ev.direction, ev.stream_offset)]
        for c in FRAME_RECORD:
            if c.name != "connection":
                assert _from_table(c, row[c.name]) == d.get(c.name), c
