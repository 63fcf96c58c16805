"""The record of a captured frame, declared once: its members in order, each with its column type.

:data:`FRAME_RECORD` is what a frame is as data: the members of its JSON line
(:meth:`CapturedFrame.to_dict <kcodec.capture.CapturedFrame.to_dict>`, after ``"type": "frame"``),
and the columns of the tables made of frames (the Spark pipeline's event rows and ``frames`` table,
whose Arrow and Spark types come from :attr:`Column.type`). The forms derive from it: ``to_dict``
reads its plain members by :data:`PLAIN_ATTRS`; the pipeline's column lists
(``kcodec.pipeline.decode.EVENT_COLUMNS``, ``kcodec.pipeline.write.FRAME_COLUMNS``,
``kcodec.pipeline.partials.AGGREGATE_COLUMNS``) are made of it and of :data:`CLIENT_COLUMNS`; a
parallel decode's worker sends a frame's table row as the values of :data:`TABLE_ROW`
(``kcodec.cli.parallel_items.Row``). ``tests/test_capture_record.py`` checks that every form agrees
with it.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Final, Literal, NamedTuple

__all__ = [
    "CLIENT_COLUMNS",
    "FRAME_NAMES",
    "FRAME_RECORD",
    "PLAIN_ATTRS",
    "PLAIN_NAMES",
    "TABLE_ROW",
    "Column",
    "column",
    "table_row_values",
]

#: How a member is written in the JSON line: ``plain`` (the attribute as it is), ``optional`` (only
#: when set), ``json`` (Kafka JSON or a JSON object; JSON text in a table), ``made`` (converted: a
#: flag, a list).
Kind = Literal["plain", "optional", "json", "made"]


class Column(NamedTuple):
    """One member of the record."""

    name: str  # the JSON member and the table column
    type: str  # its Spark SQL type in a table ("int", "long", "double", "string", "boolean", "array<string>")
    attr: str  # the ``CapturedFrame`` attribute it is made of
    kind: Kind
    row: bool = False  # in a table row's head (what a parallel decode's worker sends: TABLE_ROW)


FRAME_RECORD: Final[tuple[Column, ...]] = (
    Column("time", "double", "timestamp", "plain", True),  # capture time, seconds since the epoch
    Column("connection", "int", "connection", "plain", True),  # 1, 2, ... in order of first packet
    Column("client", "string", "client", "plain", True),  # "host:port"
    Column("server", "string", "server", "plain", True),
    Column("direction", "string", "direction", "plain", True),  # "request" or "response"
    Column("stream_offset", "long", "stream_offset", "plain"),  # of its size prefix in its direction
    Column("size", "long", "size", "plain", True),  # the size prefix, if captured
    Column("api_key", "int", "api_key", "plain", True),
    Column("api_name", "string", "api_name", "plain", True),
    Column("api_version", "int", "api_version", "plain", True),
    Column("correlation_id", "int", "correlation_id", "plain", True),
    Column("latency", "double", "latency", "optional", True),  # responses: seconds since the request
    Column("header", "string", "header", "json"),  # Kafka JSON
    Column("body", "string", "body", "json"),  # Kafka JSON (the partial body's when it did not decode)
    Column("partial", "boolean", "partial", "made"),  # the body did not decode: what it holds
    Column("error", "string", "error", "json", True),  # why it did not decode (error_dict)
    Column("diagnostics", "array<string>", "diagnostics", "made"),
    Column("embedded", "string", "embedded", "json"),  # protocol messages in its bytes fields
)
FRAME_NAMES: Final = tuple(c.name for c in FRAME_RECORD)
#: The members ``to_dict`` copies as they are, and the attributes they are read from (in order).
PLAIN_NAMES: Final = tuple(c.name for c in FRAME_RECORD if c.kind == "plain")
PLAIN_ATTRS: Final = attrgetter(*(c.attr for c in FRAME_RECORD if c.kind == "plain"))
#: What a table row of a frame shows besides its summary, in record order (``error``: last).
TABLE_ROW: Final = tuple(c for c in FRAME_RECORD if c.row)
_TABLE_ROW_ATTRS = attrgetter(*(c.attr for c in TABLE_ROW))

#: The columns a table of frames adds to each: what its connection's client said of itself (its
#: client id, and the software an ApiVersions request named), from the connection's earlier frames.
CLIENT_COLUMNS: Final[tuple[Column, ...]] = (
    Column("client_id", "string", "", "made"),
    Column("client_software_name", "string", "", "made"),
    Column("client_software_version", "string", "", "made"),
)


def column(name: str) -> Column:
    """The record's column ``name`` (KeyError: it has none)."""
    for c in FRAME_RECORD + CLIENT_COLUMNS:
        if c.name == name:
            return c
    raise KeyError(name)


def table_row_values(frame: object) -> tuple[object, ...]:
    """The values of :data:`TABLE_ROW` of a ``CapturedFrame``, ``error`` made a flag (True or None):
    the layout of ``kcodec.cli.parallel_items.Row``."""
    values: tuple[object, ...] = _TABLE_ROW_ATTRS(frame)
    return (*values[:-1], True if values[-1] is not None else None)
