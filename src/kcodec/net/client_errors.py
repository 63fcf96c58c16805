"""Errors of kcodec's network client (``kcodec.net.client``) and version negotiation
(``kcodec.net.negotiation``).

All derive from :class:`kcodec.protocol.errors.KcodecError` through :class:`ClientError`.
"""

from __future__ import annotations

from kcodec.protocol.errors import KcodecError


class ClientError(KcodecError):
    """Base of every error raised by kcodec's client and negotiation code."""


class BrokerConnectionError(ClientError, ConnectionError):
    """The broker cannot be reached, or the connection broke (also a builtin ``ConnectionError``)."""


class ConnectionClosedError(BrokerConnectionError):
    """The broker closed the connection (EOF) while a response was expected, or it was closed locally."""


class RequestTimeoutError(ClientError, TimeoutError):
    """No (complete) response arrived in time (also a builtin ``TimeoutError``)."""


class ProtocolError(ClientError):
    """The broker sent something that is not a valid reply: a bad frame size, an unknown correlation id,
    or a body that does not decode at the version of its request (``__cause__`` holds the DecodeError)."""


class NotInFlightError(ClientError, KeyError):
    """No request with that correlation id is waiting for its response (also a builtin ``KeyError``)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class SaslAuthenticationError(ClientError):
    """SASL authentication failed: the broker refused the mechanism or the credentials, or (SCRAM)
    could not prove that it knows the password."""


class NegotiationError(ClientError):
    """The ApiVersions handshake failed; ``attempts`` lists what was tried."""

    def __init__(self, reason: str, attempts: list[object] | None = None) -> None:
        self.attempts = list(attempts or [])
        super().__init__(reason)


class NoCommonVersionError(ClientError):
    """The broker and the client share no version of an API (or the broker does not offer it at all)."""


class FieldUnavailableError(NoCommonVersionError):
    """The field needed exists only in versions the broker does not support."""
