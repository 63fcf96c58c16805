"""The ``kcodec`` command: ``apis``, ``describe``, ``generate`` and ``decode-capture``.

The commands only format; the work is done by the library (``kcodec.registry``, ``kcodec.schema``,
``kcodec.capture``) or, for ``generate``, by the generator run as a subprocess (``python -m
codegen.generate``) because the runtime never imports the build-time ``codegen`` package.
"""

from __future__ import annotations

import datetime as _dt
import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kcodec.errors import KcodecError
from kcodec.model import Uuid
from kcodec.schema import STRUCT_DEFAULT, FieldInfo, MessageInfo, range_text

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}


def _console() -> Console:
    # Wide enough for the tables even when stdout is not a terminal (pipes, CliRunner).
    console = Console(highlight=False, soft_wrap=False)
    if not console.is_terminal:
        console = Console(highlight=False, soft_wrap=False, width=max(console.width, 160))
    return console


def _json_line(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))


def ranges(versions: Iterable[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    out: list[str] = []
    vs = sorted(set(versions))
    i = 0
    while i < len(vs):
        j = i
        while j + 1 < len(vs) and vs[j + 1] == vs[j] + 1:
            j += 1
        out.append(str(vs[i]) if i == j else f"{vs[i]}-{vs[j]}")
        i = j + 1
    return ", ".join(out)


def source_ranges(sources: dict[int, str]) -> list[tuple[int, int, str]]:
    """``{0: "a", 1: "a", 2: "b"}`` -> ``[(0, 1, "a"), (2, 2, "b")]``."""
    out: list[tuple[int, int, str]] = []
    for v in sorted(sources):
        name = sources[v]
        if out and out[-1][2] == name and out[-1][1] == v - 1:
            out[-1] = (out[-1][0], v, name)
        else:
            out.append((v, v, name))
    return out


def _vtext(lo: int, hi: int) -> str:
    return f"v{lo}" if lo == hi else f"v{lo}-{hi}"


@click.group(context_settings=_CONTEXT)
@click.version_option(package_name="kcodec", prog_name="kcodec")
def main() -> None:
    """kcodec: Apache Kafka wire-protocol codecs generated from Kafka's JSON message specs."""


# --- apis ----------------------------------------------------------------------------------------


@main.command("apis")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per API (JSON lines).")
def apis_command(as_json: bool) -> None:
    """List every API: key, name, versions, flexible versions and the spec set of each version."""
    from kcodec.registry import apis

    if as_json:
        for a in apis():
            _json_line(
                {
                    "key": a.key,
                    "name": a.name,
                    "request": a.request,
                    "response": a.response,
                    "min_version": a.min_version,
                    "max_version": a.max_version,
                    "flexible_from": a.flexible_from,
                    "sources": [
                        {"from": lo, "to": hi, "spec_set": s} for lo, hi, s in source_ranges(a.sources)
                    ],
                    "deprecated_versions": list(a.deprecated_versions),
                    "unstable_versions": list(a.unstable_versions),
                    "listeners": list(a.listeners),
                }
            )
        return
    table = Table(title="Kafka APIs known to kcodec", title_justify="left")
    table.add_column("key", justify="right", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("versions", no_wrap=True)
    for name in ("flexible", "spec sets", "deprecated", "unstable"):
        table.add_column(name)
    for a in apis():
        table.add_row(
            str(a.key),
            a.name,
            f"{a.min_version}-{a.max_version}" if a.max_version != a.min_version else str(a.min_version),
            "-" if a.flexible_from is None else f"{a.flexible_from}+",
            ", ".join(f"{_vtext(lo, hi)} {escape(s)}" for lo, hi, s in source_ranges(a.sources)),
            ranges(a.deprecated_versions) or "",
            ranges(a.unstable_versions) or "",
        )
    _console().print(table)


# --- describe ------------------------------------------------------------------------------------


def resolve_message(name: str) -> str:
    """A message name (``FetchResponse``, ``RequestHeader``) or an API name/key (its request)."""
    from kcodec.codec import message_names
    from kcodec.registry import api

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
    close = [n for n in names if name.lower() in n.lower()][:8]
    hint = f"; did you mean {', '.join(close)}?" if close else ""
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
        child = f.struct_name
        if child is not None and child in info.structs and depth < 32:
            item["fields"] = field_tree(info, child, version, depth + 1)
        out.append(item)
    return out


@main.command("describe")
@click.argument("message")
@click.option("--version", "-v", "version", type=int, required=True, help="Message version.")
@click.option("--json", "as_json", is_flag=True, help="The field tree as JSON.")
def describe_command(message: str, version: int, as_json: bool) -> None:
    """Show the fields of MESSAGE at a version, as a tree.

    MESSAGE is a message name (FetchResponse, RequestHeader, ...) or an API name or key (Fetch, 1),
    which means that API's request.
    """
    from kcodec.codec import message_info

    name = resolve_message(message)
    info = message_info(name)
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
    table = Table(title=escape(title), title_justify="left", box=None, pad_edge=False)
    table.add_column("field", no_wrap=True)
    table.add_column("attribute", no_wrap=True, style="dim")
    table.add_column("type", no_wrap=True)
    table.add_column("versions", no_wrap=True)
    table.add_column("nullable", no_wrap=True)
    table.add_column("tag", justify="right", no_wrap=True)
    table.add_column("default", no_wrap=True)

    def rows(items: list[dict[str, Any]], depth: int) -> None:
        for it in items:
            table.add_row(
                "  " * depth + ("└ " if depth else "") + it["name"],
                it["attr"],
                escape(it["type"]),
                it["versions"],
                "nullable" if it["nullable"] else "",
                "" if it["tag"] is None else str(it["tag"]),
                escape(it["default"]),
            )
            rows(it.get("fields", []), depth + 1)

    rows(tree, 0)
    _console().print(table)


# --- generate ------------------------------------------------------------------------------------


@main.command("generate")
@click.option(
    "--specs",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    required=True,
    help="Schemas folder: sets.json plus one folder of Kafka JSON specs per spec set.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder to write the generated package to (created if missing).",
)
def generate_command(specs: Path, out: Path) -> None:
    """Generate a codec package from your own spec folder (runs kcodec's generator)."""
    cmd = [sys.executable, "-m", "codegen.generate", "--specs", str(specs), "--out", str(out)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as e:
        raise click.ClickException(f"could not run the generator: {e}") from None
    if proc.returncode != 0:
        err = proc.stderr.strip()
        if "No module named codegen" in err or "No module named 'codegen'" in err:
            raise click.ClickException(
                "the generator (the codegen package, shipped with kcodec) is not installed in "
                f"{sys.executable}; reinstall kcodec"
            )
        lines = [line for line in err.splitlines() if line.strip()]
        last = lines[-1] if lines else f"exit code {proc.returncode}"
        raise click.ClickException(f"generating from {specs} failed: {last}")
    modules = sorted(p.name for p in out.glob("*.py") if p.name != "__init__.py")
    if not modules:
        raise click.ClickException(
            f"no message specs found in {specs} (expected sets.json and one folder of *.json specs per set)"
        )
    click.echo(
        f"generated {len(modules)} modules into {out} (package {out.name!r}: "
        f"add {out.resolve().parent} to sys.path to import it)"
    )


# --- decode-capture ------------------------------------------------------------------------------


def _clock(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, tz=_dt.UTC).strftime("%H:%M:%S.%f")[:-3]


@main.command("decode-capture")
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
                _json_line(
                    ev.to_dict(records=records_mode) if isinstance(ev, CapturedFrame) else ev.to_dict()
                )
            return
        collected = list(events)
    except KcodecError as e:
        raise click.ClickException(f"{capture}: {e}") from None

    console = _console()
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


@main.command("versions")
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
def versions_command(
    target: str, as_json: bool, timeout: float, captured: bool, caps: tuple[str, ...]
) -> None:
    """Broker API versions vs kcodec's, the negotiated version per API and a release fingerprint.

    TARGET is HOST:PORT (runs the KIP-511 handshake over TCP) or, with --captured, a file.
    """
    from kcodec.negotiation import kcodec_profile, render_versions_report, versions_report

    profile = kcodec_profile(_parse_caps(caps)) if caps else None
    source: str | bytes = Path(target).read_bytes() if captured else target
    report = versions_report(source, timeout=timeout, client_profile=profile)
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


if __name__ == "__main__":
    main()
