"""The mock broker cannot be locked up by its clients: idle connections are closed
(connections_max_idle_ms), so is a request frame that trickles in (request_timeout_ms), connections
past max_connections are closed on arrival with a log line, and a client that stops reading a large
Fetch response, or goes away inside it, leaves nothing behind. Small limits set by option; the test
waits for events (a closed socket, a connection count) by counted polls, never by measuring time."""

from __future__ import annotations

import logging
import socket
import struct
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import broker_requests as rq
import pytest

import kcodec
from kcodec.broker import BrokerConfig, MockCluster
from kcodec.records import NewRecord

POLLS = 600  # each 0.05 s (a safety net only: the events come much sooner)
MIB = 1 << 20


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    config = BrokerConfig(connections_max_idle_ms=300, request_timeout_ms=300, max_connections=4)
    with MockCluster(config) as c:
        yield c


def _connect(c: MockCluster) -> socket.socket:
    s = socket.create_connection(c.addresses[0], timeout=30)
    return s


def _api_versions() -> bytes:
    return kcodec.encode_request(rq.cls("ApiVersionsRequest")(), 0, correlation_id=7)


def _closed_by_broker(s: socket.socket) -> bool:
    """Whether the broker closed ``s`` (reads what is left until the end)."""
    try:
        while s.recv(1 << 16):
            pass
    except ConnectionResetError:
        pass
    return True


def _open_connections(c: MockCluster) -> int:
    return c.call(lambda: c.inner.servers[0].connections)


def _wait_connections(c: MockCluster, n: int) -> None:
    for _ in range(POLLS):
        if _open_connections(c) == n:
            return
        time.sleep(0.05)
    raise AssertionError(f"{_open_connections(c)} connections open, expected {n}")


def test_an_idle_connection_is_closed(cluster: MockCluster) -> None:
    with _connect(cluster) as s:
        s.sendall(_api_versions())
        head = s.recv(4)
        assert len(head) == 4  # answered; then nothing more is sent
        assert _closed_by_broker(s)
    _wait_connections(cluster, 0)


def test_a_frame_that_trickles_in_is_cut_off(cluster: MockCluster) -> None:
    frame = _api_versions()
    with _connect(cluster) as s:
        s.sendall(frame[:5])  # the size and one byte of the header: the rest never comes
        assert s.recv(1) == b""
    with _connect(cluster) as s:  # the broker still answers whole frames
        s.sendall(frame)
        assert struct.unpack(">i", s.recv(4))[0] > 0


def test_connections_past_the_limit_are_closed_with_a_log_line(
    cluster: MockCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kcodec.broker")
    held = [_connect(cluster) for _ in range(4)]
    try:
        for s in held:  # each one served: all four are open
            s.sendall(_api_versions())
            assert len(s.recv(4)) == 4
        _wait_connections(cluster, 4)
        with _connect(cluster) as extra:
            extra.sendall(_api_versions())
            assert _closed_by_broker(extra)
        assert any("4 connections open (max_connections)" in r.getMessage() for r in caplog.records)
    finally:
        for s in held:
            s.close()
    _wait_connections(cluster, 0)


def _fetch_frame(c: MockCluster) -> bytes:
    tid = c.call(lambda: c.state.topics["big"].topic_id)
    req: Any = rq.fetch("big", tid, 12)
    req.topics[0].partitions[0].partition_max_bytes = 16 * MIB
    return kcodec.encode_request(req, 12, correlation_id=1)


@pytest.mark.parametrize("how", ["stops reading", "resets"])
def test_a_client_that_drops_a_large_fetch_leaves_nothing_behind(cluster: MockCluster, how: str) -> None:
    cluster.create_topic("big", 1)
    value = bytes(range(256)) * 4096  # 1 MiB, incompressible enough (no compression anyway)
    for _ in range(8):
        cluster.append("big", 0, [NewRecord(value)])
    frame = _fetch_frame(cluster)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        clients = []
        for _ in range(4):
            s = _connect(cluster)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(frame)
            assert len(s.recv(4096)) > 0  # the response (8 MiB) has begun
            clients.append(s)
        if how == "resets":
            for s in clients:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.close()
        _wait_connections(cluster, 0)  # stopped readers: closed after connections_max_idle_ms
        after = tracemalloc.get_traced_memory()[0]  # (no gc.collect(): nothing waits for it)
    finally:
        tracemalloc.stop()
        for s in clients:
            s.close()
    assert after - before < 4 * MIB  # four 8 MiB responses dropped, not kept
