"""kcodec.net.client against an in-process fake broker on 127.0.0.1: correlation, pipelining, timeouts,
typed errors, socket closing."""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest
from fake_broker import FakeBroker, api_versions_response, frame, read_request

import kcodec
from kcodec.net.client import AsyncConnection, Connection, parse_host_port
from kcodec.net.client_errors import (
    BrokerConnectionError,
    ClientError,
    ConnectionClosedError,
    ProtocolError,
    RequestTimeoutError,
)
from kcodec.protocol.errors import DecodeError, KcodecError

REQ = kcodec.message_class("ApiVersionsRequest")


def _req() -> kcodec.protocol.model.Message:
    return REQ(client_software_name="kcodec-test", client_software_version="1")


def reversed_batch(n: int):  # type: ignore[no-untyped-def]
    """A session that reads ``n`` requests and answers them in reverse order, each at its version."""

    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reqs = []
        for _ in range(n):
            r = await read_request(reader)
            assert r is not None
            reqs.append(r)
        for r in reversed(reqs):
            writer.write(api_versions_response(r, r.api_version, k18=(0, r.api_version)))
        await writer.drain()

    return session


def test_errors_are_typed() -> None:
    for cls in (BrokerConnectionError, ConnectionClosedError, ProtocolError, RequestTimeoutError):
        assert issubclass(cls, ClientError) and issubclass(cls, KcodecError)
    assert issubclass(RequestTimeoutError, TimeoutError)
    assert issubclass(BrokerConnectionError, ConnectionError)


def test_parse_host_port() -> None:
    assert parse_host_port("127.0.0.1:9093") == ("127.0.0.1", 9093)
    assert parse_host_port("[::1]:19092") == ("::1", 19092)
    assert parse_host_port("broker") == ("broker", 9092)


def test_sync_pipelined_out_of_order() -> None:
    with FakeBroker(reversed_batch(3)) as broker, Connection("127.0.0.1", broker.port, timeout=5) as conn:
        ids = [conn.send(_req(), v) for v in (0, 2, 4)]
        assert len(set(ids)) == 3
        # ask for the first one: the broker answers it last, the others are kept for later
        frames = [conn.receive(i) for i in ids]
        for f, v in zip(frames, (0, 2, 4), strict=True):
            assert f.api_version == v
            assert [(k.api_key, k.max_version) for k in f.body.api_keys] == [(18, v)]
        assert [f.correlation_id for f in frames] == ids


def test_async_pipelined_out_of_order() -> None:
    async def main() -> list[int]:
        async with AsyncConnection("127.0.0.1", broker.port, timeout=5) as conn:
            frames = await asyncio.gather(*(conn.request(_req(), v) for v in (1, 3, 4, 0)))
            return [f.body.api_keys[0].max_version for f in frames]

    with FakeBroker(reversed_batch(4)) as broker:
        assert asyncio.run(main()) == [1, 3, 4, 0]


def test_sync_timeout_keeps_connection_usable() -> None:
    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        r = await read_request(reader)
        assert r is not None
        data = api_versions_response(r, r.api_version, k18=(0, 4))
        writer.write(data[:7])  # half a frame now, the rest later
        await writer.drain()
        await asyncio.sleep(0.6)
        writer.write(data[7:])
        await writer.drain()

    with FakeBroker(session) as broker, Connection("127.0.0.1", broker.port, timeout=0.2) as conn:
        cid = conn.send(_req(), 3)
        with pytest.raises(RequestTimeoutError):
            conn.receive(cid)
        assert conn.receive(cid, timeout=5).body.api_keys[0].max_version == 4


def test_async_timeout_then_late_reply_is_dropped() -> None:
    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first = await read_request(reader)
        second = await read_request(reader)
        assert first is not None and second is not None
        await asyncio.sleep(0.4)
        writer.write(api_versions_response(first, first.api_version, k18=(0, 1)))
        writer.write(api_versions_response(second, second.api_version, k18=(0, 2)))
        await writer.drain()

    async def main() -> int:
        async with AsyncConnection("127.0.0.1", broker.port, timeout=5) as conn:
            slow = asyncio.create_task(conn.request(_req(), 1, timeout=0.1))
            await asyncio.sleep(0.01)
            second = asyncio.create_task(conn.request(_req(), 2))
            with pytest.raises(RequestTimeoutError):
                await slow
            return int((await second).body.api_keys[0].max_version)

    with FakeBroker(session) as broker:
        assert asyncio.run(main()) == 2


def test_unexpected_correlation_id_is_a_protocol_error() -> None:
    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        r = await read_request(reader)
        assert r is not None
        writer.write(frame(r.correlation_id + 1000, b"\x00\x00\x00\x00\x00\x00"))
        await writer.drain()

    with FakeBroker(session) as broker:
        conn = Connection("127.0.0.1", broker.port, timeout=5).connect()
        with pytest.raises(ProtocolError, match="correlation id"):
            conn.request(_req(), 0)
        assert not conn.connected

        async def main() -> None:
            async with AsyncConnection("127.0.0.1", broker.port, timeout=5) as aconn:
                with pytest.raises(ProtocolError, match="correlation id"):
                    await aconn.request(_req(), 0)

        asyncio.run(main())


def test_bad_frame_size_and_undecodable_body() -> None:
    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        r = await read_request(reader)
        assert r is not None
        if r.api_version == 0:
            writer.write(frame(r.correlation_id, b"\x00"))  # body too short
        else:
            writer.write(struct.pack(">i", 0x7FFFFFF0))
        await writer.drain()

    with FakeBroker(session) as broker:
        with Connection("127.0.0.1", broker.port, timeout=5) as conn, pytest.raises(ProtocolError) as ei:
            conn.request(_req(), 0)
        assert isinstance(ei.value.__cause__, DecodeError)
        with (
            Connection("127.0.0.1", broker.port, timeout=5) as conn,
            pytest.raises(ProtocolError, match="size"),
        ):
            conn.request(_req(), 1)


def test_eof_fails_every_request_in_flight() -> None:
    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await read_request(reader)

    async def main() -> list[BaseException | object]:
        async with AsyncConnection("127.0.0.1", broker.port, timeout=5) as conn:
            return await asyncio.gather(
                conn.request(_req(), 0), conn.request(_req(), 1), return_exceptions=True
            )

    with FakeBroker(session) as broker:
        results = asyncio.run(main())
    assert all(isinstance(r, ConnectionClosedError) for r in results)

    async def close_after_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)

    with FakeBroker(close_after_one) as broker:
        conn = Connection("127.0.0.1", broker.port, timeout=5).connect()
        with pytest.raises(ConnectionClosedError):
            conn.request(_req(), 0)
        assert not conn.connected


def test_connect_refused_and_closed_use() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(BrokerConnectionError):
        Connection("127.0.0.1", port, timeout=2).connect()
    with pytest.raises(BrokerConnectionError):
        asyncio.run(AsyncConnection("127.0.0.1", port, timeout=2).connect())
    with pytest.raises(ConnectionClosedError):
        Connection("127.0.0.1", port).send(_req(), 0)


def test_context_managers_close_sockets_and_factory_is_used() -> None:
    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (r := await read_request(reader)) is not None:
            writer.write(api_versions_response(r, r.api_version))
            await writer.drain()

    made: list[socket.socket] = []

    def factory(host: str, port: int, timeout: float) -> socket.socket:
        sock = socket.create_connection((host, port), timeout=timeout)
        made.append(sock)
        return sock

    with FakeBroker(session) as broker:
        with (
            pytest.raises(RuntimeError),
            Connection("127.0.0.1", broker.port, socket_factory=factory) as conn,
        ):
            assert conn.request(_req(), 4).body.error_code == 0
            raise RuntimeError("boom")
        assert made and made[0].fileno() == -1
        assert broker.closed_by_peer.wait(5)

        async def main() -> None:
            async with AsyncConnection("127.0.0.1", broker.port) as conn:
                assert (await conn.request(_req(), 3)).body.error_code == 0
            assert not conn.connected

        asyncio.run(main())


def test_on_connect_hook_runs_before_use() -> None:
    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (r := await read_request(reader)) is not None:
            writer.write(api_versions_response(r, r.api_version))
            await writer.drain()

    seen: list[int] = []
    with FakeBroker(session) as broker:
        hook = lambda c: seen.append(len(c.request(_req(), 0).body.api_keys))  # noqa: E731
        with Connection("127.0.0.1", broker.port, on_connect=hook) as conn:
            assert seen and conn.connected
