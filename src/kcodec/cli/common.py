"""Helpers every ``kcodec`` command shares: console, JSON lines, version-range text."""

from __future__ import annotations

import contextlib
import errno
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import click

from kcodec.cli.values import FiniteFloatRange
from kcodec.protocol.errors import KcodecError

if TYPE_CHECKING:
    from rich.console import Console

    from kcodec.net.client import ConnectionSettings


CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 110}


def console() -> Console:
    """A console for tables: the terminal's width, or a wide one when stdout is not a terminal."""
    from rich.console import Console  # (imported here: commands printing JSON start faster)

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


# --- connecting to brokers (versions, metadata) -------------------------------------------------

SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_FILE = click.Path(exists=True, dir_okay=False, readable=True)


def connection_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options every command that talks to brokers shares: timeout, TLS and SASL."""
    options = [
        click.option(
            "--timeout",
            type=FiniteFloatRange(min=0, min_open=True),
            default=5.0,
            show_default=True,
            help="Seconds to wait for each connection and response.",
        ),
        click.option("--tls", is_flag=True, help="Connect with TLS (the system's CAs unless --tls-ca)."),
        click.option("--tls-ca", type=_FILE, help="CA certificates (PEM) for the broker's; implies --tls."),
        click.option("--tls-cert", type=_FILE, help="Client certificate (PEM), mutual TLS; implies --tls."),
        click.option("--tls-key", type=_FILE, help="Private key (PEM) of --tls-cert, if in its own file."),
        click.option(
            "--tls-insecure",
            is_flag=True,
            help="Do not verify the broker's certificate or host name (testing only); implies --tls.",
        ),
        click.option(
            "--sasl-mechanism",
            type=click.Choice(SASL_MECHANISMS, case_sensitive=False),
            help="Authenticate with SASL; the username and password come from $KCODEC_SASL_USERNAME and "
            "$KCODEC_SASL_PASSWORD.",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def connection_settings(
    timeout: float,
    tls: bool,
    tls_ca: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    tls_insecure: bool,
    sasl_mechanism: str | None,
) -> ConnectionSettings:
    """The :class:`~kcodec.net.client.ConnectionSettings` for the options of :func:`connection_options`;
    bad combinations are usage errors (exit 2)."""
    from kcodec.net.client import ConnectionSettings, tls_context
    from kcodec.net.sasl import SaslCredentials

    context = None
    if tls or tls_ca or tls_cert or tls_key or tls_insecure:
        if tls_key and not tls_cert:
            raise click.BadParameter("--tls-key needs --tls-cert", param_hint="--tls-key")
        try:
            context = tls_context(tls_ca, tls_cert, tls_key, verify=not tls_insecure)
        except KcodecError as e:
            raise click.BadParameter(str(e), param_hint="--tls-ca/--tls-cert/--tls-key") from None
    sasl = None
    if sasl_mechanism:
        try:
            sasl = SaslCredentials.from_env(sasl_mechanism.upper())
        except KcodecError as e:
            raise click.BadParameter(str(e), param_hint="--sasl-mechanism") from None
    return ConnectionSettings(timeout=timeout, ssl_context=context, sasl=sasl)


def broker_address(target: str, param_hint: str = "HOST:PORT") -> tuple[str, int]:
    """``HOST:PORT`` → ``(host, port)``; a bad one is a usage error (exit 2) that says what is wrong."""
    from kcodec.net.client import parse_host_port

    try:
        return parse_host_port(target)
    except KcodecError as e:
        raise click.BadParameter(str(e), param_hint=param_hint) from None


def parse_listen(text: str, option: str) -> tuple[str, int]:
    """``"127.0.0.1:9092"`` -> ``("127.0.0.1", 9092)``; a usage error (exit 2) otherwise."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise click.BadParameter(f"{text!r}: expected HOST:PORT (port 0-65535)", param_hint=option)
    from kcodec.net.transport import check_host

    try:
        return check_host(host, text), int(port)
    except KcodecError as e:
        raise click.BadParameter(str(e), param_hint=option) from None


def kafka_port_options(command: Any) -> Any:
    """``--port`` (repeatable, in addition to 9092) and ``--no-autodetect``: which connections of a
    capture are Kafka traffic (``decode-capture``, ``pipeline``)."""
    command = click.option("--no-autodetect", is_flag=True, help="Only decode connections on Kafka ports.")(
        command
    )
    return click.option(
        "--port",
        "ports",
        type=click.IntRange(1, 65535),
        multiple=True,
        help="A Kafka broker port (repeatable), in addition to 9092.",
    )(command)


def quiet_stdout() -> None:
    """Standard output cannot take more (its reader went away, ``| head``; or its disk is full): no
    more output, and no error when the interpreter flushes it at exit."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)


#: errors of a write that the reader or the disk caused, not kcodec
_WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def output_failure(e: OSError) -> str | None:
    """What every command does with an ``OSError`` that reached the ``kcodec`` entry point: None when
    the reader of standard output went away (then nothing more is written and the exit status is 0,
    however far the output got), else the one line to show (exit status 1). Standard output is
    flushed first, so that what was written before the error is kept, unless that is what failed."""
    if e.errno == errno.EPIPE:
        quiet_stdout()
        return None
    try:
        sys.stdout.flush()
    except OSError:
        quiet_stdout()
    text = e.strerror or str(e)
    if e.filename is not None:
        return f"{e.filename}: {text}"
    if e.errno in _WRITE_ERRORS:
        return f"cannot write the output: {text}"
    return text


def needs_extra(what: str, extra: str, modules: Iterable[str]) -> None:
    """Raise a one-line error (``<what>: pip install 'kcodec[<extra>]' (No module named 'x')``) if one
    of ``modules`` cannot be imported, before a command starts what would need it."""
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:
            found = False
        if not found:
            raise click.ClickException(f"{what}: pip install 'kcodec[{extra}]' (No module named {name!r})")
