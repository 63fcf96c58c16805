"""``--summary`` piped: the tables laid out as plain text are exactly what rich prints, and any table
or line that is not plain (markup, emoji codes, tabs, non-ASCII, wider than the page) goes to rich."""

from __future__ import annotations

import copy
import io
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from kcodec.capture import iter_capture
from kcodec.capture.facts import event_facts
from kcodec.capture.stats import CaptureStats
from kcodec.cli import capture_summary
from kcodec.cli.capture_summary import _Out, _render, _Rows, print_summary

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = [ROOT / "samples" / "sample.pcap", *sorted((ROOT / "tests" / "captures").rglob("*.pcap"))[:12]]
ODD = [
    "[bold]x[/bold]", "a:smile:b", "tab\there", "new\nline", "ünï", "日本", "x" * 190, "a [b] c",
    "\x1b[31mred", ":", "[", "\\[x]", "a:b:c", " lead", "trail ", ":smile", "x" * 60, "",
    "t[0,1]", "a[B]", "x[#f00]y", "[/]", "[@x]", "\\[0]", "a[ b]", "z[9",
]  # fmt: skip


def _summary(path: Path) -> dict[str, Any]:
    stats = CaptureStats()
    for ev in iter_capture(path):
        stats.add(ev, event_facts(ev))
    return stats.to_dict()


def _printed(s: dict[str, Any]) -> str:
    out, sys.stdout = sys.stdout, io.StringIO()
    try:
        print_summary(s, False)
        return sys.stdout.getvalue()
    finally:
        sys.stdout = out


def _by_rich(s: dict[str, Any]) -> str:
    buf = io.StringIO()
    _render(s, _Out(Console(file=buf, highlight=False, width=200, color_system=None), None))
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"


@pytest.fixture(scope="module")
def summaries() -> list[dict[str, Any]]:
    found = [_summary(path) for path in CAPTURES]
    assert any(s["clients"] for s in found) and any(s.get("groups") for s in found)
    return found


def test_plain_tables_are_what_rich_prints(summaries: list[dict[str, Any]]) -> None:
    for s in summaries:
        assert _printed(s) == _by_rich(s)


@pytest.mark.parametrize("odd", ODD)
def test_cells_rich_would_read_otherwise_go_to_rich(summaries: list[dict[str, Any]], odd: str) -> None:
    for base in summaries:
        for field in ("client_id", "host", "software"):
            if base["clients"]:
                s = copy.deepcopy(base)
                s["clients"][0][field] = [odd] if field == "software" else odd
                assert _printed(s) == _by_rich(s), field
        s = copy.deepcopy(base)
        for g in s.get("groups", ()):
            g["group"] = odd
        if s["apis"]:
            s["apis"][odd] = next(iter(s["apis"].values()))
        assert _printed(s) == _by_rich(s)


def test_a_plain_table_is_laid_out_without_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _Rows("\nClients", [("client id", "left"), ("conns", "right")])
    rows.add_row("consumer-1", "12")
    rows.add_row("c", "3")
    assert rows.plain() == "\nClients\nclient id   conns\nconsumer-1     12\nc               3"
    rows.add_row("[bold]x", "1")
    assert rows.plain() is None
    wide = _Rows("", [("a", "left"), ("b", "left")])
    wide.add_row("x" * 150, "y" * 48)
    assert wide.plain() is not None
    wide.add_row("x" * 150, "y" * 49)  # (150 + 2 + 49 > 200: rich would wrap it)
    assert wide.plain() is None
    plain = _Rows("", [("api", "left"), ("count", "right")])
    plain.add_row("Fetch", "7")
    monkeypatch.setattr(capture_summary._Rows, "rich", lambda self: pytest.fail("rich used"))
    buf = io.StringIO()
    _Out(Console(file=io.StringIO()), buf).print(plain)
    _Out(Console(file=io.StringIO()), buf).print("\n3 frames: fine")
    assert buf.getvalue() == "api    count\nFetch      7\n\n3 frames: fine\n"
