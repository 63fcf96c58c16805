"""How decoded Kafka traffic is shown, whatever it comes from: a capture file (``kcodec
decode-capture``) or live connections (``kcodec proxy``).

:class:`CaptureOutput` takes events one at a time (:meth:`~CaptureOutput.add`): it works out their
facts and resolves topic ids to names from Metadata seen earlier, applies the filters, notes the
``--fail-on`` conditions met, and shows what is kept as JSON lines, as rows of the streaming table, or
adds it to the ``--summary`` totals; :meth:`~CaptureOutput.end` prints the table's last line or the
summary. JSON lines and the table can be written at the same time (the proxy's ``--json FILE``).
"""

from __future__ import annotations

import sys
from typing import IO, Literal

import orjson

from kcodec.capture import CapturedFrame, CaptureEvent, CaptureIssue
from kcodec.capture.facts import Facts, facts_reader
from kcodec.capture.stats import CaptureStats
from kcodec.capture.topics import TopicDirectory, renamed
from kcodec.cli.capture_filters import EventFilter, GroupTopics
from kcodec.cli.capture_table import TableWriter
from kcodec.cli.capture_view import full_view, record_lines, summary_parts
from kcodec.cli.common import quiet_stdout
from kcodec.protocol.error_codes import error_name

__all__ = ["CaptureOutput", "Totals", "frame_json", "note_flags", "quiet_stdout", "write_summary"]

RecordsMode = Literal["raw", "base64", "text"]


def error_code_objects(
    codes: list[tuple[int, str]], names: dict[str, str] | None = None
) -> list[dict[str, object]]:
    """A JSON line's ``error_codes``: each ``(code, where)`` with the code's Kafka name, and the topic
    ids in ``where`` replaced by their ``names`` when given."""
    return [
        {"code": code, "name": error_name(code), "where": renamed(where, names) if names else where}
        for code, where in codes
    ]


def frame_json(ev: CaptureEvent, facts: Facts | None, records: RecordsMode = "raw") -> bytes:
    """One JSON line (newline included) for an event: the frame's ``to_dict`` and its Kafka error
    codes with their names, or the issue's ``to_dict``."""
    if isinstance(ev, CapturedFrame):
        obj = ev.to_dict(records=records)
        obj["error_codes"] = error_code_objects(facts.error_codes) if facts is not None else []
    else:
        obj = ev.to_dict()
    # (a typed local: the compiled build's type check may run where orjson is not installed)
    line: bytes = orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)
    return line


class Totals:
    """What the table's last line counts (every event, shown or not)."""

    def __init__(self) -> None:
        self.frames = self.requests = self.undecodable = self.nonconformant = self.issues = 0
        self.connections: set[int] = set()

    def add(self, ev: CaptureEvent) -> None:
        if isinstance(ev, CaptureIssue):
            self.issues += 1
            return
        self.frame(ev.connection, ev.direction == "request", ev.error is not None, bool(ev.diagnostics))

    def frame(self, connection: int, request: bool, error: bool, nonconformant: bool) -> None:
        self.frames += 1
        self.requests += request
        self.undecodable += error
        self.nonconformant += nonconformant
        self.connections.add(connection)

    def line(self, shown: int) -> str:
        """The last line of the table (``shown``: the frames shown)."""
        line = (
            f"{self.frames} frames ({self.requests} requests, {self.frames - self.requests} responses) on "
            f"{len(self.connections)} connections; {self.undecodable} undecodable; {self.nonconformant} "
            f"non-conformant; {self.issues} stream issues"
        )
        if shown != self.frames:
            line += f"; {shown} frames shown"
        return line


class CaptureOutput:
    """Events in, JSON lines / table rows / summary out (see the module docstring).

    ``table``: where rows go (None: no table); ``jsonout``: where JSON lines go (None: none);
    ``summary``: collect totals instead of showing events (printed to ``jsonout`` as one JSON object
    if given, else as text); ``count``: stop after that many frames shown."""

    def __init__(
        self,
        *,
        flt: EventFilter,
        table: TableWriter | None,
        jsonout: IO[bytes] | None,
        summary: bool = False,
        count: int | None = None,
        verbose: bool = False,
        records: RecordsMode = "raw",
    ) -> None:
        self.flt = flt
        self._keep_all = flt.keeps_all
        self.table = table
        self.jsonout = jsonout
        self.summary = summary
        self.count = count
        self.verbose = verbose
        self.records = records
        self.stats = CaptureStats()
        self.totals = Totals()
        self.topics = TopicDirectory()
        self.seen_conns: set[int] = set()
        self.group_topics = GroupTopics()  # (for --topic: what each group's members subscribe to)
        self.shown = 0  # frames shown
        self.flags: set[str] = set()  # the --fail-on conditions met
        json_only = jsonout is not None and table is None and not summary
        self._facts_of = facts_reader(json_only, flt.topics is not None)

    @property
    def done(self) -> bool:
        """``count`` frames have been shown."""
        return self.count is not None and self.shown >= self.count

    def add(self, ev: CaptureEvent) -> None:
        """One event: facts, filters, ``--fail-on`` flags, then shown (or counted for the summary)."""
        if self.count is not None and self.shown >= self.count:
            return
        facts = self._facts(ev)
        self.totals.add(ev)
        if self.flt.topics is not None and isinstance(ev, CapturedFrame) and ev.embedded:
            from kcodec.capture.groups import embedded_topics

            self.group_topics.learn(embedded_topics(ev.embedded))
        if not self._keep_all and not self.flt.keep(ev, facts, self.group_topics):
            return
        self._flag(ev, facts)
        if self.summary:
            self.stats.add(ev, facts)
        else:
            self._show(ev, facts)
        if isinstance(ev, CapturedFrame):
            self.shown += 1

    def _facts(self, ev: CaptureEvent) -> Facts | None:
        facts = self._facts_of(ev)
        if facts is None or not isinstance(ev, CapturedFrame):
            return None
        self.topics.learn(facts)
        names = self.topics.resolve(facts)
        if names:
            ev.extra["topic_names"] = names
        return facts

    def _flag(self, ev: CaptureEvent, facts: Facts | None) -> None:
        if isinstance(ev, CaptureIssue):
            self.flags.add("issues")
            return
        note_flags(self.flags, ev, facts)

    def _show(self, ev: CaptureEvent, facts: Facts | None) -> None:
        if self.jsonout is not None:
            self.jsonout.write(frame_json(ev, facts, self.records))
        table = self.table
        if table is None:
            return
        if isinstance(ev, CaptureIssue):
            table.issue(ev)
            return
        if ev.connection not in self.seen_conns:
            self.seen_conns.add(ev.connection)
            table.connection(ev.connection, ev.client, ev.server)
        extra: list[str] = []
        if self.records != "raw":
            extra += record_lines(ev, values=self.records, names=ev.extra.get("topic_names"))
        if self.verbose:
            extra += full_view(ev)
        table.frame(ev, summary_parts(ev, facts), extra)

    def end(self) -> None:
        """The summary, or the table's last line (totals)."""
        if self.summary:
            write_summary(self.stats, self.jsonout)
            return
        if self.table is not None:
            self.table.line(self.totals.line(self.shown))

    def flush(self) -> None:
        if self.jsonout is not None:
            self.jsonout.flush()
        sys.stdout.flush()


def note_flags(flags: set[str], frame: CapturedFrame, facts: Facts | None) -> None:
    """Add the ``--fail-on`` conditions a shown frame meets to ``flags``."""
    if frame.error is not None:
        flags.add("errors")
    if frame.diagnostics:
        flags.add("diagnostics")
    if facts is not None and facts.error_codes:
        flags.add("error-codes")


def write_summary(stats: CaptureStats, jsonout: IO[bytes] | None) -> None:
    """``--summary``: one JSON object to ``jsonout`` if given, else tables on standard output."""
    if jsonout is not None:
        jsonout.write(orjson.dumps(stats.to_dict(), option=orjson.OPT_APPEND_NEWLINE))
        return
    from kcodec.cli.capture_summary import print_summary

    print_summary(stats.to_dict(), sys.stdout.isatty())
