"""``kcodec describe``: the fields of one message at one version."""

from __future__ import annotations

import difflib
import json
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from kcodec.cli.common import console
from kcodec.protocol.errors import KcodecError
from kcodec.protocol.model import Uuid
from kcodec.protocol.schema import STRUCT_DEFAULT, FieldInfo, MessageInfo, range_text


def suggestions(name: str, limit: int = 5) -> list[str]:
    """Message and API names close to ``name``: close spellings first (difflib), then names that
    contain it (``FetchReqest`` -> FetchRequest; ``offsetfetch`` -> OffsetFetchRequest, ...)."""
    from kcodec.protocol.codec import message_names
    from kcodec.protocol.registry import apis

    names = [*message_names(), *(a.name for a in apis())]
    lowered: dict[str, str] = {}
    for n in names:
        lowered.setdefault(n.lower(), n)
    key = name.lower()
    close = difflib.get_close_matches(key, list(lowered), n=limit, cutoff=0.75)
    contained = sorted(low for low in lowered if key and key in low and low not in close)
    return [lowered[low] for low in [*close, *contained]][:limit]


def resolve_message(name: str) -> str:
    """A message name (``FetchResponse``, ``RequestHeader``) or an API name/key (its request)."""
    from kcodec.protocol.codec import message_names
    from kcodec.protocol.registry import api

    names = message_names()
    if name in names:
        return name
    lowered = {n.lower(): n for n in names}
    if name.lower() in lowered:
        return lowered[name.lower()]
    try:
        return api(int(name) if name.isdigit() else name).request
    except KcodecError:
        pass
    hint = f"; did you mean {', '.join(suggestions(name))}?" if suggestions(name) else ""
    raise click.BadParameter(f"no message or API named {name!r}{hint}", param_hint="MESSAGE")


def _default_text(f: FieldInfo) -> str:
    if f.default_text is not None:
        if f.type == "string" and f.default_text != "null":
            return json.dumps(f.default_text)
        return f.default_text
    if f.is_array:
        return "[]"
    if f.default is STRUCT_DEFAULT:
        return "{}"
    if f.default is None:
        return "null"
    if isinstance(f.default, str):
        return json.dumps(f.default)
    if isinstance(f.default, bool):
        return "true" if f.default else "false"
    if isinstance(f.default, Uuid):
        return str(f.default)
    if isinstance(f.default, bytes):
        return "empty" if not f.default else f.default.hex()
    return str(f.default)


def field_tree(info: MessageInfo, struct: str, version: int, depth: int = 0) -> list[dict[str, Any]]:
    """The fields of ``struct`` at ``version`` as nested dicts (``fields`` for struct-typed fields)."""
    out: list[dict[str, Any]] = []
    for f in info.fields_at(struct, version):
        lo, hi = f.versions
        item: dict[str, Any] = {
            "name": f.name,
            "attr": f.attr,
            "json_name": f.json_name,
            "type": f.type,
            "versions": range_text(f.versions),
            "since": lo,
            "until": None if hi >= 0x7FFF else hi,
            "nullable": f.is_nullable(version),
            "tagged": f.is_tagged(version),
            "tag": f.tag if f.is_tagged(version) else None,
            "default": _default_text(f),
            "ignorable": f.ignorable,
        }
        if f.map_key:
            item["map_key"] = True
        if f.entity_type:
            item["entity_type"] = f.entity_type
        if f.about is not None:
            item["about"] = f.about
        child = f.struct_name
        if child is not None and child in info.structs and depth < 32:
            item["fields"] = field_tree(info, child, version, depth + 1)
        out.append(item)
    return out


def newest_released_version(info: MessageInfo) -> int:
    """The version ``describe`` shows when none is given: the API's newest version an Apache Kafka
    spec defines (not a proposal's, such as kcodec's KIP-359 Produce v14); for headers, the newest."""
    from kcodec.protocol.registry import api

    if info.api_key is None:
        return info.versions[1]
    return api(info.api_key).released_max_version


@click.command("describe")
@click.argument("message")
@click.option(
    "--version",
    "-v",
    "version",
    type=int,
    default=None,
    help="Message version (default: the newest an Apache Kafka spec defines).",
)
@click.option("--json", "as_json", is_flag=True, help="The field tree as JSON.")
def describe_command(message: str, version: int | None, as_json: bool) -> None:
    """Show the fields of MESSAGE at a version, as a tree.

    MESSAGE is a message name (FetchResponse, RequestHeader, ...) or an API name or key (Fetch, 1),
    which means that API's request.
    """
    from kcodec.protocol.codec import message_info

    name = resolve_message(message)
    info = message_info(name)
    if version is None:
        version = newest_released_version(info)
    if version not in info.owners:
        lo, hi = info.versions
        raise click.BadParameter(
            f"{name} has no version {version} (kcodec knows {lo}-{hi})", param_hint="--version"
        )
    tree = field_tree(info, name, version)
    spec_set = info.owners[version]
    flexible = info.is_flexible(version)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "message": name,
                    "kind": info.kind,
                    "api_key": info.api_key,
                    "version": version,
                    "flexible": flexible,
                    "spec_set": spec_set,
                    "fields": tree,
                },
                indent=2,
            )
        )
        return
    key = f", api key {info.api_key}" if info.api_key is not None else ""
    title = (
        f"{name} v{version} ({info.kind}{key}; {'flexible' if flexible else 'not flexible'}; "
        f"spec set {spec_set})"
    )
    out = console()
    table = _table(title, tree, None)
    room = out.width - out.measure(table).maximum - 2  # what the columns leave of the width
    if room >= _MIN_DESCRIPTION:  # the spec's description of each field, cut to that room
        table = _table(title, tree, room)
    out.print(table)


_MIN_DESCRIPTION = 20
"""The narrowest description column ``describe`` prints (in a narrower terminal: none)."""


def _table(title: str, tree: list[dict[str, Any]], description: int | None) -> Table:
    """The field tree as a table, one row per field; with a description column ``description`` wide."""
    table = Table(title=escape(title), title_justify="left", box=None, pad_edge=False)
    table.add_column("field", no_wrap=True)
    table.add_column("attribute", no_wrap=True, style="dim")
    table.add_column("type", no_wrap=True)
    table.add_column("versions", no_wrap=True)
    table.add_column("nullable", no_wrap=True)
    table.add_column("tag", justify="right", no_wrap=True)
    table.add_column("default", no_wrap=True)
    if description is not None:
        table.add_column("description", no_wrap=True, overflow="ellipsis", max_width=description)

    def rows(items: list[dict[str, Any]], depth: int) -> None:
        for it in items:
            cells = [
                "  " * depth + ("└ " if depth else "") + it["name"],
                it["attr"],
                escape(it["type"]),
                it["versions"],
                "nullable" if it["nullable"] else "",
                "" if it["tag"] is None else str(it["tag"]),
                escape(it["default"]),
            ]
            if description is not None:
                cells.append(escape(it.get("about", "")))
            table.add_row(*cells)
            rows(it.get("fields", []), depth + 1)

    rows(tree, 0)
    return table
