"""tools/test.sh picks its Python without changing what the user installed: $PYTHON as it is, the
current Python if it has kcodec and the test extras, else its own venv .venv-test/ (pip install -e
'.[test]' there, never into the user's Python). Run on a copy of the script in a small checkout, with
a tiny test file as the suite."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = "def test_one():\n    assert 1 + 1 == 2\n"


def _checkout(tmp_path: Path) -> Path:
    work = tmp_path / "checkout"
    (work / "tools").mkdir(parents=True)
    (work / "tests").mkdir()
    shutil.copy(ROOT / "tools" / "test.sh", work / "tools" / "test.sh")
    (work / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    (work / "hatch_build.py").write_text("# the build hook\n")
    (work / "tests" / "test_tiny.py").write_text(SUITE)
    return work


def _bare_python(tmp_path: Path) -> Path:
    """A Python without pytest or kcodec (a venv without pip): what a user's own venv may be."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    return tmp_path / "bare" / "bin"


def _fake_venv(work: Path, stamp: bool) -> Path:
    """.venv-test/ whose python is this test run's Python, logging how it is called; `pip install` is
    logged and not run (no network in a test)."""
    bin_dir = work / ".venv-test" / "bin"
    bin_dir.mkdir(parents=True)
    log = work / "calls.log"
    (bin_dir / "python").write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {log}\n'
        'case "$*" in "-m pip install"*) exit 0;; esac\n'
        f'exec {sys.executable} "$@"\n'
    )
    (bin_dir / "python").chmod(0o755)
    if stamp:
        sources = (work / "pyproject.toml").read_bytes() + (work / "hatch_build.py").read_bytes()
        (work / ".venv-test" / "installed-from").write_text(hashlib.sha256(sources).hexdigest() + "\n")
    return log


def _run(work: Path, path_first: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "VIRTUAL_ENV")}
    if path_first is not None:
        environ["PATH"] = f"{path_first}:{environ['PATH']}"
    environ["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p.endswith("src"))
    environ.update(env)
    return subprocess.run(
        ["bash", "tools/test.sh", "-p", "no:cacheprovider", "tests/test_tiny.py"],
        cwd=work, env=environ, capture_output=True, text=True, timeout=600,
    )


def test_a_python_with_everything_is_used_as_it_is(tmp_path: Path) -> None:
    work = _checkout(tmp_path)
    done = _run(work, PYTHON=sys.executable)
    assert done.returncode == 0, done.stderr
    assert f"with {sys.executable} ($PYTHON)" in done.stderr and "1 passed" in done.stdout
    assert "exited with status 0 after" in done.stderr
    assert not (work / ".venv-test").exists()


def test_python_without_the_extras_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    work, bare = _checkout(tmp_path), _bare_python(tmp_path)
    before = sorted(p.name for p in (bare.parent / "lib").rglob("*"))
    done = _run(work, PYTHON=str(bare / "python"))
    assert done.returncode == 2 and "lacks kcodec or its test extras" in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in (bare.parent / "lib").rglob("*")) == before
    assert not (work / ".venv-test").exists()


def test_otherwise_its_own_venv_and_the_users_python_untouched(tmp_path: Path) -> None:
    work, bare = _checkout(tmp_path), _bare_python(tmp_path)
    before = sorted(p.name for p in (bare.parent / "lib").rglob("*"))
    log = _fake_venv(work, stamp=False)
    done = _run(work, path_first=bare)  # the user's `python` lacks the extras
    assert done.returncode == 0, done.stderr
    assert "making its own venv .venv-test/ with pip install -e '.[test]'" in done.stderr
    calls = log.read_text().splitlines()
    assert any(c.startswith("-m pip install") and "-e .[test]" in c for c in calls), calls
    assert any(c.startswith("-m pytest -q -n 2") for c in calls), calls
    assert "in its own venv .venv-test/" in done.stderr and "1 passed" in done.stdout
    assert sorted(p.name for p in (bare.parent / "lib").rglob("*")) == before  # nothing installed there
    # installed once: the next run goes straight to the tests
    log.write_text("")
    again = _run(work, path_first=bare)
    assert again.returncode == 0 and "making its own venv" not in again.stderr
    assert not any(c.startswith("-m pip") for c in log.read_text().splitlines())


def test_a_changed_pyproject_installs_again(tmp_path: Path) -> None:
    work, bare = _checkout(tmp_path), _bare_python(tmp_path)
    log = _fake_venv(work, stamp=True)
    assert _run(work, path_first=bare).returncode == 0
    assert not any(c.startswith("-m pip") for c in log.read_text().splitlines())
    with (work / "pyproject.toml").open("a") as f:
        f.write("# a new test dependency\n")
    done = _run(work, path_first=bare)
    assert done.returncode == 0 and "making its own venv" in done.stderr
