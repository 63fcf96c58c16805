"""Reading a pipeline output folder's small tables (Parquet) as plain rows, with pyarrow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kcodec.protocol.errors import KcodecError

__all__ = ["REPORT_TABLES", "ReportInputError", "load_tables"]

#: The tables the report reads (the large ``frames`` table is not among them).
REPORT_TABLES = ("summary", "api_stats", "latency", "errors", "clients", "fencing", "timeline")
#: Rows of ``diagnostics`` and ``fencing`` read at most (counts cover every row).
MAX_ROWS = 5000


class ReportInputError(KcodecError):
    """The folder is not a pipeline output (a table is missing or unreadable)."""


def load_tables(folder: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Every report table under ``folder`` as a list of dicts. Raises :class:`ReportInputError`."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ReportInputError("the report needs pyarrow: pip install 'kcodec[spark]'") from None
    root = Path(folder)
    if not root.is_dir():
        raise ReportInputError(f"{folder}: no such folder")
    out: dict[str, list[dict[str, Any]]] = {}
    for name in REPORT_TABLES:
        path = root / name
        if not path.is_dir():
            raise ReportInputError(f"{folder}: not a kcodec pipeline output (no {name} table)")
        try:
            rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
        except Exception as e:  # pyarrow's own error types
            raise ReportInputError(f"{path}: cannot read the table: {e}") from None
        out[name] = rows[:MAX_ROWS] if name == "fencing" else rows
    out.update(_diagnostics(root / "diagnostics", pq))
    return out


def _diagnostics(path: Path, pq: Any) -> dict[str, list[dict[str, Any]]]:
    """``diagnostic_counts`` (rows per source and kind) and ``diagnostics`` (the first rows)."""
    if not path.is_dir():
        raise ReportInputError(f"{path.parent}: not a kcodec pipeline output (no diagnostics table)")
    try:
        table = pq.read_table(path, columns=["source", "kind", "time", "file", "connection", "message"])
    except Exception as e:
        raise ReportInputError(f"{path}: cannot read the table: {e}") from None
    counts = table.group_by(["source", "kind"]).aggregate([("message", "count")]).to_pylist()
    counts = [{"source": r["source"], "kind": r["kind"], "count": r["message_count"]} for r in counts]
    counts.sort(key=lambda r: (-r["count"], r["source"], r["kind"]))
    return {"diagnostic_counts": counts, "diagnostics": table.slice(0, 200).to_pylist()}
