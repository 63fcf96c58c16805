"""The fuzzer's oracle, sessions, findings, minimization and replay, against a fake broker on 127.0.0.1
whose misbehaviour each test chooses (tests/fake_broker.py)."""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_broker import FakeBroker, api_versions_response, frame

import kcodec
from kcodec.cli import main
from kcodec.fuzz.findings import Finding, FindingStore, load_finding, minimize
from kcodec.fuzz.oracle import KINDS, Sent, judge
from kcodec.fuzz.session import FuzzConfig, FuzzError, FuzzStats, Session
from kcodec.fuzz.wire import Reply, request_frame
from kcodec.protocol.error_codes import ErrorCode

HB = kcodec.api("Heartbeat").key


def _sent(
    name: str, version: int, msg: object | None = None, mutation: str | None = None, cid: int = 7
) -> Sent:
    info = kcodec.api(name)
    body = kcodec.encode(msg if msg is not None else kcodec.message_class(info.request)(), version)
    return Sent(info.key, version, cid, request_frame(info.key, version, cid, body), body, mutation)


def _response(name: str, version: int, cid: int = 7, **fields: object) -> bytes:
    info = kcodec.api(name)
    body = kcodec.message_class(info.response)(**fields)
    return kcodec.encode_response(body, version, correlation_id=cid)


# --- judge ---------------------------------------------------------------------------------------


def test_closed_connection_is_a_finding_only_for_a_valid_request() -> None:
    assert judge(_sent("Heartbeat", 4), Reply("closed"), 1).kind == "closed_on_valid_request"
    mutated = judge(_sent("Heartbeat", 4, mutation="length_huge"), Reply("reset"), 1)
    assert mutated.kind is None and not mutated.suspicious  # acceptable; a dead broker refuses the reconnect


def test_silence() -> None:
    assert judge(_sent("Heartbeat", 4), Reply("timeout"), 1).kind == "no_response"
    assert (
        judge(_sent("Heartbeat", 4, mutation="truncate"), Reply("timeout"), 1).kind == "silent_on_malformed"
    )
    produce = kcodec.message_class("ProduceRequest")(acks=0)
    assert judge(_sent("Produce", 9, produce), Reply("timeout"), 1).kind is None  # acks=0: no response
    fetch = kcodec.message_class("FetchRequest")(max_wait_ms=5000)
    assert judge(_sent("Fetch", 12, fetch), Reply("timeout"), 1).kind is None  # it asked to wait 5 s


def test_responses() -> None:
    ok = _response("Heartbeat", 4)
    assert judge(_sent("Heartbeat", 4), Reply("response", ok), 1).kind is None
    wrong_id = _response("Heartbeat", 4, cid=8)
    assert judge(_sent("Heartbeat", 4), Reply("response", wrong_id), 1).kind == "correlation_mismatch"
    trailing = ok + b"\x00"
    trailing = struct.pack(">i", len(trailing) - 4) + trailing[4:]
    assert judge(_sent("Heartbeat", 4), Reply("response", trailing), 1).kind == "trailing_bytes"
    short = struct.pack(">i", 5) + ok[4:9]
    assert judge(_sent("Heartbeat", 4), Reply("response", short), 1).kind == "undecodable_response"
    unknown = _response("Heartbeat", 4, error_code=999)
    v = judge(_sent("Heartbeat", 4), Reply("response", unknown), 1)
    assert v.kind == "unknown_error_code" and "999" in v.summary
    server = _response("Heartbeat", 4, error_code=int(ErrorCode.UNKNOWN_SERVER_ERROR))
    assert judge(_sent("Heartbeat", 4), Reply("response", server), 1).kind == "server_error"
    unsupported = _response("Heartbeat", 4, error_code=int(ErrorCode.UNSUPPORTED_VERSION))
    assert (
        judge(_sent("Heartbeat", 4), Reply("response", unsupported), 1).kind
        == "unsupported_advertised_version"
    )
    bad = judge(_sent("Heartbeat", 4), Reply("bad_frame", b"\x7f\xff\xff\xff", "reply frame size"), 1)
    assert bad.kind == "bad_reply_frame"


def test_success_for_bytes_that_are_not_a_request() -> None:
    # Heartbeat v4 with a repeated tag: kcodec refuses it (KIP-482), a broker that answers NONE accepted it
    sent = _sent("Heartbeat", 4, mutation="tags_duplicated")
    sent.body = sent.body[:-1] + bytes.fromhex("0205000500")
    assert judge(sent, Reply("response", _response("Heartbeat", 4)), 1).kind == "accepted_malformed"


def test_every_kind_has_a_severity() -> None:
    assert set(KINDS.values()) <= {"critical", "high", "medium", "info"}


# --- sessions against a fake broker ----------------------------------------------------------------

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def _broker(on_heartbeat: str) -> Handler:
    """Answers ApiVersions (ApiVersions and Heartbeat only) and Heartbeat as ``on_heartbeat`` says."""

    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                raw = await reader.readexactly(4)
                size = struct.unpack(">i", raw)[0]
                if size < 0 or size > 1 << 20:
                    return
                data = raw + await reader.readexactly(size)
            except asyncio.IncompleteReadError:
                return
            key, version, cid = struct.unpack_from(">hhi", data, 4)
            if key == 18:
                try:
                    req = kcodec.decode_request(data)
                except kcodec.KcodecError:
                    return  # a mutated ApiVersions: close, as Kafka does
                writer.write(api_versions_response(req, min(version, 3), k18=(0, 3), k12=(0, 4)))
            elif key == HB:
                if on_heartbeat == "wrong_id":
                    writer.write(frame(cid + 1, bytes(2) + b"\x00" * 5))
                elif on_heartbeat == "die":
                    writer.close()
                    raise asyncio.CancelledError
                else:
                    writer.write(_response("Heartbeat", version, cid))
            else:
                return
            await writer.drain()

    return session


def test_a_session_records_minimized_findings(tmp_path: Path) -> None:
    with FakeBroker(_broker("wrong_id")) as broker:
        config = FuzzConfig(
            "127.0.0.1", broker.port, seed=3, iterations=40, rate=2000, timeout=0.5, out=tmp_path
        )
        session = Session(config)
        stats = session.run()
    assert stats.stopped_by == "iterations" and stats.sent >= 40
    assert set(stats.per_api) == {"Heartbeat", "ApiVersions"}
    path = tmp_path / "correlation_mismatch-Heartbeat.json"
    f = load_finding(path)
    raw = json.loads(path.read_text())
    for key in (
        "kind",
        "api_name",
        "api_version",
        "summary",
        "request_hex",
        "response_hex",
        "seed",
        "negotiated",
    ):
        assert key in raw
    assert f.kind == "correlation_mismatch" and f.seed == 3 and f.negotiated["Heartbeat"] == 4
    assert f.reproduced is True and f.count >= 1
    if f.minimized:  # any body still gets a wrong id back: only the header is left
        assert len(f.request()) < len(bytes.fromhex(f.original_request_hex or ""))


def test_same_seed_same_requests(tmp_path: Path) -> None:
    def run(out: Path) -> list[str]:
        with FakeBroker(_broker("ok")) as broker:
            s = Session(
                FuzzConfig(
                    "127.0.0.1",
                    broker.port,
                    seed=11,
                    iterations=30,
                    rate=5000,
                    timeout=0.3,
                    out=out,
                    minimize=False,
                )
            )
            s.run()
            return sorted(s.stats.mutations.elements())

    assert run(tmp_path / "a") == run(tmp_path / "b")


def test_a_broker_that_goes_away(tmp_path: Path) -> None:
    broker = FakeBroker(_broker("die"))
    with broker:
        config = FuzzConfig(
            "127.0.0.1",
            broker.port,
            seed=1,
            iterations=200,
            rate=2000,
            timeout=0.5,
            out=tmp_path,
            valid_rate=0.9,
            frame_rate=0.0,
        )
        session = Session(config)
        session.negotiate()
        # the broker closes every connection on Heartbeat: a valid request closed is a finding
        stats = session.run()
    assert stats.stopped_by in ("iterations", "broker_died")
    assert "closed_on_valid_request" in {f.kind for f in session.store.findings.values()}


def test_ctrl_c_stops_cleanly(tmp_path: Path) -> None:
    def interrupt(stats: FuzzStats) -> None:
        if stats.findings:
            raise KeyboardInterrupt

    with FakeBroker(_broker("wrong_id")) as broker:
        s = Session(
            FuzzConfig("127.0.0.1", broker.port, iterations=10_000, timeout=0.3, out=tmp_path), interrupt
        )
        stats = s.run()
    assert stats.stopped_by == "interrupted"
    assert list(tmp_path.glob("*.json"))  # what was found before is written


def test_safety_rules() -> None:
    c = FuzzConfig("127.0.0.1", 9092)
    assert c.duration < float("inf") and c.iterations < 10**6 and c.rate < 10**4  # bounded by default
    with pytest.raises(FuzzError, match="loopback"):
        FuzzConfig("192.0.2.1", 9092).check()
    FuzzConfig("192.0.2.1", 9092, allow_remote=True).check()
    with pytest.raises(FuzzError, match="finite"):
        FuzzConfig("127.0.0.1", 9092, duration=float("inf")).check()


# --- findings ------------------------------------------------------------------------------------


def test_minimize_keeps_what_matters() -> None:
    frame_ = struct.pack(">i", 30) + b"H" * 8 + bytes(10) + b"\xab" + bytes(11)
    small, tries = minimize(frame_, lambda f: b"\xab" in f[12:], keep=12)
    assert small[12:] == b"\xab" and struct.unpack(">i", small[:4])[0] == len(small) - 4
    assert tries <= 48


def test_store_de_duplicates_across_runs(tmp_path: Path) -> None:
    def finding(summary: str) -> Finding:
        return Finding("server_error", "high", "Fetch", 1, 12, summary, "00000004", None, 0, 1, {}, "x:1")

    store = FindingStore(tmp_path)
    assert store.add(finding("first")) and not store.add(finding("second"))
    again = FindingStore(tmp_path)
    assert not again.add(finding("third"))
    saved = load_finding(tmp_path / "server_error-Fetch.json")
    assert saved.summary == "first" and saved.count == 3


# --- the command line ------------------------------------------------------------------------------


def test_cli_fuzz_and_replay(tmp_path: Path) -> None:
    runner = CliRunner()
    with FakeBroker(_broker("wrong_id")) as broker:
        target = f"127.0.0.1:{broker.port}"
        result = runner.invoke(
            main,
            [
                "fuzz",
                target,
                "--iterations",
                "30",
                "--seed",
                "2",
                "--timeout",
                "0.5",
                "--rate",
                "1000",
                "--out",
                str(tmp_path),
                "--api",
                "Heartbeat",
            ],
        )
        assert result.exit_code == 0, result.output
        assert "correlation_mismatch" in result.output and "requests/s" in result.output
        finding = tmp_path / "correlation_mismatch-Heartbeat.json"
        replayed = runner.invoke(main, ["fuzz", "replay", str(finding)])
        assert replayed.exit_code == 0 and replayed.output.startswith("reproduced: correlation_mismatch")
        as_json = runner.invoke(main, ["fuzz", target, "--iterations", "5", "--json", "--api", "Heartbeat=4"])
        report = json.loads(as_json.output)
        assert report["requests"] >= 5 and report["target"] == target
    with FakeBroker(_broker("ok")) as broker:  # a broker that behaves: not reproduced, exit 1
        replayed = runner.invoke(
            main, ["fuzz", "replay", str(finding), "--target", f"127.0.0.1:{broker.port}"]
        )
        assert replayed.exit_code == 1 and replayed.output.startswith("not reproduced")


def test_cli_bad_arguments() -> None:
    runner = CliRunner()
    for args in (
        ["fuzz", "192.0.2.1:9092"],
        ["fuzz", "127.0.0.1:x"],
        ["fuzz", "127.0.0.1:9", "--api", "Nope"],
        ["fuzz", "127.0.0.1:9", "--rate", "0"],
        ["fuzz", "replay", "/nonexistent.json"],
    ):
        result = runner.invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output
