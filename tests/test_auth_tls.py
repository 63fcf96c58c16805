"""SASL (PLAIN, SCRAM-SHA-256/512) and TLS in kcodec.net.client, against a broker built on kcodec's codecs
(tests/auth_broker.py) that independent clients (kafka-python, librdkafka) also log in to, and TLS
in front of librdkafka's mock cluster (tests/tls_proxy.py). Certificates are made by the test."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from auth_broker import AuthBroker

import kcodec
from kcodec.net.client import AsyncConnection, Connection, tls_context
from kcodec.net.client_errors import BrokerConnectionError, SaslAuthenticationError
from kcodec.net.sasl import SaslCredentials, SaslExchange, ScramMechanism
from kcodec.protocol.errors import InvalidArgumentError

USERS = {"alice": "s3cret", "bob,=x": "pässword"}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def metadata(conn: Connection) -> list[str]:
    body = conn.request(kcodec.message_class("MetadataRequest")(topics=None), 12).body
    return [t.name for t in body.topics]


# --- SCRAM, sans-I/O ---------------------------------------------------------------------------


def test_scram_sha_256_rfc7677_test_vector() -> None:
    """RFC 7677 section 3: user "user", password "pencil", the RFC's client nonce."""
    mech = ScramMechanism("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert mech.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    assert mech.step(server_first) == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert mech.step(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") is None


def test_scram_refuses_a_server_that_does_not_know_the_password() -> None:
    mech = ScramMechanism("SCRAM-SHA-256", "user", "pencil", nonce="abc")
    mech.step(b"r=abcdef,s=" + base64.b64encode(b"salt") + b",i=4096")
    with pytest.raises(SaslAuthenticationError, match="signature is wrong"):
        mech.step(b"v=" + base64.b64encode(bytes(32)))


@pytest.mark.parametrize(
    ("server_first", "match"),
    [
        (b"r=xyz123,s=c2FsdA==,i=4096", "nonce does not extend"),
        (b"r=abc,s=c2FsdA==,i=4096", "nonce does not extend"),
        (b"r=abcdef,s=c2FsdA==,i=1024", "iteration count 1024"),
        (b"r=abcdef,i=4096", "malformed"),
        (b"e=unknown-user", "refused: unknown-user"),
    ],
)
def test_scram_refuses_bad_server_first_messages(server_first: bytes, match: str) -> None:
    with pytest.raises(SaslAuthenticationError, match=match):
        ScramMechanism("SCRAM-SHA-512", "user", "pencil", nonce="abc").step(server_first)


def test_credentials_from_the_environment_and_hidden_password() -> None:
    creds = SaslCredentials.from_env("PLAIN", {"KCODEC_SASL_USERNAME": "u", "KCODEC_SASL_PASSWORD": "p"})
    assert creds == SaslCredentials("PLAIN", "u", "p")
    assert "p'" not in repr(creds) and "password" not in repr(creds)
    with pytest.raises(InvalidArgumentError, match="KCODEC_SASL_PASSWORD"):
        SaslCredentials.from_env("PLAIN", {"KCODEC_SASL_USERNAME": "u"})
    with pytest.raises(InvalidArgumentError, match="unknown SASL mechanism 'GSSAPI'"):
        SaslCredentials("GSSAPI", "u", "p")


def test_exchange_sends_handshake_then_authenticate() -> None:
    ex = SaslExchange(SaslCredentials("PLAIN", "u", "p"))
    req, version = ex.next_request() or (None, None)
    assert req is not None and req.MESSAGE_NAME == "SaslHandshakeRequest" and version == 1
    ex.feed(kcodec.message_class("SaslHandshakeResponse")(error_code=0, mechanisms=["PLAIN"]))
    req, version = ex.next_request() or (None, None)
    assert req is not None and req.auth_bytes == b"\0u\0p" and version == 1
    ex.feed(kcodec.message_class("SaslAuthenticateResponse")(error_code=0, auth_bytes=b""))
    assert ex.done and ex.next_request() is None


# --- against the test broker -------------------------------------------------------------------


@pytest.fixture(scope="module")
def broker() -> Iterator[AuthBroker]:
    with AuthBroker(USERS) as b:
        yield b


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("user", sorted(USERS))
def test_kcodec_client_logs_in(broker: AuthBroker, mechanism: str, user: str) -> None:
    creds = SaslCredentials(mechanism, user, USERS[user])
    with Connection("127.0.0.1", broker.port, timeout=5, sasl=creds) as conn:
        assert metadata(conn) == ["orders"]
    assert (mechanism, user) in broker.logins


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_is_refused_with_kafkas_error(broker: AuthBroker, mechanism: str) -> None:
    conn = Connection("127.0.0.1", broker.port, timeout=5, sasl=SaslCredentials(mechanism, "alice", "nope"))
    with pytest.raises(SaslAuthenticationError, match="SASL_AUTHENTICATION_FAILED") as exc:
        conn.connect()
    assert "nope" not in str(exc.value)
    assert not conn.connected


def test_mechanism_the_broker_does_not_offer() -> None:
    with AuthBroker(USERS, mechanisms=("PLAIN",)) as b:
        conn = Connection("127.0.0.1", b.port, timeout=5, sasl=SaslCredentials("SCRAM-SHA-256", "alice", "x"))
        with pytest.raises(SaslAuthenticationError, match="UNSUPPORTED_SASL_MECHANISM .the broker offers PLAIN"):
            conn.connect()


def test_requests_before_login_are_refused_like_kafka(broker: AuthBroker) -> None:
    with Connection("127.0.0.1", broker.port, timeout=5) as conn, pytest.raises(BrokerConnectionError):
        metadata(conn)


def test_async_client_logs_in(broker: AuthBroker) -> None:
    async def run() -> list[str]:
        creds = SaslCredentials("SCRAM-SHA-512", "alice", "s3cret")
        async with AsyncConnection("127.0.0.1", broker.port, timeout=5, sasl=creds) as conn:
            body = (await conn.request(kcodec.message_class("MetadataRequest")(topics=None), 12)).body
            return [t.name for t in body.topics]

    assert asyncio.run(run()) == ["orders"]


@pytest.mark.interop
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_logs_in_to_the_test_broker(broker: AuthBroker, mechanism: str) -> None:
    """The test broker's SASL checks agree with an independent client (kafka-python)."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(
        bootstrap_servers=f"127.0.0.1:{broker.port}",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username="alice",
        sasl_plain_password="s3cret",
        request_timeout_ms=5000,
    )
    try:
        assert admin.list_topics() == ["orders"]
    finally:
        admin.close()


@pytest.mark.interop
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_librdkafka_logs_in_to_the_test_broker(broker: AuthBroker, mechanism: str) -> None:
    """... and with librdkafka (confluent-kafka), which also refuses a wrong password."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    def admin(password: str) -> AdminClient:
        return AdminClient({
            "bootstrap.servers": f"127.0.0.1:{broker.port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.username": "alice",
            "sasl.password": password,
            "log_level": 0,
        })

    assert list(admin("s3cret").list_topics(timeout=10).topics) == ["orders"]
    before = len(broker.failures)
    with pytest.raises(KafkaException):
        admin("wrong").list_topics(timeout=2)
    assert len(broker.failures) > before


# --- TLS ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("kcodec-test-client")
    d = tmp_path_factory.mktemp("pki")
    files = {"ca": d / "ca.pem", "cert": d / "client.pem", "key": d / "client.key", "server": d / "server.pem"}
    ca.cert_pem.write_to_path(str(files["ca"]))
    client.cert_chain_pems[0].write_to_path(str(files["cert"]))
    client.private_key_pem.write_to_path(str(files["key"]))
    server.private_key_and_cert_chain_pem.write_to_path(str(files["server"]))
    return files


def server_context(pki: dict[str, Path], *, client_cert: bool) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(pki["server"]))
    if client_cert:
        ctx.load_verify_locations(str(pki["ca"]))
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def test_tls_with_client_certificate_and_scram(pki: dict[str, Path]) -> None:
    with AuthBroker(USERS, ssl_context=server_context(pki, client_cert=True)) as b:
        ctx = tls_context(str(pki["ca"]), str(pki["cert"]), str(pki["key"]))
        creds = SaslCredentials("SCRAM-SHA-256", "alice", "s3cret")
        with Connection("127.0.0.1", b.port, timeout=5, ssl_context=ctx, sasl=creds) as conn:
            assert metadata(conn) == ["orders"]
        # no client certificate: the server refuses the handshake
        with pytest.raises(BrokerConnectionError):
            conn2 = Connection("127.0.0.1", b.port, timeout=5, ssl_context=tls_context(str(pki["ca"])), sasl=creds)
            conn2.connect()
        # an unknown CA: certificate verification fails
        with pytest.raises(BrokerConnectionError, match="TLS handshake .* failed: .*CERTIFICATE_VERIFY_FAILED"):
            Connection("127.0.0.1", b.port, timeout=5, ssl_context=tls_context()).connect()


def test_plaintext_client_at_a_tls_listener_gets_a_hint(pki: dict[str, Path]) -> None:
    with AuthBroker(USERS, ssl_context=server_context(pki, client_cert=False)) as b:
        conn = Connection("127.0.0.1", b.port, timeout=5)
        with pytest.raises(BrokerConnectionError, match="without answering .*try --tls"):
            metadata(conn.connect())


def test_tls_client_at_a_plaintext_listener_gets_a_hint(broker: AuthBroker, pki: dict[str, Path]) -> None:
    conn = Connection("127.0.0.1", broker.port, timeout=5, ssl_context=tls_context(str(pki["ca"])))
    with pytest.raises(BrokerConnectionError, match="TLS handshake with .* failed"):
        conn.connect()


def test_tls_context_reports_bad_files(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="cannot load the TLS files"):
        tls_context(str(tmp_path / "missing.pem"))
    (tmp_path / "junk.pem").write_text("not a certificate")
    with pytest.raises(InvalidArgumentError):
        tls_context(None, str(tmp_path / "junk.pem"))
