"""``kcodec versions`` and ``kcodec metadata`` against real and crafted peers on 127.0.0.1: one line and
exit 2 for every bad argument, one line and exit 1 with the cause for every network failure, TLS and
SASL options, --all-brokers, and ``metadata`` checked against kcat's view of the same mock cluster."""

from __future__ import annotations

import asyncio
import json
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from auth_broker import AuthBroker
from click.testing import CliRunner, Result
from fake_broker import FakeBroker
from rdkafka_mock import MockCluster, MockUnavailable
from tls_proxy import TlsProxy

from kcodec.cli import main

SASL_ENV = {"KCODEC_SASL_USERNAME": "alice", "KCODEC_SASL_PASSWORD": "s3cret"}


def cli(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


def one_line(result: Result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output
    return lines[0]


# --- bad arguments: one line, exit 2 ------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["versions", "127.0.0.1:abc"], "port 'abc' is not a number"),
        (["versions", "127.0.0.1:"], "no port after ':'"),
        (["versions", ":9092"], "no host name"),
        (["versions", "127.0.0.1:99999"], "port 99999 is out of range (1-65535)"),
        (["versions", "127.0.0.1:0"], "port 0 is out of range"),
        (["versions", "::1:9092"], "write an IPv6 address as [ADDRESS]:PORT"),
        (["versions", "--captured", "missing.bin"], "no such file: missing.bin"),
        (["versions", "127.0.0.1:9", "--cap", "Fetch=9-3"], "the range 9-3 is empty"),
        (["versions", "127.0.0.1:9", "--cap", "Fetch"], "missing API name or range"),
        (["versions", "127.0.0.1:9", "--cap", "Fetch=a-b"], "is not a version range"),
        (["versions", "127.0.0.1:9", "--cap", "Nope=1-2"], "no API 'Nope'"),
        (["versions", "127.0.0.1:9", "--timeout", "0"], "--timeout"),
        (["versions", "127.0.0.1:9", "--tls-ca", "missing.pem"], "missing.pem"),
        (["versions", "127.0.0.1:9", "--sasl-mechanism", "GSSAPI"], "--sasl-mechanism"),
        (["versions", "127.0.0.1:9", "--sasl-mechanism", "PLAIN"], "set KCODEC_SASL_USERNAME"),
        (["versions", "--captured", "x.bin", "--all-brokers"], "--all-brokers needs a broker"),
        (["metadata", "localhost:x"], "port 'x' is not a number"),
        (["metadata"], "Missing argument"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(args: list[str], says: str, tmp_path: Path) -> None:
    if "x.bin" in args:
        (tmp_path / "x.bin").write_bytes(b"")
        args = [str(tmp_path / "x.bin") if a == "x.bin" else a for a in args]
    no_credentials: Any = {"KCODEC_SASL_USERNAME": None, "KCODEC_SASL_PASSWORD": None}  # unset
    result = CliRunner().invoke(main, args, env=no_credentials)
    assert result.exit_code == 2, result.output
    assert says in one_line(result)


# --- network failures: one line with the cause, exit 1 -------------------------------------------


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_refused() -> None:
    result = cli("versions", f"127.0.0.1:{free_port()}")
    assert result.exit_code == 1
    assert "Connection refused" in one_line(result)


def replying(payload: bytes, *, wait_for_request: bool = True) -> FakeBroker:
    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if wait_for_request:
            await reader.read(4)
        writer.write(payload)
        await writer.drain()
        await asyncio.sleep(1)

    return FakeBroker(session)


def test_timeout_says_how_long_it_waited() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5)

    with FakeBroker(silent) as fb:
        result = cli("versions", f"127.0.0.1:{fb.port}", "--timeout", "0.5")
    assert result.exit_code == 1
    assert one_line(result).endswith(f"no response from 127.0.0.1:{fb.port} within 0.5 s")


def test_an_http_server_looks_like_http() -> None:
    reply = b"HTTP/1.1 400 Bad Request\r\nServer: nginx\r\nContent-Length: 0\r\n\r\n"
    with replying(reply) as fb:
        result = cli("versions", f"127.0.0.1:{fb.port}", "--timeout", "2")
    assert result.exit_code == 1
    line = one_line(result)
    assert "looks like HTTP ('HTTP/1.1 400 Bad Request')" in line and "1213486160" not in line


def test_a_tls_alert_looks_like_tls() -> None:
    alert = bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46])  # fatal protocol_version alert
    with replying(alert) as fb:
        result = cli("metadata", f"127.0.0.1:{fb.port}", "--timeout", "2")
    assert result.exit_code == 1
    assert "looks like TLS (a TLS alert record)" in one_line(result) and "--tls" in one_line(result)


def test_versions_still_reports_a_broker_with_a_bad_reply(tmp_path: Path) -> None:
    """A reply that is Kafka but wrong keeps the full report (attempts), with exit status 1."""
    with replying(b"\x00\x00\x00\x06\x00\x00\x00\x00\x00\x23") as fb:
        result = cli("versions", f"127.0.0.1:{fb.port}", "--timeout", "2")
    assert result.exit_code == 1
    assert "handshake" in result.output


# --- TLS and SASL from the command line -----------------------------------------------------------


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    ca = trustme.CA()
    d = tmp_path_factory.mktemp("pki")
    client = ca.issue_cert("kcodec-cli-client")
    files: dict[str, Any] = {"ca": d / "ca.pem", "cert": d / "client.pem", "key": d / "client.key"}
    ca.cert_pem.write_to_path(str(files["ca"]))
    client.cert_chain_pems[0].write_to_path(str(files["cert"]))
    client.private_key_pem.write_to_path(str(files["key"]))
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(ctx)
    ctx.load_verify_locations(str(files["ca"]))
    ctx.verify_mode = ssl.CERT_REQUIRED
    files["server_context"] = ctx
    return files


def test_versions_and_metadata_over_mutual_tls_and_scram(pki: dict[str, Any]) -> None:
    tls = ["--tls-ca", str(pki["ca"]), "--tls-cert", str(pki["cert"]), "--tls-key", str(pki["key"])]
    with AuthBroker({"alice": "s3cret"}, ssl_context=pki["server_context"]) as b:
        target = f"127.0.0.1:{b.port}"
        result = cli("versions", target, *tls, "--sasl-mechanism", "SCRAM-SHA-512", env=SASL_ENV)
        assert result.exit_code == 0, result.output
        assert "handshake succeeded at ApiVersions v4" in result.output
        result = cli("metadata", target, *tls, "--sasl-mechanism", "scram-sha-256", "--json", env=SASL_ENV)
        assert result.exit_code == 0, result.output
        md = json.loads(result.output)
        assert md["cluster_id"] == "kcodec-auth-test" and [t["topic"] for t in md["topics"]] == ["orders"]
        assert ("SCRAM-SHA-512", "alice") in b.logins and ("SCRAM-SHA-256", "alice") in b.logins
        bad = cli("metadata", target, *tls, "--sasl-mechanism", "PLAIN",
                  env={**SASL_ENV, "KCODEC_SASL_PASSWORD": "wrong"})
        assert bad.exit_code == 1
        assert "SASL_AUTHENTICATION_FAILED" in one_line(bad) and "wrong" not in bad.output
        no_tls = cli("metadata", target, "--timeout", "2")
        assert no_tls.exit_code == 1 and "try --tls" in one_line(no_tls)


# --- librdkafka's mock cluster: --all-brokers, TLS in front of it, metadata vs kcat ---------------


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    try:
        cluster = MockCluster(brokers=3)
    except MockUnavailable as e:
        pytest.skip(str(e))
    with cluster:
        import confluent_kafka

        producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstraps, "log_level": 0})
        for topic in ("orders", "events"):
            producer.produce(topic, b"x")
        producer.flush(10)
        yield cluster


def test_versions_all_brokers_one_table(mock: MockCluster) -> None:
    host, port = mock.brokers[0]
    result = cli("versions", "--all-brokers", f"{host}:{port}", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert sorted(b["node_id"] for b in report["brokers"]) == [1, 2, 3]
    assert all(b["ok"] for b in report["brokers"])
    rows = {r["api_name"]: r for r in report["apis"]}
    assert set(rows["Fetch"]["brokers"]) == {"1", "2", "3"}
    assert rows["Fetch"]["negotiated"] == min(rows["Fetch"]["kcodec_max"], rows["Fetch"]["brokers"]["1"][1])
    cgh = rows["ConsumerGroupHeartbeat"]
    # librdkafka's mock offers ConsumerGroupHeartbeat v1 only: Kafka 4.0's version, which kcodec has
    assert cgh["negotiated"] == 1 and all(r == [1, 1] for r in cgh["brokers"].values()), cgh
    table = cli("versions", "--all-brokers", f"{host}:{port}")
    assert table.exit_code == 0
    header = next(line for line in table.output.splitlines() if line.lstrip().startswith("key"))
    assert "broker 1" in header and "broker 2" in header and "broker 3" in header


def test_tls_in_front_of_the_mock_cluster(mock: MockCluster, tmp_path: Path) -> None:
    ca = trustme.CA()
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(ctx)
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    with TlsProxy(mock.brokers[0], ctx) as proxy:
        target = f"127.0.0.1:{proxy.port}"
        result = cli("versions", target, "--tls-ca", str(tmp_path / "ca.pem"))
        assert result.exit_code == 0, result.output
        assert "handshake succeeded" in result.output and "Fetch" in result.output
        result = cli("metadata", target, "--tls-ca", str(tmp_path / "ca.pem"), "--json")
        assert result.exit_code == 0, result.output
        assert {t["topic"] for t in json.loads(result.output)["topics"]} == {"orders", "events"}
        insecure = cli("metadata", target, "--tls-insecure", "--json")
        assert insecure.exit_code == 0
        unverified = cli("metadata", target, "--tls", "--timeout", "2")
        assert unverified.exit_code == 1 and "CERTIFICATE_VERIFY_FAILED" in one_line(unverified)
        assert proxy.connections >= 3


def _kcat(*args: str) -> str:
    proc = subprocess.run(["kcat", *args], capture_output=True, text=True, timeout=60, check=True)
    return proc.stdout


@pytest.mark.interop
def test_metadata_matches_kcat(mock: MockCluster) -> None:
    if shutil.which("kcat") is None:
        pytest.skip("kcat is not installed (Debian package kcat; .ci/run installs it)")
    host, port = mock.brokers[0]
    theirs = json.loads(_kcat("-L", "-J", "-b", f"{host}:{port}"))
    result = cli("metadata", f"{host}:{port}", "--json")
    assert result.exit_code == 0, result.output
    ours = json.loads(result.output)
    assert ours["controllerid"] == theirs["controllerid"]
    assert [{"id": b["id"], "name": b["name"]} for b in ours["brokers"]] == sorted(
        theirs["brokers"], key=lambda b: b["id"]
    )

    def topics(md: dict[str, Any]) -> dict[str, Any]:
        return {
            t["topic"]: {
                p["partition"]: (p["leader"], p["replicas"], p["isrs"]) for p in t["partitions"]
            }
            for t in md["topics"]
        }

    assert topics(ours) == topics(theirs)
    assert all(p["leader_epoch"] >= 0 for t in ours["topics"] for p in t["partitions"])
    # the text view follows kcat -L line by line, with the leader epoch after the leader
    text = cli("metadata", f"{host}:{port}").output.splitlines()
    kcat_text = _kcat("-L", "-b", f"{host}:{port}").splitlines()
    ours_lines = {_without_epoch(line) for line in text if line.startswith(("  broker", "    partition"))}
    theirs_lines = {line.rstrip() for line in kcat_text if line.startswith(("  broker", "    partition"))}
    assert ours_lines == theirs_lines
    one = cli("metadata", f"{host}:{port}", "--topic", "orders")
    assert 'topic "orders" with' in one.output and '"events"' not in one.output


def _without_epoch(line: str) -> str:
    import re

    return re.sub(r", leader epoch -?\d+", "", line).replace(" (controller)", "").rstrip()
