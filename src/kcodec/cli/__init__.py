"""The ``kcodec`` command. One module per command; each is imported only when that command runs,
so ``kcodec --help`` and quick commands stay fast.

The commands only present; the work is done by the library (``kcodec.protocol.registry``,
``kcodec.protocol.schema``, ``kcodec.capture``, ``kcodec.net.negotiation``, ...) or, for ``generate``,
by the generator run as a subprocess (``python -m kcodec.codegen.generate``) because the runtime never
imports the build-time generator (``kcodec.codegen``).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from kcodec.cli.common import CONTEXT_SETTINGS, output_failure

#: command name -> (module under kcodec.cli, attribute, one-line help shown by ``kcodec --help``)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "apis": ("apis", "apis_command", "List every API: key, versions, flexible versions, spec sets."),
    "broker": ("broker", "broker_command", "Run a mock Kafka cluster that enforces leader-epoch fencing."),
    "broker-ctl": ("broker_ctl", "broker_ctl_command", "Control a running mock cluster."),
    "describe": ("describe", "describe_command", "Show the fields of a message at a version."),
    "generate": ("generate", "generate_command", "Generate a codec package from your own spec folder."),
    "decode-capture": ("decode_capture", "decode_capture_command", "Decode the Kafka traffic in a capture."),
    "versions": ("versions", "versions_command", "Broker API versions vs kcodec's, negotiated versions."),
    "metadata": ("metadata", "metadata_command", "Brokers, topics, partitions, leaders (like kcat -L)."),
    "fuzz": ("fuzz", "fuzz_command", "Fuzz a broker (HOST:PORT); replay a finding (fuzz replay FILE)."),
    "proxy": ("proxy", "proxy_command", "Forward Kafka traffic to a cluster, decoding it live."),
    "pipeline": ("pipeline", "pipeline_command", "Decode many captures on Spark into Parquet tables."),
    "report": ("report", "report_command", "Render a pipeline output folder as an HTML report."),
}


class OneLineUsageError(click.UsageError):
    """A usage error shown as one line (``kcodec versions: Invalid value for TARGET: ...``), exit 2."""

    def show(self, file: Any = None) -> None:
        where = f"{self.ctx.command_path}: " if self.ctx is not None else ""
        click.echo(f"{where}{self.format_message()}", file=file, err=True)


class OneLineError(click.ClickException):
    """A failure shown as one line naming the command (``kcodec versions: cannot connect ...``),
    like the usage errors; exit code 1."""

    def __init__(self, message: str, where: str) -> None:
        super().__init__(message)
        self.where = where

    def show(self, file: Any = None) -> None:
        click.echo(f"{self.where}: {self.format_message()}", file=file, err=True)


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use; usage errors and failures are
    one line that names the command."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            try:
                return super().invoke(ctx)
            finally:
                sys.stdout.flush()  # here, so that a failed write is handled below, not at exit
        except OSError as e:  # writing the output failed (a full disk, a reader gone), or a bug
            line = output_failure(e)
            if line is None:
                raise click.exceptions.Exit(0) from None
            where = " ".join(p for p in (ctx.command_path, ctx.invoked_subcommand) if p)
            raise OneLineError(line, where) from None
        except SystemExit as e:
            # rich's Console.on_broken_pipe ends a table's broken pipe with exit status 1: the same 0
            if isinstance(e.__context__, BrokenPipeError):
                output_failure(e.__context__)
                raise click.exceptions.Exit(0) from None
            raise
        except click.UsageError as e:
            if isinstance(e, OneLineUsageError):
                raise
            raise OneLineUsageError(e.format_message(), e.ctx) from None
        except click.ClickException as e:
            if isinstance(e, OneLineError) or e.exit_code != OneLineError.exit_code:
                raise
            where = " ".join(p for p in (ctx.command_path, ctx.invoked_subcommand) if p)
            raise OneLineError(e.format_message(), where) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(f"kcodec.cli.{entry[0]}")
        command = getattr(module, entry[1])
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(package_name="kcodec", prog_name="kcodec")
def main() -> None:
    """kcodec: Apache Kafka wire-protocol codecs generated from Kafka's JSON message specs."""


__all__ = ["COMMANDS", "main"]
