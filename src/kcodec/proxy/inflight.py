"""Requests waiting for their responses on one proxied connection (sans-I/O).

The proxy needs the API key and version of the request a response answers (to know whether and how
to rewrite it); a response carries only the correlation id. Kafka answers the requests of a connection
in the order they were sent, and some requests get no answer at all (Produce with ``acks=0``), so a
response also settles every request sent before the one it answers. The table is bounded: past
``limit`` waiting requests the oldest is forgotten (its response is then forwarded untouched).
"""

from __future__ import annotations

import struct
from collections import OrderedDict

__all__ = ["InFlight", "RequestKey", "request_key", "response_correlation_id"]

_REQUEST_HEAD = struct.Struct(">hhi")  # api key, api version, correlation id (every header version)
_CORRELATION = struct.Struct(">i")
RequestKey = tuple[int, int, int]  # (api key, api version, correlation id)


def request_key(frame: bytes) -> RequestKey | None:
    """(api key, api version, correlation id) of a request frame (size prefix included); None if the
    frame is too short to have them."""
    if len(frame) < 12:
        return None
    key, version, correlation_id = _REQUEST_HEAD.unpack_from(frame, 4)
    return int(key), int(version), int(correlation_id)


def response_correlation_id(frame: bytes) -> int | None:
    """The correlation id of a response frame (size prefix included), if it has one."""
    if len(frame) < 8:
        return None
    return int(_CORRELATION.unpack_from(frame, 4)[0])


class InFlight:
    """Correlation id -> (api key, api version) of the requests not answered yet, oldest first."""

    __slots__ = ("_waiting", "dropped", "limit")

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self.dropped = 0  # requests forgotten because the table was full
        self._waiting: OrderedDict[int, tuple[int, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._waiting)

    def sent(self, key: RequestKey) -> None:
        api_key, api_version, correlation_id = key
        waiting = self._waiting
        waiting.pop(correlation_id, None)  # a reused id: the newer request is the one answered
        waiting[correlation_id] = (api_key, api_version)
        if len(waiting) > self.limit:
            waiting.popitem(last=False)
            self.dropped += 1

    def answered(self, correlation_id: int) -> tuple[int, int] | None:
        """(api key, api version) of the request ``correlation_id`` answers, or None if no such request
        is waiting. Requests sent before it are settled too (Kafka answers in order)."""
        waiting = self._waiting
        if correlation_id not in waiting:
            return None
        while True:
            cid, found = waiting.popitem(last=False)
            if cid == correlation_id:
                return found
