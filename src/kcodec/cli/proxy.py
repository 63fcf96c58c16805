"""``kcodec proxy``: a live decoding proxy in front of a Kafka cluster (:mod:`kcodec.proxy`).

Exit codes: 0 stopped by SIGTERM, 130 stopped by Ctrl-C (SIGINT), 1 it could not start (the listen
address is taken, an output file cannot be written), 2 usage error.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import IO, TYPE_CHECKING, Literal

import click

from kcodec.cli.capture_filters import EventFilter, parse_apis, parse_groups, parse_topics
from kcodec.cli.common import CONTEXT_SETTINGS, broker_address
from kcodec.cli.values import FiniteFloatRange

if TYPE_CHECKING:  # imported when the command runs (kcodec --help stays fast)
    from kcodec.cli.proxy_view import ProxyView
    from kcodec.proxy import PcapWriter, ProxyConfig

EXIT_SETUP, EXIT_INTERRUPTED = 1, 130
DEFAULT_MAX_FRAME = 100 * 1024 * 1024


def _listen_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` for ``--listen``, where port 0 means any free port; not a wildcard address."""
    head, sep, port = text.strip().rpartition(":")
    if sep and port == "0":
        host, _ = broker_address(f"{head}:1", "--listen")
        address = (host, 0)
    else:
        address = broker_address(text, "--listen")
    if address[0] in ("0.0.0.0", "::", "*", ""):
        raise click.BadParameter(
            f"{text!r}: give the address clients reach the proxy on, not a wildcard (the per-broker "
            "listeners are opened on it and advertised to clients with it)",
            param_hint="--listen",
        )
    return address


def _fail(message: str) -> None:
    click.echo(f"kcodec proxy: {message}", err=True)
    sys.exit(EXIT_SETUP)


@click.command("proxy", context_settings=CONTEXT_SETTINGS)
@click.option(
    "--listen",
    required=True,
    metavar="HOST:PORT",
    help="Where clients connect (port 0: any free port). Per-broker listeners open on the same host.",
)
@click.option("--upstream", required=True, metavar="HOST:PORT", help="The broker clients bootstrap from.")
@click.option(
    "--pcap",
    "pcap_path",
    type=click.Path(dir_okay=False),
    help="Record the traffic as clients saw it, with synthesised TCP/IP (kcodec decode-capture reads it).",
)
@click.option(
    "--json",
    "json_path",
    metavar="FILE",
    help="Write JSON lines: decoded frames and issues as decode-capture --json, and the proxy's notices "
    '("type": "proxy"). "-": to standard output, instead of the table.',
)
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="No table on standard output (only its first line); without --json or --summary nothing is "
    "decoded: the proxy only forwards, rewrites and records --pcap.",
)
@click.option("--summary", is_flag=True, help="No rows: totals per API, errors, latencies, clients at exit.")
@click.option("--api", "apis", multiple=True, metavar="NAME[,NAME]", help="Only show these APIs.")
@click.option(
    "--topic", "topics", multiple=True, metavar="NAME[,NAME]", help="Only show frames about these topics."
)
@click.option(
    "--group",
    "groups",
    multiple=True,
    metavar="NAME[,NAME]",
    help="Only show frames about these consumer groups.",
)
@click.option("--errors-only", is_flag=True, help="Only show frames that failed to decode or carry errors.")
@click.option("-V", "--verbose", is_flag=True, help="Table: every field of each frame below its row.")
@click.option(
    "--records",
    "records_mode",
    type=click.Choice(["raw", "base64", "text"]),
    default="raw",
    show_default=True,
    help="Records fields as one base64 blob, or expanded into batches and records.",
)
@click.option("--no-rewrite", is_flag=True, help="Forward broker addresses as they are (clients may leave).")
@click.option(
    "--connect-timeout",
    type=FiniteFloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Seconds to connect to a broker before giving up on the client's connection.",
)
@click.option(
    "--stall-timeout",
    type=FiniteFloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="Seconds a side may take nothing while data waits for it before both sides are closed.",
)
@click.option(
    "--idle-timeout",
    type=FiniteFloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Seconds a client may send nothing (no response awaited) before it is closed "
    "(Kafka's connections.max.idle.ms).",
)
@click.option(
    "--request-timeout",
    type=FiniteFloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="Seconds a request may take to arrive whole once it has begun; slower clients are closed.",
)
@click.option(
    "--max-connections",
    type=click.IntRange(min=1),
    default=1024,
    show_default=True,
    help="Client connections open at a time; more are closed on arrival (with a notice).",
)
@click.option(
    "--max-frame-size",
    type=click.IntRange(min=12, max=2**31 - 1),
    default=DEFAULT_MAX_FRAME,
    show_default=True,
    help="Largest frame forwarded; a larger size prefix closes the connection.",
)
@click.option("--strict", is_flag=True, help="Decode without leniency (as decode-capture --strict).")
def proxy_command(
    listen: str,
    upstream: str,
    pcap_path: str | None,
    json_path: str | None,
    quiet: bool,
    summary: bool,
    apis: tuple[str, ...],
    topics: tuple[str, ...],
    groups: tuple[str, ...],
    errors_only: bool,
    verbose: bool,
    records_mode: Literal["raw", "base64", "text"],
    no_rewrite: bool,
    connect_timeout: float,
    stall_timeout: float,
    idle_timeout: float,
    request_timeout: float,
    max_connections: int,
    max_frame_size: int,
    strict: bool,
) -> None:
    """Forward Kafka traffic between clients and a cluster, decoding it live.

    Clients connect to --listen as if it were the --upstream broker. Bytes go through unchanged both
    ways, except the broker addresses in Metadata, FindCoordinator, DescribeCluster (and Produce/Fetch
    leader hints) responses, which name proxy listeners instead, one per broker, so clients of a
    multi-broker cluster stay on the proxy. Traffic is shown as decode-capture shows a capture. The
    first line printed is the listen address. Ctrl-C stops with exit 130, SIGTERM with 0.
    """
    from kcodec.proxy import ProxyConfig, SessionLimits

    listen_at = _listen_address(listen)
    upstream_at = broker_address(upstream, "--upstream")
    flt = EventFilter(
        apis=parse_apis(apis),
        topics=parse_topics(topics),
        errors_only=errors_only,
        groups=parse_groups(groups),
    )
    json_to_stdout = json_path == "-"
    jsonout, pcap = _open_outputs(json_path, pcap_path)
    view = _view(
        flt,
        jsonout,
        upstream_at,
        table=not (quiet or summary or json_to_stdout),
        summary=summary,
        verbose=verbose,
        records=records_mode,
        json_to_stdout=json_to_stdout,
    )
    limits = SessionLimits(
        connect_timeout=connect_timeout,
        stall_timeout=stall_timeout,
        idle_timeout=idle_timeout,
        request_timeout=request_timeout,
        max_frame_size=max_frame_size,
        rewrite=not no_rewrite,
    )
    decode = not (quiet and json_path is None and not summary)
    config = ProxyConfig(
        listen_at, upstream_at, limits=limits, max_connections=max_connections, decode=decode, strict=strict
    )
    try:
        code = asyncio.run(_serve(config, view, pcap))
    finally:
        if pcap is not None:
            pcap.close()
        if view.started:
            view.end()
        if jsonout is not None and not json_to_stdout:
            jsonout.close()
    sys.exit(code)


def _open_outputs(json_path: str | None, pcap_path: str | None) -> tuple[IO[bytes] | None, PcapWriter | None]:
    """(where JSON lines go, the pcap writer); a file that cannot be written ends the command (1)."""
    from kcodec.proxy import PcapWriter

    jsonout: IO[bytes] | None = sys.stdout.buffer if json_path == "-" else None
    pcap: PcapWriter | None = None
    try:
        if json_path is not None and json_path != "-":
            jsonout = open(json_path, "wb")  # noqa: SIM115 (closed at exit)
        if pcap_path is not None:
            pcap = PcapWriter.open(pcap_path)
    except OSError as e:
        _fail(f"cannot write {e.filename}: {e.strerror or e}")
    return jsonout, pcap


def _view(
    flt: EventFilter,
    jsonout: IO[bytes] | None,
    upstream: tuple[str, int],
    *,
    table: bool,
    summary: bool,
    verbose: bool,
    records: Literal["raw", "base64", "text"],
    json_to_stdout: bool,
) -> ProxyView:
    """The presentation: decode-capture's output (table rows and/or JSON lines) and the notices."""
    from kcodec.cli.capture_output import CaptureOutput
    from kcodec.cli.capture_table import TableWriter
    from kcodec.cli.proxy_view import ProxyView

    writer = None
    if table:
        from rich.console import Console

        console = Console(highlight=False, soft_wrap=True) if sys.stdout.isatty() else None
        writer = TableWriter(console=console)
    output = CaptureOutput(
        flt=flt, table=writer, jsonout=jsonout, summary=summary, verbose=verbose, records=records
    )
    filtered = flt.apis is not None or flt.topics is not None or flt.errors_only
    return ProxyView(output, upstream=upstream, filtered=filtered, json_to_stdout=json_to_stdout)


async def _serve(config: ProxyConfig, view: ProxyView, pcap: PcapWriter | None) -> int:
    """Run the proxy until SIGINT (130) or SIGTERM (0); 1 if it cannot start."""
    from kcodec.proxy import Proxy, ProxySetupError

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    code = [0]

    def on_signal(exit_code: int) -> None:
        code[0] = exit_code
        stop.set()

    loop.add_signal_handler(signal.SIGINT, on_signal, EXIT_INTERRUPTED)
    loop.add_signal_handler(signal.SIGTERM, on_signal, 0)
    proxy = Proxy(config, on_event=view.event, pcap=pcap)
    try:
        await proxy.start()
    except ProxySetupError as e:
        click.echo(f"kcodec proxy: {e}", err=True)
        return EXIT_SETUP
    await stop.wait()
    await proxy.stop()
    s = proxy.stats
    how = "interrupted" if code[0] == EXIT_INTERRUPTED else "stopped"
    click.echo(
        f"kcodec proxy {how}: {s.accepted} connections, {s.request_bytes} bytes of requests and "
        f"{s.response_bytes} bytes of responses forwarded, {s.rewritten} responses rewritten",
        err=True,
    )
    return code[0]
