"""Errors of the mock broker's control API (bad arguments to it; Kafka clients get error codes)."""

from __future__ import annotations

from kcodec.protocol.error_codes import ErrorCode, error_name
from kcodec.protocol.errors import KcodecError


class BrokerError(KcodecError):
    """A control operation cannot be done; ``code`` is the Kafka error code it corresponds to."""

    def __init__(self, message: str, code: ErrorCode | None = ErrorCode.INVALID_REQUEST) -> None:
        super().__init__(message if code is None else f"{message} ({error_name(code)})")
        self.code = ErrorCode.UNKNOWN_SERVER_ERROR if code is None else code
