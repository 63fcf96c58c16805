"""Broker addresses in responses: which responses advertise them, and rewriting them (sans-I/O).

A client learns where brokers are from the responses that advertise broker endpoints: Metadata
(``brokers``), FindCoordinator (the coordinator's ``host``/``port``, ``coordinators`` from v4),
DescribeCluster (``brokers``), and the current-leader hints of KIP-951 and KIP-932 (``node_endpoints``
of Produce v10+, Fetch v16+, ShareFetch, ShareAcknowledge). A proxy that wants its clients to stay on
it must replace each advertised ``host``/``port`` with an address of its own.

Where the endpoints are is read from the message schemas, per API and version
(:func:`endpoint_paths`: every struct that has both a ``host`` string and a ``port`` int32), so every
version is covered, flexible or not. :func:`parse_response` decodes a response frame with kcodec's
codecs and returns a :class:`ResponseRewrite`: the endpoints it advertises, and
:meth:`~ResponseRewrite.apply`, which writes the frame again with them replaced: the original header
bytes, the body re-encoded, whatever followed the body kept verbatim (a peer's off-spec trailer stays
as it was) and the size prefix fixed. Nothing here does I/O.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache

from kcodec.protocol.codec import Diagnostic, decode, decode_at, encode, message_info
from kcodec.protocol.errors import DecodeError, KcodecError
from kcodec.protocol.model import Message
from kcodec.protocol.registry import api

__all__ = [
    "ADDRESS_APIS",
    "Endpoint",
    "EndpointPath",
    "ResponseRewrite",
    "endpoint_paths",
    "parse_response",
    "rewrites",
]

#: The APIs whose responses tell clients where brokers are (names as in ``kcodec.api``). Raft and
#: controller APIs (Vote, BeginQuorumEpoch, DescribeQuorum, ...) also carry endpoints, but of
#: controllers that clients do not connect to; they are left as they are.
ADDRESS_APIS: tuple[str, ...] = (
    "Metadata",
    "FindCoordinator",
    "DescribeCluster",
    "Produce",
    "Fetch",
    "ShareFetch",
    "ShareAcknowledge",
)

Endpoint = tuple[str, int]  # (host, port) as advertised
#: The way from a response body to structs holding ``host``/``port``: ``(attribute, is_array)`` steps
#: (empty: the body itself, as in FindCoordinator v0-3).
EndpointPath = tuple[tuple[str, bool], ...]
_SIZE = struct.Struct(">i")


@cache
def _address_keys() -> frozenset[int]:
    out: set[int] = set()
    for name in ADDRESS_APIS:
        try:
            out.add(api(name).key)
        except KcodecError:  # an API this build of kcodec does not know
            continue
    return frozenset(out)


@cache
def endpoint_paths(api_key: int, api_version: int) -> tuple[EndpointPath, ...]:
    """Where broker endpoints are in the response of ``api_key`` at ``api_version`` (empty: none,
    also for APIs outside :data:`ADDRESS_APIS` and versions kcodec does not know)."""
    if api_key not in _address_keys():
        return ()
    info = api(api_key)
    if api_version not in info.versions:
        return ()
    schema = message_info(info.response)
    found: list[EndpointPath] = []

    def walk(struct_name: str, path: EndpointPath, depth: int) -> None:
        fields = schema.fields_at(struct_name, api_version)
        types = {f.attr: f.type for f in fields}
        if types.get("host") == "string" and types.get("port") == "int32":
            found.append(path)
        if depth > 8:
            return
        for f in fields:
            child = f.struct_name
            if child is not None:
                walk(child, (*path, (f.attr, f.is_array)), depth + 1)

    walk(info.response, (), 0)
    return tuple(found)


def rewrites(api_key: int, api_version: int) -> bool:
    """Whether responses of ``api_key`` at ``api_version`` can advertise broker endpoints."""
    return bool(endpoint_paths(api_key, api_version))


def _structs(obj: Message, path: EndpointPath) -> Iterator[Message]:
    if not path:
        yield obj
        return
    (attr, is_array), rest = path[0], path[1:]
    value = getattr(obj, attr, None)
    if value is None:
        return
    for item in value if is_array else (value,):
        yield from _structs(item, rest)


def _endpoints_of(holders: list[Message]) -> list[Endpoint]:
    """The endpoints the holders advertise, in order, without repeats; an empty host or a negative port
    (an error reply's placeholder) is not an endpoint."""
    out: dict[Endpoint, None] = {}
    for holder in holders:
        host, port = holder.host, holder.port  # type: ignore[attr-defined]
        if host and port >= 0:
            out[(str(host), int(port))] = None
    return list(out)


@dataclass(slots=True)
class ResponseRewrite:
    """A response frame whose advertised endpoints can be replaced (see :func:`parse_response`)."""

    api_key: int
    api_version: int
    head: bytes  # the response header as received (after the size prefix)
    body: bytes | memoryview  # the body as received (a view of the frame given to parse_response)
    tail: bytes  # bytes after the body (a peer's off-spec trailer), kept verbatim
    endpoints: list[Endpoint]  # what it advertises, in order, without repeats

    def holders(self, body: Message) -> list[Message]:
        """The structs of ``body`` (this response, decoded) that hold a host and port, in wire order."""
        return [h for path in endpoint_paths(self.api_key, self.api_version) for h in _structs(body, path)]

    def apply(self, new_address: Callable[[str, int], Endpoint | None]) -> bytes | None:
        """The frame (size prefix included) with every endpoint replaced by ``new_address(host, port)``
        (None: leave that one); None if nothing changed. The body is decoded in full and encoded
        again (a value only a full decode checks, such as invalid UTF-8, raises ``DecodeError``)."""
        targets = {ep: new_address(*ep) for ep in self.endpoints}
        if all(t is None or t == ep for ep, t in targets.items()):
            return None
        name = api(self.api_key).response
        body = decode(name, self.api_version, self.body)
        for holder in self.holders(body):
            target = targets.get((str(holder.host), int(holder.port)))  # type: ignore[attr-defined]
            if target is not None:
                holder.host, holder.port = target  # type: ignore[attr-defined]
        data = encode(body, self.api_version)
        size = len(self.head) + len(data) + len(self.tail)
        return b"".join((_SIZE.pack(size), self.head, data, self.tail))


def parse_response(frame: bytes | bytearray, api_key: int, api_version: int) -> ResponseRewrite | None:
    """Read a response frame (size prefix included) to a request of ``api_key`` at ``api_version``
    for rewriting; None if responses of that API and version advertise no endpoints. The body is
    checked in full but decoded lazily: only the structs that hold endpoints are built (a Fetch
    response's partitions are not). Raises :class:`~kcodec.protocol.errors.DecodeError` (offsets from the
    size prefix) if the frame does not decode; bytes after the body are allowed and kept."""
    paths = endpoint_paths(api_key, api_version)
    if not paths:
        return None
    if len(frame) < 4:
        raise DecodeError(f"a frame needs a 4-byte size prefix, got {len(frame)} bytes", 0, "frame")
    (size,) = _SIZE.unpack_from(frame, 0)
    if size != len(frame) - 4:
        raise DecodeError(f"frame claims {size} bytes but {len(frame) - 4} follow", 0, "frame.size")
    info = api(api_key)
    view = memoryview(frame)[4:]
    pos = 0
    try:
        _header, pos = decode_at("ResponseHeader", info.response_header_version(api_version), view)
        trailing: list[Diagnostic] = []
        body = decode(info.response, api_version, view[pos:], strict=False, diagnostics=trailing, lazy=True)
        holders = [holder for path in paths for holder in _structs(body, path)]
        endpoints = _endpoints_of(holders)
    except DecodeError as e:
        e.offset += 4 + pos
        raise
    end = pos + (trailing[0].offset if trailing else len(view) - pos)
    return ResponseRewrite(
        api_key, api_version, bytes(view[:pos]), view[pos:end], bytes(view[end:]), endpoints
    )
