"""Errors of the mock broker's control API (bad arguments to it; Kafka clients get error codes)."""

from __future__ import annotations

from kcodec.error_codes import ErrorCode, error_name
from kcodec.errors import KcodecError


class BrokerError(KcodecError):
    """A control operation cannot be done; ``code`` is the Kafka error code it corresponds to."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.INVALID_REQUEST) -> None:
        super().__init__(f"{message} ({error_name(code)})")
        self.code = code
