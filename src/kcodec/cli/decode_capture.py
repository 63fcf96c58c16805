"""``kcodec decode-capture``: the Kafka traffic in a pcap/pcapng file, as a table or JSON lines."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Literal

import click
from rich.markup import escape
from rich.table import Table

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
    from kcodec.capture import (
        DEFAULT_PORTS,
        CapturedFrame,
        CaptureIssue,
        iter_capture,
        record_lines,
        summarize,
    )

    all_ports = tuple(dict.fromkeys((*DEFAULT_PORTS, *ports)))
    events = iter_capture(capture, ports=all_ports, autodetect=not no_autodetect, strict=strict)
    try:
        if as_json:
            for ev in events:
                json_line(ev.to_dict(records=records_mode) if isinstance(ev, CapturedFrame) else ev.to_dict())
            return
        collected = list(events)
    except KcodecError as e:
        raise click.ClickException(f"{capture}: {e}") from None

    console = make_console()
    frames = [e for e in collected if isinstance(e, CapturedFrame)]
    issues = [e for e in collected if isinstance(e, CaptureIssue)]
    conns: dict[int, tuple[str, str]] = {}
    for fr in frames:
        conns.setdefault(fr.connection, (fr.client, fr.server))
    for number, (client, server) in sorted(conns.items()):
        console.print(f"connection #{number}: {escape(client)} -> {escape(server)}")
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("time", no_wrap=True)
    table.add_column("conn", justify="right", no_wrap=True)
    table.add_column("dir", no_wrap=True)
    table.add_column("api", no_wrap=True)
    table.add_column("corr", justify="right", no_wrap=True)
    table.add_column("bytes", justify="right", no_wrap=True)
    table.add_column("summary", overflow="fold")
    for ev in collected:
        if isinstance(ev, CaptureIssue):
            where = f"#{ev.connection}" if ev.connection is not None else ""
            table.add_row(
                _clock(ev.timestamp),
                where,
                "!!",
                f"[yellow]{ev.kind}[/]",
                "",
                "",
                f"[yellow]{escape(ev.message)}[/]",
            )
            continue
        name = ev.api_name or (f"key {ev.api_key}" if ev.api_key is not None else "?")
        api_text = f"{name} v{ev.api_version}" if ev.api_version is not None else name
        summary = escape(summarize(ev))
        if ev.error is not None:
            summary = f"[red]{summary}[/]"
        elif ev.direction == "response" and ev.latency is not None:
            summary = f"{summary} [dim]({ev.latency * 1000:.1f} ms)[/]".lstrip()
        table.add_row(
            _clock(ev.timestamp),
            f"#{ev.connection}",
            "->" if ev.direction == "request" else "<-",
            escape(api_text),
            "" if ev.correlation_id is None else str(ev.correlation_id),
            str(len(ev.raw)),
            summary,
        )
        if records_mode != "raw":
            for line in record_lines(ev, values=records_mode):
                table.add_row("", "", "", "", "", "", f"[dim]{escape(line)}[/]")
    console.print(table)
    bad = sum(1 for f in frames if f.error is not None)
    requests = sum(1 for f in frames if f.direction == "request")
    console.print(
        f"{len(frames)} frames ({requests} requests, {len(frames) - requests} responses) on "
        f"{len(conns)} connections; {bad} undecodable; {len(issues)} stream issues"
    )
