"""``kcodec versions``: a broker's API versions against kcodec's, and the negotiated ones."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kcodec.errors import KcodecError


@click.command("versions")
@click.argument("target")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: apis, fingerprint, handshake.")
@click.option("--timeout", type=float, default=5.0, show_default=True, help="Seconds per request.")
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
    "--proposals",
    is_flag=True,
    help="Let kcodec's side offer proposal versions (KIP-359 Produce v14) when the broker advertises them.",
)
def versions_command(
    target: str, as_json: bool, timeout: float, captured: bool, caps: tuple[str, ...], proposals: bool
) -> None:
    """Broker API versions vs kcodec's, the negotiated version per API and a release fingerprint.

    TARGET is HOST:PORT (runs the KIP-511 handshake over TCP) or, with --captured, a file.
    """
    from kcodec.negotiation import kcodec_profile, render_versions_report, versions_report

    profile = kcodec_profile(_parse_caps(caps), proposals=proposals) if caps else None
    source: str | bytes = Path(target).read_bytes() if captured else target
    report = versions_report(source, timeout=timeout, client_profile=profile, proposals=proposals)
    if as_json:
        click.echo(json.dumps(report, indent=2, default=str))
    else:
        click.echo(render_versions_report(report))
    if not report["handshake"].get("ok", True):
        raise SystemExit(1)


def _parse_caps(caps: tuple[str, ...]) -> dict[int | str, tuple[int, int] | None]:
    """``("Fetch=0-8", "OffsetForLeaderEpoch=none")`` → ``{"Fetch": (0, 8), "OffsetForLeaderEpoch": None}``
    (keys: API names, or keys given as digits)."""
    from kcodec.registry import api

    out: dict[int | str, tuple[int, int] | None] = {}
    for cap in caps:
        name, sep, rng = cap.partition("=")
        lo, dash, hi = rng.partition("-")
        try:
            api(int(name) if name.isdigit() else name)
            if not sep:
                raise ValueError("no '='")
            out[int(name) if name.isdigit() else name] = (
                None if rng.strip().lower() == "none" else (int(lo), int(hi) if dash else int(lo))
            )
        except (KcodecError, ValueError) as e:
            raise click.BadParameter(
                f"{cap!r}: expected API=MIN-MAX or API=none ({e})", param_hint="--cap"
            ) from e
    return out
