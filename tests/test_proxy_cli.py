"""``kcodec proxy`` as a user runs it: a subprocess in front of an in-process fake broker on 127.0.0.1.
Its first line is the listen address; the traffic is shown as decode-capture shows it; Ctrl-C stops it
with exit 130 and SIGTERM with 0, the pcap and JSON lines complete; bad arguments are one line and
exit 2; what keeps it from starting is one line and exit 1."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fake_broker import FakeBroker, api_versions_response, read_request

import kcodec

KCODEC = [sys.executable, "-m", "kcodec.cli"]


async def _answer_api_versions(reader: Any, writer: Any) -> None:
    while (req := await read_request(reader)) is not None:
        writer.write(api_versions_response(req, req.api_version))
        await writer.drain()


@pytest.fixture(scope="module")
def broker() -> Iterator[tuple[str, int]]:
    with FakeBroker(_answer_api_versions) as fb:
        yield "127.0.0.1", fb.port


@contextmanager
def _proxy(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``kcodec proxy ARGS`` running; (the process, its first line)."""
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen(
        [*KCODEC, "proxy", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        first = proc.stdout.readline()  # type: ignore[union-attr]
        assert first, proc.stderr.read()  # type: ignore[union-attr]
        yield proc, first
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        assert chunk, f"EOF after {len(out)} of {n} bytes"
        out += chunk
    return bytes(out)


def _exchange(address: str, versions: tuple[int, ...] = (3, 0)) -> None:
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        cls = kcodec.message_class("ApiVersionsRequest")
        for cid, version in enumerate(versions, 1):
            req = cls(client_software_name="cli-test", client_software_version="1")
            sock.sendall(kcodec.encode_request(req, version, correlation_id=cid))
            size = int.from_bytes(_recv_exactly(sock, 4), "big")
            _recv_exactly(sock, size)


def _lines_until(proc: subprocess.Popen[str], text: str) -> list[str]:
    """Lines of the proxy's output up to the first that contains ``text`` (rows are flushed as they
    are written, so this does not wait for the proxy to end)."""
    lines: list[str] = []
    while True:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert line, f"no line with {text!r} in {lines}"
        lines.append(line)
        if text in line:
            return lines


def _address(first_line: str) -> str:
    assert first_line.startswith("kcodec proxy listening on 127.0.0.1:"), first_line
    return first_line.split()[4].rstrip(",")


def test_table_pcap_json_and_ctrl_c(broker: tuple[str, int], tmp_path: Path) -> None:
    pcap, jsonl = tmp_path / "p.pcap", tmp_path / "p.jsonl"
    upstream = f"{broker[0]}:{broker[1]}"
    with _proxy(
        "--listen", "127.0.0.1:0", "--upstream", upstream, "--pcap", str(pcap), "--json", str(jsonl)
    ) as (
        proc,
        first,
    ):
        assert first.strip().endswith(f"forwarding to {upstream}")
        _exchange(_address(first))
        shown = _lines_until(proc, "** closed")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130
    assert "kcodec proxy interrupted: 1 connections, 53 bytes of requests" in err and "Traceback" not in err
    rows = "".join([*shown, out]).splitlines()
    assert rows[0].split()[:5] == ["time", "(UTC)", "conn", "api", "corr"]
    assert any("-> ApiVersions v3" in r and "software cli-test 1" in r for r in rows)
    assert any("<- ApiVersions v0" in r for r in rows)
    assert any("** closed" in r and "closed by the client; 2 requests" in r for r in rows)
    assert rows[-1].startswith("4 frames (2 requests, 2 responses) on 1 connections")
    live = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert live[0]["type"] == "proxy" and live[0]["kind"] == "listening"
    frames = [d for d in live if d["type"] == "frame"]
    back = subprocess.run(
        [*KCODEC, "decode-capture", str(pcap), "--json"], capture_output=True, text=True, timeout=60
    )
    assert back.returncode == 0, back.stderr
    assert [json.loads(line) for line in back.stdout.splitlines()] == frames
    assert len(frames) == 4


def test_sigterm_and_json_lines_on_stdout(broker: tuple[str, int]) -> None:
    with _proxy("--listen", "127.0.0.1:0", "--upstream", f"{broker[0]}:{broker[1]}", "--json", "-") as (
        proc,
        first,
    ):
        notice = json.loads(first)  # the first line is a JSON line too, naming the listener
        assert (notice["type"], notice["kind"]) == ("proxy", "listening")
        _exchange(notice["listener"], versions=(1,))
        shown = _lines_until(proc, '"kind":"closed"')
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    lines = [json.loads(line) for line in shown + out.splitlines()]
    assert [(d["type"], d.get("direction") or d.get("kind")) for d in lines] == [
        ("frame", "request"),
        ("frame", "response"),
        ("proxy", "closed"),
    ]
    assert "kcodec proxy stopped" in err


def test_filters_and_quiet(broker: tuple[str, int]) -> None:
    with _proxy("--listen", "127.0.0.1:0", "--upstream", f"{broker[0]}:{broker[1]}", "--api", "Metadata") as (
        proc,
        first,
    ):
        _exchange(_address(first))
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
    assert "ApiVersions" not in out and "** closed" not in out  # only Metadata frames and problems
    assert "0 frames shown" in out.splitlines()[-1]
    with _proxy("--listen", "127.0.0.1:0", "--upstream", f"{broker[0]}:{broker[1]}", "-q") as (proc, first):
        _exchange(_address(first))
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
    assert out == ""  # the first line was read already; no table


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--listen", "127.0.0.1:0"], "Missing option '--upstream'"),
        (["--listen", "127.0.0.1:x", "--upstream", "a:1"], "port 'x' is not a number"),
        (["--listen", "0.0.0.0:0", "--upstream", "a:1"], "not a wildcard"),
        (["--listen", "127.0.0.1:0", "--upstream", "a:99999"], "out of range"),
        (["--listen", "127.0.0.1:0", "--upstream", "a:1", "--stall-timeout", "0"], "--stall-timeout"),
        (["--listen", "127.0.0.1:0", "--upstream", "a:1", "--api", "Metadta"], "did you mean Metadata"),
        (["--listen", "127.0.0.1:0", "--upstream", "a:1", "--topic", ""], "names no topic"),
        (["--listen", "127.0.0.1:0", "--upstream", "a:1", "--group", " , "], "names no group"),
    ],
)
def test_usage_errors(args: list[str], message: str) -> None:
    r = subprocess.run([*KCODEC, "proxy", *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1 and message in r.stderr, r.stderr


def test_cannot_start(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run(
            [*KCODEC, "proxy", "--listen", f"127.0.0.1:{port}", "--upstream", "127.0.0.1:1"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == f"kcodec proxy: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    r = subprocess.run(
        [
            *KCODEC,
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "127.0.0.1:1",
            "--pcap",
            str(tmp_path / "no" / "x"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 1 and r.stderr.startswith("kcodec proxy: cannot write ") and r.stdout == ""
