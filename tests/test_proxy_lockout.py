"""The proxy cannot be locked up by its clients: a client idle for ``idle_timeout`` (no response
awaited) is closed, so is one whose request trickles in past ``request_timeout``, and connections past
``max_connections`` are closed on arrival with a notice. Upstream is the mock broker; small limits;
the test waits for events (EOF on the socket, notices) by counted polls, never by measuring time."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import broker_requests as rq
import pytest
from proxy_runner import ProxyRun, running_proxy

import kcodec
from kcodec.broker import BrokerConfig, MockCluster
from kcodec.proxy import SessionLimits

POLLS = 600  # each 0.05 s (a safety net only)


@pytest.fixture(scope="module")
def broker() -> Iterator[MockCluster]:
    with MockCluster(BrokerConfig(brokers=1)) as c:
        yield c


@pytest.fixture
def proxy(broker: MockCluster) -> Iterator[ProxyRun]:
    limits = SessionLimits(idle_timeout=0.3, request_timeout=0.3)
    with running_proxy(broker.addresses[0], limits=limits, max_connections=3) as run:
        yield run


def _api_versions() -> bytes:
    return kcodec.encode_request(rq.cls("ApiVersionsRequest")(), 0, correlation_id=3)


def _served(s: socket.socket) -> None:
    s.sendall(_api_versions())
    head = s.recv(4)
    assert len(head) == 4 and struct.unpack(">i", head)[0] > 0


def _until_eof(s: socket.socket) -> None:
    try:
        while s.recv(1 << 16):
            pass
    except ConnectionResetError:
        pass


def _closed_reasons(run: ProxyRun) -> list[str]:
    return [str(n.details.get("reason")) for n in run.notices("closed")]


def _wait_reason(run: ProxyRun, reason: str) -> None:
    for _ in range(POLLS):
        if reason in _closed_reasons(run):
            return
        time.sleep(0.05)
    raise AssertionError(f"no connection closed for {reason!r}: {_closed_reasons(run)}")


def test_an_idle_client_is_closed(proxy: ProxyRun) -> None:
    with socket.create_connection(proxy.address, timeout=30) as s:
        _served(s)
        _until_eof(s)
    _wait_reason(proxy, "idle")


def test_a_request_that_trickles_in_is_cut_off(proxy: ProxyRun) -> None:
    with socket.create_connection(proxy.address, timeout=30) as s:
        s.sendall(_api_versions()[:6])  # the rest never comes
        _until_eof(s)
    _wait_reason(proxy, "timeout")
    assert any("request timeout" in n.message for n in proxy.notices("stalled"))


def test_connections_past_the_limit_are_closed_on_arrival(proxy: ProxyRun) -> None:
    held = [socket.create_connection(proxy.address, timeout=30) for _ in range(3)]
    try:
        for s in held:
            _served(s)
        with socket.create_connection(proxy.address, timeout=30) as extra:
            _until_eof(extra)
        assert any("(the limit); closed on arrival" in n.message for n in proxy.notices("protocol"))
    finally:
        for s in held:
            s.close()
