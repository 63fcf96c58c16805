"""SASL authentication as Kafka clients do it: SaslHandshake, then SaslAuthenticate round trips
(KIP-152), with the PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677, KIP-84) mechanisms.

:class:`SaslExchange` is sans-I/O: ``next_request()`` gives the request to send (body and version),
``feed(response_body)`` takes its answer, until ``done``; :mod:`kcodec.net.client` drives it over a
connection (``Connection(..., sasl=SaslCredentials(...))``). Credentials can come from the
environment (:meth:`SaslCredentials.from_env`); the password never appears in a repr or an error.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kcodec.net.client_errors import SaslAuthenticationError
from kcodec.protocol.codec import message_class
from kcodec.protocol.error_codes import error_name
from kcodec.protocol.errors import InvalidArgumentError
from kcodec.protocol.model import Message

__all__ = [
    "ENV_PASSWORD",
    "ENV_USERNAME",
    "MECHANISMS",
    "PlainMechanism",
    "SaslCredentials",
    "SaslExchange",
    "ScramMechanism",
]

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
ENV_USERNAME = "KCODEC_SASL_USERNAME"
ENV_PASSWORD = "KCODEC_SASL_PASSWORD"

_SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
#: Kafka's lowest SCRAM iteration count (ScramMechanism.minIterations); a server asking for fewer is
#: refused, as Kafka's client does. Above the upper bound the key derivation would take too long.
SCRAM_MIN_ITERATIONS = 4096
SCRAM_MAX_ITERATIONS = 1_000_000


@dataclass(frozen=True, slots=True)
class SaslCredentials:
    """A SASL mechanism (one of :data:`MECHANISMS`) with a username and password."""

    mechanism: str
    username: str
    password: str = field(repr=False)

    def __post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise InvalidArgumentError(
                f"unknown SASL mechanism {self.mechanism!r} (kcodec knows {', '.join(MECHANISMS)})"
            )

    @classmethod
    def from_env(cls, mechanism: str, environ: Mapping[str, str] | None = None) -> SaslCredentials:
        """Credentials from ``$KCODEC_SASL_USERNAME`` and ``$KCODEC_SASL_PASSWORD``."""
        env = os.environ if environ is None else environ
        missing = [name for name in (ENV_USERNAME, ENV_PASSWORD) if name not in env]
        if missing:
            raise InvalidArgumentError(
                f"SASL {mechanism} needs the credentials in the environment: set {' and '.join(missing)}"
            )
        return cls(mechanism, env[ENV_USERNAME], env[ENV_PASSWORD])


class Mechanism(Protocol):
    """One side of a SASL mechanism: the first message, then one answer per server challenge."""

    def first(self) -> bytes: ...
    def step(self, challenge: bytes) -> bytes | None:
        """The next message for ``challenge``, or None when the exchange is complete."""
        ...


class PlainMechanism:
    """RFC 4616: one message ``authzid NUL authcid NUL passwd`` (empty authzid), no challenge."""

    def __init__(self, username: str, password: str) -> None:
        self._message = b"\0" + username.encode() + b"\0" + password.encode()

    def first(self) -> bytes:
        return self._message

    def step(self, challenge: bytes) -> bytes | None:
        return None


def _saslname(username: str) -> str:
    return username.replace("=", "=3D").replace(",", "=2C")


class ScramMechanism:
    """RFC 5802 client (SCRAM-SHA-256 / SCRAM-SHA-512, RFC 7677): client-first, client-final with the
    proof, then the server's signature is verified (a server that cannot prove it knows the
    password fails the exchange)."""

    def __init__(self, mechanism: str, username: str, password: str, *, nonce: str | None = None) -> None:
        self._hash = _SCRAM_HASHES[mechanism]
        self._mechanism = mechanism
        self._password = password.encode()
        self._nonce = nonce if nonce is not None else secrets.token_urlsafe(24)
        self._first_bare = f"n={_saslname(username)},r={self._nonce}"
        self._server_signature: bytes | None = None

    def _hmac(self, key: bytes, msg: bytes) -> bytes:
        return hmac.new(key, msg, self._hash).digest()

    def first(self) -> bytes:
        return f"n,,{self._first_bare}".encode()

    def step(self, challenge: bytes) -> bytes | None:
        if self._server_signature is None:
            return self._final(challenge)
        self._verify(challenge)
        return None

    def _final(self, server_first: bytes) -> bytes:
        text = _text(server_first, "server-first-message")
        attrs = _attributes(text)
        nonce, salt_b64, iterations_text = attrs.get("r"), attrs.get("s"), attrs.get("i")
        if "e" in attrs:
            raise SaslAuthenticationError(f"{self._mechanism}: the server refused: {attrs['e']}")
        if nonce is None or salt_b64 is None or iterations_text is None:
            raise SaslAuthenticationError(f"{self._mechanism}: malformed server-first-message {text!r}")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise SaslAuthenticationError(f"{self._mechanism}: the server's nonce does not extend ours")
        try:
            salt = base64.b64decode(salt_b64, validate=True)
            iterations = int(iterations_text)
        except ValueError:
            raise SaslAuthenticationError(f"{self._mechanism}: malformed salt or iteration count") from None
        if not SCRAM_MIN_ITERATIONS <= iterations <= SCRAM_MAX_ITERATIONS:
            raise SaslAuthenticationError(
                f"{self._mechanism}: iteration count {iterations} is outside "
                f"{SCRAM_MIN_ITERATIONS}-{SCRAM_MAX_ITERATIONS}"
            )
        salted = hashlib.pbkdf2_hmac(self._hash, self._password, salt, iterations)
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"  # biws: base64 of the GS2 header "n,,"
        auth_message = f"{self._first_bare},{text},{without_proof}".encode()
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _verify(self, server_final: bytes) -> None:
        attrs = _attributes(_text(server_final, "server-final-message"))
        if "e" in attrs:
            raise SaslAuthenticationError(f"{self._mechanism}: the server refused: {attrs['e']}")
        assert self._server_signature is not None
        try:
            got = base64.b64decode(attrs.get("v", ""), validate=True)
        except ValueError:
            got = b""
        if not hmac.compare_digest(got, self._server_signature):
            raise SaslAuthenticationError(
                f"{self._mechanism}: the server's signature is wrong (it does not know the password)"
            )


def _text(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslAuthenticationError(f"the SCRAM {what} is not UTF-8") from None


def _attributes(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep and len(key) == 1:
            out.setdefault(key, value)
    return out


def mechanism_for(credentials: SaslCredentials) -> Mechanism:
    if credentials.mechanism == "PLAIN":
        return PlainMechanism(credentials.username, credentials.password)
    return ScramMechanism(credentials.mechanism, credentials.username, credentials.password)


class SaslExchange:
    """The request/response sequence of one SASL login (sans-I/O)::

        ex = SaslExchange(creds)
        while (step := ex.next_request()) is not None:
            body, version = step
            ex.feed(send_and_wait(body, version))

    SaslHandshake v1 (every broker since Kafka 1.0; 4.0 dropped v0) then SaslAuthenticate (v1 by
    default: Kafka 2.0+; v0 for 1.x brokers). Errors raise :class:`SaslAuthenticationError` with
    Kafka's error name and message.
    """

    def __init__(
        self,
        credentials: SaslCredentials,
        *,
        handshake_version: int = 1,
        authenticate_version: int = 1,
        mechanism: Mechanism | None = None,
    ) -> None:
        self.credentials = credentials
        self.handshake_version = handshake_version
        self.authenticate_version = authenticate_version
        self._mechanism = mechanism or mechanism_for(credentials)
        self._pending: bytes | None = None
        self._state = "handshake"
        self.session_lifetime_ms = 0

    @property
    def done(self) -> bool:
        return self._state == "done"

    def next_request(self) -> tuple[Message, int] | None:
        if self._state == "handshake":
            req = message_class("SaslHandshakeRequest")(mechanism=self.credentials.mechanism)  # type: ignore[call-arg]
            return req, self.handshake_version
        if self._state == "authenticate":
            assert self._pending is not None
            req = message_class("SaslAuthenticateRequest")(auth_bytes=self._pending)  # type: ignore[call-arg]
            return req, self.authenticate_version
        return None

    def feed(self, response: Message) -> None:
        """Take the decoded response body to the request :meth:`next_request` gave last."""
        code = int(response.error_code)  # type: ignore[attr-defined]
        if self._state == "handshake":
            if code != 0:
                offered = ", ".join(response.mechanisms) or "none"  # type: ignore[attr-defined]
                raise SaslAuthenticationError(
                    f"SaslHandshake for {self.credentials.mechanism} failed: {error_name(code)} "
                    f"(the broker offers {offered})"
                )
            self._pending, self._state = self._mechanism.first(), "authenticate"
            return
        if self._state != "authenticate":
            raise SaslAuthenticationError("the SASL exchange is already complete")
        if code != 0:
            message = getattr(response, "error_message", None) or "no message"
            raise SaslAuthenticationError(
                f"SASL {self.credentials.mechanism} authentication of {self.credentials.username!r} "
                f"failed: {error_name(code)}: {message}"
            )
        self.session_lifetime_ms = int(getattr(response, "session_lifetime_ms", 0))
        reply = self._mechanism.step(bytes(response.auth_bytes))  # type: ignore[attr-defined]
        if reply is None:
            self._state, self._pending = "done", None
        else:
            self._pending = reply
