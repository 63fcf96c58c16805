"""``kcodec fuzz HOST:PORT``: fuzz a broker; ``kcodec fuzz replay FINDING``: reproduce a finding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from kcodec.cli.common import CONTEXT_SETTINGS
from kcodec.cli.values import FiniteFloatRange, OutputDirectory
from kcodec.protocol.errors import KcodecError

#: ``kcodec fuzz replay``: the target did not answer before the replay, so nothing was sent
EXIT_UNREACHABLE = 3


class _FuzzGroup(click.Group):
    """``kcodec fuzz HOST:PORT ...`` runs a session; ``kcodec fuzz replay FINDING`` replays."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            return "run", self.commands["run"], args
        return super().resolve_command(ctx, args)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage("kcodec fuzz", "HOST:PORT [OPTIONS]  |  kcodec fuzz replay FINDING [OPTIONS]")


def _target(value: str) -> tuple[str, int]:
    from kcodec.net.client import parse_host_port

    try:
        host, port = parse_host_port(value)
    except ValueError as e:  # (InvalidArgumentError: it says what is wrong)
        raise click.BadParameter(str(e), param_hint="TARGET") from None
    if not host or not 0 < port < 65536:
        raise click.BadParameter(f"{value!r}: expected HOST:PORT", param_hint="TARGET")
    return host, port


def _apis(values: tuple[str, ...]) -> dict[int, tuple[int, int] | None] | None:
    """``("Fetch", "Metadata=0-12", "3")`` -> api key -> version range (None: every version)."""
    if not values:
        return None
    from kcodec.protocol.registry import api

    out: dict[int, tuple[int, int] | None] = {}
    for item in ",".join(values).split(","):
        name, sep, rng = item.strip().partition("=")
        try:
            info = api(int(name) if name.isdigit() else name)
            if sep:
                lo, dash, hi = rng.partition("-")
                out[info.key] = (int(lo), int(hi) if dash else int(lo))
            else:
                out[info.key] = None
        except (KcodecError, ValueError) as e:
            reason = f"{item!r}: expected API or API=MIN-MAX ({e})"
            raise click.BadParameter(reason, param_hint="--api") from None
    return out


@click.group("fuzz", cls=_FuzzGroup, context_settings=CONTEXT_SETTINGS)
def fuzz_command() -> None:
    """Fuzz a Kafka broker with generated and mutated requests; replay what it finds.

    \b
    kcodec fuzz 127.0.0.1:9092 --duration 60 --seed 1 --out findings/
    kcodec fuzz replay findings/broker_died-JoinGroup.json
    """


@fuzz_command.command("run", context_settings=CONTEXT_SETTINGS)
@click.argument("target")
@click.option("--duration", type=FiniteFloatRange(min=0.1, max=7 * 86400), default=60.0, show_default=True,
              help="Stop after this many seconds.")
@click.option("--iterations", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="Stop after this many requests.")
@click.option("--rate", type=FiniteFloatRange(min=0.1, max=100_000), default=200.0, show_default=True,
              help="At most this many requests per second.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed: the same seed sends the same requests.")
@click.option("--out", type=OutputDirectory(), default=None,
              help="Folder for the finding files (one JSON file per kind and API).")
@click.option("--api", "api_names", multiple=True, metavar="API[=MIN-MAX]",
              help="Fuzz only these APIs (names or keys; repeatable or comma-separated).")
@click.option("--timeout", type=FiniteFloatRange(min=0.05, max=600), default=2.0, show_default=True,
              help="Seconds to wait for each reply.")
@click.option("--connections", type=click.IntRange(1, 64), default=1, show_default=True)
@click.option("--pipeline", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Requests sent back to back before their replies are read.")
@click.option("--valid-rate", type=FiniteFloatRange(0, 1), default=0.2, show_default=True,
              help="Share of requests sent unmutated.")
@click.option("--no-minimize", is_flag=True, help="Keep findings' requests as they were sent.")
@click.option("--allow-remote", is_flag=True, help="Allow a target that is not on loopback.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
def run_command(
    target: str, duration: float, iterations: int, rate: float, seed: int, out: Path | None,
    api_names: tuple[str, ...], timeout: float, connections: int, pipeline: int, valid_rate: float,
    no_minimize: bool, allow_remote: bool, as_json: bool,
) -> None:
    """Fuzz the broker at TARGET (HOST:PORT)."""
    host, port = _target(target)
    try:
        from kcodec.fuzz.session import FuzzConfig, FuzzError, Session
    except ImportError as e:  # hypothesis missing
        raise click.UsageError(f"kcodec fuzz needs hypothesis: pip install 'kcodec[fuzz]' ({e})") from None
    from kcodec.fuzz.report import render_report, report_json

    config = FuzzConfig(
        host, port, seed=seed, duration=duration, iterations=iterations, rate=rate, timeout=timeout,
        apis=_apis(api_names), connections=connections, pipeline=pipeline, out=out,
        minimize=not no_minimize, valid_rate=valid_rate, frame_rate=min(0.1, 1 - valid_rate),
        allow_remote=allow_remote,
    )
    try:
        with _Progress(duration) as progress:
            session = Session(config, progress)
            session.negotiate()
            stats = session.run()
    except FuzzError as e:
        click.echo(f"kcodec fuzz: {e}", err=True)
        raise SystemExit(2 if "loopback" in str(e) or "must be" in str(e) else 1) from None
    findings = list(session.store.findings.values())
    if as_json:
        click.echo(json.dumps(report_json(config.target, seed, stats, findings), indent=2))
    else:
        click.echo(render_report(config.target, seed, stats, findings))
        again = session.store.seen_again
        if again:
            kinds = ", ".join(f"{kind} {name}" for kind, name in sorted(again))
            click.echo(f"seen again, already in {out}: {kinds}")
    if stats.stopped_by == "interrupted":
        raise SystemExit(130)


class _Progress:
    """A rich progress line on stderr while a session runs (only when stderr is a terminal)."""

    def __init__(self, duration: float) -> None:
        self.duration = duration
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> Any:
        from rich.console import Console

        console = Console(stderr=True)
        if not console.is_terminal:
            return None
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("fuzzing"), BarColumn(), TimeElapsedColumn(),
                            TextColumn("{task.fields[status]}"), console=console, transient=True)
        self.bar.start()
        self.task = self.bar.add_task("fuzz", total=self.duration, status="")
        return self.update

    def update(self, stats: Any) -> None:
        status = f"{stats.sent} requests ({stats.rate:.0f}/s), {stats.findings} findings"
        self.bar.update(self.task, completed=stats.elapsed, status=status)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


@fuzz_command.command("replay", context_settings=CONTEXT_SETTINGS)
@click.argument("finding", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--target", "target", default=None, metavar="HOST:PORT",
              help="Send it here instead of the finding's target.")
@click.option("--timeout", type=FiniteFloatRange(min=0.05, max=600), default=2.0, show_default=True)
@click.option("--allow-remote", is_flag=True, help="Allow a target that is not on loopback.")
def replay_command(finding: Path, target: str | None, timeout: float, allow_remote: bool) -> None:
    """Send FINDING's request again and tell whether the behaviour reproduces (exit 0) or not (1).
    A target that does not answer before anything is sent is exit 3 (nothing replayed): a crash
    reproduces only on a broker that was up, was sent the request, and then died."""
    from kcodec.fuzz.findings import FindingError, load_finding
    from kcodec.fuzz.replay import replay
    from kcodec.fuzz.wire import is_loopback

    try:
        f = load_finding(finding)
    except FindingError as e:
        raise click.BadParameter(str(e), param_hint="FINDING") from None
    host, port = _target(target or f.target)
    if not allow_remote and not is_loopback(host):
        click.echo(f"kcodec fuzz replay: {host} is not a loopback address: pass --allow-remote", err=True)
        raise SystemExit(2)
    result = replay(f, host, port, timeout)
    if result.unreachable:
        click.echo(f"kcodec fuzz replay: {result.text()}", err=True)
        raise SystemExit(EXIT_UNREACHABLE)
    click.echo(result.text())
    raise SystemExit(0 if result.reproduced else 1)


