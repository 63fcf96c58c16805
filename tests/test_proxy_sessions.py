"""The live proxy's connections against peers that misbehave on purpose: an in-process fake broker
(tests/fake_broker.py) and raw client sockets on 127.0.0.1. Bytes go through unchanged; addresses are
rewritten at several versions of Metadata, FindCoordinator and DescribeCluster; a dead, cut-off,
silent, slow or stalled side closes the other cleanly; the limits hold; stopping closes everything."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fake_broker import FakeBroker
from proxy_runner import ProxyRun, read_back, running_proxy
from tansu_broker import free_port

import kcodec
from kcodec.capture import CaptureIssue
from kcodec.proxy import SessionLimits

# Brokers the fake upstream advertises: loopback ports where nothing listens (tests stay on loopback).
FAR_BROKERS = [("127.0.0.1", free_port()), ("127.0.0.1", free_port()), ("localhost", free_port())]


# --- raw clients and upstream sessions ---------------------------------------------------------------


def _connect(address: tuple[str, int], rcvbuf: int | None = None) -> socket.socket:
    sock = socket.socket()
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(10)
    sock.connect(address)
    return sock


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise EOFError(f"EOF after {len(out)} of {n} bytes")
        out += chunk
    return bytes(out)


def _recv_frame(sock: socket.socket) -> bytes:
    head = _recv_exactly(sock, 4)
    return head + _recv_exactly(sock, struct.unpack(">i", head)[0])


def _recv_all(sock: socket.socket) -> bytes:
    """Everything until EOF (the proxy closed its side)."""
    out = bytearray()
    while chunk := sock.recv(65536):
        out += chunk
    return bytes(out)


async def _read_raw(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readexactly(4)
        return head + await reader.readexactly(struct.unpack(">i", head)[0])
    except asyncio.IncompleteReadError:
        return None


def _upstream(answer: Callable[[bytes], bytes | None], received: list[bytes]) -> Any:
    """A fake broker session: records each request frame and writes ``answer(frame)`` (None: nothing)."""

    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (frame := await _read_raw(reader)) is not None:
            received.append(frame)
            reply = answer(frame)
            if reply is not None:
                writer.write(reply)
                await writer.drain()

    return session


def _request(name: str, version: int, cid: int, **fields: Any) -> bytes:
    return kcodec.encode_request(kcodec.message_class(name)(**fields), version, correlation_id=cid)


def _wait_for(check: Callable[[], bool], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _closed(run: ProxyRun, count: int = 1) -> list[Any]:
    _wait_for(lambda: len(run.notices("closed")) >= count)
    return run.notices("closed")


# --- forwarding and rewriting --------------------------------------------------------------------------


def test_bytes_go_through_unchanged(tmp_path: Path) -> None:
    odd = struct.pack(">ii", 4 + 3, 2) + b"\x01\x02\x03"  # answers request 2 with bytes no API can decode
    replies = {
        1: kcodec.encode_response(
            kcodec.message_class("ApiVersionsResponse")(api_keys=[]), 3, correlation_id=1
        ),
        2: odd,  # a Metadata response that does not decode: forwarded as it came
        3: struct.pack(">ii", 8, 99) + b"ABCD",  # a response to no request at all
    }
    sent_up: list[bytes] = []
    requests = [
        _request("ApiVersionsRequest", 3, 1, client_software_name="t", client_software_version="1"),
        _request("MetadataRequest", 12, 2, topics=None),
        _request("ListOffsetsRequest", 7, 3),
    ]
    pcap = tmp_path / "raw.pcap"
    with FakeBroker(_upstream(lambda f: replies[struct.unpack_from(">i", f, 8)[0]], sent_up)) as fb:
        with running_proxy(("127.0.0.1", fb.port), pcap=pcap) as run, _connect(run.address) as sock:
            for req in requests:
                sock.sendall(req)
                assert _recv_frame(sock) == replies[struct.unpack_from(">i", req, 8)[0]]
        _wait_for(lambda: len(sent_up) == 3)
    assert sent_up == requests
    unrewritten = run.notices("unrewritten")
    assert len(unrewritten) == 1 and "Metadata v12 response (correlation id 2) does not decode" in (
        unrewritten[0].message
    )
    live = [f.to_dict() for f in run.frames()]
    assert [(f["api_name"], f["direction"], f["error"] is None) for f in live] == [
        ("ApiVersions", "request", True),
        ("ApiVersions", "response", True),
        ("Metadata", "request", True),
        ("Metadata", "response", False),
        ("ListOffsets", "request", True),
        (None, "response", False),  # correlation id 99: unmatched
    ]
    back, _ = read_back(pcap, run.listener_ports())
    assert back == live


def _address_replies(frame: bytes) -> bytes:
    """Metadata / FindCoordinator / DescribeCluster responses at the version asked, naming FAR_BROKERS."""
    key, version, cid = struct.unpack_from(">hhi", frame, 4)
    info = kcodec.api(key)
    cls: Any = kcodec.message_class(info.response)
    if info.name == "Metadata":
        brokers = [
            cls.MetadataResponseBroker(node_id=n, host=h, port=p) for n, (h, p) in enumerate(FAR_BROKERS)
        ]
        body = cls(brokers=brokers, controller_id=0)
    elif info.name == "FindCoordinator" and version < 4:
        body = cls(node_id=1, host=FAR_BROKERS[1][0], port=FAR_BROKERS[1][1])
    elif info.name == "FindCoordinator":
        coordinators = [cls.Coordinator(key="g", node_id=1, host=FAR_BROKERS[1][0], port=FAR_BROKERS[1][1])]
        body = cls(coordinators=coordinators)
    else:
        brokers = [
            cls.DescribeClusterBroker(broker_id=n, host=h, port=p) for n, (h, p) in enumerate(FAR_BROKERS)
        ]
        body = cls(cluster_id="c", brokers=brokers)
    return kcodec.encode_response(body, version, correlation_id=cid)


ADDRESS_REQUESTS = [
    ("MetadataRequest", 0, {}),
    ("MetadataRequest", 4, {}),
    ("MetadataRequest", 9, {}),  # the first flexible version
    ("MetadataRequest", 12, {"topics": None}),
    ("MetadataRequest", 13, {"topics": None}),
    ("FindCoordinatorRequest", 0, {"key": "g"}),
    ("FindCoordinatorRequest", 3, {"key": "g"}),  # flexible, single coordinator
    ("FindCoordinatorRequest", 4, {"coordinator_keys": ["g"]}),  # batched
    ("FindCoordinatorRequest", 6, {"coordinator_keys": ["g"]}),
    ("DescribeClusterRequest", 0, {}),
    ("DescribeClusterRequest", 1, {"endpoint_type": 1}),
    ("DescribeClusterRequest", 2, {"include_fenced_brokers": True}),
]


def test_addresses_are_rewritten_at_several_versions() -> None:
    received: list[bytes] = []
    with FakeBroker(_upstream(_address_replies, received)) as fb:
        upstream = ("127.0.0.1", fb.port)
        with (
            running_proxy(upstream, limits=SessionLimits(connect_timeout=2)) as run,
            _connect(run.address) as sock,
        ):
            for cid, (name, version, fields) in enumerate(ADDRESS_REQUESTS, 1):
                sock.sendall(_request(name, version, cid, **fields))
                reply = _recv_frame(sock)
                key = kcodec.api(name.removesuffix("Request")).key
                body: Any = kcodec.decode_response(reply, key, version).body
                expected = {ep: run.proxy.listeners[n + 1][1] for n, ep in enumerate(FAR_BROKERS)}
                if hasattr(body, "brokers"):
                    got = [(b.host, b.port) for b in body.brokers]
                    assert got == [expected[ep] for ep in FAR_BROKERS], (name, version)
                elif version < 4:
                    assert (body.host, body.port) == expected[FAR_BROKERS[1]], (name, version)
                else:
                    assert [(c.host, c.port) for c in body.coordinators] == [expected[FAR_BROKERS[1]]]
            # the listeners lead where the upstream said: no broker listens there, so a client sent to
            # one is closed, with a notice
            far = run.proxy.listeners[1][1]
            with _connect(far) as lost:
                assert _recv_all(lost) == b""
            _wait_for(lambda: bool(run.notices("unreachable")))
            assert run.notices("unreachable")[0].upstream == f"127.0.0.1:{FAR_BROKERS[0][1]}"
    assert [b for b, _ in run.proxy.listeners] == [upstream, *FAR_BROKERS]
    assert len(run.notices("listening")) == 1 + 3  # the first listener, then one per broker, once each
    assert len(run.notices("rewritten")) == len(ADDRESS_REQUESTS)


def test_listener_limit() -> None:
    with (
        FakeBroker(_upstream(_address_replies, [])) as fb,
        running_proxy(("127.0.0.1", fb.port), max_listeners=2) as run,
        _connect(run.address) as sock,
    ):
        sock.sendall(_request("MetadataRequest", 12, 1, topics=None))
        body: Any = kcodec.decode_response(_recv_frame(sock), 3, 12).body
    first = run.proxy.listeners[1][1]
    assert [(b.host, b.port) for b in body.brokers] == [first, *FAR_BROKERS[1:]]
    (notice,) = run.notices("unrewritten")
    left = f"127.0.0.1:{FAR_BROKERS[1][1]}, localhost:{FAR_BROKERS[2][1]}"
    assert f"no listener left for {left} (listener limit reached)" in notice.message


# --- dead, cut-off, stalled and slow sides ---------------------------------------------------------------


def test_unreachable_upstream_closes_the_client() -> None:
    port = free_port()  # nothing listens there
    with running_proxy(("127.0.0.1", port)) as run, _connect(run.address) as sock:
        assert _recv_all(sock) == b""
        (closed,) = _closed(run)
    assert closed.details["reason"] == "unreachable"
    assert "cannot connect to broker 127.0.0.1:" in run.notices("unreachable")[0].message


def test_upstream_closing_inside_a_frame(tmp_path: Path) -> None:
    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        frame = await _read_raw(reader)
        assert frame is not None
        writer.write(struct.pack(">ii", 100, struct.unpack_from(">i", frame, 8)[0]) + b"partial")
        await writer.drain()

    pcap = tmp_path / "cut.pcap"
    with FakeBroker(session) as fb, running_proxy(("127.0.0.1", fb.port), pcap=pcap) as run:
        with _connect(run.address) as sock:
            sock.sendall(_request("ListOffsetsRequest", 7, 5))
            assert _recv_all(sock) == struct.pack(">ii", 100, 5) + b"partial"
        (closed,) = _closed(run)
    assert closed.details["reason"] == "cut" and closed.details["by"] == "broker"
    live_issues = [e.to_dict() for e in run.events if isinstance(e, CaptureIssue)]
    assert [i["kind"] for i in live_issues] == ["truncated"]
    back, others = read_back(pcap, run.listener_ports())
    assert back == [f.to_dict() for f in run.frames()]
    assert [(i["kind"], i["message"]) for i in others] == [(i["kind"], i["message"]) for i in live_issues]


def test_client_leaving_closes_the_upstream() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # never answers; returns at EOF

    with FakeBroker(silent) as fb, running_proxy(("127.0.0.1", fb.port)) as run:
        with _connect(run.address) as sock:
            sock.sendall(_request("ListOffsetsRequest", 7, 1))
            _wait_for(lambda: fb.connections == 1)
        assert fb.closed_by_peer.wait(5)  # the proxy closed its broker connection
        (closed,) = _closed(run)
    assert (closed.details["reason"], closed.details["by"]) == ("eof", "client")


def test_bad_frame_size_closes_both_sides() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    limits = SessionLimits(max_frame_size=1 << 20)
    with FakeBroker(silent) as fb, running_proxy(("127.0.0.1", fb.port), limits=limits) as run:
        with _connect(run.address) as sock:
            sock.sendall(struct.pack(">i", (1 << 20) + 1) + b"x" * 100)
            assert _recv_all(sock) == b""
        assert fb.closed_by_peer.wait(5)
        (closed,) = _closed(run)
    assert closed.details["reason"] == "protocol"
    assert "frame size 1048577 (above the limit of 1048576) at byte 0 of the request stream" in (
        run.notices("protocol")[0].message
    )
    with (
        FakeBroker(silent) as fb,
        running_proxy(("127.0.0.1", fb.port)) as run,
        _connect(run.address) as sock,
    ):
        sock.sendall(bytes.fromhex("160301020001") + b"\x00" * 100)  # a TLS ClientHello's start
        assert _recv_all(sock) == b""
        _closed(run)
    assert "it looks like a TLS handshake" in run.notices("protocol")[0].message


def test_a_failing_event_callback_closes_the_connection() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    with FakeBroker(silent) as fb, running_proxy(("127.0.0.1", fb.port)) as run:
        seen = run.events

        def broken(event: Any) -> None:
            seen.append(event)
            if getattr(event, "direction", None) == "request":
                raise RuntimeError("the display broke")

        run.proxy._on_event = broken  # what a presentation bug would do
        with _connect(run.address) as sock:
            sock.sendall(_request("ListOffsetsRequest", 7, 1))
            assert _recv_all(sock) == b""  # closed, not left hanging
        assert fb.closed_by_peer.wait(5)
        (closed,) = _closed(run)
    assert closed.details["reason"] == "error"
    assert "the proxy failed: RuntimeError: the display broke" in closed.message


def _firehose(frame_size: int, total: int, sent: list[int], done: threading.Event) -> Any:
    """An upstream that answers the first request with ``total`` bytes of response frames."""

    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first = await _read_raw(reader)
        assert first is not None
        cid = struct.unpack_from(">i", first, 8)[0]
        frame = struct.pack(">ii", frame_size - 4, cid) + b"\x00" * (frame_size - 8)
        sent.append(0)
        try:
            while sent[0] < total:
                writer.write(frame)
                await writer.drain()
                sent[0] += len(frame)
        except ConnectionError:
            pass
        finally:
            done.set()

    return session


def test_a_client_that_stops_reading_is_cut_off() -> None:
    sent: list[int] = []
    done = threading.Event()
    total = 256 * 1024 * 1024
    limits = SessionLimits(stall_timeout=0.5, write_buffer=64 * 1024)
    with (
        FakeBroker(_firehose(64 * 1024, total, sent, done)) as fb,
        running_proxy(("127.0.0.1", fb.port), limits=limits) as run,
        _connect(run.address, rcvbuf=16 * 1024) as sock,
    ):
        sock.sendall(_request("ListOffsetsRequest", 7, 1))
        start = time.monotonic()
        (closed,) = _closed(run)  # the client never reads
        assert time.monotonic() - start < 60  # a safety net: the stall limit is 0.5 s
        assert done.wait(60)  # the broker's connection was closed too
    assert (closed.details["reason"], closed.details["by"]) == ("stalled", "client")
    assert "the client read nothing for 0.5 s" in run.notices("stalled")[0].message
    # backpressure: the broker could only push what the socket buffers and one frame hold
    print(f"the broker pushed {sent[0]} bytes before the stalled client was cut off")
    assert sent[0] < 32 * 1024 * 1024, sent[0]


def test_a_slow_reader_is_not_cut_off() -> None:
    sent: list[int] = []
    done = threading.Event()
    total = 1024 * 1024
    # the reader pauses 10 ms between reads; the stall limit is far above any pause a loaded machine
    # adds to that (the cut-off itself is tested above with 0.5 s and a client that never reads)
    limits = SessionLimits(stall_timeout=10.0, write_buffer=64 * 1024)
    with (
        FakeBroker(_firehose(64 * 1024, total, sent, done)) as fb,
        running_proxy(("127.0.0.1", fb.port), limits=limits) as run,
        _connect(run.address, rcvbuf=16 * 1024) as sock,
    ):
        sock.sendall(_request("ListOffsetsRequest", 7, 1))
        got = 0
        while got < total:
            got += len(sock.recv(256 * 1024))
            time.sleep(0.01)  # slower than the broker, never stalled for long
        assert got == total
    assert run.notices("stalled") == []


def test_connection_limit() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    with (
        FakeBroker(silent) as fb,
        running_proxy(("127.0.0.1", fb.port), max_connections=1) as run,
        _connect(run.address) as first,
    ):
        _wait_for(lambda: fb.connections == 1)
        with _connect(run.address) as second, pytest.raises((ConnectionResetError, EOFError)):
            if second.recv(1) == b"":
                raise EOFError
        first.sendall(_request("ListOffsetsRequest", 7, 1))
    assert run.proxy.stats.refused == 1
    assert "1 connections are open (the limit)" in run.notices("protocol")[0].message


@contextmanager
def _open_session(run: ProxyRun) -> Iterator[socket.socket]:
    with _connect(run.address) as sock:
        sock.sendall(
            _request("ApiVersionsRequest", 3, 1, client_software_name="t", client_software_version="1")
        )
        _recv_frame(sock)
        yield sock


def test_stopping_closes_every_connection(tmp_path: Path) -> None:
    async def answer_then_wait(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        frame = await _read_raw(reader)
        assert frame is not None
        body = kcodec.message_class("ApiVersionsResponse")(api_keys=[])
        writer.write(kcodec.encode_response(body, 3, correlation_id=1))
        await writer.drain()
        await reader.read()

    pcap = tmp_path / "stop.pcap"
    with (
        FakeBroker(answer_then_wait) as fb,
        running_proxy(("127.0.0.1", fb.port), pcap=pcap) as run,
        _open_session(run) as a,
        _open_session(run) as b,
    ):
        run.call(run.proxy.stop())
        assert _recv_all(a) == b"" and _recv_all(b) == b""
        _wait_for(lambda: fb.closed_by_peer.is_set())
    assert [n.details["reason"] for n in run.notices("closed")] == ["stopped", "stopped"]
    back, others = read_back(pcap, run.listener_ports())
    assert others == [] and back == [f.to_dict() for f in run.frames()] and len(back) == 4
