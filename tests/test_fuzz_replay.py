"""``kcodec fuzz replay`` of a crash finding: it reproduces only on a broker that was up, was sent the
request and then died; a target that is not up before the replay is sent nothing and has its own exit
status (3). The broker is a small process on 127.0.0.1 that answers ApiVersions and, in the "dies"
mode, exits when it receives a Heartbeat, as a crashing broker does."""

from __future__ import annotations

import dataclasses
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from click.testing import CliRunner

import kcodec
from kcodec.cli import main
from kcodec.fuzz.findings import Finding, load_finding
from kcodec.fuzz.replay import replay

BROKER = r'''
import os, socket, struct, sys
import kcodec

dies = sys.argv[1] == "dies"
server = socket.create_server(("127.0.0.1", 0))
print(server.getsockname()[1], flush=True)
cls = kcodec.message_class("ApiVersionsResponse")
keys = [cls.ApiVersion(api_key=k, min_version=0, max_version=v) for k, v in ((12, 4), (18, 3))]
while True:
    conn, _ = server.accept()
    with conn:
        while True:
            head = conn.recv(4, socket.MSG_WAITALL)
            if len(head) < 4:
                break
            (size,) = struct.unpack(">i", head)
            data = head + conn.recv(size, socket.MSG_WAITALL)
            key, version, cid = struct.unpack_from(">hhi", data, 4)
            if key == 18:
                conn.sendall(kcodec.encode_response(cls(error_code=0, api_keys=keys), 0, correlation_id=cid))
            elif dies:
                os._exit(1)  # the crash
            else:
                body = kcodec.message_class("HeartbeatResponse")(error_code=0)
                conn.sendall(kcodec.encode_response(body, version, correlation_id=cid))
'''


@contextmanager
def _broker(mode: str) -> Iterator[int]:
    proc = subprocess.Popen([sys.executable, "-c", BROKER, mode], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield int(proc.stdout.readline())
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return int(s.getsockname()[1])  # closed again: nothing listens there


def _finding(tmp_path: Path, port: int) -> Path:
    hb = kcodec.message_class("HeartbeatRequest")(group_id="g", generation_id=1, member_id="m")
    request = kcodec.encode_request(hb, 4, correlation_id=7)
    finding = Finding(
        kind="broker_died", severity="crash", api_name="Heartbeat", api_key=12, api_version=4,
        summary="the broker is gone (liveness probe failed 4 times) after a valid request Heartbeat v4",
        request_hex=request.hex(), response_hex=None, seed=1, iteration=9, negotiated={"Heartbeat": 4},
        target=f"127.0.0.1:{port}",
    )
    path = tmp_path / "broker_died-Heartbeat.json"
    path.write_text(json.dumps(dataclasses.asdict(finding)))
    assert load_finding(path).kind == "broker_died"
    return path


def test_a_target_that_is_not_running_is_unreachable_not_reproduced(tmp_path: Path) -> None:
    path = _finding(tmp_path, _free_port())
    result = CliRunner().invoke(main, ["fuzz", "replay", str(path), "--timeout", "1"])
    assert result.exit_code == 3, result.output
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("kcodec fuzz replay: unreachable: the broker at 127.0.0.1:"), line
    assert "nothing was sent" in line
    library = replay(load_finding(path), "127.0.0.1", _free_port(), 1.0)
    assert library.unreachable and not library.reproduced


def test_a_broker_that_dies_of_the_request_reproduces_it(tmp_path: Path) -> None:
    with _broker("dies") as port:
        path = _finding(tmp_path, port)
        result = CliRunner().invoke(main, ["fuzz", "replay", str(path), "--timeout", "2"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("reproduced: broker_died Heartbeat v4")
    assert "broker alive afterwards: no" in result.stdout


def test_a_broker_that_survives_the_request_does_not(tmp_path: Path) -> None:
    with _broker("survives") as port:
        path = _finding(tmp_path, port)
        result = CliRunner().invoke(main, ["fuzz", "replay", str(path), "--timeout", "2"])
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith("not reproduced: broker_died Heartbeat v4")
    assert "broker alive afterwards: yes" in result.stdout
