"""One run of ``kcodec decode-capture``: events from ``kcodec.capture``, facts and topic names,
filters, then JSON lines, the streaming table or the summary; progress, ``--fail-on`` and exit codes."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import IO, Any, Literal

import click
import orjson
from rich.console import Console

from kcodec.capture import CapturedFrame, CaptureEvent, CaptureFileError, CaptureIssue, iter_capture
from kcodec.capture.connection import DEFAULT_PORTS
from kcodec.capture.facts import Facts, frame_facts
from kcodec.capture.stats import CaptureStats
from kcodec.capture.topics import TopicDirectory
from kcodec.cli.capture_filters import EventFilter
from kcodec.cli.capture_table import TableWriter
from kcodec.cli.capture_view import full_view, record_lines, summary_parts
from kcodec.error_codes import error_name
from kcodec.errors import KcodecError

__all__ = ["Run"]


class _Progress:
    """A transient progress bar on stderr (bytes of the capture read)."""

    def __init__(self, source: Any, label: str) -> None:
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

        self.source = source
        total: int | None = None
        try:
            total = os.fstat(source.f.fileno()).st_size or None
        except (OSError, AttributeError, ValueError):
            total = None
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.task = self.bar.add_task(label, total=total)
        self.bar.start()
        self.last = 0.0

    def update(self) -> None:
        now = time.monotonic()
        if now - self.last >= 0.2:
            self.last = now
            self.bar.update(self.task, completed=self.source.count)

    def stop(self) -> None:
        self.bar.stop()


class _Totals:
    """What the table's last line counts (every event, shown or not)."""

    def __init__(self) -> None:
        self.frames = self.requests = self.undecodable = self.nonconformant = self.issues = 0
        self.connections: set[int] = set()

    def add(self, ev: CaptureEvent, facts: Facts | None) -> None:
        if isinstance(ev, CaptureIssue):
            self.issues += 1
            return
        self.frames += 1
        self.requests += ev.direction == "request"
        self.undecodable += ev.error is not None
        self.nonconformant += bool(ev.diagnostics)
        self.connections.add(ev.connection)


class Run:
    def __init__(
        self,
        source: Any,
        *,
        label: str,
        flt: EventFilter,
        as_json: bool,
        summary: bool,
        count: int | None,
        verbose: bool,
        strict: bool,
        ports: tuple[int, ...],
        autodetect: bool,
        records: Literal["raw", "base64", "text"],
        progress: bool | None,
    ) -> None:
        self.source = source
        self.label = label
        self.flt = flt
        self.as_json = as_json
        self.summary = summary
        self.count = count
        self.verbose = verbose
        self.strict = strict
        self.ports = tuple(dict.fromkeys((*DEFAULT_PORTS, *ports)))
        self.autodetect = autodetect
        self.records = records
        out_tty = sys.stdout.isatty()
        self.show_progress = (
            progress if progress is not None else sys.stderr.isatty() and (summary or not out_tty)
        )
        self.stats = CaptureStats()
        self.totals = _Totals()
        self.topics = TopicDirectory()
        self.seen_conns: set[int] = set()
        self.shown = 0  # frames shown
        self.flags: set[str] = set()
        self.table: TableWriter | None = None
        if not as_json and not summary:
            console = Console(highlight=False, soft_wrap=True) if out_tty else None
            self.table = TableWriter(console=console)
        self.jsonout: IO[bytes] | None = sys.stdout.buffer if as_json else None

    # --- the loop -------------------------------------------------------------------------------------

    def execute(self, conditions: frozenset[str]) -> int:
        progress = _Progress(self.source, self.label) if self.show_progress else None
        try:
            events = iter_capture(
                self.source, ports=self.ports, autodetect=self.autodetect, strict=self.strict
            )
            if self.table is not None:
                self.table.header()
            for n, ev in enumerate(events):
                if progress is not None and n % 64 == 0:
                    progress.update()
                facts = self._facts(ev)
                self.totals.add(ev, facts)
                if not self.flt.keep(ev, facts):
                    continue
                self._flag(ev, facts)
                if self.summary:
                    self.stats.add(ev, facts)
                if not self.summary:
                    self._show(ev, facts)
                if isinstance(ev, CapturedFrame):
                    self.shown += 1
                    if self.count is not None and self.shown >= self.count:
                        break
        except CaptureFileError as e:
            self._stop(progress)
            click.echo(f"Error: {self.label}: {e}", err=True)
            return 1
        except KeyboardInterrupt:
            self._stop(progress)
            self._flush()
            click.echo("interrupted", err=True)
            return 130
        except BrokenPipeError:
            self._stop(progress)
            self._quiet_stdout()
            return 0
        self._stop(progress)
        try:
            self._end()
            self._flush()
        except BrokenPipeError:
            self._quiet_stdout()
            return 0
        return 3 if self.flags & conditions else 0

    def _stop(self, progress: _Progress | None) -> None:
        if progress is not None:
            progress.stop()

    def _flush(self) -> None:
        if self.jsonout is not None:
            self.jsonout.flush()
        sys.stdout.flush()

    @staticmethod
    def _quiet_stdout() -> None:
        """The reader went away (``| head``): no more output, and no error at exit."""
        devnull = os.open(os.devnull, os.O_WRONLY)
        with contextlib.suppress(OSError, ValueError):
            os.dup2(devnull, sys.stdout.fileno())

    def _facts(self, ev: CaptureEvent) -> Facts | None:
        if not isinstance(ev, CapturedFrame) or ev.body is None or ev.api_version is None:
            return None
        try:
            facts = frame_facts(ev.body, ev.api_version)
        except (KcodecError, AttributeError, TypeError):
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
        if ev.error is not None:
            self.flags.add("errors")
        if ev.diagnostics:
            self.flags.add("diagnostics")
        if facts is not None and facts.error_codes:
            self.flags.add("error-codes")

    # --- output ---------------------------------------------------------------------------------------

    def _show(self, ev: CaptureEvent, facts: Facts | None) -> None:
        if self.jsonout is not None:
            if isinstance(ev, CapturedFrame):
                obj = ev.to_dict(records=self.records)
                obj["error_codes"] = [
                    {"code": code, "name": error_name(code), "where": where}
                    for code, where in (facts.error_codes if facts is not None else ())
                ]
            else:
                obj = ev.to_dict()
            self.jsonout.write(orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE))
            return
        table = self.table
        assert table is not None
        if isinstance(ev, CaptureIssue):
            table.issue(ev)
            return
        if ev.connection not in self.seen_conns:
            self.seen_conns.add(ev.connection)
            table.connection(ev.connection, ev.client, ev.server)
        extra: list[str] = []
        if self.records != "raw":
            extra += record_lines(ev, values=self.records)
        if self.verbose:
            extra += full_view(ev)
        table.frame(ev, summary_parts(ev, facts), extra)

    def _end(self) -> None:
        if self.summary:
            from kcodec.cli.capture_summary import print_summary

            if self.jsonout is not None:
                self.jsonout.write(orjson.dumps(self.stats.to_dict(), option=orjson.OPT_APPEND_NEWLINE))
            else:
                print_summary(self.stats.to_dict(), sys.stdout.isatty())
            return
        if self.table is not None:
            t = self.totals
            line = (
                f"{t.frames} frames ({t.requests} requests, {t.frames - t.requests} responses) on "
                f"{len(t.connections)} connections; {t.undecodable} undecodable; {t.nonconformant} "
                f"non-conformant; {t.issues} stream issues"
            )
            if self.shown != t.frames:
                line += f"; {self.shown} frames shown"
            self.table._write_plain(line)
