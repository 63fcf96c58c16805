"""``kcodec metadata``: the cluster's brokers, topics and partitions, in the habits of ``kcat -L``."""

from __future__ import annotations

import json
from typing import Any

import click

from kcodec.cli.common import broker_address, connection_options, connection_settings


@click.command("metadata")
@click.argument("target", metavar="HOST:PORT")
@click.option("--topic", "-t", "topics", multiple=True, help="Only this topic (repeatable); default: all.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object (kcat -L -J's shape, and more).")
@connection_options
def metadata_command(
    target: str, topics: tuple[str, ...], as_json: bool, timeout: float, **conn: Any
) -> None:
    """Brokers, controller, cluster id, and topics with partitions, leaders, leader epochs, replicas,
    in-sync replicas and offline replicas, as one broker (HOST:PORT) sees them.

    Like kcat -L, with the leader epoch after each leader; error codes are shown by Kafka's name.
    """
    from kcodec.net.client_errors import ClientError
    from kcodec.net.cluster import fetch_metadata

    address = broker_address(target)
    settings = connection_settings(timeout, **conn)
    try:
        md = fetch_metadata(address, topics=list(topics) or None, settings=settings)
    except ClientError as e:
        raise click.ClickException(str(e)) from None
    if as_json:
        obj = md.to_dict()
        obj["query"] = {"topic": list(topics) if topics else "*"}
        click.echo(json.dumps(obj, indent=2))
        return
    for line in render(md, list(topics)):
        click.echo(line)


def render(md: Any, topics: list[str]) -> list[str]:
    """``kcat -L``'s text, plus cluster id, leader epochs, offline replicas and error names."""
    what = "all topics" if not topics else ", ".join(topics)
    node = md.source_node_id
    origin = f"broker {node}: {md.source}/{node}" if node is not None else md.source
    lines = [f"Metadata for {what} (from {origin}, Metadata v{md.version}):"]
    if md.cluster_id is not None:
        lines.append(f" cluster id: {md.cluster_id}")
    lines.append(f" {len(md.brokers)} brokers:")
    for b in md.brokers:
        extra = " (controller)" if b.node_id == md.controller_id else ""
        rack = f", rack {b.rack}" if b.rack else ""
        lines.append(f"  broker {b.node_id} at {b.address}{rack}{extra}")
    lines.append(f" {len(md.topics)} topics:")
    for t in md.topics:
        err = f": {t.error}" if t.error else ""
        internal = " (internal)" if t.internal else ""
        lines.append(f'  topic "{t.name}" with {len(t.partitions)} partitions{internal}{err}')
        for p in t.partitions:
            text = (
                f"    partition {p.partition}, leader {p.leader}, leader epoch {p.leader_epoch}, "
                f"replicas: {_ids(p.replicas)}, isrs: {_ids(p.isr)}"
            )
            if p.offline_replicas:
                text += f", offline: {_ids(p.offline_replicas)}"
            if p.error:
                text += f", {p.error}"
            lines.append(text)
    lines.extend(f" note: {note}" for note in md.notes)
    return lines


def _ids(ids: tuple[int, ...]) -> str:
    return ",".join(map(str, ids))
