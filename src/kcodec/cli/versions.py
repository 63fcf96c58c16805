"""``kcodec versions``: a broker's API versions against kcodec's, and the negotiated ones.

Every bad argument is one line and exit status 2; a broker that cannot be used (refused, timed out,
not Kafka, TLS or SASL failure) is one line with the cause and exit status 1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from kcodec.cli.common import broker_address, connection_options, connection_settings
from kcodec.cli.common import console as make_console
from kcodec.protocol.errors import KcodecError

#: handshake outcomes that mean "no Kafka reply at all": reported as one line, exit 1
_NETWORK_OUTCOMES = {"timeout", "connection_error", "protocol_error"}


@click.command("versions")
@click.argument("target")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: apis, fingerprint, handshake.")
@click.option(
    "--captured",
    is_flag=True,
    help="TARGET is a file holding a captured ApiVersionsResponse (with or without size prefix).",
)
@click.option(
    "--cap",
    "caps",
    multiple=True,
    metavar="API=MIN-MAX|API=none",
    help="Narrow the client side (kcodec's ranges) for one API, e.g. --cap Fetch=0-8 (repeatable).",
)
@click.option(
    "--all-brokers",
    is_flag=True,
    help="Ask the bootstrap broker TARGET for the cluster's brokers (Metadata), then each of them: "
    "one table with every broker's ranges and the version usable with all of them.",
)
@click.option(
    "--proposals",
    is_flag=True,
    help="Let kcodec's side offer proposal versions (KIP-359 Produce v14) when the broker advertises them.",
)
@connection_options
def versions_command(
    target: str,
    as_json: bool,
    captured: bool,
    caps: tuple[str, ...],
    all_brokers: bool,
    proposals: bool,
    timeout: float,
    **conn: Any,
) -> None:
    """Broker API versions vs kcodec's, the negotiated version per API and a release fingerprint.

    TARGET is HOST:PORT (runs the KIP-511 handshake over TCP) or, with --captured, a file.
    """
    from kcodec.net.negotiation import kcodec_profile

    profile = kcodec_profile(parse_caps(caps), proposals=proposals) if caps else None
    if all_brokers and proposals:
        raise click.UsageError("--proposals works with one broker, not with --all-brokers")
    if captured:
        if all_brokers:
            raise click.UsageError("--all-brokers needs a broker, not a --captured file")
        _captured(target, as_json, profile, proposals)
        return
    address = broker_address(target, "TARGET")
    settings = connection_settings(timeout, **conn)
    if all_brokers:
        _all_brokers(address, settings, profile, as_json)
        return
    from kcodec.net.versions_report import render_versions_report, versions_report

    report = versions_report(address, settings=settings, client_profile=profile, proposals=proposals)
    hs = report["handshake"]
    if not hs["ok"] and hs["attempts"] and all(a["outcome"] in _NETWORK_OUTCOMES for a in hs["attempts"]):
        raise click.ClickException(hs["attempts"][-1]["detail"] or str(hs["error"]))
    _print(report, as_json, render_versions_report)
    if not hs.get("ok", True):
        raise SystemExit(1)


#: the largest --captured file read: an ApiVersionsResponse lists each API in 7 bytes or so
MAX_CAPTURED_BYTES = 1 << 20


def _captured(target: str, as_json: bool, profile: Any, proposals: bool) -> None:
    from kcodec.net.versions_report import render_versions_report, versions_report

    path = Path(target)
    try:
        with path.open("rb") as f:  # its size first, then at most one byte past the limit
            size = os.fstat(f.fileno()).st_size
            data = f.read(MAX_CAPTURED_BYTES + 1) if size <= MAX_CAPTURED_BYTES else b""
        if max(size, len(data)) > MAX_CAPTURED_BYTES:
            raise click.BadParameter(
                f"{target} is larger than a captured ApiVersionsResponse can be "
                f"(limit {MAX_CAPTURED_BYTES} bytes)",
                param_hint="TARGET",
            )
    except FileNotFoundError:
        raise click.BadParameter(f"no such file: {target}", param_hint="TARGET") from None
    except OSError as e:
        raise click.BadParameter(f"cannot read {target}: {e.strerror or e}", param_hint="TARGET") from None
    report = versions_report(data, client_profile=profile, proposals=proposals)
    _print(report, as_json, render_versions_report)
    if not report["handshake"].get("ok", True):
        raise SystemExit(1)


def _print(report: dict[str, Any], as_json: bool, render: Any) -> None:
    if as_json:
        click.echo(json.dumps(report, indent=2, default=str))
    else:
        click.echo(render(report), nl=False)


def _all_brokers(address: tuple[str, int], settings: Any, profile: Any, as_json: bool) -> None:
    from kcodec.net.client_errors import ClientError
    from kcodec.net.cluster_versions import cluster_versions_report

    try:
        report = cluster_versions_report(address, settings=settings, client_profile=profile)
    except ClientError as e:
        raise click.ClickException(f"{address[0]}:{address[1]}: {e}") from None
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        _render_cluster(report)
    if not all(b["ok"] for b in report["brokers"]):
        raise SystemExit(1)


def _render_cluster(report: dict[str, Any]) -> None:
    console = make_console()
    console.print(
        f"API versions of the cluster {report['cluster_id']} (bootstrap {report['bootstrap']}, "
        f"{len(report['brokers'])} brokers, controller {report['controller_id']})"
    )
    for b in report["brokers"]:
        state = f"ApiVersions v{b['api_versions_version']}" if b["ok"] else f"[red]failed: {b['error']}[/]"
        console.print(f"  broker {b['node_id']} at {b['address']}: {state}")
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("key", justify="right", no_wrap=True)
    table.add_column("api", no_wrap=True)
    nodes = [str(b["node_id"]) for b in report["brokers"] if b["ok"]]
    for node in nodes:
        table.add_column(f"broker {node}", justify="right", no_wrap=True)
    table.add_column("kcodec", justify="right", no_wrap=True)
    table.add_column("use", justify="right", no_wrap=True)
    table.add_column("reason")
    for r in report["apis"]:
        ranges = [r["brokers"].get(n) for n in nodes]
        cells = ["-" if rng is None else f"{rng[0]}-{rng[1]}" for rng in ranges]
        kc = "-" if r["kcodec_min"] is None else f"{r['kcodec_min']}-{r['kcodec_max']}"
        use = "-" if r["negotiated"] is None else str(r["negotiated"])
        table.add_row(str(r["api_key"]), r["api_name"], *cells, kc, use, r["reason"] or "")
    console.print(table)


def parse_caps(caps: tuple[str, ...]) -> dict[int | str, tuple[int, int] | None]:
    """``("Fetch=0-8", "OffsetForLeaderEpoch=none")`` → ``{"Fetch": (0, 8), "OffsetForLeaderEpoch": None}``
    (keys: API names, or keys given as digits); a bad one is a usage error that says what is wrong."""
    from kcodec.protocol.registry import api

    out: dict[int | str, tuple[int, int] | None] = {}
    for cap in caps:
        name, sep, rng = (part.strip() for part in cap.partition("="))

        def bad(why: str, cap: str = cap) -> click.BadParameter:
            expected = "expected API=MIN-MAX or API=none"
            return click.BadParameter(f"{cap!r}: {why} ({expected})", param_hint="--cap")

        if not sep or not name or not rng:
            raise bad("missing API name or range")
        key: int | str = int(name) if name.isdigit() else name
        try:
            api(key)
        except KcodecError as e:
            raise bad(str(e)) from None
        if rng.lower() == "none":
            out[key] = None
            continue
        lo_text, dash, hi_text = rng.partition("-")
        hi_text = hi_text if dash else lo_text
        if not (lo_text.isdigit() and hi_text.isdigit()):
            raise bad(f"{rng!r} is not a version range")
        lo, hi = int(lo_text), int(hi_text)
        if lo > hi:
            raise bad(f"the range {lo}-{hi} is empty (MIN above MAX)")
        out[key] = (lo, hi)
    return out
