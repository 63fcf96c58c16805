"""The README's examples, run as a user runs them.

A fenced block of README.md is run when the line before it is a marker comment
``<!-- test: KIND -->``:

- ``setup``: the two set-up commands; checked for their shape (a venv, ``pip install .``, the decode
  of the shipped sample; then the test command), and the decode itself is run (installing and the
  test suite are not: this test is part of that suite);
- ``run``: a shell block, run with bash from the repository's root; every command must succeed;
- ``python``: a Python block, run as a script;
- ``with-broker``: a shell block whose first line starts ``kcodec broker ... &``: the test starts that
  broker on a free port (its first output line is its address), runs the other lines against it and
  stops it by pid;
- ``pytest``: a test module, run by pytest in a folder of its own.

``kcodec`` and ``python`` in the blocks are this test run's interpreter. Every command is bounded by
what it does (a capture of 46 frames, one broker, a handful of requests); the timeouts are only a
safety net.
"""

from __future__ import annotations

import os
import re
import selectors
import shlex
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
KINDS = ("setup", "run", "python", "with-broker", "pytest")
SAFETY_TIMEOUT = 600.0  # seconds; never reached unless something hangs

_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
_MARKER = re.compile(r"<!-- test: ([\w-]+) -->\n$")
_DEFAULT_BROKER = "127.0.0.1:9092"
PLUGIN = "kcodec.broker.pytest_plugin"  # the kcodec_broker fixture, registered by kcodec's entry point


@dataclass(frozen=True)
class Block:
    kind: str | None  # the marker's kind, None for a block the test does not run
    lang: str
    text: str
    line: int

    @property
    def id(self) -> str:
        return f"{self.kind}-line{self.line}"


def readme_blocks() -> list[Block]:
    source = README.read_text(encoding="utf-8")
    blocks = []
    for m in _BLOCK.finditer(source):
        before = source[: m.start()]
        marker = _MARKER.search(before)
        kind = marker.group(1) if marker is not None and marker.end() == len(before) else None
        blocks.append(Block(kind, m.group(1), m.group(2), before.count("\n") + 1))
    return blocks


def marked(kind: str) -> list[Block]:
    return [b for b in readme_blocks() if b.kind == kind]


@pytest.fixture(scope="module")
def user_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a user's shell: ``kcodec`` and ``python`` are this run's interpreter."""
    bin_dir = tmp_path_factory.mktemp("bin")
    # scripts, not symlinks: a link to a venv's python outside the venv would not find the venv
    python = shlex.quote(sys.executable)
    for name, command in (("kcodec", f"{python} -m kcodec.cli"), ("python", python)):
        (bin_dir / name).write_text(f'#!/bin/sh\nexec {command} "$@"\n')
        (bin_dir / name).chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "160"
    return env


def run_shell(command: str, env: dict[str, str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


def assert_ok(result: subprocess.CompletedProcess[str], what: str) -> None:
    output = f"{result.stdout[-2000:]}\n{result.stderr}"
    assert result.returncode == 0, f"{what}\nexit {result.returncode}\n{output}"
    assert result.stdout.strip(), f"{what}: printed nothing"
    assert "Traceback" not in result.stderr, result.stderr


def test_the_readme_is_for_users() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 400
    blocks = readme_blocks()
    assert blocks[0].kind == "setup", "the README opens with its set-up commands"
    for block in blocks:
        assert block.kind is None or block.kind in KINDS, block
    for kind in KINDS:
        assert marked(kind), f"no README block is marked {kind}"
    for link in re.findall(r"\]\(([\w./-]+\.md)\)", text):
        assert (ROOT / link).is_file(), f"the README links to {link}, which does not exist"


DOCUMENTS = [README, ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "README.md"]


def _anchor(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@pytest.mark.parametrize(
    "document",
    [*DOCUMENTS, *sorted((ROOT / "docs").glob("*.md"))],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_links_between_the_documents_resolve(document: Path) -> None:
    for target, anchor in re.findall(r"\]\(([\w./-]+\.md)(?:#([\w-]+))?\)", document.read_text()):
        path = (document.parent / target).resolve()
        assert path.is_file(), f"{document.name} links to {target}, which does not exist"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", path.read_text(), re.M)
            assert anchor in {_anchor(h) for h in headings}, (
                f"{document.name}: no heading #{anchor} in {target}"
            )


def test_setup_commands(user_env: dict[str, str]) -> None:
    (block,) = marked("setup")
    first, second = block.text.strip().splitlines()
    steps = [s.strip() for s in first.split("&&")]
    assert steps[0] == "python3 -m venv .venv"
    assert ". .venv/bin/activate" in steps and "pip install ." in steps
    assert steps[-1] == "kcodec decode-capture samples/sample.pcap"
    assert second == "bash tools/test.sh"
    result = run_shell(steps[-1], user_env)
    assert_ok(result, steps[-1])
    # The sample is Apache Kafka 4.4.0's traffic: nothing off-spec, no error code, from the first row on.
    summary = "46 frames (24 requests, 22 responses) on 5 connections; 0 undecodable; 0 non-conformant; "
    assert summary + "0 stream issues" in result.stdout
    assert re.search(r"\b[A-Z_]{4,} \(\d+\)", result.stdout) is None  # no error code by name


@pytest.mark.parametrize("block", marked("run"), ids=lambda b: b.id)
def test_shell_block(block: Block, user_env: dict[str, str]) -> None:
    assert block.lang == "sh"
    assert_ok(run_shell(block.text, user_env), block.text)


@pytest.mark.parametrize("block", marked("python"), ids=lambda b: b.id)
def test_python_block(block: Block, tmp_path: Path, user_env: dict[str, str]) -> None:
    assert block.lang == "python"
    script = tmp_path / "example.py"
    script.write_text(block.text)
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=user_env,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
    )
    assert_ok(result, block.text)


def _first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        assert sel.select(SAFETY_TIMEOUT), "the broker printed no address"
    return proc.stdout.readline().strip()


@pytest.mark.parametrize("block", marked("with-broker"), ids=lambda b: b.id)
def test_block_with_broker(block: Block, user_env: dict[str, str]) -> None:
    first, *commands = block.text.strip().splitlines()
    assert first.startswith("kcodec broker ") and first.endswith("&"), first
    argv = shlex.split(first.removesuffix("&").replace(_DEFAULT_BROKER, "127.0.0.1:0"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kcodec.cli", *argv[1:]],
        env=user_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        address = _first_line(proc).split(",")[0]
        assert re.fullmatch(r"127\.0\.0\.1:\d+", address), address
        for command in commands:
            assert _DEFAULT_BROKER in command, command
            result = run_shell(command.replace(_DEFAULT_BROKER, address), user_env)
            assert_ok(result, command)
            assert address in result.stdout
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""


@pytest.mark.parametrize("block", marked("pytest"), ids=lambda b: b.id)
def test_pytest_block(block: Block, tmp_path: Path, user_env: dict[str, str]) -> None:
    assert block.lang == "python"
    (tmp_path / "test_example.py").write_text(block.text)
    registered = any(ep.value == PLUGIN for ep in entry_points(group="pytest11"))
    plugin = [] if registered else ["-p", PLUGIN]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "test_example.py"],
        cwd=tmp_path,
        env=user_env,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout and "failed" not in result.stdout, result.stdout
