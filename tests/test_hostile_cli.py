"""The CLI on hostile files and values: one line and a non-zero exit, never a traceback, and no file
read past its limit (the files here are sparse: their size costs no disk and, read, 3 GiB of memory)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kcodec.cli import main
from kcodec.cli.versions import MAX_CAPTURED_BYTES
from kcodec.fuzz.findings import MAX_FINDING_BYTES


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def one_line_error(result: Result) -> str:
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture
def huge(tmp_path: Path) -> Path:
    path = tmp_path / "huge.bin"
    with path.open("wb") as f:
        f.truncate(3 << 30)
    return path


def test_versions_captured_refuses_a_huge_file_unread(huge: Path) -> None:
    line = one_line_error(run("versions", "--captured", str(huge)))
    assert f"limit {MAX_CAPTURED_BYTES} bytes" in line


def test_versions_captured_refuses_an_endless_file() -> None:
    line = one_line_error(run("versions", "--captured", os.devnull.replace("null", "zero")))
    assert "larger than a captured ApiVersionsResponse" in line


def test_fuzz_replay_refuses_a_huge_file_unread(huge: Path) -> None:
    line = one_line_error(run("fuzz", "replay", str(huge)))
    assert f"{MAX_FINDING_BYTES}-byte limit" in line
