"""``kcodec generate``: run kcodec's generator on the user's own spec folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click


@click.command("generate")
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
    cmd = [sys.executable, "-m", "kcodec.codegen.generate", "--specs", str(specs), "--out", str(out)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as e:
        raise click.ClickException(f"could not run the generator: {e}") from None
    if proc.returncode != 0:
        err = proc.stderr.strip()
        if "No module named 'kcodec.codegen'" in err or "No module named kcodec.codegen" in err:
            raise click.ClickException(
                "the generator (kcodec.codegen, shipped with kcodec) is not installed in "
                f"{sys.executable}; reinstall kcodec"
            )
        lines = [line for line in err.splitlines() if line.strip()]
        last = lines[-1] if lines else f"exit code {proc.returncode}"
        raise click.ClickException(f"generating from {specs} failed: {last}")
    modules = sorted(p.name for p in out.glob("*.py") if p.name not in ("__init__.py", "wire_types.py"))
    if not modules:
        raise click.ClickException(
            f"no message specs found in {specs} (expected sets.json and one folder of *.json specs per set)"
        )
    click.echo(
        f"generated {len(modules)} modules into {out} (package {out.name!r}: "
        f"add {out.resolve().parent} to sys.path to import it)"
    )
