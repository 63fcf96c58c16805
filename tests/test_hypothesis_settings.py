"""The suite's hypothesis settings (tests/conftest.py): a property test that fails in one run gives the
same verdict in the next run and leaves nothing behind that would decide later runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# a property that the draw falsifies at once: what matters is what the runs after the first one do
PROPERTY = """
from hypothesis import given, settings, strategies as st


@settings(max_examples=50)
@given(st.binary())
def test_fails_soon(data: bytes) -> None:
    assert len(data) < 3
"""


def _run(cwd: Path, profile: str | None) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_PROFILE"}
    # the copied conftest.py loads the suite's plugins (tests/apache_kafka.py): they import from tests/
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    if profile is not None:
        env["HYPOTHESIS_PROFILE"] = profile
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "test_props.py"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )
    return done.returncode, done.stdout


def _project(tmp_path: Path) -> Path:
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_props.py").write_text(PROPERTY)
    return tmp_path


def test_the_default_profile_is_deterministic_and_keeps_no_examples(tmp_path: Path) -> None:
    project = _project(tmp_path)
    first = _run(project, None)
    second = _run(project, None)
    assert first[0] == second[0] == 1, first[1]
    assert "Failing test case" in first[1] and "reproduce_failure(" in first[1]
    assert _failing(first[1]) == _failing(second[1])  # the same draw, so the same example
    # no example database: nothing replayed, so no run decides the next one (hypothesis may keep a
    # cache of constants it read in the source there, which only depends on the source)
    assert not (project / ".hypothesis" / "examples").exists()


def test_the_explore_profile_remembers_what_it_found(tmp_path: Path) -> None:
    project = _project(tmp_path)
    code, out = _run(project, "explore")
    assert code == 1 and "test_fails_soon" in out
    assert any((project / ".hypothesis" / "examples").rglob("*"))  # kept for replay, on request only


def _failing(out: str) -> list[str]:
    return [line for line in out.splitlines() if "reproduce_failure(" in line or "data=" in line]
