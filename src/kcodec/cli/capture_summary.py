"""``kcodec decode-capture --summary`` as text: the totals of ``kcodec.capture.stats.CaptureStats``
(rich tables on a terminal, the same tables as plain text when piped)."""

from __future__ import annotations

import io
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["print_summary"]


def _table(title: str, columns: list[tuple[str, str]]) -> Table:
    t = Table(title=title, title_justify="left", box=None, pad_edge=False, header_style="bold")
    for name, justify in columns:
        t.add_column(name, justify=justify, no_wrap=justify == "right")  # type: ignore[arg-type]
    return t


def print_summary(s: dict[str, Any], terminal: bool) -> None:
    if terminal:
        _render(s, Console(highlight=False))
        return
    buf = io.StringIO()  # piped: the same tables, without the padding at the end of lines
    _render(s, Console(file=buf, highlight=False, width=200, color_system=None))
    sys.stdout.write("\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n")


def _render(s: dict[str, Any], console: Console) -> None:
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


def _group(console: Console, g: dict[str, Any]) -> None:
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
