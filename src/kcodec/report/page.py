"""The report page: jinja2 renders the summary, the plots (inline SVG) and the tables."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from kcodec.report.load import load_tables
from kcodec.report.plots import draw_plots

__all__ = ["render_report"]

Rows = Sequence[Mapping[str, Any]]
_LIMIT = 100


@dataclass(slots=True)
class _Table:
    id: str
    title: str
    columns: list[str]
    rows: list[list[tuple[str, bool]]]
    total: int

    @property
    def more(self) -> bool:
        return self.total > len(self.rows)


def _cell(value: Any) -> tuple[str, bool]:
    if value is None:
        return "", False
    if isinstance(value, float):
        return (f"{value:.3f}" if abs(value) < 1e6 else f"{value:.0f}"), True
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value), True
    if isinstance(value, list):
        return ", ".join(str(v) for v in value), False
    return str(value), False


def _time(ts: float | None) -> str:
    if ts is None:
        return ""
    return _dt.datetime.fromtimestamp(ts, tz=_dt.UTC).strftime("%H:%M:%S.%f")[:-3]


def _table(tid: str, title: str, rows: Rows, columns: Sequence[str]) -> _Table:
    shown: list[list[tuple[str, bool]]] = []
    for r in rows[:_LIMIT]:
        cells = []
        for c in columns:
            value = r.get(c)
            cells.append((_time(value), False) if c == "time" else _cell(value))
        shown.append(cells)
    return _Table(tid, title, list(columns), shown, len(rows))


def _tables(t: Mapping[str, Rows]) -> list[_Table]:
    return [
        _table(
            "api_stats",
            "Requests and bytes per API and version",
            t["api_stats"],
            (
                "api_key",
                "api_name",
                "api_version",
                "requests",
                "responses",
                "request_bytes",
                "response_bytes",
                "undecodable",
                "non_conformant",
            ),
        ),
        _table(
            "latency",
            "Latency per API and version (ms)",
            t["latency"],
            ("api_name", "api_version", "count", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms"),
        ),
        _table(
            "errors",
            "Errors per API and topic",
            t["errors"],
            ("api_name", "topic", "error_code", "error_name", "count"),
        ),
        _table(
            "fencing",
            "Fencing events",
            t["fencing"],
            (
                "time",
                "topic",
                "partition",
                "event",
                "api_name",
                "leader_epoch",
                "previous_leader_epoch",
                "current_leader_epoch",
                "client_id",
                "connection",
            ),
        ),
        _table(
            "clients",
            "Clients and the versions they used",
            t["clients"],
            (
                "client_id",
                "client_software_name",
                "client_software_version",
                "api_name",
                "versions",
                "requests",
                "connections",
            ),
        ),
        _table("diagnostic_counts", "Diagnostics", t["diagnostic_counts"], ("source", "kind", "count")),
        _table(
            "diagnostics",
            "Diagnostics (first rows)",
            t["diagnostics"],
            ("source", "kind", "time", "file", "connection", "message"),
        ),
    ]


def _version() -> str:
    try:
        return version("kcodec")
    except PackageNotFoundError:
        return "?"


def render_report(folder: str | Path, title: str | None = None) -> str:
    """The HTML page for the pipeline output in ``folder`` (raises ``ReportInputError``)."""
    import jinja2

    from kcodec.pipeline.summary import summary_lines

    tables = load_tables(folder)
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("kcodec.report", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html.j2").render(
        title=title or Path(folder).resolve().name,
        summary=summary_lines(tables),
        plots=draw_plots(tables),
        tables=_tables(tables),
        version=_version(),
        folder=str(folder),
    )
