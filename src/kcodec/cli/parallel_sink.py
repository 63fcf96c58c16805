"""The parent's side of a parallel ``kcodec decode-capture``: the workers' items (see
:mod:`kcodec.cli.parallel_items`), merged in capture order, shown as one process shows events.

:class:`MergedOutput` does what depends on other connections, in the order one process does it
(:class:`~kcodec.cli.capture_output.CaptureOutput`): topic names learnt then resolved, totals, the
``--topic`` filter, the ``--fail-on`` flags, ``-c``; then writes the frame's JSON line (its time,
its capture-wide connection number, the worker's JSON, its topic names and error codes) or its table
row. For ``--summary`` it adds up the workers' totals, and names the places of the fencing errors
they left to it (at topics their frames name by id only) with the names learnt by then.
"""

from __future__ import annotations

from typing import IO, Any

import orjson

from kcodec.capture import CaptureIssue
from kcodec.capture.shard import Numbering
from kcodec.capture.stats import CaptureStats
from kcodec.capture.topics import TopicDirectory, renamed
from kcodec.cli.capture_filters import EventFilter, GroupTopics
from kcodec.cli.capture_output import Totals, frame_json, write_summary
from kcodec.cli.capture_table import TableWriter
from kcodec.cli.capture_view import name_topics, summary_from
from kcodec.cli.parallel_items import (
    CODES,
    DIAG,
    ERR,
    REQUEST,
    JsonFrame,
    TableFrame,
    codes_json,
    from_pending_again,
    from_wire,
)

__all__ = ["MergedOutput"]


class MergedOutput:
    """Merged items in, JSON lines (``jsonout``), table rows (``table``) or the summary out."""

    def __init__(
        self,
        *,
        flt: EventFilter,
        jsonout: IO[bytes] | None,
        table: TableWriter | None,
        count: int | None,
        summary: bool = False,
    ) -> None:
        self.flt = flt
        self.summary = summary
        self.stats = CaptureStats()
        self.jsonout = jsonout
        self.table = table
        self.count = count
        self.flags: set[str] = set()
        self.shown = 0
        self.numbering = Numbering()
        self.topics = TopicDirectory()
        self.group_topics = GroupTopics()
        self.totals = Totals()
        self.seen_conns: set[int] = set()
        self._started = False
        self._lines: list[bytes | memoryview] = []  # the JSON lines of the items being added (see add)

    @property
    def done(self) -> bool:
        return self.count is not None and self.shown >= self.count

    def add(self, items: list[tuple[Any, ...]]) -> bool:
        """Merged ``(key, shard, tag, data)`` items; True once ``count`` frames are shown. Their
        JSON lines are written together, in one write (rather than a few per line)."""
        try:
            return self._add(items)
        finally:
            if self._lines:
                assert self.jsonout is not None
                self.jsonout.write(b"".join(self._lines))
                self._lines.clear()

    def _add(self, items: list[tuple[Any, ...]]) -> bool:
        numbering = self.numbering
        for _, k, tag, data in items:
            if tag == "j" or tag == "r" or tag == "p" or tag == "f" or tag == "n" or tag == "i":
                if not self._started:
                    self._started = True
                    if self.table is not None:
                        self.table.header()  # (once the file has proved to be a capture)
                if tag == "j":
                    self._json_line(k, data)
                elif tag == "r":
                    self._plain_row(k, data)
                elif tag == "p":
                    self._pending_row(k, data)
                elif tag == "f":
                    self._frame(k, from_wire(data, self.table is None))
                elif tag == "n":
                    connection, flags, pairs = data
                    if pairs:
                        self.topics.learn_pairs(pairs)
                    self._count(numbering(k, connection), flags)
                    continue
                else:
                    self._issue(k, data)
                    continue
                if self.done:  # (a frame shown: -c N may be reached)
                    return True
            elif tag == "l":
                self.topics.learn_pairs(data)
            elif tag == "g":
                self.group_topics.learn(data)
            elif tag == "z":
                api, fencing, unnamed = data
                found = self.topics.lookup(unnamed)
                for code, where in fencing:
                    self.stats.add_fencing(api, renamed(where, found) if found else where, code)
            elif tag == "s":
                stats, flags = data
                self.stats.merge(stats, k)
                self.flags |= flags
            elif tag == "o":
                numbering.opened(k, data)
            elif tag == "c":
                numbering.closed(k, data)
            # ("m": a mark, which the engine reads for the progress bar)
        return False

    def _frame(self, k: int, f: JsonFrame | TableFrame) -> None:
        if f.pairs:
            self.topics.learn_pairs(f.pairs)
        found = self.topics.lookup(f.unnamed) if f.unnamed else {}
        connection = self.numbering(k, f.connection)
        self._count(connection, f.flags)
        topic_filter = self.flt.topics
        if (
            topic_filter is not None
            and not ((f.named or set()) | set(found.values())) & topic_filter
            and not self.flt.group_named(f.groups, self.group_topics)
        ):
            return
        self._flag(f.flags)
        if isinstance(f, JsonFrame):
            self._json(f, connection, found)
        else:
            self._row(f, connection, found)
        self.shown += 1

    def _json_line(self, k: int, data: tuple[Any, ...]) -> None:
        """A ``"j"`` item: what :meth:`_frame` does with a frame's JSON line that names no topic by
        id only, with no ``--topic`` filter (the worker sends these only then)."""
        number, flags, pairs, head, body = data
        connection = self._counted(k, number, flags, pairs)
        self._lines += (head, b"%d," % connection, memoryview(body)[1:])
        self.shown += 1

    def _plain_row(self, k: int, data: tuple[Any, ...]) -> None:
        """A ``"r"`` item: what :meth:`_frame` does with a frame that names no topic by id only, with
        no ``--topic`` filter (the worker sends these only then)."""
        number, flags, pairs, client, server, before, after = data
        connection = self._counted(k, number, flags, pairs)
        table = self.table
        assert table is not None
        self._connection_line(table, connection, client, server)
        table.write_plain(before, connection, after)
        self.shown += 1

    def _pending_row(self, k: int, data: tuple[Any, ...]) -> None:
        """A ``"p"`` item: what :meth:`_frame` does with a :class:`TableFrame` of a frame that names
        topics by id only, with no ``--topic`` filter (the worker sends these only then)."""
        number, flags, pairs, client, server, before, after, unnamed, assumed, again = data
        connection = self._counted(k, number, flags, pairs)
        found = self.topics.lookup(unnamed)
        table = self.table
        assert table is not None
        self._connection_line(table, connection, client, server)
        if found != assumed:  # names the worker did not know: the row made again
            row, pending, extra = from_pending_again(again)
            extra = name_topics(extra, found)
            table.frame(row._replace(connection=connection), summary_from(pending, found), extra)
        else:
            table.write_plain(before, connection, after)
        self.shown += 1

    def _counted(self, k: int, number: int, flags: int, pairs: list[tuple[str, str]] | None) -> int:
        """What a ``"j"``, ``"r"`` or ``"p"`` item's frame is, before it is written: the topic names it
        teaches learnt, its capture-wide connection number (returned), counted, its flags raised."""
        if pairs:
            self.topics.learn_pairs(pairs)
        connection = self.numbering(k, number)
        self._count(connection, flags)
        self._flag(flags)
        return connection

    def _connection_line(self, table: TableWriter, connection: int, client: str, server: str) -> None:
        """The line that introduces a connection, before its first row shown."""
        if connection not in self.seen_conns:
            self.seen_conns.add(connection)
            table.connection(connection, client, server)

    def _flag(self, flags: int) -> None:
        """The ``--fail-on`` flags a shown frame raises."""
        if flags & (ERR | DIAG | CODES):
            if flags & ERR:
                self.flags.add("errors")
            if flags & DIAG:
                self.flags.add("diagnostics")
            if flags & CODES:
                self.flags.add("error-codes")

    def _json(self, f: JsonFrame, connection: int, found: dict[str, str]) -> None:
        lines = self._lines
        codes = f.codes  # (None unless the frame names topics by id only: then the rest is written here)
        body = memoryview(f.body)[1:] if codes is None else memoryview(f.body)[1:-1]
        lines += (f.head, b"%d," % connection, body)
        if codes is not None:
            if found:
                lines.append(b',"topic_names":' + orjson.dumps(found))
            lines.append(b',"error_codes":' + codes_json(codes, found) + b"}\n")

    def _row(self, f: TableFrame, connection: int, found: dict[str, str]) -> None:
        table = self.table
        assert table is not None
        row = f.row
        self._connection_line(table, connection, row.client, row.server)
        if f.pending is not None and found != f.assumed:  # names the worker did not know: made again
            extra = name_topics(f.extra, found)
            table.frame(row._replace(connection=connection), summary_from(f.pending, found), extra)
        elif f.plain is not None:
            table.write_plain(f.plain[0], connection, f.plain[1])
        else:
            assert f.parts is not None
            table.frame(row._replace(connection=connection), f.parts, f.extra)

    def _issue(self, k: int, issue: CaptureIssue) -> None:
        if issue.connection is not None:
            issue.connection = self.numbering(k, issue.connection)
        self.totals.issues += 1
        if not self.flt.keep(issue, None):
            return
        self.flags.add("issues")
        if self.jsonout is not None:
            self._lines.append(frame_json(issue, None))
        if self.table is not None:
            self.table.issue(issue)

    def _count(self, connection: int, flags: int) -> None:
        if self.table is not None:  # (only the table's last line shows the totals)
            self.totals.frame(connection, bool(flags & REQUEST), bool(flags & ERR), bool(flags & DIAG))

    def end(self) -> None:
        """The summary, or the table's last line (totals), as :meth:`CaptureOutput.end` writes them."""
        if self.summary:
            write_summary(self.stats, self.jsonout)
        elif self.table is not None:
            self.table.line(self.totals.line(self.shown))
