"""``kcodec broker``: run a mock Kafka cluster (kcodec.broker) until SIGTERM or Ctrl-C."""

from __future__ import annotations

import asyncio
import signal
import sys

import click

from kcodec.cli.common import parse_listen

SIGINT_EXIT = 130


@click.command("broker")
@click.option(
    "--listen",
    default="127.0.0.1:9092",
    show_default=True,
    metavar="HOST:PORT",
    help="Address of the first broker; the others take the next ports (port 0: the OS chooses).",
)
@click.option(
    "--brokers", type=click.IntRange(1, 64), default=1, show_default=True, help="Brokers in the cluster."
)
@click.option(
    "--topic", "topics", multiple=True, metavar="NAME[:PARTITIONS]", help="Create a topic (repeatable)."
)
@click.option(
    "--control",
    metavar="HOST:PORT",
    help="Also serve the control API (JSON lines, see kcodec broker-ctl) here; printed on the second line.",
)
@click.option("--proposals", is_flag=True, help="Serve kcodec's proposal versions (KIP-359 Produce v14).")
@click.option(
    "--partition-max-bytes",
    type=click.IntRange(1024),
    default=64 * 1024 * 1024,
    show_default=True,
    help="Bytes of batches a partition keeps (older ones are dropped).",
)
@click.option(
    "--connections-max-idle-ms",
    type=click.IntRange(1),
    default=600_000,
    show_default=True,
    help="Close a connection that sends nothing (or reads nothing of a response) this long (Kafka's "
    "connections.max.idle.ms).",
)
@click.option(
    "--request-timeout-ms",
    type=click.IntRange(1),
    default=30_000,
    show_default=True,
    help="Close a connection whose request frame takes longer than this to arrive once it has begun.",
)
@click.option(
    "--max-connections",
    type=click.IntRange(1),
    default=1_000,
    show_default=True,
    help="Connections per broker at a time; more are closed on arrival (and logged).",
)
def broker_command(
    listen: str,
    brokers: int,
    topics: tuple[str, ...],
    control: str | None,
    proposals: bool,
    partition_max_bytes: int,
    connections_max_idle_ms: int,
    request_timeout_ms: int,
    max_connections: int,
) -> None:
    """Run an in-memory mock Kafka cluster that enforces leader-epoch fencing.

    Prints the bootstrap address list on its first line of output (and the control address on the
    second, with --control), then serves until SIGTERM (exit 0) or Ctrl-C (exit 130).
    """
    from kcodec.broker import BrokerConfig

    host, port = parse_listen(listen, "--listen")
    ctl = parse_listen(control, "--control") if control else None
    wanted = [_topic_arg(t) for t in topics]
    try:
        config = BrokerConfig(
            brokers=brokers,
            host=host,
            port=port,
            proposals=proposals,
            partition_max_bytes=partition_max_bytes,
            connections_max_idle_ms=connections_max_idle_ms,
            request_timeout_ms=request_timeout_ms,
            max_connections=max_connections,
        )
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--listen/--brokers") from e
    code = asyncio.run(_serve(config, wanted, ctl))
    sys.exit(code)


def _topic_arg(text: str) -> tuple[str, int]:
    name, sep, count = text.partition(":")
    if not name or (sep and not count.isdigit()) or (sep and int(count) < 1):
        raise click.BadParameter(f"{text!r}: expected NAME or NAME:PARTITIONS", param_hint="--topic")
    return name, int(count) if sep else 1


async def _serve(config: object, topics: list[tuple[str, int]], control: tuple[str, int] | None) -> int:
    from kcodec.broker import AsyncMockCluster, BrokerConfig, BrokerError
    from kcodec.broker.control import ControlServer

    assert isinstance(config, BrokerConfig)
    stop = asyncio.Event()
    code = 0

    def on_signal(signum: int) -> None:
        nonlocal code
        code = SIGINT_EXIT if signum == signal.SIGINT else 0
        stop.set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):  # before the first line: a caller may signal right after it
        loop.add_signal_handler(sig, on_signal, sig)
    cluster = AsyncMockCluster(config)
    ctl_server: ControlServer | None = None
    try:
        await cluster.start()
        for name, partitions in topics:
            cluster.create_topic(name, partitions)
        if control is not None:
            ctl_server = ControlServer(cluster, *control)
            await ctl_server.start()
    except (OSError, BrokerError) as e:
        await cluster.stop()
        click.echo(f"kcodec broker: {e}", err=True)
        return 1
    click.echo(cluster.bootstrap)
    if ctl_server is not None:
        click.echo(f"control {ctl_server.host}:{ctl_server.port}")
    sys.stdout.flush()
    try:
        await stop.wait()
    finally:
        if ctl_server is not None:
            await ctl_server.close()
        await cluster.stop()
    return code
