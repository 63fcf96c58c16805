"""A small Kafka broker for authentication tests, built on kcodec's codecs: it speaks ApiVersions,
SaslHandshake, SaslAuthenticate and Metadata on 127.0.0.1 (port from the OS), optionally behind TLS,
and checks credentials as a Kafka broker does:

* PLAIN (RFC 4616): the username and password in the one message;
* SCRAM-SHA-256/512 (RFC 5802, RFC 7677): the server keeps only the salted keys (StoredKey,
  ServerKey) of each user, as Kafka does, verifies the client proof against StoredKey and proves
  itself with the server signature.

Requests other than ApiVersions before a successful login close the connection (Kafka's behaviour on
a SASL listener). Independent clients (kafka-python, librdkafka) log in to it in the tests, so it is
checked against other implementations, not only against kcodec's client.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os
import ssl
import struct
from dataclasses import dataclass, field
from typing import Any

from loop_server import LoopServer

import kcodec

SASL_AUTHENTICATION_FAILED = 58
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
UNSUPPORTED_VERSION = 35
ITERATIONS = 4096
HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
#: api key -> (min, max) this broker implements
RANGES = {18: (0, 4), 17: (1, 1), 36: (0, 2), 3: (0, 12)}


@dataclass
class ScramUser:
    salt: bytes
    stored_key: bytes
    server_key: bytes


def scram_user(mechanism: str, password: str, salt: bytes | None = None) -> ScramUser:
    h = HASHES[mechanism]
    salt = salt or os.urandom(16)
    salted = hashlib.pbkdf2_hmac(h, password.encode(), salt, ITERATIONS)
    client_key = hmac.new(salted, b"Client Key", h).digest()
    return ScramUser(salt, hashlib.new(h, client_key).digest(), hmac.new(salted, b"Server Key", h).digest())


@dataclass
class Session:
    authenticated: bool = False
    mechanism: str | None = None
    scram: dict[str, Any] = field(default_factory=dict)
    user: str | None = None


class AuthBroker(LoopServer):
    """Use as a context manager; ``port``, ``logins`` (usernames that logged in), ``failures``."""

    kind = "auth broker"

    def __init__(
        self,
        users: dict[str, str],
        *,
        mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
        ssl_context: ssl.SSLContext | None = None,
        topics: dict[str, int] | None = None,
    ) -> None:
        self.users = users
        self.mechanisms = mechanisms
        self.scram = {(m, u): scram_user(m, p) for m in HASHES for u, p in users.items()}
        self.ssl_context = ssl_context
        self.topics = topics if topics is not None else {"orders": 2}
        self.logins: list[tuple[str, str]] = []
        self.failures: list[str] = []
        self.requests: list[tuple[int, int]] = []
        super().__init__(ssl_context)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        session = Session()
        try:
            while True:
                try:
                    head = await reader.readexactly(4)
                    (size,) = struct.unpack(">i", head)
                    if not 0 <= size <= 1 << 20:
                        return
                    # strict=False: like Kafka, ignore bytes after a request body (librdkafka sends some in Metadata v12)
                    frame = kcodec.decode_request(head + await reader.readexactly(size), strict=False)
                except (asyncio.IncompleteReadError, kcodec.KcodecError, ConnectionError):
                    return
                self.requests.append((frame.api_key, frame.api_version))
                reply = self._answer(session, frame)
                if reply is None:
                    return
                writer.write(reply)
                await writer.drain()
                if session.scram.get("failed"):
                    return
        except (ConnectionError, asyncio.CancelledError, ssl.SSLError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    # -- requests ------------------------------------------------------------------------------

    def _answer(self, session: Session, frame: Any) -> bytes | None:
        key, version, cid = frame.api_key, frame.api_version, frame.correlation_id
        if key == 18:
            return self._api_versions(version, cid)
        if key not in RANGES or not RANGES[key][0] <= version <= RANGES[key][1]:
            return None
        if key == 17:
            return self._handshake(session, frame.body, version, cid)
        if key == 36:
            return self._authenticate(session, frame.body, version, cid)
        if not session.authenticated:
            return None  # Kafka closes a SASL listener's connection on other requests before login
        return self._metadata(frame.body, version, cid)

    def _api_versions(self, version: int, cid: int) -> bytes:
        cls = kcodec.message_class("ApiVersionsResponse")
        keys = [cls.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in RANGES.items()]
        if version > RANGES[18][1]:
            body = cls(error_code=UNSUPPORTED_VERSION, api_keys=[k for k in keys if k.api_key == 18])
            return kcodec.encode_response(body, 0, correlation_id=cid)
        return kcodec.encode_response(cls(api_keys=keys), version, correlation_id=cid)

    def _handshake(self, session: Session, body: Any, version: int, cid: int) -> bytes:
        cls = kcodec.message_class("SaslHandshakeResponse")
        ok = body.mechanism in self.mechanisms and session.mechanism is None
        if ok:
            session.mechanism = body.mechanism
        code = 0 if ok else UNSUPPORTED_SASL_MECHANISM
        return kcodec.encode_response(
            cls(error_code=code, mechanisms=list(self.mechanisms)), version, correlation_id=cid
        )

    def _authenticate(self, session: Session, body: Any, version: int, cid: int) -> bytes:
        cls = kcodec.message_class("SaslAuthenticateResponse")
        try:
            token = self._sasl_step(session, bytes(body.auth_bytes))
        except PermissionError as e:
            self.failures.append(str(e))
            session.scram["failed"] = True
            resp = cls(error_code=SASL_AUTHENTICATION_FAILED, error_message=str(e), auth_bytes=b"")
        else:
            resp = cls(error_code=0, auth_bytes=token, session_lifetime_ms=0)
        return kcodec.encode_response(resp, version, correlation_id=cid)

    def _sasl_step(self, session: Session, data: bytes) -> bytes:
        mech = session.mechanism
        if mech is None or session.authenticated:
            raise PermissionError("SaslAuthenticate out of sequence")
        if mech == "PLAIN":
            parts = data.split(b"\0")
            if len(parts) != 3:
                raise PermissionError("malformed PLAIN message")
            user, password = parts[1].decode(), parts[2].decode()
            if self.users.get(user) != password:
                raise PermissionError(f"Authentication failed: Invalid username or password ({user})")
            return self._logged_in(session, mech, user, b"")
        if "server_first" not in session.scram:
            return self._scram_first(session, mech, data.decode())
        return self._scram_final(session, mech, data.decode())

    def _logged_in(self, session: Session, mech: str, user: str, token: bytes) -> bytes:
        session.authenticated, session.user = True, user
        self.logins.append((mech, user))
        return token

    def _scram_first(self, session: Session, mech: str, text: str) -> bytes:
        gs2, _, bare = text.partition(",,") if text.startswith("n,,") else ("", "", "")
        if gs2 != "n":
            raise PermissionError(f"unsupported GS2 header in {text!r}")
        attrs = dict(p.split("=", 1) for p in bare.split(",") if "=" in p)
        user = attrs.get("n", "").replace("=2C", ",").replace("=3D", "=")
        cnonce = attrs.get("r", "")
        creds = self.scram.get((mech, user))
        if creds is None or not cnonce:
            raise PermissionError(f"Authentication failed: unknown user {user!r}")
        nonce = cnonce + base64.b64encode(os.urandom(18)).decode()
        server_first = f"r={nonce},s={base64.b64encode(creds.salt).decode()},i={ITERATIONS}"
        session.scram.update(user=user, bare=bare, nonce=nonce, server_first=server_first, creds=creds)
        return server_first.encode()

    def _scram_final(self, session: Session, mech: str, text: str) -> bytes:
        s = session.scram
        without_proof, _, proof_part = text.rpartition(",p=")
        attrs = dict(p.split("=", 1) for p in without_proof.split(",") if "=" in p)
        if attrs.get("c") != base64.b64encode(b"n,,").decode() or attrs.get("r") != s["nonce"]:
            raise PermissionError("Authentication failed: channel binding or nonce mismatch")
        h = HASHES[mech]
        auth_message = f"{s['bare']},{s['server_first']},{without_proof}".encode()
        creds: ScramUser = s["creds"]
        signature = hmac.new(creds.stored_key, auth_message, h).digest()
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise PermissionError("Authentication failed: malformed proof") from None
        if len(proof) != len(signature):
            raise PermissionError("Authentication failed: malformed proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(h, client_key).digest(), creds.stored_key):
            raise PermissionError(
                f"Authentication failed during authentication due to invalid credentials with SASL "
                f"mechanism {mech}"
            )
        verifier = hmac.new(creds.server_key, auth_message, h).digest()
        return self._logged_in(session, mech, s["user"], f"v={base64.b64encode(verifier).decode()}".encode())

    def _metadata(self, body: Any, version: int, cid: int) -> bytes:
        cls = kcodec.message_class("MetadataResponse")
        broker = cls.MetadataResponseBroker(node_id=1, host="127.0.0.1", port=self.port, rack=None)
        wanted = None if body.topics is None else [t.name for t in body.topics]
        topics = []
        for name, count in sorted(self.topics.items()):
            if wanted is not None and name not in wanted:
                continue
            parts = [
                cls.MetadataResponsePartition(
                    partition_index=i, leader_id=1, leader_epoch=0, replica_nodes=[1], isr_nodes=[1]
                )
                for i in range(count)
            ]
            topics.append(cls.MetadataResponseTopic(name=name, partitions=parts))
        for name in wanted or []:
            if name not in self.topics:
                topics.append(cls.MetadataResponseTopic(name=name, error_code=3))
        resp = cls(brokers=[broker], cluster_id="kcodec-auth-test", controller_id=1, topics=topics)
        return kcodec.encode_response(resp, version, correlation_id=cid)
