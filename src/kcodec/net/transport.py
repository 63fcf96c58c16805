"""Reaching a broker: ``HOST:PORT`` parsing, TCP and TLS sockets, and one-line failure reasons.

What :mod:`kcodec.net.client`'s connections stand on: :func:`parse_host_port` / :func:`check_port` for
targets, :func:`tls_context` for TLS, the socket factories (plain and TLS) a connection opens with, and
the errors that name what went wrong (a peer that closed without answering, one that answers in
another protocol, a failed TLS handshake).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from kcodec.net.client_errors import BrokerConnectionError, ConnectionClosedError, ProtocolError
from kcodec.net.peer_sniff import describe_foreign_reply
from kcodec.protocol.errors import InvalidArgumentError

__all__ = [
    "SocketFactory",
    "SocketLike",
    "StreamFactory",
    "check_port",
    "parse_host_port",
    "tls_context",
]

class SocketLike(Protocol):
    """What :class:`Connection` needs of a socket (``socket.socket`` and ``ssl.SSLSocket`` fit)."""

    def sendall(self, data: bytes, /) -> Any: ...
    def recv(self, bufsize: int, /) -> bytes: ...
    def settimeout(self, value: float | None, /) -> None: ...
    def close(self) -> None: ...


SocketFactory = Callable[[str, int, float], SocketLike]
StreamFactory = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


def parse_host_port(target: str, default_port: int = 9092) -> tuple[str, int]:
    """``"host:port"`` / ``"[::1]:9092"`` / ``"host"`` → ``(host, port)``; ``InvalidArgumentError``
    (one line, saying what is wrong) for anything else."""
    text = target.strip()
    if text.startswith("["):
        host, close, rest = text[1:].partition("]")
        if not close or (rest and not rest.startswith(":")):
            raise InvalidArgumentError(f"{target!r}: expected [IPv6]:PORT")
        port_text = rest[1:] if rest else None
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif text.count(":") > 1:
        raise InvalidArgumentError(f"{target!r}: write an IPv6 address as [ADDRESS]:PORT")
    else:
        host, port_text = text, None
    if not host:
        raise InvalidArgumentError(f"{target!r}: no host name before the port")
    check_host(host, target)
    if port_text is None:
        return host, default_port
    if not port_text:
        raise InvalidArgumentError(f"{target!r}: no port after ':'")
    if not port_text.isdigit():
        raise InvalidArgumentError(f"{target!r}: port {port_text!r} is not a number")
    return host, check_port(int(port_text), target)


def check_host(host: str, target: object = None) -> str:
    """``host`` if it can be looked up: an IP address, or a name whose labels are 1-63 characters
    (IDNA), else ``InvalidArgumentError`` (rather than the resolver's ``UnicodeError``)."""
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    try:
        host.encode("idna")
    except UnicodeError as e:
        where = f"{target!r}: " if target is not None else ""
        reason = "a label is empty or longer than 63 characters" if "label" in str(e) else "not IDNA"
        raise InvalidArgumentError(f"{where}not a valid host name ({reason})") from None
    return host


def check_port(port: int, target: object = None) -> int:
    """``port`` if it is a TCP port (1-65535), else ``InvalidArgumentError``."""
    if not 1 <= port <= 65535:
        where = f"{target!r}: " if target is not None else ""
        raise InvalidArgumentError(f"{where}port {port} is out of range (1-65535)")
    return port


def tls_context(
    cafile: str | None = None,
    certfile: str | None = None,
    keyfile: str | None = None,
    *,
    verify: bool = True,
) -> ssl.SSLContext:
    """A client TLS context: the system's CAs or ``cafile``, and a client certificate (``certfile``,
    ``keyfile``) for brokers that require one (``ssl.client.auth=required``). ``verify=False`` skips
    certificate and host name checks (tests and debugging only). Unreadable or invalid files raise
    ``InvalidArgumentError``."""
    try:
        ctx = ssl.create_default_context(cafile=cafile)
        if certfile is not None:
            ctx.load_cert_chain(certfile, keyfile)
    except (OSError, ssl.SSLError) as e:
        raise InvalidArgumentError(f"cannot load the TLS files: {e}") from None
    if keyfile is not None and certfile is None:
        raise InvalidArgumentError("a TLS key file needs its certificate file too")
    if not verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def closed_early(host: str, port: int, got_bytes: bool) -> ConnectionClosedError:
    if got_bytes:
        return ConnectionClosedError(f"{host}:{port} closed the connection")
    return ConnectionClosedError(
        f"{host}:{port} closed the connection without answering (a TLS or SASL-only listener may do "
        "that to a plaintext client: try --tls)"
    )


def bad_size(size: int, head: bytes, host: str, port: int) -> ProtocolError:
    foreign = describe_foreign_reply(head)
    if foreign is not None:
        return ProtocolError(f"{host}:{port} is not answering in Kafka's protocol: {foreign}")
    return ProtocolError(f"invalid response frame size {size} from {host}:{port}")


def default_socket_factory(host: str, port: int, timeout: float) -> SocketLike:
    sock = socket.create_connection((host, port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def tls_socket_factory(context: ssl.SSLContext, server_hostname: str | None) -> SocketFactory:
    def connect(host: str, port: int, timeout: float) -> SocketLike:
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            return context.wrap_socket(sock, server_hostname=server_hostname or host)
        except BaseException:
            sock.close()
            raise

    return connect


def tls_failure(host: str, port: int, e: ssl.SSLError) -> BrokerConnectionError:
    reason = getattr(e, "reason", None) or str(e)
    hint = ""
    if reason in ("WRONG_VERSION_NUMBER", "UNEXPECTED_EOF_WHILE_READING") or "EOF" in str(e):
        hint = " (is it a plaintext listener? connect without --tls)"
    return BrokerConnectionError(f"TLS handshake with {host}:{port} failed: {e}{hint}")


def os_reason(e: OSError) -> str:
    """An OSError as one line: its strerror (``Connection refused``) when it has one."""
    return e.strerror if isinstance(e.strerror, str) and e.strerror else str(e)
