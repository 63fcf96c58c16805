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


LONG = "a" * 64 + ".example"  # a label over 63 characters: the resolver's UnicodeError before
HOST_CASES = [
    ("versions", f"{LONG}:9092"),
    ("metadata", f"{LONG}:9092"),
    ("proxy", "--listen", "127.0.0.1:0", "--upstream", f"{LONG}:9092"),
    ("proxy", "--listen", f"{LONG}:0", "--upstream", "127.0.0.1:9092"),
    ("broker", "--listen", f"{LONG}:0"),
    ("broker", "--listen", "127.0.0.1:0", "--control", f"{LONG}:1"),
    ("broker-ctl", f"{LONG}:1", "topics"),
    ("fuzz", "run", f"{LONG}:9092", "--iterations", "1"),
]


@pytest.mark.parametrize("args", HOST_CASES, ids=lambda a: " ".join(a)[:40])
def test_a_host_label_over_63_characters_is_one_line(args: tuple[str, ...]) -> None:
    line = one_line_error(run(*args))
    assert "not a valid host name (a label is empty or longer than 63 characters)" in line


def test_the_library_refuses_it_too() -> None:
    from kcodec.net.transport import parse_host_port
    from kcodec.protocol.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="not a valid host name"):
        parse_host_port(f"{LONG}:9092")
    with pytest.raises(InvalidArgumentError):
        parse_host_port("a..b:9092")
    assert parse_host_port("broker-1.example.com:9093") == ("broker-1.example.com", 9093)
    assert parse_host_port("[::1]:9092") == ("::1", 9092)


NUMBER_CASES = [
    ("versions", "127.0.0.1:1", "--timeout", "nan"),
    ("versions", "127.0.0.1:1", "--timeout", "inf"),
    ("metadata", "127.0.0.1:1", "--timeout", "+inf"),
    ("fuzz", "run", "127.0.0.1:1", "--timeout", "nan"),
    ("fuzz", "run", "127.0.0.1:1", "--rate", "nan"),
    ("fuzz", "replay", "x.json", "--timeout", "NaN"),
    ("proxy", "--upstream", "127.0.0.1:1", "--stall-timeout", "inf"),
    ("proxy", "--upstream", "127.0.0.1:1", "--idle-timeout", "nan"),
]


@pytest.mark.parametrize("args", NUMBER_CASES, ids=lambda a: " ".join(a))
def test_nan_and_inf_are_one_line(args: tuple[str, ...]) -> None:
    line = one_line_error(run(*args))
    assert "is not a finite number" in line


def test_fuzz_run_out_where_no_folder_can_be_made(tmp_path: Path) -> None:
    line = one_line_error(run("fuzz", "run", "127.0.0.1:1", "--out", "/proc/x", "--iterations", "1"))
    assert "cannot make folder '/proc/x'" in line
    blocker = tmp_path / "file"
    blocker.write_text("")
    line = one_line_error(run("fuzz", "run", "127.0.0.1:1", "--out", str(blocker / "sub")))
    assert "cannot make folder" in line
