"""``kcodec decode-capture``: the Kafka traffic in a pcap/pcapng file, as a table or JSON lines.

Exit codes: 0 decoded (problems in the capture are reported, not fatal), 1 the file cannot be read or
is no capture, 2 usage error, 3 a ``--fail-on`` condition was met, 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal

import click

from kcodec.capture.counting import CountingReader
from kcodec.capture.parallel import can_fork, default_workers
from kcodec.cli.capture_filters import EventFilter, parse_addresses, parse_apis, parse_groups, parse_topics
from kcodec.cli.common import CONTEXT_SETTINGS, kafka_port_options

EXIT_UNREADABLE, EXIT_FAIL_ON, EXIT_INTERRUPTED = 1, 3, 130
FAIL_ON = ("issues", "errors", "error-codes", "diagnostics")


def _fail_on(values: tuple[str, ...]) -> frozenset[str]:
    out: set[str] = set()
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if item not in FAIL_ON:
                raise click.BadParameter(
                    f"{item!r} is not one of {', '.join(FAIL_ON)}", param_hint="--fail-on"
                )
            out.add(item)
    return frozenset(out)


def _jobs(jobs: int | None, capture: str) -> int:
    """The processes that decode ``capture``: ``jobs`` (None: ``-j auto``, as
    :func:`~kcodec.capture.parallel.default_workers` chooses), one for anything but a regular file."""
    if capture == "-" or not Path(capture).is_file():
        return 1  # (standard input, a pipe or a device: read once, by one process)
    if not can_fork():
        return 1  # (workers are forked: not on Windows)
    if jobs is not None:
        return jobs
    return default_workers(capture)


def _jobs_option(ctx: click.Context, param: click.Parameter, value: str) -> int | None:
    """``-j N`` (1 to 64) or ``-j auto`` (None)."""
    if value == "auto":
        return None
    try:
        jobs = int(value)
    except ValueError:
        jobs = 0
    if not 1 <= jobs <= 64:
        raise click.BadParameter(f"{value!r} is neither a number from 1 to 64 nor 'auto'")
    return jobs


@click.command("decode-capture", context_settings=CONTEXT_SETTINGS)
@click.argument("capture", metavar="CAPTURE")
@click.option(
    "--json", "as_json", is_flag=True, help="JSON lines: one object per frame, issue (and summary)."
)
@click.option(
    "--summary",
    is_flag=True,
    help="Print totals instead of frames: per API and version, error codes, "
    "latency percentiles, clients and the versions they used, leader-epoch fencing, issues.",
)
@click.option("--api", "apis", multiple=True, metavar="NAME[,NAME]", help="Only these APIs (names or keys).")
@click.option(
    "--client",
    "clients",
    multiple=True,
    metavar="ADDR",
    help="Only connections from HOST, HOST:PORT or :PORT (HOST: an IP address).",
)
@click.option(
    "--server",
    "servers",
    multiple=True,
    metavar="ADDR",
    help="Only connections to HOST, HOST:PORT or :PORT (HOST: an IP address).",
)
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="NAME[,NAME]",
    help="Only frames about these topics (ids resolved; and the frames of groups whose members subscribe "
    "to them or are assigned them).",
)
@click.option(
    "--group",
    "groups",
    multiple=True,
    metavar="NAME[,NAME]",
    help="Only frames about these consumer groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, "
    "OffsetCommit/Fetch, FindCoordinator, DescribeGroups, ...; requests and their responses).",
)
@click.option(
    "--errors-only", is_flag=True, help="Only frames that failed to decode or carry a Kafka error code."
)
@click.option(
    "-c", "--count", type=click.IntRange(min=1), default=None, metavar="N", help="Stop after N frames."
)
@click.option("-V", "--verbose", is_flag=True, help="Table: every field of each frame shown below its row.")
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    metavar="WHAT",
    help=f"Exit 3 if the frames shown have any of: {', '.join(FAIL_ON)} (comma-separated, repeatable).",
)
@click.option(
    "--strict", is_flag=True, help="No leniency: bytes after a body or a known off-spec layout is an error."
)
@kafka_port_options
@click.option(
    "--records",
    "records_mode",
    type=click.Choice(["raw", "base64", "text"]),
    default="raw",
    show_default=True,
    help="Records fields: raw (one base64 blob, Kafka JSON) or expanded into batches and records, with "
    "keys/values as base64 or as text where valid UTF-8 (table: a line per record).",
)
@click.option(
    "-j",
    "--jobs",
    default="1",
    show_default=True,
    callback=_jobs_option,
    metavar="N|auto",
    help="Processes decoding a file, each a share of its connections (the output is the same as with "
    "one). Workers cost about a quarter more CPU in all than one process and finish sooner only on idle "
    "cores; auto: for files of 16 MiB or more, one per idle core (the cores less the load average; up "
    "to 8) when two or more are idle, otherwise 1.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress on stderr (default: when it is a terminal, for --summary or frames written to a file; "
    "not for a pipe, whose reader may print to the same terminal).",
)
def decode_capture_command(
    capture: str,
    as_json: bool,
    summary: bool,
    apis: tuple[str, ...],
    clients: tuple[str, ...],
    servers: tuple[str, ...],
    topics: tuple[str, ...],
    groups: tuple[str, ...],
    errors_only: bool,
    count: int | None,
    verbose: bool,
    fail_on: tuple[str, ...],
    strict: bool,
    ports: tuple[int, ...],
    no_autodetect: bool,
    records_mode: Literal["raw", "base64", "text"],
    jobs: int | None,
    progress: bool | None,
) -> None:
    """Decode the Kafka traffic in a pcap/pcapng capture (CAPTURE: a file, or - for standard input).

    Each TCP connection is reassembled, cut into frames and decoded: requests from the client,
    responses matched to them by correlation id. Frames stream out as they are decoded. Undecodable
    frames, off-spec frames (with how they were read) and problems with the file or the streams are
    reported, never fatal. Exit codes: 0 decoded, 1 unreadable file, 2 usage, 3 --fail-on met,
    130 interrupted.
    """
    flt = EventFilter(
        apis=parse_apis(apis),
        clients=parse_addresses(clients, "--client"),
        servers=parse_addresses(servers, "--server"),
        topics=parse_topics(topics),
        errors_only=errors_only,
        groups=parse_groups(groups),
    )
    conditions = _fail_on(fail_on)
    from kcodec.cli.capture_run import Run

    try:
        source: Any = sys.stdin.buffer if capture == "-" else open(Path(capture), "rb")  # noqa: SIM115
    except OSError as e:
        click.echo(f"kcodec decode-capture: {capture}: {e.strerror or e}", err=True)
        sys.exit(EXIT_UNREADABLE)
    counting = CountingReader(source)
    run = Run(
        counting,
        label=capture,
        flt=flt,
        as_json=as_json,
        summary=summary,
        count=count,
        verbose=verbose,
        strict=strict,
        ports=ports,
        autodetect=not no_autodetect,
        records=records_mode,
        progress=progress,
        jobs=_jobs(jobs, capture),
        path=None if capture == "-" else capture,
    )
    try:
        code = run.execute(conditions)
    finally:
        if source is not sys.stdin.buffer:
            source.close()
    sys.exit(code)
