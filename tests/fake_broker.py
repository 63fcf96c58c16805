"""An in-process fake Kafka broker for client/negotiation tests: an asyncio server on 127.0.0.1 (port
chosen by the OS) running in a background thread; each test supplies the per-connection session
coroutine, so it can reply with crafted bytes, reorder, delay, stay silent or close."""

from __future__ import annotations

import asyncio
import struct
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from loop_server import LoopServer

import kcodec
from kcodec.protocol.frames import RequestFrame

Session = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> RequestFrame | None:
    """The next request frame, or None at EOF."""
    try:
        head = await reader.readexactly(4)
        (size,) = struct.unpack(">i", head)
        return kcodec.decode_request(head + await reader.readexactly(size))
    except asyncio.IncompleteReadError:
        return None


def frame(correlation_id: int, payload: bytes) -> bytes:
    """A response frame: size, correlation id (response header v0), then ``payload`` verbatim."""
    body = struct.pack(">i", correlation_id) + payload
    return struct.pack(">i", len(body)) + body


def api_versions_response(req: RequestFrame, version: int, error_code: int = 0, **ranges: Any) -> bytes:
    """An ApiVersionsResponse frame at ``version``; ``ranges`` maps api key (as ``k<key>``) to (min, max),
    default: every API kcodec knows."""
    cls = kcodec.message_class("ApiVersionsResponse")
    if ranges:
        keys = [(int(k[1:]), lo, hi) for k, (lo, hi) in ranges.items()]
    else:
        keys = [(a.key, a.min_version, a.max_version) for a in kcodec.apis()]
    av = cls.ApiVersion  # type: ignore[attr-defined]
    body = cls(
        error_code=error_code, api_keys=[av(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in keys]
    )
    return kcodec.encode_response(body, version, correlation_id=req.correlation_id)


class FakeBroker(LoopServer):
    kind = "fake broker"

    def __init__(self, session: Session) -> None:
        super().__init__()
        self._session = session
        self.connections = 0
        self.closed_by_peer = threading.Event()
        self.requests: list[RequestFrame] = []

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._session(reader, writer)
            if reader.at_eof():
                self.closed_by_peer.set()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

