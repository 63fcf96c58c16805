"""The summary of a fuzzing session, as text (``render_report``) and JSON (``report_json``)."""

from __future__ import annotations

from typing import Any

from kcodec.fuzz.findings import Finding

__all__ = ["render_findings", "render_report", "report_json"]

_ORDER = {"critical": 0, "high": 1, "medium": 2, "info": 3}


def _sorted(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (_ORDER.get(f.severity, 9), f.kind, f.api_name))


def render_findings(findings: list[Finding]) -> str:
    if not findings:
        return "no findings"
    lines = [f"{len(findings)} findings (one per kind and API):"]
    for f in _sorted(findings):
        extra = []
        if f.count > 1:
            extra.append(f"seen {f.count}x")
        if f.minimized:
            extra.append(f"minimized to {len(f.request()) } bytes")
        if f.reproduced is False:
            extra.append("not reproduced alone")
        note = f" [{', '.join(extra)}]" if extra else ""
        lines.append(f"  {f.severity:8} {f.kind:30} {f.api_name} v{f.api_version}{note}")
        lines.append(f"           {f.summary}")
    return "\n".join(lines)


def report_json(target: str, seed: int, stats: Any, findings: list[Finding]) -> dict[str, Any]:
    return {
        "target": target,
        "seed": seed,
        "requests": stats.sent,
        "seconds": round(stats.elapsed, 3),
        "requests_per_second": round(stats.rate, 1),
        "stopped_by": stats.stopped_by,
        "outcomes": dict(stats.outcomes),
        "mutations": dict(stats.mutations),
        "per_api": dict(stats.per_api),
        "reconnects": stats.reconnects,
        "probes": stats.probes,
        "findings": [f.to_json() for f in _sorted(findings)],
    }


def render_report(target: str, seed: int, stats: Any, findings: list[Finding]) -> str:
    outcomes = ", ".join(f"{k} {v}" for k, v in stats.outcomes.most_common())
    lines = [
        f"fuzzed {target} (seed {seed}): {stats.sent} requests in {stats.elapsed:.1f} s "
        f"({stats.rate:.0f} requests/s), stopped by {stats.stopped_by}",
        f"replies: {outcomes or 'none'}; {stats.reconnects} reconnects, {stats.probes} liveness probes",
        f"APIs: {len(stats.per_api)}; mutations: "
        + ", ".join(f"{k} {v}" for k, v in stats.mutations.most_common(6)),
        render_findings(findings),
    ]
    return "\n".join(lines)
