"""Helpers every ``kcodec`` command shares: console, JSON lines, version-range text."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import click
from rich.console import Console

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 110}


def console() -> Console:
    """A console for tables: the terminal's width, or a wide one when stdout is not a terminal."""
    out = Console(highlight=False, soft_wrap=False)
    if not out.is_terminal:
        out = Console(highlight=False, soft_wrap=False, width=max(out.width, 160))
    return out


def json_line(obj: Any) -> None:
    """Print one compact JSON object on its own line (JSON lines)."""
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


def version_text(lo: int, hi: int) -> str:
    """``(3, 3)`` -> ``"v3"``, ``(0, 12)`` -> ``"v0-12"``."""
    return f"v{lo}" if lo == hi else f"v{lo}-{hi}"


def parse_listen(text: str, option: str) -> tuple[str, int]:
    """``"127.0.0.1:9092"`` -> ``("127.0.0.1", 9092)``; a usage error (exit 2) otherwise."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise click.BadParameter(f"{text!r}: expected HOST:PORT (port 0-65535)", param_hint=option)
    return host, int(port)
