"""``kcodec report``: the pipeline's tables as one self-contained HTML page (``kcodec.report``)."""

from __future__ import annotations

from pathlib import Path

import click

from kcodec.cli.common import CONTEXT_SETTINGS, needs_extra


@click.command("report", context_settings=CONTEXT_SETTINGS)
@click.argument("folder", type=click.Path(path_type=Path))
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The HTML file to write (default: FOLDER/report.html).",
)
@click.option("--title", help="The page title (default: the folder's name).")
def report_command(folder: Path, output: Path | None, title: str | None) -> None:
    """Render the tables `kcodec pipeline` wrote under FOLDER as an HTML page with plots (requests/s
    and latency per API over time, latency per API, error counts, fencing timeline), tables and the
    text summary. The page is self-contained: it loads nothing from anywhere."""
    needs_extra("the report needs matplotlib and pyarrow", "spark", ("matplotlib", "pyarrow"))
    from kcodec.report import ReportInputError, render_report

    try:
        html = render_report(folder, title)
    except ReportInputError as e:
        raise click.UsageError(str(e)) from None
    target = output or folder / "report.html"
    try:
        target.write_text(html, encoding="utf-8")
    except OSError as e:
        raise click.ClickException(f"cannot write {target}: {e.strerror or e}") from None
    click.echo(f"wrote {target} ({len(html.encode()) // 1024} KiB)")
