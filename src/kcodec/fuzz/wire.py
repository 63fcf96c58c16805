"""Raw request frames and a raw connection for the fuzzer: frames are built byte by byte (so the header
can lie about the body) and sent as they are; replies are read as frames, with what happened to the
connection (answered, closed, reset, silent) as the result.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import struct
import time
from dataclasses import dataclass

from kcodec.protocol.codec import encode, message_class
from kcodec.protocol.registry import api

__all__ = [
    "RawConnection",
    "Reply",
    "alive",
    "api_versions_probe",
    "frame",
    "header_bytes",
    "header_size",
    "is_loopback",
]

_SIZE = struct.Struct(">i")
MAX_REPLY = 64 << 20  # a reply frame claiming more than this is itself a finding


def header_bytes(api_key: int, api_version: int, correlation_id: int, header_version: int,
                 client_id: str | None = "kcodec-fuzz") -> bytes:
    """A request header at ``header_version`` (0: no client id; 2: with an empty tagged section)."""
    out = bytearray(struct.pack(">hhi", api_key, api_version, correlation_id))
    if header_version >= 1:
        if client_id is None:
            out += b"\xff\xff"
        else:
            cid = client_id.encode()
            out += struct.pack(">h", len(cid)) + cid
    if header_version >= 2:
        out += b"\x00"
    return bytes(out)


def frame(header: bytes, body: bytes, size: int | None = None) -> bytes:
    """``size`` prefix (default: the true size) + header + body."""
    return _SIZE.pack(len(header) + len(body) if size is None else size) + header + body


def request_frame(api_key: int, api_version: int, correlation_id: int, body: bytes) -> bytes:
    """A well-formed frame: the header version Kafka's rules give for that api key and version."""
    hv = api(api_key).request_header_version(api_version)
    return frame(header_bytes(api_key, api_version, correlation_id, hv), body)


def header_size(frame: bytes) -> int:
    """The request header's size in ``frame`` (after the size prefix), read from its api key and
    version by Kafka's header-version rules (header v1 for api keys kcodec does not know)."""
    from kcodec.protocol.errors import KcodecError

    if len(frame) < 12:
        return max(len(frame) - 4, 0)
    key, version = struct.unpack_from(">hh", frame, 4)
    try:
        hv = api(key).request_header_version(version)
    except KcodecError:
        hv = 1
    size = 8
    if hv >= 1 and len(frame) >= 14:
        (n,) = struct.unpack_from(">h", frame, 12)
        size += 2 + max(n, 0)
    if hv >= 2:
        size += 1
    return min(size, len(frame) - 4)


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` resolves to is a loopback address."""
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(str(i[4][0]).split("%")[0]).is_loopback for i in infos)


@dataclass(slots=True)
class Reply:
    """What came back for one request: ``outcome`` is ``response`` (``data``: the whole frame, size
    prefix included), ``closed`` (orderly close), ``reset`` (connection reset / broken pipe),
    ``timeout`` (nothing within the time), or ``bad_frame`` (a reply size out of range; ``data``
    holds the bytes read)."""

    outcome: str
    data: bytes = b""
    detail: str = ""
    elapsed: float = 0.0


class RawConnection:
    """One TCP connection that sends bytes as given and reads reply frames."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.sock: socket.socket | None = None
        self.buf = bytearray()

    def connect(self) -> None:
        self.sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf.clear()

    @property
    def open(self) -> bool:
        return self.sock is not None

    def close(self) -> None:
        sock, self.sock = self.sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()

    def send(self, data: bytes) -> str | None:
        """Send; ``None`` when sent, else the outcome (``reset``/``closed``) that stopped it."""
        if self.sock is None:
            return "closed"
        try:
            self.sock.settimeout(self.timeout)
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close()
            return "reset"
        except TimeoutError:
            return "timeout"
        except OSError:
            self.close()
            return "reset"
        return None

    def read_reply(self, timeout: float) -> Reply:
        """The next reply frame, or what happened instead."""
        start = time.monotonic()
        deadline = start + timeout
        while True:
            if len(self.buf) >= 4:
                (size,) = _SIZE.unpack_from(self.buf, 0)
                if size < 4 or size > MAX_REPLY:
                    data = bytes(self.buf)
                    self.close()
                    return Reply("bad_frame", data, f"reply frame size {size}", time.monotonic() - start)
                if len(self.buf) >= 4 + size:
                    data = bytes(self.buf[: 4 + size])
                    del self.buf[: 4 + size]
                    return Reply("response", data, "", time.monotonic() - start)
            left = deadline - time.monotonic()
            if self.sock is None:
                return Reply("closed", bytes(self.buf), "connection not open", 0.0)
            if left <= 0:
                elapsed = time.monotonic() - start
                return Reply("timeout", bytes(self.buf), f"no reply in {timeout:g} s", elapsed)
            try:
                self.sock.settimeout(left)
                chunk = self.sock.recv(1 << 16)
            except TimeoutError:
                continue
            except ConnectionResetError:
                self.close()
                return Reply("reset", bytes(self.buf), "connection reset", time.monotonic() - start)
            except OSError as e:
                self.close()
                return Reply("reset", bytes(self.buf), str(e), time.monotonic() - start)
            if not chunk:
                partial = bytes(self.buf)
                self.close()
                return Reply("closed", partial, "closed by the broker", time.monotonic() - start)
            self.buf += chunk


def api_versions_probe() -> bytes:
    """An ApiVersions v0 request frame (every Kafka-speaking broker answers it)."""
    body = encode(message_class("ApiVersionsRequest")(), 0)
    return request_frame(18, 0, 0x7FFF_0001, body)


def alive(host: str, port: int, timeout: float) -> tuple[bool, str]:
    """Liveness probe: ApiVersions v0 on a fresh connection. (alive, what happened)."""
    conn = RawConnection(host, port, timeout)
    try:
        conn.connect()
    except OSError as e:
        return False, f"cannot connect: {e}"
    try:
        sent = conn.send(api_versions_probe())
        if sent is not None:
            return False, f"probe not sent: {sent}"
        reply = conn.read_reply(timeout)
        if reply.outcome != "response":
            return False, f"probe got {reply.outcome}: {reply.detail}"
        return True, "answered ApiVersions"
    finally:
        conn.close()
