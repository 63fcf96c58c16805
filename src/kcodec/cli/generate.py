"""``kcodec generate``: run kcodec's generator on the user's own spec folder.

The package is written atomically: the generator writes into a fresh folder next to ``--out`` and
only a complete package replaces ``--out``; after a failure nothing new is left behind and an
existing ``--out`` is untouched.
"""

from __future__ import annotations

import keyword
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import click

#: modules of a generated package that are not one message each (see kcodec.codegen.render)
_INDEX_MODULES = frozenset({"__init__.py", "typing_api.py", "wire_types.py"})


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
    help="Folder to write the generated package to (created, or replaced as a whole).",
)
def generate_command(specs: Path, out: Path) -> None:
    """Generate a codec package from your own spec folder (runs kcodec's generator).

    The result is a Python package named after OUT's last folder, importable once OUT's parent is on
    sys.path; its message modules work with kcodec's runtime (kcodec.protocol.model, kcodec.protocol._wire).
    """
    out = out.resolve()
    _check_package_name(out.name)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    except OSError as e:
        raise click.ClickException(f"cannot write next to {out}: {e}") from None
    try:
        _run_generator(specs, work)
        modules = sorted(p.name for p in work.glob("*.py") if p.name not in _INDEX_MODULES)
        if not modules:
            raise click.ClickException(
                f"no message specs found in {specs} (expected sets.json and one folder of *.json specs "
                "per set)"
            )
        _replace(work, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    click.echo(
        f"generated {len(modules)} modules into {out} (package {out.name!r}: "
        f"add {out.parent} to sys.path to import it)"
    )


def _check_package_name(name: str) -> None:
    """The package is imported by the name of its folder: refuse one ``import`` cannot take."""
    if name.isidentifier() and not keyword.iskeyword(name):
        return
    fixed = re.sub(r"\W", "_", name)
    fixed = f"_{fixed}" if not fixed or fixed[0].isdigit() or keyword.iskeyword(fixed) else fixed
    raise click.BadParameter(
        f"{name!r} cannot be imported: the package is named after this folder, which must be a Python "
        f"name, not a keyword (such as {fixed!r})",
        param_hint="'--out'",
    )


def _run_generator(specs: Path, out: Path) -> None:
    cmd = [sys.executable, "-m", "kcodec.codegen.generate", "--specs", str(specs), "--out", str(out)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as e:
        raise click.ClickException(f"could not run the generator: {e}") from None
    if proc.returncode == 0:
        return
    err = proc.stderr.strip()
    if "No module named 'kcodec.codegen'" in err or "No module named kcodec.codegen" in err:
        raise click.ClickException(
            "the generator (kcodec.codegen, shipped with kcodec) is not installed in "
            f"{sys.executable}; reinstall kcodec"
        )
    lines = [line for line in err.splitlines() if line.strip()]
    last = lines[-1] if lines else f"exit code {proc.returncode}"
    raise click.ClickException(f"generating from {specs} failed: {last}")


def _replace(new: Path, out: Path) -> None:
    """Put the finished package ``new`` at ``out``: a rename, after moving an old ``out`` aside (and
    back, if the rename fails)."""
    old: Path | None = None
    if out.exists():
        if not out.is_dir():
            raise click.ClickException(f"{out} exists and is not a folder")
        old = out.with_name(f".{out.name}.{os.getpid()}.old")
        out.rename(old)
    try:
        new.rename(out)
    except OSError as e:
        if old is not None:
            old.rename(out)
        raise click.ClickException(f"cannot move the generated package to {out}: {e}") from None
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
