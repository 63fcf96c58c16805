"""``kcodec decode-capture``: the Kafka traffic in a pcap/pcapng file, as a table or JSON lines."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Literal

import click
from rich.markup import escape

from kcodec.cli.common import console as make_console
from kcodec.cli.common import json_line
from kcodec.errors import KcodecError


def _clock(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, tz=_dt.UTC).strftime("%H:%M:%S.%f")[:-3]


@click.command("decode-capture")
@click.argument("capture", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="JSON lines: one object per frame (header and body as Kafka JSON) or stream issue.",
)
@click.option("--strict", is_flag=True, help="Reject frames with bytes left after the body.")
@click.option(
    "--port", "ports", type=int, multiple=True, help="A Kafka broker port (repeatable), in addition to 9092."
)
@click.option(
    "--no-autodetect",
    is_flag=True,
    help="Only decode connections on Kafka ports (do not probe other TCP flows).",
)
@click.option(
    "--records",
    "records_mode",
    type=click.Choice(["raw", "base64", "text"]),
    default="raw",
    show_default=True,
    help="Records fields: raw (one base64 blob, Kafka JSON) or expanded into batches and records, with "
    "keys/values as base64 or as text where valid UTF-8 (table: a line per record).",
)
def decode_capture_command(
    capture: Path,
    as_json: bool,
    strict: bool,
    ports: tuple[int, ...],
    no_autodetect: bool,
    records_mode: Literal["raw", "base64", "text"],
) -> None:
    """Decode the Kafka traffic in a pcap/pcapng capture.

    Each TCP connection is reassembled, cut into frames and decoded: requests from the client,
    responses matched to them by correlation id. Undecodable frames and stream problems (gaps,
    a truncated tail) are reported, never fatal: the exit code is 0 even then (1 only if the
    file is not a pcap/pcapng file).
    """
    from kcodec.capture import DEFAULT_PORTS, CapturedFrame, CaptureIssue, iter_capture
    from kcodec.cli.capture_view import record_lines, summarize

    all_ports = tuple(dict.fromkeys((*DEFAULT_PORTS, *ports)))
    events = iter_capture(capture, ports=all_ports, autodetect=not no_autodetect, strict=strict)
    console = make_console()
    frames = requests = bad = issues = 0
    conns: set[int] = set()
    try:
        for ev in events:
            if as_json:
                json_line(ev.to_dict(records=records_mode) if isinstance(ev, CapturedFrame) else ev.to_dict())
                continue
            if isinstance(ev, CaptureIssue):
                issues += 1
                where = f"#{ev.connection}" if ev.connection is not None else ""
                text = f"{ev.kind}: {escape(ev.message)}"
                console.print(f"{_clock(ev.timestamp)} {where:>5} !! [yellow]{text}[/]")
                continue
            frames += 1
            requests += ev.direction == "request"
            bad += ev.error is not None
            if ev.connection not in conns:
                conns.add(ev.connection)
                console.print(f"connection #{ev.connection}: {escape(ev.client)} -> {escape(ev.server)}")
            name = ev.api_name or (f"key {ev.api_key}" if ev.api_key is not None else "?")
            api_text = f"{name} v{ev.api_version}" if ev.api_version is not None else name
            summary = escape(summarize(ev, width=10**6))
            if ev.error is not None:
                summary = f"[red]{summary}[/]"
            elif ev.direction == "response" and ev.latency is not None:
                summary = f"{summary} [dim]({ev.latency * 1000:.1f} ms)[/]".lstrip()
            arrow = "->" if ev.direction == "request" else "<-"
            corr = "" if ev.correlation_id is None else str(ev.correlation_id)
            console.print(
                f"{_clock(ev.timestamp)} {'#' + str(ev.connection):>5} {arrow} {escape(api_text):<28} "
                f"{corr:>6} {ev.size if ev.size is not None else '?':>7}  {summary}"
            )
            if records_mode != "raw":
                for line in record_lines(ev, values=records_mode):
                    console.print(f"{'':>52}[dim]{escape(line)}[/]")
    except KcodecError as e:
        raise click.ClickException(f"{capture}: {e}") from None
    if not as_json:
        console.print(
            f"{frames} frames ({requests} requests, {frames - requests} responses) on "
            f"{len(conns)} connections; {bad} undecodable; {issues} stream issues"
        )
