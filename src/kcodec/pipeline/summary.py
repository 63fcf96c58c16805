"""The text summary of a run, from the aggregate tables (plain rows: dicts), for the command line
and the HTML report alike."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["summary_lines"]

Rows = Sequence[Mapping[str, Any]]


def _when(ts: float | None) -> str:
    if ts is None:
        return "?"
    return _dt.datetime.fromtimestamp(ts, tz=_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _mb(n: int | float) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{int(n)} bytes"


def summary_lines(tables: Mapping[str, Rows], top: int = 5) -> list[str]:
    """A few lines: what was read, what was found, the busiest APIs, slowest answers, errors, fencing."""
    s = tables["summary"][0] if tables.get("summary") else {}
    lines = [
        f"{s.get('files', 0)} files ({_mb(s.get('input_bytes', 0))}): {s.get('frames', 0)} frames "
        f"({s.get('requests', 0)} requests, {s.get('responses', 0)} responses) on {s.get('connections', 0)} "
        f"connections, {s.get('apis', 0)} APIs, {s.get('client_ids', 0)} client ids",
        f"time: {_when(s.get('first_time'))} .. {_when(s.get('last_time'))}",
        f"problems: {s.get('undecodable', 0)} undecodable and {s.get('non_conformant', 0)} "
        "non-conformant frames, "
        f"{s.get('stream_issues', 0)} stream issues, {s.get('file_issues', 0)} capture-file issues, "
        f"{s.get('unreadable_files', 0)} unreadable files",
    ]
    stats = sorted(tables.get("api_stats", ()), key=lambda r: -(r["requests"] + r["responses"]))
    if stats:
        busiest = ", ".join(
            f"{r['api_name'] or r['api_key']} v{r['api_version']} ({r['requests']})" for r in stats[:top]
        )
        lines.append(f"busiest: {busiest}")
    lat = sorted(tables.get("latency", ()), key=lambda r: -(r["p99_ms"] or 0.0))
    if lat:
        slowest = ", ".join(
            f"{r['api_name']} v{r['api_version']} p50 {r['p50_ms']:.2f} / p99 {r['p99_ms']:.2f} ms"
            for r in lat[:3]
        )
        lines.append(f"slowest (p99): {slowest}")
    errs: dict[str, int] = {}
    for r in tables.get("errors", ()):
        errs[r["error_name"]] = errs.get(r["error_name"], 0) + r["count"]
    if errs:
        ranked = sorted(errs.items(), key=lambda kv: -kv[1])
        lines.append("errors: " + ", ".join(f"{name} x{n}" for name, n in ranked[:top]))
    fencing = tables.get("fencing", ())
    if fencing:
        kinds: dict[str, int] = {}
        for r in fencing:
            kinds[r["event"]] = kinds.get(r["event"], 0) + 1
        lines.append("fencing: " + ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())))
    return lines
