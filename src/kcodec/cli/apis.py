"""``kcodec apis``: every API kcodec knows."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from kcodec.cli.common import console, json_line, ranges, source_ranges, version_text


@click.command("apis")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per API (JSON lines).")
def apis_command(as_json: bool) -> None:
    """List every API: key, name, versions, flexible versions and the spec set of each version.

    Versions in the "proposals" column come from a proposal spec set (not an Apache Kafka spec, e.g.
    kcodec's KIP-359 Produce v14); negotiation never picks them unless asked to (--proposals).
    """
    from kcodec.protocol.coverage import gaps_reason, release_span, version_gaps
    from kcodec.protocol.registry import apis

    gaps = version_gaps()
    known = {a.key for a in apis()}
    if as_json:
        for a in apis():
            json_line(
                {
                    "key": a.key,
                    "name": a.name,
                    "request": a.request,
                    "response": a.response,
                    "min_version": a.min_version,
                    "max_version": a.max_version,
                    "flexible_from": a.flexible_from,
                    "sources": [
                        {"from": lo, "to": hi, "spec_set": s} for lo, hi, s in source_ranges(a.sources)
                    ],
                    "deprecated_versions": list(a.deprecated_versions),
                    "unstable_versions": list(a.unstable_versions),
                    "listeners": list(a.listeners),
                    "missing_versions": list(gaps[a.key].missing) if a.key in gaps else [],
                    "proposal_versions": {str(v): kip for v, kip in sorted(a.proposals.items())},
                }
            )
        for g in gaps.values():
            if g.api_key not in known:
                missing = list(g.missing)
                json_line({"key": g.api_key, "name": g.api_name, "known": False, "missing_versions": missing})
        return
    table = Table(title="Kafka APIs known to kcodec", title_justify="left")
    table.add_column("key", justify="right", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("versions", no_wrap=True)
    for name in ("flexible", "spec sets", "deprecated", "unstable", "missing", "proposals"):
        table.add_column(name)
    for a in apis():
        table.add_row(
            str(a.key),
            a.name,
            f"{a.min_version}-{a.max_version}" if a.max_version != a.min_version else str(a.min_version),
            "-" if a.flexible_from is None else f"{a.flexible_from}+",
            ", ".join(f"{version_text(lo, hi)} {escape(s)}" for lo, hi, s in source_ranges(a.sources)),
            ranges(a.deprecated_versions) or "",
            ranges(a.unstable_versions) or "",
            f"[yellow]{ranges(gaps[a.key].missing)}[/]" if a.key in gaps else "",
            ", ".join(f"v{v} {kip}" for v, kip in sorted(a.proposals.items())),
        )
    for g in gaps.values():
        if g.api_key not in known:
            gap_cell = f"[yellow]{ranges(g.missing)}[/]"
            table.add_row(str(g.api_key), g.api_name, "-", "", "", "", "", gap_cell, "")
    out = console()
    out.print(table)
    if gaps:
        out.print(f"missing: {escape(gaps_reason())}.")
    else:
        out.print(
            f"missing: none: kcodec has a codec for every version every Apache Kafka release "
            f"({escape(release_span())}) ships"
        )
