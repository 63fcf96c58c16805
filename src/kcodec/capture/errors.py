"""The capture stages' own error: kept out of the compiled modules, so that it is a plain Python
exception like kcodec's others (it pickles with its attributes, across a parallel decode's pipes)."""

from __future__ import annotations

from kcodec.protocol.errors import DecodeError

__all__ = ["UnmatchedResponseError"]


class UnmatchedResponseError(DecodeError):
    """A response whose correlation id matches no request seen on its connection."""
