"""``kcodec decode-capture --summary`` as text: the totals of ``kcodec.capture.stats.CaptureStats``
(rich tables on a terminal, the same tables as plain text when piped).

Piped, a table whose cells are plain printable ASCII with nothing rich would read as markup or emoji
codes, and whose lines fit the width, is laid out here (the text rich would print, without its cost:
rich took about a quarter of a ``--summary`` run of a capture of many short connections, a row each
in the clients table); any other table, and any other line, is printed by rich."""

from __future__ import annotations

import io
import re
import sys
from typing import Any, Final

from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["print_summary"]

_WIDTH: Final = 200  # of the piped output
#: what rich would read in a cell's text: markup (a ``[`` that starts a tag: a lower-case letter, ``#``,
#: ``/`` or ``@`` after it, as rich's markup parser has it; ``events[0,2]`` is printed as it is) or an
#: emoji code (``:name:``)
_SPECIAL: Final = re.compile(r"\[[a-z#/@]|:\S*?:")


class _Rows:
    """A table's title, columns and rows, before it is laid out (by rich, or as plain text)."""

    def __init__(self, title: str, columns: list[tuple[str, str]]) -> None:
        self.title = title
        self.columns = columns
        self.rows: list[tuple[str, ...]] = []

    def add_row(self, *cells: str) -> None:
        self.rows.append(cells)

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def rich(self) -> Table:
        # (cells as Text: what a capture names, such as a client id "[/]", is shown as it is, never
        # read as markup or emoji codes)
        t = Table(title=self.title, title_justify="left", box=None, pad_edge=False, header_style="bold")
        for name, justify in self.columns:
            t.add_column(name, justify=justify, no_wrap=justify == "right")  # type: ignore[arg-type]
        for row in self.rows:
            t.add_row(*[Text(cell) for cell in row])
        return t

    def plain(self) -> str | None:
        """The table as rich lays it out piped (lines not yet stripped), or None if it is not plain
        (see the module docstring)."""
        names = [name for name, _ in self.columns]
        widths = [len(name) for name in names]
        for row in self.rows:
            for i, cell in enumerate(row):
                if len(cell) > widths[i]:
                    widths[i] = len(cell)
        if sum(widths) + 2 * (len(widths) - 1) > _WIDTH:
            return None
        text = " ".join([*names, *(" ".join(row) for row in self.rows)])  # (no code spans a space)
        if not (text.isascii() and text.isprintable()):
            return None
        if _SPECIAL.search(text) or (self.title and not _plain(self.title)):
            return None
        right = [justify == "right" for _, justify in self.columns]
        lines = [self.title] if self.title else []
        for row in (tuple(names), *self.rows):
            cells = zip(row, widths, right, strict=True)
            lines.append("  ".join(cell.rjust(width) if r else cell.ljust(width) for cell, width, r in cells))
        return "\n".join(lines)


def _plain(text: str) -> bool:
    """Whether rich prints ``text`` as it is (piped, at ``_WIDTH``)."""
    return (
        text.isascii()
        and text.replace("\n", " ").isprintable()
        and not _SPECIAL.search(text)
        and all(len(line) <= _WIDTH for line in text.split("\n"))
    )


class _Out:
    """Where the summary goes: rich's console, or (piped) plain text where it gives the same."""

    def __init__(self, console: Console, plain: io.StringIO | None) -> None:
        self.console = console
        self.buf = plain

    def print(self, item: str | _Rows) -> None:
        buf = self.buf
        if buf is not None:
            text = item.plain() if isinstance(item, _Rows) else (item if _plain(item) else None)
            if text is not None:
                buf.write(text + "\n")
                return
        self.console.print(item.rich() if isinstance(item, _Rows) else Text(item))


def _table(title: str, columns: list[tuple[str, str]]) -> _Rows:
    return _Rows(title, columns)


def print_summary(s: dict[str, Any], terminal: bool) -> None:
    if terminal:
        _render(s, _Out(Console(highlight=False), None))
        return
    buf = io.StringIO()  # piped: the same tables, without the padding at the end of lines
    _render(s, _Out(Console(file=buf, highlight=False, width=_WIDTH, color_system=None), buf))
    sys.stdout.write("\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n")


def _render(s: dict[str, Any], console: _Out) -> None:
    issues = ", ".join(f"{n} {k}" for k, n in sorted(s["issues"].items())) or "none"
    console.print(
        f"{s['frames']} frames ({s['requests']} requests, {s['responses']} responses, {s['bytes']} bytes) on "
        f"{s['connections']} connections; {s['undecodable']} undecodable; "
        f"{s['nonconformant']} non-conformant; issues: {issues}"
    )
    apis = _table(
        "\nAPIs",
        [
            ("api", "left"),
            ("version", "right"),
            ("requests", "right"),
            ("responses", "right"),
            ("bytes", "right"),
        ],
    )
    for name, entry in s["apis"].items():
        for version, v in entry["versions"].items():
            apis.add_row(name, version, str(v["requests"]), str(v["responses"]), str(v["bytes"]))
    console.print(apis)
    lat = _table(
        "\nLatency (ms)",
        [
            ("api", "left"),
            ("responses", "right"),
            ("p50", "right"),
            ("p90", "right"),
            ("p99", "right"),
            ("max", "right"),
        ],
    )
    for name, entry in s["apis"].items():
        m = entry["latency_ms"]
        if m:
            lat.add_row(
                name,
                str(m["count"]),
                f"{m['p50']:.3f}",
                f"{m['p90']:.3f}",
                f"{m['p99']:.3f}",
                f"{m['max']:.3f}",
            )
    if lat.row_count:
        console.print(lat)
    errs = _table("\nError codes in responses", [("api", "left"), ("error", "left"), ("count", "right")])
    for name, entry in s["apis"].items():
        for err, n in entry["errors"].items():
            errs.add_row(name, err, str(n))
    console.print(errs if errs.row_count else "\nError codes in responses: none")
    clients = _table(
        "\nClients",
        [
            ("client id", "left"),
            ("host", "left"),
            ("software", "left"),
            ("conns", "right"),
            ("versions used", "left"),
        ],
    )
    for c in s["clients"]:
        versions = ", ".join(f"{api} v{'/'.join(map(str, vs))}" for api, vs in c["versions"].items())
        clients.add_row(
            c["client_id"], c["host"], "; ".join(c["software"]) or "?", str(c["connections"]), versions
        )
    if clients.row_count:
        console.print(clients)
    fence = _table(
        "\nLeader-epoch fencing errors", [("api", "left"), ("partition", "left"), ("errors", "left")]
    )
    for f in s["fencing"]:
        fence.add_row(f["api"], f["partition"] or "-", ", ".join(f"{k} x{n}" for k, n in f["errors"].items()))
    console.print(fence if fence.row_count else "\nLeader-epoch fencing errors: none")
    for g in s.get("groups", ()):
        _group(console, g)


def _group(console: _Out, g: dict[str, Any]) -> None:
    """A consumer group: its protocol, generation and leader; its members, their client ids and
    hosts, what they subscribe to, and the partitions each held generation by generation."""
    head = f"\nConsumer group {g['group']!r}: {g['frames']} frames"
    if g["protocol_type"] or g["protocol"]:
        head += f"; protocol {g['protocol_type'] or '?'}/{g['protocol'] or '?'}"
    if g["generation"] is not None:
        head += f"; generation {g['generation']} ({len(g['generations'])} seen), leader {g['leader'] or '-'}"
    console.print(head)
    if not g["members"]:
        return
    members = _table("", [("member", "left"), ("client id", "left"), ("host", "left"),
                          ("subscribes", "left"), ("assignment by generation", "left")])  # fmt: skip
    for m in g["members"]:
        history: list[str] = []
        last = None
        for a in m["assignments"]:
            held = " ".join(f"{t}[{','.join(map(str, ps))}]" for t, ps in a["partitions"].items()) or "-"
            if held != last:  # (a generation that changed nothing for this member is not repeated)
                history.append(f"g{a['generation']}: {held}")
                last = held
        members.add_row(
            m["member"],
            ", ".join(m["client_ids"]) or "?",
            ", ".join(m["hosts"]),
            ", ".join(m["subscription"] or []) or "?",
            "; ".join(history) or "-",
        )
    console.print(members)
