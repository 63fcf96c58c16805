"""Errors of the live proxy (``kcodec.proxy``); all derive from
:class:`kcodec.protocol.errors.KcodecError`."""

from __future__ import annotations

from kcodec.protocol.errors import KcodecError

__all__ = ["FrameSizeError", "ProxyError", "ProxySetupError"]


class ProxyError(KcodecError):
    """Base of the errors the proxy raises or reports."""


class ProxySetupError(ProxyError):
    """The proxy cannot start: a bad address, a port in use, an unwritable output file."""


class FrameSizeError(ProxyError):
    """A peer sent a frame size that no Kafka frame can have (negative, or above the limit).

    ``direction`` is ``"request"`` (from the client) or ``"response"`` (from the broker) and
    ``stream_offset`` the position of the size prefix in that direction's byte stream."""

    def __init__(self, reason: str, direction: str, stream_offset: int) -> None:
        self.reason = reason
        self.direction = direction
        self.stream_offset = stream_offset
        super().__init__(f"{reason} at byte {stream_offset} of the {direction} stream")
