"""The report's plots, drawn by matplotlib and returned as SVG text to embed in the page.

Text is drawn as paths (``svg.fonttype = path``), so a plot needs no font; each plot gets its own
id salt so that the ids inside several SVGs on one page do not collide. A plot with nothing to show
still draws its axes with a note saying so.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["PLOTS", "draw_plots"]

Rows = Sequence[Mapping[str, Any]]
_TOP = 8


def _svg(name: str, draw: Callable[[Any], None], height: float = 3.4) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": f"kcodec-{name}", "font.size": 9}):
        fig = Figure(figsize=(9.0, height), layout="constrained")
        ax = fig.subplots()
        draw(ax)
        buf = io.StringIO()
        fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog and doctype: the SVG is inline


def _empty(ax: Any, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what} in this capture", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _by_api(
    timeline: Rows, value: str, origin: float, zeros: bool = False
) -> dict[str, tuple[list[float], list[float]]]:
    """Per API (the busiest few): bucket times (relative to ``origin``) and ``value``; with ``zeros``
    every bucket from the first to the last is there (0 where the API had no frame)."""
    totals: dict[str, float] = defaultdict(float)
    for r in timeline:
        totals[r["api_name"]] += r["requests"] + r["responses"]
    top = sorted(totals, key=lambda a: -totals[a])[:_TOP]
    points: dict[str, dict[float, float]] = {api: {} for api in top}
    for r in timeline:
        if r["api_name"] in points and r[value] is not None:
            points[r["api_name"]][r["bucket"]] = r[value]
    series: dict[str, tuple[list[float], list[float]]] = {}
    if zeros and timeline:
        # every bucket from the first to the last, matched by its index: bucket times are floats
        # (multiples of the width), which first + i * width does not reproduce exactly
        width = timeline[0]["bucket_seconds"]
        first = min(r["bucket"] for r in timeline)
        count = round((max(r["bucket"] for r in timeline) - first) / width) + 1
        xs_all = [first + i * width for i in range(count)]
        for api, by_bucket in points.items():
            if not by_bucket:
                continue
            ys_all = [0.0] * count
            for b, y in by_bucket.items():
                ys_all[round((b - first) / width)] += y
            series[api] = ([x - origin for x in xs_all], ys_all)
        return series
    for api, by_bucket in points.items():
        if not by_bucket:
            continue
        xs = sorted(by_bucket)
        ys = [by_bucket[b] for b in xs]
        series[api] = ([x - origin for x in xs], ys)
    return series


def _origin(tables: Mapping[str, Rows]) -> float:
    s = tables.get("summary") or [{}]
    return float(s[0].get("first_time") or 0.0)


def requests_per_second(tables: Mapping[str, Rows]) -> str:
    origin = _origin(tables)

    def draw(ax: Any) -> None:
        series = {
            a: s
            for a, s in _by_api(tables["timeline"], "requests_per_second", origin, zeros=True).items()
            if any(s[1])
        }
        if not series:
            return _empty(ax, "requests")
        for api, (xs, ys) in series.items():
            ax.step(xs, ys, where="post", linewidth=1.2, label=api)
        ax.set_xlabel("seconds since the first frame")
        ax.set_ylabel("requests / s")
        ax.legend(fontsize=7, ncols=2)
        ax.grid(alpha=0.3)

    return _svg("rps", draw)


def latency_over_time(tables: Mapping[str, Rows]) -> str:
    origin = _origin(tables)

    def draw(ax: Any) -> None:
        series = _by_api(tables["timeline"], "latency_p50_ms", origin)
        if not series:
            return _empty(ax, "answered requests")
        for api, (xs, ys) in series.items():
            ax.plot(xs, ys, marker="o", markersize=3, linestyle="none", label=f"{api} p50")
        ax.set_xlabel("seconds since the first frame")
        ax.set_ylabel("latency p50 (ms)")
        if max(max(ys) for _, ys in series.values()) > 100 * max(min(ys) for _, ys in series.values()):
            ax.set_yscale("symlog", linthresh=0.1)
        ax.legend(fontsize=7, ncols=2)
        ax.grid(alpha=0.3)

    return _svg("latency-time", draw)


def latency_by_api(tables: Mapping[str, Rows]) -> str:
    rows = sorted(tables["latency"], key=lambda r: (r["api_name"] or "", r["api_version"]))

    def draw(ax: Any) -> None:
        if not rows:
            return _empty(ax, "answered requests")
        labels = [f"{r['api_name']} v{r['api_version']}" for r in rows]
        ys = list(range(len(rows)))
        for q, color in (("p99_ms", "#d62728"), ("p90_ms", "#ff7f0e"), ("p50_ms", "#1f77b4")):
            ax.barh(ys, [max(r[q], 1e-3) for r in rows], color=color, label=q.replace("_ms", ""))
        ax.set_yticks(ys, labels)
        ax.set_xscale("log")
        ax.set_xlabel("latency (ms, log scale)")
        ax.invert_yaxis()
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3, axis="x")

    return _svg("latency-api", draw, height=max(2.5, 0.28 * len(rows) + 1.2))


def error_counts(tables: Mapping[str, Rows]) -> str:
    totals: dict[str, int] = defaultdict(int)
    for r in tables["errors"]:
        totals[f"{r['api_name']}: {r['error_name']}"] += r["count"]
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])[:20]

    def draw(ax: Any) -> None:
        if not ranked:
            return _empty(ax, "error codes")
        ys = list(range(len(ranked)))
        ax.barh(ys, [n for _, n in ranked], color="#d62728")
        ax.set_yticks(ys, [name for name, _ in ranked])
        ax.invert_yaxis()
        ax.set_xlabel("error entries (top level, per topic and per partition)")
        ax.grid(alpha=0.3, axis="x")

    return _svg("errors", draw, height=max(2.5, 0.3 * len(ranked) + 1.2))


def fencing_timeline(tables: Mapping[str, Rows]) -> str:
    origin = _origin(tables)
    rows = tables["fencing"]
    parts = sorted({f"{r['topic']}/{r['partition']}" for r in rows})

    def draw(ax: Any) -> None:
        if not rows:
            return _empty(ax, "fencing errors or leader-epoch changes")
        markers = {
            "FENCED_LEADER_EPOCH": ("x", "#d62728"),
            "UNKNOWN_LEADER_EPOCH": ("D", "#ff7f0e"),
            "LEADER_EPOCH_CHANGE": ("^", "#2ca02c"),
        }
        for event, (marker, color) in markers.items():
            pts = [
                (r["time"] - origin, parts.index(f"{r['topic']}/{r['partition']}"))
                for r in rows
                if r["event"] == event
            ]
            if pts:
                ax.scatter(
                    [p[0] for p in pts], [p[1] for p in pts], marker=marker, color=color, label=event, s=40
                )
        for r in rows:
            if r["event"] == "LEADER_EPOCH_CHANGE":
                ax.annotate(
                    f"{r['previous_leader_epoch']}→{r['leader_epoch']}",
                    (r["time"] - origin, parts.index(f"{r['topic']}/{r['partition']}")),
                    textcoords="offset points",
                    xytext=(4, 6),
                    fontsize=7,
                )
        ax.set_yticks(range(len(parts)), parts)
        ax.set_ylim(-0.7, len(parts) - 0.3)
        ax.set_xlabel("seconds since the first frame")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)

    return _svg("fencing", draw, height=max(2.5, 0.35 * len(parts) + 1.5))


#: (id, title, drawing function) of every plot, in page order.
PLOTS: tuple[tuple[str, str, Callable[[Mapping[str, Rows]], str]], ...] = (
    ("requests-per-second", "Requests per second, per API", requests_per_second),
    ("latency-over-time", "Latency (p50) per API over time", latency_over_time),
    ("latency-by-api", "Latency percentiles per API and version", latency_by_api),
    ("error-counts", "Error codes answered", error_counts),
    (
        "fencing-timeline",
        "Fencing: leader-epoch errors and leader-epoch changes per partition",
        fencing_timeline,
    ),
)


def draw_plots(tables: Mapping[str, Rows]) -> list[tuple[str, str, str]]:
    """``(id, title, svg)`` of every plot."""
    return [(pid, title, fn(tables)) for pid, title, fn in PLOTS]
