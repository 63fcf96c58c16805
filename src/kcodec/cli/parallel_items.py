"""What a worker of a parallel ``kcodec decode-capture`` sends its parent for each event of its shard
(:class:`ShardItems`, the :class:`~kcodec.capture.parallel.engine.ShardWork` of the command's
:class:`~kcodec.capture.parallel.engine.ParallelRun`): everything that can be worked out from its
own connections, so that the parent is left only what depends on the others (connection numbers,
topic names learnt elsewhere, ``--topic``, ``-c``).

Items are ``(key, tag, data)`` tuples (``key``: the event's place in the capture):

- ``"f"`` a frame to show: a :class:`JsonFrame` or a :class:`TableFrame`;
- ``"r"`` a frame's table row for a file or pipe, when nothing in it waits for the parent (it names
  no topic by id only, and no ``--topic`` filter asks for its topics): ``(connection, flags, pairs,
  client, server, before, after)``, the row's lines around the connection's cell (a plain tuple
  of strings: a seventh of a :class:`TableFrame`'s pickling and unpickling);
- ``"p"`` a frame's table row for a file or pipe when it names topics by id only (and no
  ``--topic`` filter is set): ``(connection, flags, pairs, client, server, before, after, unnamed,
  assumed, again)``, the row's lines as the worker made them with the names it knew (``assumed``,
  for the ids ``unnamed``), and ``again``, what the parent makes the row again from if the names it
  knows differ (:func:`pending_again`: JSON, which the parent reads only then; a fifth of the
  pickling and unpickling of a :class:`TableFrame`, which goes instead when it cannot be JSON);
- ``"j"`` likewise, a frame's JSON line that waits for nothing: ``(connection, flags, pairs, head,
  body)``, as in a :class:`JsonFrame`;
- ``"n"`` a frame a filter drops: ``(connection, flags, pairs)`` (counted; its topic names learnt);
- ``"g"`` (with ``--topic``, before a frame's item) the ``(group, topics)`` its embedded consumer
  protocol names, for the parent's :class:`~kcodec.cli.capture_filters.GroupTopics`;
- for ``--summary``, the shard's :class:`ShardSummary` instead: ``"l"`` a frame's topic names to
  learn, ``"z"`` leader-epoch fencing errors at topics named by id only ``(api, [(code, where)],
  ids)``, and last ``"s"``, the shard's totals ``(CaptureStats, --fail-on flags)``;
- ``"i"`` a :class:`~kcodec.capture.CaptureIssue`;
- the engine's own: ``"o"``/``"c"`` a connection opened/closed (its number in the shard), ``"m"`` a
  mark (the bytes of the file read so far).

The records are named tuples, but a frame's goes down the pipe as a plain tuple (:func:`to_wire`,
:func:`from_wire`): a named tuple is pickled through a call of its Python ``__getnewargs__`` and
unpickled through a call of its Python ``__new__``, a plain tuple in C (1.4 against 0.3 µs each to
pickle, 0.7 against 0.4 to unpickle, measured).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal, NamedTuple

import orjson

from kcodec.capture import CapturedFrame, CaptureEvent, CaptureIssue
from kcodec.capture.facts import Facts, event_facts, facts_reader
from kcodec.capture.groups import embedded_topics
from kcodec.capture.record import table_row_values
from kcodec.capture.shard import END, Key
from kcodec.capture.stats import FENCING_CODES, CaptureStats, api_label
from kcodec.capture.topics import TopicDirectory, named_ids, topic_ids, unnamed_ids
from kcodec.cli.capture_filters import EventFilter, frame_topics
from kcodec.cli.capture_output import RecordsMode, error_code_objects, note_flags
from kcodec.cli.capture_table import TableWriter
from kcodec.cli.capture_view import (
    Digest,
    digest,
    full_view,
    name_topics,
    record_lines,
    summary_from,
    summary_parts,
)

__all__ = [
    "CODES",
    "DIAG",
    "ERR",
    "REQUEST",
    "JsonFrame",
    "Mode",
    "Row",
    "ShardItems",
    "ShardSummary",
    "TableFrame",
    "codes_json",
    "frame_item",
    "from_pending_again",
    "from_wire",
    "pending_again",
    "shard_reader",
    "to_wire",
]

# a frame's flags: error, diagnostics, error codes, a request
ERR: Final = 1
DIAG: Final = 2
CODES: Final = 4
REQUEST: Final = 8
_HEAD, _CONNECTION = b'{"type":"frame","time":', b',"connection":'


class JsonFrame(NamedTuple):
    """A frame's JSON line but for its capture-wide connection number. ``head`` is the line's start,
    ``{"type":"frame","time":T,"connection":``; ``body`` is a JSON object of the members after the
    connection number (``{"client":`` ... ``"diagnostics":[...]``), as ``orjson`` wrote it: the parent
    writes ``head``, the number, a comma and ``body`` without its opening brace (a memoryview: no
    copy). When the frame names no topic by id only, ``body`` ends with ``error_codes`` and the
    line's end (``}`` and the newline), and ``codes`` is None; otherwise it ends with
    ``diagnostics`` and its closing brace, which the parent drops to add ``topic_names`` and
    ``error_codes`` from ``codes``, the ``(code, where)`` list, with the names it has learnt."""

    connection: int
    flags: int
    pairs: list[tuple[str, str]]  # (id, name) the frame holds: for the parent's topic directory
    unnamed: list[str]  # ids of the topics it names by id only
    named: set[str | None] | None  # topic names it holds (for --topic)
    head: bytes
    body: bytes
    codes: list[tuple[int, str]] | None
    groups: tuple[str, ...] = ()  # the groups it is about (for --topic: what is known of them)


class Row(NamedTuple):
    """What the table's row of a frame shows besides its summary (``TableWriter.frame`` reads these):
    the frame record's ``TABLE_ROW``, by attribute, in its order (``kcodec.capture.record``)."""

    timestamp: float
    connection: int
    client: str
    server: str
    direction: str
    size: int | None
    api_key: int | None
    api_name: str | None
    api_version: int | None
    correlation_id: int | None
    latency: float | None
    error: bool | None  # (True or None: only "is not None" is asked)


class TableFrame(NamedTuple):
    """A frame's table row: its summary parts (or, for a file or pipe, its laid-out lines). When the
    frame names topics by id only, they are made with the names the worker's own connections taught
    it (``assumed``), and the :class:`~kcodec.cli.capture_view.Digest` comes along (``pending``): if
    the names the parent knows at that point differ, it makes the summary again from the digest."""

    connection: int
    flags: int
    pairs: list[tuple[str, str]]
    unnamed: list[str]
    named: set[str | None] | None
    row: Row
    parts: list[tuple[str, str]] | None
    pending: Digest | None
    extra: list[str]
    plain: tuple[str, str] | None = None  # the lines around the connection's cell, if not for a terminal
    assumed: dict[str, str] | None = None  # the names ``parts``/``plain`` were made with (if pending)
    groups: tuple[str, ...] = ()  # the groups it is about (for --topic: what is known of them)


def to_wire(frame: JsonFrame | TableFrame) -> tuple[Any, ...]:
    """``frame`` as plain tuples, for the pipe (see the module docstring)."""
    if type(frame) is TableFrame:
        pending = None if frame.pending is None else tuple(frame.pending)
        return (*frame[:5], tuple(frame.row), frame.parts, pending, *frame[8:])
    return tuple(frame)


def from_wire(data: tuple[Any, ...], json: bool) -> JsonFrame | TableFrame:
    """The frame :func:`to_wire` made ``data`` of (a :class:`JsonFrame` if ``json``)."""
    if json:
        return tuple.__new__(JsonFrame, data)
    pending = None if data[7] is None else tuple.__new__(Digest, data[7])
    return tuple.__new__(TableFrame, (*data[:5], tuple.__new__(Row, data[5]), data[6], pending, *data[8:]))


def codes_json(codes: list[tuple[int, str]], names: dict[str, str]) -> bytes:
    """``error_codes`` as :func:`~kcodec.cli.capture_output.frame_json` writes it."""
    text: bytes = orjson.dumps(error_code_objects(codes, names))  # (typed: see frame_json)
    return text


Mode = Literal["json", "table", "plain", "summary"]


def shard_reader(mode: Mode, flt: EventFilter) -> Callable[[CaptureEvent], Facts | None]:
    """What a worker reads its frames' facts with (chosen once per shard; see ``facts_reader``)."""
    return facts_reader(mode == "json", flt.topics is not None)


def frame_item(
    ev: CapturedFrame,
    flt: EventFilter,
    records: RecordsMode,
    mode: Mode,
    verbose: bool,
    plain: TableWriter,
    local: TopicDirectory,
    read_facts: Callable[[CaptureEvent], Facts | None] = event_facts,
) -> tuple[str, Any]:
    """The item of a frame (see the module docstring). ``mode``: JSON lines, table rows for a
    terminal (their summary parts are sent: the parent lays them out to its width), or table rows
    for a file or pipe (made here with ``plain``, a writer laid out as the parent's, but for the
    connection's number). ``local``: the topic names the shard's own frames taught so far.
    ``read_facts``: what reads the frame's facts (the worker's :func:`shard_reader`)."""
    facts = read_facts(ev)
    pairs, unnamed = topic_ids(facts) if facts is not None else ([], [])
    if pairs and mode != "json":
        local.learn_pairs(pairs)
    codes = facts.error_codes if facts is not None else []
    flags = (
        (ERR if ev.error is not None else 0)
        | (DIAG if ev.diagnostics else 0)
        | (CODES if codes else 0)
        | (REQUEST if ev.direction == "request" else 0)
    )
    if not flt.keeps_all and not flt.keep_frame(ev, facts, topics=False):
        return "n", (ev.connection, flags, pairs)
    named = None
    if flt.topics is not None:
        named = frame_topics(ev, facts)
    if mode != "json":
        if mode == "plain" and not unnamed and flt.topics is None:
            before, after = plain.plain_frame(ev, summary_parts(ev, facts), _extra(ev, records, verbose))
            return "r", (ev.connection, flags, pairs or None, ev.client, ev.server, before, after)
        lay_out = plain if mode == "plain" else None
        made = _table_frame(ev, facts, flags, pairs, unnamed, named, records, verbose, local, lay_out)
        if ev.groups:
            made = made._replace(groups=ev.groups)
        if made.plain is not None and made.pending is not None and flt.topics is None:
            again = pending_again(made.row, made.pending, made.extra)
            if again is not None:  # (else it goes as the TableFrame, which pickles any string)
                before, after = made.plain
                row = (ev.connection, flags, pairs or None, ev.client, ev.server, before, after)
                return "p", (*row, unnamed, made.assumed, again)
        return "f", made
    d = ev.to_dict(records=records)
    del d["type"], d["connection"]
    head = _HEAD + orjson.dumps(d.pop("time")) + _CONNECTION
    if unnamed:
        body = orjson.dumps(d)
        return "f", JsonFrame(ev.connection, flags, pairs, unnamed, named, head, body, codes, ev.groups)
    d["error_codes"] = error_code_objects(codes)
    body = orjson.dumps(d, option=orjson.OPT_APPEND_NEWLINE)
    if flt.topics is None:
        return "j", (ev.connection, flags, pairs or None, head, body)
    return "f", JsonFrame(ev.connection, flags, pairs, unnamed, named, head, body, None, ev.groups)


def pending_again(row: Row, pending: Digest, extra: list[str]) -> bytes | None:
    """What a ``"p"`` item's row is made again from (:func:`from_pending_again`), as JSON; None if
    some string in it is not valid Unicode."""
    try:
        again: bytes = orjson.dumps((tuple(row), tuple(pending), extra))  # (typed: see codes_json)
    except orjson.JSONEncodeError:
        return None
    return again


def from_pending_again(again: bytes) -> tuple[Row, Digest, list[str]]:
    """The row, digest and extra lines :func:`pending_again` wrote."""
    row, fields, extra = orjson.loads(again)
    error, notes, has_facts, keys, codes, middle, partitions, topics, counts = fields
    pending = Digest(
        _tuples(error), _tuples(notes), has_facts, _tuples(keys), _tuples(codes), _tuples(middle),
        _tuples(partitions), _tuples(topics), _tuples(counts),
    )  # fmt: skip
    return Row(*row), pending, extra


def _tuples(items: list[list[Any]]) -> list[Any]:
    return [tuple(x) for x in items]


def _row(ev: CapturedFrame) -> Row:
    return tuple.__new__(Row, table_row_values(ev))


def _table_frame(
    ev: CapturedFrame,
    facts: Facts | None,
    flags: int,
    pairs: list[tuple[str, str]],
    unnamed: list[str],
    named: set[str | None] | None,
    records: RecordsMode,
    verbose: bool,
    local: TopicDirectory,
    plain: TableWriter | None,
) -> TableFrame:
    """The frame's row; laid out by ``plain`` when given (for a file or pipe: ``parts`` is None)."""
    row = _row(ev)
    extra = _extra(ev, records, verbose)
    pending: Digest | None = None
    assumed: dict[str, str] | None = None
    if unnamed and facts is not None:
        pending = digest(ev, facts, pending=True)
        assumed = local.lookup(unnamed)
        parts = summary_from(pending, assumed)
        extra = name_topics(extra, assumed)
    else:
        parts = summary_parts(ev, facts)
    laid_out = None if plain is None else plain.plain_frame(row, parts, extra)
    shown = parts if laid_out is None else None
    number = ev.connection
    return TableFrame(number, flags, pairs, unnamed, named, row, shown, pending, extra, laid_out, assumed)


def _extra(ev: CapturedFrame, records: RecordsMode, verbose: bool) -> list[str]:
    """The lines under a frame's row: its records (unless ``raw``), and the ``-V`` view."""
    extra: list[str] = []
    if records != "raw":
        extra += record_lines(ev, values=records)
    if verbose:
        extra += full_view(ev)
    return extra


class ShardSummary:
    """``--summary`` over one shard: its totals (:class:`~kcodec.capture.stats.CaptureStats`, merged
    by the parent) and ``--fail-on`` flags, and the items that need the parent: topic names to learn,
    and fencing errors at topics named by id only (their places named once the names are known)."""

    def __init__(self, flt: EventFilter) -> None:
        self.flt = flt
        self.stats = CaptureStats()
        self.flags: set[str] = set()

    def frame(self, ev: CapturedFrame) -> list[tuple[str, Any]]:
        facts = event_facts(ev)
        out: list[tuple[str, Any]] = []
        pairs = named_ids(facts) if facts is not None else []
        if pairs:
            out.append(("l", pairs))
        if not self.flt.keeps_all and not self.flt.keep_frame(ev, facts, topics=False):
            return out
        note_flags(self.flags, ev, facts)
        unnamed = unnamed_ids(facts) if facts is not None else []
        self.stats.add(ev, facts, fencing=not unnamed)
        if unnamed and facts is not None and ev.direction == "response":
            fencing = [(code, where) for code, where in facts.error_codes if code in FENCING_CODES]
            if fencing:
                out.append(("z", (api_label(ev), fencing, unnamed)))
        return out

    def issue(self, ev: CaptureIssue) -> None:
        if self.flt.keep(ev, None):
            self.flags.add("issues")
            self.stats.add(ev)


class ShardItems:
    """A worker's items for its shard's events (see the module docstring): made in the worker, from
    the run's ``options`` (``flt``, ``records``, ``mode``, ``verbose``)."""

    def __init__(self, flt: EventFilter, records: RecordsMode, mode: Mode, verbose: bool) -> None:
        self.flt = flt
        self.records: RecordsMode = records
        self.mode: Mode = mode
        self.verbose = verbose
        self.plain = TableWriter()
        self.local = TopicDirectory()  # the topic names this shard's frames teach (for table rows)
        self.summary = ShardSummary(flt) if mode == "summary" else None
        self.read_facts = shard_reader(mode, flt)

    def frame(self, key: Key, ev: CapturedFrame, batch: list[tuple[Any, ...]]) -> int:
        summary = self.summary
        if summary is not None:
            batch += [(key, tag, data) for tag, data in summary.frame(ev)]
            return 0
        flt, mode = self.flt, self.mode
        if ev.embedded and flt.topics is not None:  # (what the group's frames are about)
            batch.append((key, "g", embedded_topics(ev.embedded)))
        tag, data = frame_item(
            ev, flt, self.records, mode, self.verbose, self.plain, self.local, self.read_facts
        )
        size = 1024
        if tag == "j":  # (a JSON line: its body's bytes count)
            size = len(data[4])
        elif tag == "f":
            if mode == "json":
                size = len(data.body)
            data = to_wire(data)
        batch.append((key, tag, data))
        return size

    def issue(self, key: Key, ev: CaptureIssue, batch: list[tuple[Any, ...]]) -> None:
        if self.summary is not None:
            self.summary.issue(ev)
        else:
            batch.append((key, "i", ev))

    def end(self, batch: list[tuple[Any, ...]]) -> None:
        if self.summary is not None:  # the shard's totals, last
            batch.append(((END, END, 1), "s", (self.summary.stats, self.summary.flags)))
