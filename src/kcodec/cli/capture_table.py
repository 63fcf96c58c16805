"""The streaming table of ``kcodec decode-capture``: one row per frame or issue, printed as it comes.

On a terminal the rows fit its width: the summary column wraps under itself, or, when the terminal is
narrower than 110 columns, goes on indented lines below the row; colours mark errors, notes and
issues. Piped, each row is one line of plain text with nothing cut and no padding at its end.
"""

from __future__ import annotations

import datetime as _dt
import sys
import textwrap
from typing import IO, TYPE_CHECKING, Any, Final, Protocol

from kcodec.capture import CaptureIssue

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["RowSource", "TableWriter", "clock"]

_STYLES: Final = {"error": "red", "note": "yellow", "dim": "dim", "": "", "red": "red", "yellow": "yellow"}
_WIDE: Final = 110


def escape(text: str) -> str:
    """``rich.markup.escape`` (rich is imported only when rows go to a terminal)."""
    from rich.markup import escape as rich_escape

    escaped: str = rich_escape(text)  # (typed: the compiled build's check may run without rich)
    return escaped


_MAX_TS: Final = 253402300800.0  # 10000-01-01: datetime's limit
_last_second: list[Any] = [-1, ""]  # the last whole second shown and its "HH:MM:SS"
_MILLIS: Final = tuple(f".{n:03d}" for n in range(1000))  # ".000" ... ".999"


def clock(ts: float) -> str:
    """``HH:MM:SS.mmm`` (UTC) of a capture time: what ``datetime.fromtimestamp(ts, UTC)`` shows, cut to
    milliseconds, computed without building a datetime per row (microseconds rounded half-even as
    ``fromtimestamp`` rounds them; the seconds' text is reused while they do not change, and the
    milliseconds' texts are made once)."""
    if not 0.0 <= ts < _MAX_TS:  # (NaN too) datetime's own answer, or its error
        return _dt.datetime.fromtimestamp(ts, tz=_dt.UTC).strftime("%H:%M:%S.%f")[:-3]
    whole = int(ts)
    micros = round((ts - whole) * 1e6)
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    last = _last_second
    if whole != last[0]:
        day = whole % 86400
        last[0], last[1] = whole, f"{day // 3600:02d}:{day // 60 % 60:02d}:{day % 60:02d}"
    seconds: str = last[1]
    return seconds + _MILLIS[micros // 1000]


def connection_cell(number: int) -> str:
    """The conn column of a frame's row."""
    return f"{'#' + str(number):>5}"


class RowSource(Protocol):
    """What a frame's row shows besides its summary: a ``CapturedFrame`` has it (and so does a
    parallel decode's ``parallel_items.Row``)."""

    @property
    def timestamp(self) -> float: ...
    @property
    def connection(self) -> int: ...
    @property
    def direction(self) -> str: ...
    @property
    def api_key(self) -> int | None: ...
    @property
    def api_version(self) -> int | None: ...
    @property
    def api_name(self) -> str | None: ...
    @property
    def correlation_id(self) -> int | None: ...
    @property
    def size(self) -> int | None: ...
    @property
    def latency(self) -> float | None: ...
    @property
    def error(self) -> object: ...


class TableWriter:
    """Writes rows to a terminal (``console``) or to a plain stream (``out``)."""

    def __init__(self, out: IO[str] | None = None, console: Console | None = None) -> None:
        self.console = console
        self.out = out or sys.stdout
        self.width = console.width if console is not None else None
        self.api_width = 26
        self.left = 12 + 1 + 5 + 1 + 2 + 1 + self.api_width + 1 + 6 + 1 + 7 + 2
        self._header_done = False
        self._api_cells: dict[tuple[int | None, int | None], str] = {}
        self._connection_cells: dict[int, str] = {}  # (write_plain's, remembered: few connections)

    def _api_cell(self, f: RowSource) -> str:
        """The API column of a frame, padded (remembered per API key and version)."""
        name = f.api_name or (f"key {f.api_key}" if f.api_key is not None else "?")
        api = f"{name} v{f.api_version}" if f.api_version is not None else name
        cell = self._api_cells[(f.api_key, f.api_version)] = f"{api:<{self.api_width}}"
        return cell

    def _head(self, ts: str, conn: str, arrow: str, api: str, corr: str, size: str) -> str:
        return f"{ts:<12} {conn:>5} {arrow:<2} {api:<{self.api_width}} {corr:>6} {size:>7}  "

    def header(self) -> None:
        if self.width is not None and self.width < _WIDE:
            return  # narrow terminal: rows are not in columns
        self._write_plain(self._head("time (UTC)", "conn", "", "api", "corr", "size") + "summary", "bold")

    def line(self, text: str, style: str = "") -> None:
        """A line of its own (the totals at the end)."""
        self._write_plain(text, style)

    def _write_plain(self, text: str, style: str = "") -> None:
        if self.console is not None:
            self.console.print(f"[{style}]{escape(text)}[/]" if style else escape(text), soft_wrap=True)
        else:
            self.out.write(text.rstrip() + "\n")

    def connection(self, number: int, client: str, server: str) -> None:
        self._write_plain(f"connection #{number}: {client} -> {server}", "cyan")

    def frame(self, f: RowSource, parts: list[tuple[str, str]], extra: list[str]) -> None:
        if self.console is None:
            before, after = self.plain_frame(f, parts, extra)
            self.write_plain(before, f.connection, after)
            return
        before, after, parts = self._frame_cells(f, parts)
        self._row(before + connection_cell(f.connection) + after, parts, "red" if f.error is not None else "")
        for line in extra:
            self._continuation(line)

    def plain_frame(self, f: RowSource, parts: list[tuple[str, str]], extra: list[str]) -> tuple[str, str]:
        """A frame's lines as written when not to a terminal, in two pieces: what comes before the
        connection's cell and what comes after it (so that whoever knows the connection's number can
        finish them: the parent of a parallel decode's workers)."""
        before, after, parts = self._frame_cells(f, parts)
        text = (after + "  ".join([text for _, text in parts])).rstrip() + "\n"
        if extra:
            text += "".join([f"    {line}\n" for line in extra])
        return before, text

    def write_plain(self, before: str, connection: int, after: str) -> None:
        """The lines :meth:`plain_frame` gave, with the connection's number."""
        cell = self._connection_cells.get(connection)
        if cell is None:
            if len(self._connection_cells) >= 4096:
                self._connection_cells.clear()
            cell = self._connection_cells[connection] = connection_cell(connection)
        self.out.write(before + cell + after)

    def _frame_cells(
        self, f: RowSource, parts: list[tuple[str, str]]
    ) -> tuple[str, str, list[tuple[str, str]]]:
        """The row's head before and after the connection's cell, and the summary parts (a response's
        latency added)."""
        cell = self._api_cells.get((f.api_key, f.api_version))
        if cell is None:
            cell = self._api_cell(f)
        if f.direction == "response":
            arrow = " <- "
            if f.latency is not None:
                parts = [*parts, ("dim", "(%.1f ms)" % (f.latency * 1000))]
        else:
            arrow = " -> "
        corr = "" if f.correlation_id is None else str(f.correlation_id)
        size = "?" if f.size is None else str(f.size)
        ts = clock(f.timestamp)
        # (what _head gives, padded by hand: a format spec costs a method call per cell in the compiled
        # build; the API column's text is padded once per API and version)
        return (
            f"{ts}{' ' * (12 - len(ts))} ",  # (built in one piece: compiled, no concatenation per part)
            f"{arrow}{cell} {' ' * (6 - len(corr))}{corr} {' ' * (7 - len(size))}{size}  ",
            parts,
        )

    def issue(self, ev: CaptureIssue) -> None:
        self.note(ev.timestamp, ev.connection, "!!", ev.kind, ev.message, ev.length)

    def note(
        self,
        ts: float,
        connection: int | None,
        marker: str,
        label: str,
        message: str,
        size: int | None = None,
        style: str = "yellow",
    ) -> None:
        """A row that is not a frame: ``marker`` (two characters) where the arrow goes, ``label`` in the
        api column, ``message`` as the summary (in the notes' colour)."""
        where = "" if connection is None else f"#{connection}"
        head = self._head(clock(ts), where, marker, label, "", "" if size is None else str(size))
        self._row(head, [("note" if style == "yellow" else style, message)], style)

    def _continuation(self, line: str) -> None:
        indent = " " * (self.left if self.width is not None and self.width >= _WIDE else 4)
        if self.console is None:
            self.out.write(indent + line + "\n")
            return
        assert self.width is not None
        for piece in textwrap.wrap(line, max(20, self.width - len(indent))) or [""]:
            self.console.print(indent + f"[dim]{escape(piece)}[/]", soft_wrap=True)

    def _row(self, head: str, parts: list[tuple[str, str]], head_style: str) -> None:
        if self.console is None:
            self.out.write((head + "  ".join([text for _, text in parts])).rstrip() + "\n")
            return
        assert self.width is not None
        head_text = f"[{head_style}]{escape(head)}[/]" if head_style else escape(head)
        if self.width >= _WIDE:
            indent, room = " " * self.left, self.width - self.left
            lines = self._wrap(parts, room)
            self.console.print(head_text + (lines[0] if lines else ""), soft_wrap=True)
            for line in lines[1:]:
                self.console.print(indent + line, soft_wrap=True)
        else:  # narrow: the row's fields, then the summary on indented lines below
            fields = [(head_style, " ".join(head.split()))]
            for line in self._wrap(fields, self.width):
                self.console.print(line, soft_wrap=True)
            for line in self._wrap(parts, self.width - 4):
                self.console.print("    " + line, soft_wrap=True)

    @staticmethod
    def _wrap(parts: list[tuple[str, str]], room: int) -> list[str]:
        """Markup lines of at most ``room`` characters holding the parts, wrapped between words
        (parts are two spaces apart; a word longer than a line is cut across lines)."""
        room = max(room, 20)
        lines: list[str] = []
        current, used = "", 0
        for n, (style, text) in enumerate(parts):
            colour = _STYLES.get(style, "")
            for k, word in enumerate(text.split(" ")):
                sep = "" if not used else ("  " if k == 0 and n else " ")
                while True:
                    if used and used + len(sep) + len(word) > room:
                        lines.append(current)
                        current, used, sep = "", 0, ""
                    piece, word = (word, "") if len(word) <= room else (word[:room], word[room:])
                    current += sep + (f"[{colour}]{escape(piece)}[/]" if colour else escape(piece))
                    used += len(sep) + len(piece)
                    if not word:
                        break
                    sep = ""
        if current:
            lines.append(current)
        return lines
