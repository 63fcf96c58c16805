"""Commands that refuse what cannot work, in one line, before doing anything: ``kcodec generate`` into
a folder whose name cannot be imported (the package is named after it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KCODEC = [sys.executable, "-m", "kcodec.cli"]


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KCODEC, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.mark.parametrize(
    ("name", "suggested"), [("my-codecs", "my_codecs"), ("1codecs", "_1codecs"), ("class", "_class"),
                            ("codecs.v2", "codecs_v2")],
)
def test_generate_refuses_a_package_name_that_cannot_be_imported(
    name: str, suggested: str, tmp_path: Path
) -> None:
    done = _run("generate", "--specs", str(ROOT / "schemas"), "--out", str(tmp_path / "out" / name))
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert f"generate: Invalid value for '--out': {name!r} cannot be imported" in line
    assert f"(such as {suggested!r})" in line
    assert not (tmp_path / "out").exists()  # refused before anything was written
