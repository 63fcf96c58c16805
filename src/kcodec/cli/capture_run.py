"""One run of ``kcodec decode-capture``: events from ``kcodec.capture`` through the output
(:class:`~kcodec.cli.capture_output.CaptureOutput`: facts and topic names, filters, then JSON lines,
the streaming table or the summary); progress, ``--fail-on`` and exit codes."""

from __future__ import annotations

import os
import stat
import sys
import time
from typing import Any, Literal

import click

from kcodec.capture import CaptureFileError, iter_capture
from kcodec.capture.connection import DEFAULT_PORTS
from kcodec.cli.capture_filters import EventFilter
from kcodec.cli.capture_output import CaptureOutput, quiet_stdout
from kcodec.cli.capture_table import TableWriter
from kcodec.cli.stopping import interrupted as _interrupted
from kcodec.cli.stopping import sigterm_stops as _sigterm_stops

__all__ = ["Run"]


class _Progress:
    """A transient progress bar on stderr (bytes of the capture read). Shown from the first
    :meth:`update` on: its refresh thread starts then, after a parallel run has forked its workers
    (a thread running at a fork may hold a lock, stderr's among them, that the child then never
    gets)."""

    def __init__(self, source: Any, label: str) -> None:
        from rich.console import Console
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
        self.started = False
        self.last = 0.0

    def update(self) -> None:
        if not self.started:
            self.started = True
            self.bar.start()
        now = time.monotonic()
        if now - self.last >= 0.2:
            self.last = now
            self.bar.update(self.task, completed=self.source.count)

    def stop(self) -> None:
        if self.started:
            self.bar.stop()


def _kept_aside(stream: Any) -> bool:
    """Whether what is written to ``stream`` shows nowhere while the run goes on: a file, or a device
    that is not a terminal (``/dev/null``). Not a terminal, nor a pipe: the program reading it may
    print to the terminal the progress bar is drawn on (``| grep``, ``| less``), and the bar would
    be left half-drawn on its lines."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, AttributeError, ValueError):
        return False
    return stat.S_ISREG(mode) or (stat.S_ISCHR(mode) and not stream.isatty())


def _mode(out: CaptureOutput) -> str:
    """What a parallel decode's workers make for each frame (``kcodec.cli.parallel_items.Mode``)."""
    if out.summary:
        return "summary"
    if out.table is None:
        return "json"
    return "plain" if out.table.console is None else "table"


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
        jobs: int = 1,
        path: str | None = None,
    ) -> None:
        self.source = source
        # several worker processes: for a file; a summary of all frames that do not depend on the
        # names of topics named elsewhere (-c counts frames in capture order, --topic needs names)
        self.jobs = jobs if path is not None and not (summary and (count or flt.topics is not None)) else 1
        self.path = path
        self.label = label
        self.strict = strict
        self.ports = tuple(dict.fromkeys((*DEFAULT_PORTS, *ports)))
        self.autodetect = autodetect
        out_tty = sys.stdout.isatty()
        self.show_progress = (
            progress if progress is not None else sys.stderr.isatty() and (summary or _kept_aside(sys.stdout))
        )
        table: TableWriter | None = None
        if not as_json and not summary:
            console = None
            if out_tty:  # (rich is imported only for a terminal: piped output starts faster)
                from rich.console import Console

                console = Console(highlight=False, soft_wrap=True)
            table = TableWriter(console=console)
        self.output = CaptureOutput(
            flt=flt,
            table=table,
            jsonout=sys.stdout.buffer if as_json else None,
            summary=summary,
            count=count,
            verbose=verbose,
            records=records,
        )

    # --- the loop -------------------------------------------------------------------------------------

    def execute(self, conditions: frozenset[str]) -> int:
        with _sigterm_stops():
            if self.jobs > 1:
                return self._execute_parallel(conditions)
            return self._execute_one(conditions)

    def _execute_one(self, conditions: frozenset[str]) -> int:
        progress = _Progress(self.source, self.label) if self.show_progress else None
        try:
            events = iter_capture(
                self.source, ports=self.ports, autodetect=self.autodetect, strict=self.strict
            )
            output = self.output
            for n, ev in enumerate(events):
                if n == 0 and output.table is not None:
                    output.table.header()  # once the file has proved to be a capture
                if progress is not None and n % 64 == 0:
                    progress.update()
                output.add(ev)
                if output.done:
                    break
        except CaptureFileError as e:
            self._stop(progress)
            click.echo(f"kcodec decode-capture: {self.label}: {e}", err=True)
            return 1
        except KeyboardInterrupt as interrupt:  # (its own name: compiled, a name has one type)
            self._stop(progress)
            self.output.flush()
            return _interrupted(interrupt)
        except BrokenPipeError:
            self._stop(progress)
            quiet_stdout()
            return 0
        self._stop(progress)
        try:
            self.output.end()
            self.output.flush()
        except BrokenPipeError:
            quiet_stdout()
            return 0
        return 3 if self.output.flags & conditions else 0

    def _execute_parallel(self, conditions: frozenset[str]) -> int:
        """``execute`` with ``jobs`` worker processes (:mod:`kcodec.capture.parallel`), each making
        the items of its shard (:class:`~kcodec.cli.parallel_items.ShardItems`), merged and shown by
        :class:`~kcodec.cli.parallel_sink.MergedOutput`."""
        from kcodec.capture.parallel.engine import ParallelRun, WorkerFailed
        from kcodec.cli.parallel_items import ShardItems
        from kcodec.cli.parallel_sink import MergedOutput

        assert self.path is not None
        out = self.output
        merged = MergedOutput(
            flt=out.flt, jsonout=out.jsonout, table=out.table, count=out.count, summary=out.summary
        )
        options = {"ports": self.ports, "autodetect": self.autodetect, "strict": self.strict}
        flt, records, mode, verbose = out.flt, out.records, _mode(out), out.verbose

        def make_items() -> ShardItems:
            return ShardItems(flt, records, mode, verbose)  # type: ignore[arg-type]

        run = ParallelRun(self.path, self.jobs, make_items, options)
        progress = _Progress(self.source, self.label) if self.show_progress else None
        if progress is not None:
            progress.source = run
        try:
            run.run(merged.add, progress)
            self._stop(progress)
            merged.end()
            out.flush()
        except WorkerFailed as e:  # no capture (as one process says it), or a worker that failed
            self._stop(progress)
            click.echo(f"kcodec decode-capture: {self.label}: {e}", err=True)
            if not e.unreadable:
                click.echo("(a worker process failed: -j 1 decodes in one process)", err=True)
            return 1
        except KeyboardInterrupt as interrupt:  # (its own name: compiled, a name has one type)
            run.stop()
            self._stop(progress)
            out.flush()
            return _interrupted(interrupt)
        except BrokenPipeError:
            run.stop()
            self._stop(progress)
            quiet_stdout()
            return 0
        return 3 if merged.flags & conditions else 0

    def _stop(self, progress: _Progress | None) -> None:
        if progress is not None:
            progress.stop()
