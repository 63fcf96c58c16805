"""How ``kcodec proxy`` shows what goes through it: the decoded traffic exactly as ``kcodec
decode-capture`` shows it (:class:`~kcodec.cli.capture_output.CaptureOutput`), and the proxy's own
notices as rows of the same table (``**`` where a frame has its arrow) and JSON lines of
``"type": "proxy"``.

The first line is always the proxy's listen address: a line of text on the table's output, or the
first notice's JSON line when the JSON lines go to standard output.
"""

from __future__ import annotations

import sys
import time
from typing import IO

import orjson

from kcodec.capture import CaptureEvent
from kcodec.capture.segments import endpoint
from kcodec.cli.capture_output import CaptureOutput, quiet_stdout
from kcodec.cli.capture_table import TableWriter
from kcodec.proxy import ProxyEvent, ProxyNotice

__all__ = ["ProxyView"]

#: Notices that report a problem (shown even when filters select frames, and in the notes' colour).
PROBLEMS = frozenset({"unrewritten", "unreachable", "stalled", "protocol"})


class ProxyView:
    """Receives every event of a :class:`~kcodec.proxy.Proxy` (``on_event``) and shows it."""

    def __init__(
        self,
        output: CaptureOutput,
        *,
        upstream: tuple[str, int],
        filtered: bool,
        json_to_stdout: bool,
        flush_interval: float = 0.5,
    ) -> None:
        self.output = output
        self.upstream = upstream
        self.filtered = filtered
        self.json_to_stdout = json_to_stdout
        self.flush_interval = flush_interval
        self._first = True
        self._last_flush = 0.0
        self._stdout_gone = False
        self.notices = 0

    @property
    def started(self) -> bool:
        """The proxy is listening (its first notice came)."""
        return not self._first

    @property
    def table(self) -> TableWriter | None:
        return self.output.table

    @property
    def jsonout(self) -> IO[bytes] | None:
        return self.output.jsonout

    def event(self, ev: ProxyEvent) -> None:
        first, self._first = self._first, False
        try:
            if isinstance(ev, ProxyNotice):
                self._notice(ev, first)
            else:
                self._traffic(ev)
            self._flush(force=first)
        except BrokenPipeError:
            self._lose_stdout()

    def _traffic(self, ev: CaptureEvent) -> None:
        if self._stdout_gone and self.json_to_stdout:
            return
        self.output.add(ev)

    def _notice(self, ev: ProxyNotice, first: bool) -> None:
        self.notices += 1
        if first:
            self._first_line(ev)
            return
        if self.output.summary or (self.filtered and ev.kind not in PROBLEMS):
            return
        if self.jsonout is not None:
            self.jsonout.write(orjson.dumps(ev.to_dict(), option=orjson.OPT_APPEND_NEWLINE))
        if self.table is not None and not self._stdout_gone:
            style = "yellow" if ev.kind in PROBLEMS else "dim"
            self.table.note(ev.timestamp, ev.connection, "**", ev.kind, ev.message, style=style)

    def _first_line(self, ev: ProxyNotice) -> None:
        """The proxy's listen address, first on standard output (then the table's header)."""
        if self.jsonout is not None:
            self.jsonout.write(orjson.dumps(ev.to_dict(), option=orjson.OPT_APPEND_NEWLINE))
        if not self.json_to_stdout:
            listener = ev.details.get("listener", "?")
            sys.stdout.write(
                f"kcodec proxy listening on {listener}, forwarding to {endpoint(*self.upstream)}\n"
            )
            sys.stdout.flush()
            if self.table is not None:
                self.table.header()

    def _flush(self, force: bool = False) -> None:
        """Rows are flushed as they are written when standard output is not a terminal (a pipe or a
        file someone follows); JSON lines to a file at most every ``flush_interval`` seconds."""
        if self.table is not None and not self._stdout_gone:
            sys.stdout.flush()
        now = time.monotonic()
        due = force or self.json_to_stdout or now - self._last_flush >= self.flush_interval
        if self.jsonout is not None and due:
            self._last_flush = now
            self.jsonout.flush()

    def _lose_stdout(self) -> None:
        """Nobody reads standard output any more (``| head``): stop writing to it, keep proxying."""
        self._stdout_gone = True
        self.output.table = None
        if self.json_to_stdout:
            self.output.jsonout = None
        quiet_stdout()

    def end(self) -> None:
        """At exit: the totals line or the summary, everything flushed."""
        try:
            if not self._stdout_gone:
                self.output.end()
            self.output.flush()
        except BrokenPipeError:
            self._lose_stdout()
