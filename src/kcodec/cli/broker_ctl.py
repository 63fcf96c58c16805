"""``kcodec broker-ctl``: the control API of a running ``kcodec broker --control HOST:PORT``."""

from __future__ import annotations

import json
from typing import Any

import click

from kcodec.cli.common import CONTEXT_SETTINGS, parse_listen


@click.group("broker-ctl", context_settings=CONTEXT_SETTINGS)
@click.argument("control", metavar="CONTROL_HOST:PORT")
@click.pass_context
def broker_ctl_command(ctx: click.Context, control: str) -> None:
    """Move leadership, run unclean leader elections and inspect partitions of a running mock cluster.

    CONTROL_HOST:PORT is the address `kcodec broker --control` printed on its second line. Each
    command prints its result as one JSON line.
    """
    ctx.obj = parse_listen(control, "CONTROL_HOST:PORT")


def _send(ctx: click.Context, request: dict[str, Any]) -> None:
    from kcodec.broker import BrokerError
    from kcodec.broker.control import control_request

    host, port = ctx.obj
    try:
        result = control_request(host, port, request)
    except (BrokerError, OSError) as e:
        click.echo(f"kcodec broker-ctl: {e}", err=True)
        raise SystemExit(1) from None
    click.echo(json.dumps(result))


@broker_ctl_command.command("topics")
@click.pass_context
def topics(ctx: click.Context) -> None:
    """Topics and their partition counts."""
    _send(ctx, {"op": "topics"})


@broker_ctl_command.command("create-topic")
@click.argument("topic")
@click.option("--partitions", type=click.IntRange(1), default=1, show_default=True)
@click.option("--replication-factor", type=click.IntRange(1), default=None)
@click.pass_context
def create_topic(ctx: click.Context, topic: str, partitions: int, replication_factor: int | None) -> None:
    """Create a topic."""
    _send(
        ctx,
        {
            "op": "create_topic",
            "topic": topic,
            "partitions": partitions,
            "replication_factor": replication_factor,
        },
    )


@broker_ctl_command.command("describe")
@click.argument("topic")
@click.argument("partition", type=click.IntRange(0), default=0)
@click.pass_context
def describe(ctx: click.Context, topic: str, partition: int) -> None:
    """Leader, leader epoch, replicas, offsets and epoch cache of a partition."""
    _send(ctx, {"op": "describe", "topic": topic, "partition": partition})


@broker_ctl_command.command("move-leader")
@click.argument("topic")
@click.argument("partition", type=click.IntRange(0), default=0)
@click.option("--to", type=int, default=None, help="Node id of the new leader (default: the next replica).")
@click.pass_context
def move_leader(ctx: click.Context, topic: str, partition: int, to: int | None) -> None:
    """Move leadership to another replica: the leader epoch goes up by one."""
    _send(ctx, {"op": "move_leader", "topic": topic, "partition": partition, "to": to})


@broker_ctl_command.command("unclean-election")
@click.argument("topic")
@click.argument("partition", type=click.IntRange(0))
@click.option("--truncate-to", type=click.IntRange(0), required=True, help="The new leader's log end offset.")
@click.option("--to", type=int, default=None, help="Node id of the new leader (default: the next replica).")
@click.option("--record", "records", multiple=True, help="A value the new leader writes (repeatable).")
@click.pass_context
def unclean_election(
    ctx: click.Context, topic: str, partition: int, truncate_to: int, to: int | None, records: tuple[str, ...]
) -> None:
    """Truncate the partition, elect a new leader at epoch + 1 and (optionally) write new records."""
    _send(
        ctx,
        {
            "op": "unclean_election",
            "topic": topic,
            "partition": partition,
            "truncate_to": truncate_to,
            "to": to,
            "records": list(records) or None,
        },
    )


@broker_ctl_command.command("requests")
@click.pass_context
def requests(ctx: click.Context) -> None:
    """Requests served so far, per API and version."""
    _send(ctx, {"op": "requests"})


@broker_ctl_command.command("inject-errors")
@click.argument("api")
@click.argument("errors", nargs=-1, type=int, required=True)
@click.option("--broker", type=int, default=None, help="Only requests to this node id (default: any broker).")
@click.option(
    "--latency-ms",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="Wait this long before each answer.",
)
@click.pass_context
def inject_errors(
    ctx: click.Context, api: str, errors: tuple[int, ...], broker: int | None, latency_ms: int
) -> None:
    """Answer the next requests of API (name or key) with ERRORS (Kafka error codes, one request each;
    0 serves the request after the latency)."""
    api_arg: str | int = int(api) if api.isdigit() else api
    request = {"op": "inject_errors", "api": api_arg, "errors": list(errors), "latency_ms": latency_ms}
    _send(ctx, {**request, "broker": broker})


@broker_ctl_command.command("broker-down")
@click.argument("broker", type=int)
@click.pass_context
def broker_down(ctx: click.Context, broker: int) -> None:
    """Take a broker down: its connections are dropped and new ones closed at once."""
    _send(ctx, {"op": "broker_down", "broker": broker})


@broker_ctl_command.command("broker-up")
@click.argument("broker", type=int)
@click.pass_context
def broker_up(ctx: click.Context, broker: int) -> None:
    """Bring a broker that is down back up."""
    _send(ctx, {"op": "broker_up", "broker": broker})


@broker_ctl_command.command("stale-metadata")
@click.argument("broker", type=int)
@click.option(
    "--behind", type=click.IntRange(0), default=1, show_default=True, help="Leadership changes behind."
)
@click.pass_context
def stale_metadata(ctx: click.Context, broker: int, behind: int) -> None:
    """Make a broker's Metadata show every partition as it was BEHIND leadership changes ago (0: current)."""
    _send(ctx, {"op": "stale_metadata", "broker": broker, "behind": behind})


@broker_ctl_command.command("faults")
@click.pass_context
def faults(ctx: click.Context) -> None:
    """Injected answers still waiting, brokers down, stale brokers."""
    _send(ctx, {"op": "faults"})


@broker_ctl_command.command("clear-faults")
@click.pass_context
def clear_faults(ctx: click.Context) -> None:
    """Drop injected answers, bring every broker up and up to date."""
    _send(ctx, {"op": "clear_faults"})
