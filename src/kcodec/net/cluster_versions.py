"""API versions across a whole cluster (``kcodec versions --all-brokers``): bootstrap → Metadata →
the ApiVersions handshake with every broker, merged into one table.

Per API: each broker's range, kcodec's (or the client profile's) range, and the version a client
can use with *every* broker (the lowest of the per-broker negotiated versions), or why there is none.
"""

from __future__ import annotations

from typing import Any

from kcodec.net.client import ConnectionSettings, parse_host_port
from kcodec.net.cluster import fetch_metadata
from kcodec.net.negotiation import ClientProfile
from kcodec.net.versions_report import versions_report

__all__ = ["cluster_versions_report"]


def cluster_versions_report(
    bootstrap: str | tuple[str, int],
    *,
    settings: ConnectionSettings | None = None,
    client_profile: ClientProfile | None = None,
) -> dict[str, Any]:
    """JSON-ready::

        {"bootstrap": "host:port", "cluster_id": ..., "controller_id": ...,
         "brokers": [{"node_id", "address", "ok", "error", "api_versions_version", "fingerprint"}],
         "apis": [{"api_key", "api_name", "kcodec_min", "kcodec_max",
                   "brokers": {"<node_id>": [min, max] | None}, "negotiated", "reason"}]}

    ``negotiated`` is the version usable with every broker that answered; None (with ``reason``)
    when some broker lacks the API or shares no version with the client. The Metadata request that
    finds the brokers raises the client's errors when the bootstrap broker cannot be used.
    """
    settings = settings or ConnectionSettings()
    host, port = parse_host_port(bootstrap) if isinstance(bootstrap, str) else bootstrap
    md = fetch_metadata((host, port), settings=settings)
    brokers: list[dict[str, Any]] = []
    per_broker: dict[int, dict[str, Any]] = {}
    for b in md.brokers:
        report = versions_report((b.host, b.port), settings=settings, client_profile=client_profile)
        hs = report["handshake"]
        brokers.append({
            "node_id": b.node_id,
            "address": b.address,
            "rack": b.rack,
            "ok": hs["ok"],
            "error": hs["error"],
            "api_versions_version": hs["version"],
            "fingerprint": report["fingerprint"].get("verdict"),
        })
        if hs["ok"]:
            per_broker[b.node_id] = report
    return {
        "bootstrap": f"{host}:{port}",
        "cluster_id": md.cluster_id,
        "controller_id": md.controller_id,
        "brokers": brokers,
        "apis": _merge(per_broker),
    }


def _merge(per_broker: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    rows: dict[int, dict[str, Any]] = {}
    for node, report in per_broker.items():
        for r in report["apis"]:
            row = rows.setdefault(
                r["api_key"],
                {
                    "api_key": r["api_key"],
                    "api_name": r["api_name"],
                    "kcodec_min": r["kcodec_min"],
                    "kcodec_max": r["kcodec_max"],
                    "brokers": {},
                    "_negotiated": {},
                    "_reasons": {},
                },
            )
            row["brokers"][str(node)] = [r["broker_min"], r["broker_max"]]
            row["_negotiated"][node] = r["negotiated"]
            if r["reason"]:
                row["_reasons"][node] = r["reason"]
    out = []
    for key in sorted(rows):
        row = rows[key]
        negotiated: dict[int, int | None] = row.pop("_negotiated")
        reasons: dict[int, str] = row.pop("_reasons")
        missing = sorted(n for n in per_broker if str(n) not in row["brokers"])
        for n in missing:
            row["brokers"][str(n)] = None
        reason = None
        if missing:
            reason = f"not offered by broker{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))}"
        elif reasons:
            node, why = next(iter(sorted(reasons.items())))
            reason = f"broker {node}: {why}"
        row["negotiated"] = None if reason else min(v for v in negotiated.values() if v is not None)
        row["reason"] = reason
        row["brokers"] = dict(sorted(row["brokers"].items(), key=lambda kv: int(kv[0])))
        out.append(row)
    return out
