"""Tests for the ``kcodec`` command (``kcodec.cli``) and the capture decoder (``kcodec.capture``)."""

from __future__ import annotations

import base64
import importlib
import json
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dpkt
import pytest
from click.testing import CliRunner

import kcodec
from kcodec.capture import CapturedFrame, CaptureIssue, iter_capture
from kcodec.cli import main
from kcodec.protocol.codec import message_class, message_info
from kcodec.protocol.errors import DecodeError

ROOT = Path(__file__).resolve().parent.parent
# The sample as recorded against librdkafka's mock cluster (before samples/sample.pcap was re-recorded
# against Apache Kafka): these tests count its frames and explain its off-spec replies.
SAMPLE = ROOT / "tests" / "captures" / "mock_sample.pcap"


def run(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# --- apis / describe -------------------------------------------------------------------------------


def test_apis_table() -> None:
    result = run("apis")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Fetch" in out and "ApiVersions" in out and "Produce" in out
    assert "v0-3 3.9.0, v4-18 4.4.0" in out  # Fetch: spec set per version range
    assert "12+" in out  # Fetch's flexible versions


def test_apis_table_says_no_released_version_is_missing() -> None:
    result = run("apis")
    assert result.exit_code == 0
    line = next(ln for ln in result.output.splitlines() if "ConsumerGroupHeartbeat" in ln)
    cells = [c.strip() for c in line.split("│")]
    assert cells[2] == "ConsumerGroupHeartbeat" and cells[3] == "0-1" and cells[8] == ""  # missing: none
    text = " ".join(result.output.split())
    assert "missing: none: kcodec has a codec for every version every Apache Kafka release" in text
    assert "(2.2.2 … 4.4.0) ships" in text


def test_no_released_version_lacks_a_codec() -> None:
    """Every version of every API any listed Apache Kafka release (2.2 … 4.4) ships has a codec."""
    from kcodec.protocol.coverage import released_versions, version_gaps

    assert version_gaps() == {}
    released = released_versions()
    assert released[68] == ("ConsumerGroupHeartbeat", frozenset({0, 1}))
    assert released[78][1] == frozenset({1, 2})  # ShareFetch: 3.9.0's v0 was never released
    assert released[52][1] == frozenset({0, 1, 2}) and 88 in released and 92 in released
    assert released[4] == ("LeaderAndIsr", frozenset(range(0, 8)))  # removed by 4.0, shipped before


def test_gaps_are_found_and_listed() -> None:
    from kcodec.protocol.coverage import find_gaps

    released = {1: ("Fetch", {0, 1, 2}), 99: ("Future", {0})}
    gaps = find_gaps(released, {1: [0, 1]})
    assert gaps[1].missing == (2,) and gaps[1].kafka_versions == (0, 2)
    assert gaps[99].api_name == "Future" and gaps[99].missing == (0,)
    assert find_gaps(released, {1: [0, 1, 2], 99: [0]}) == {}


def test_apis_json() -> None:
    result = run("apis", "--json")
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json_lines(result.output)}
    known = {name: row for name, row in rows.items() if row.get("known", True)}
    assert len(known) == len(kcodec.apis())
    # no released version lacks a codec: every API is known, none has missing versions
    assert len(known) == len(rows) and all(row["missing_versions"] == [] for row in rows.values())
    assert rows["StreamsGroupHeartbeat"]["max_version"] == 1
    assert rows["ShareFetch"]["sources"] == [
        {"from": 0, "to": 0, "spec_set": "3.9.0"}, {"from": 1, "to": 2, "spec_set": "4.4.0"}
    ]
    fetch = rows["Fetch"]
    assert (
        fetch["key"] == 1
        and fetch["min_version"] == 0
        and fetch["max_version"] == kcodec.api("Fetch").max_version
    )
    assert fetch["flexible_from"] == 12
    assert fetch["sources"][0] == {"from": 0, "to": 3, "spec_set": "3.9.0"}
    assert fetch["deprecated_versions"] == list(kcodec.api("Fetch").deprecated_versions)


def _flatten(fields: list[dict[str, Any]], prefix: str = "") -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for f in fields:
        out[prefix + f["name"]] = f
        out.update(_flatten(f.get("fields", []), prefix + f["name"] + "."))
    return out


def test_describe_fetch_request_v12_table() -> None:
    result = run("describe", "FetchRequest", "--version", "12")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "FetchRequest v12" in out and "flexible" in out
    for name in ("CurrentLeaderEpoch", "current_leader_epoch", "LastFetchedEpoch", "ClusterId", "RackId"):
        assert name in out
    cluster = next(line for line in out.splitlines() if "ClusterId" in line)
    assert "nullable" in cluster and " 0 " in cluster and "null" in cluster  # tag 0, default null
    # the tree: partition fields are indented below Topics > Partitions
    lines = out.splitlines()
    topics = next(i for i, line in enumerate(lines) if line.startswith("Topics"))
    epoch = next(i for i, line in enumerate(lines) if "CurrentLeaderEpoch" in line)
    assert epoch > topics and lines[epoch].startswith("    ")


def test_describe_json_versions_tags_defaults() -> None:
    result = run("describe", "Fetch", "--version", "12", "--json")  # an API name means its request
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["message"] == "FetchRequest" and doc["version"] == 12 and doc["flexible"] is True
    fields = _flatten(doc["fields"])
    assert (
        fields["ClusterId"]["tag"] == 0 and fields["ClusterId"]["tagged"] and fields["ClusterId"]["nullable"]
    )
    assert fields["ClusterId"]["default"] == "null"
    assert fields["ReplicaId"]["since"] == 0 and fields["ReplicaId"]["until"] == 14
    epoch = fields["Topics.Partitions.CurrentLeaderEpoch"]
    assert (epoch["attr"], epoch["type"], epoch["since"], epoch["until"], epoch["default"]) == (
        "current_leader_epoch",
        "int32",
        9,
        None,
        "-1",
    )
    assert fields["Topics.Partitions.LastFetchedEpoch"]["since"] == 12
    assert fields["Topics.Topic"]["until"] == 12  # replaced by TopicId in v13
    assert "Topics.TopicId" not in fields


def test_describe_shows_each_fields_description_from_the_spec() -> None:
    from kcodec.protocol.codec import message_info

    infos = {f.name: f for f in message_info("FetchRequest").fields_at("FetchPartition", 12)}
    about = infos["CurrentLeaderEpoch"].about
    assert about == "The current leader epoch of the partition."  # Kafka's text (4.4.0's spec)
    doc = json.loads(run("describe", "FetchRequest", "--version", "12", "--json").output)
    fields = _flatten(doc["fields"])
    assert fields["Topics.Partitions.CurrentLeaderEpoch"]["about"] == about
    assert all(f["about"] for f in fields.values())  # every FetchRequest field has its text
    lines = run("describe", "FetchRequest", "--version", "12").output.splitlines()
    assert lines[1].split()[-1] == "description"
    epoch = next(line for line in lines if "CurrentLeaderEpoch" in line)
    assert "current_leader_epoch" in epoch and "-1" in epoch and about[:20] in epoch  # one row a field
    isolation = next(line for line in lines if line.startswith("IsolationLevel"))
    assert len(fields["IsolationLevel"]["about"]) > 160  # a long text is cut to the width
    assert "This setting controls" in isolation and "…" in isolation and len(isolation.rstrip()) <= 160


def test_describe_response_and_errors() -> None:
    result = run("describe", "FetchResponse", "--version", "4")
    assert result.exit_code == 0 and "FetchResponse v4" in result.output and "not flexible" in result.output
    bad = CliRunner().invoke(main, ["describe", "FetchRequest", "--version", "999"])
    assert bad.exit_code == 2 and "no version 999" in bad.output
    unknown = CliRunner().invoke(main, ["describe", "NoSuchThing", "--version", "0"])
    assert unknown.exit_code == 2 and "no message or API" in unknown.output


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [("FetchReqest", "FetchRequest"), ("metdata", "Metadata"), ("ApiVersionRequest", "ApiVersionsRequest"),
     ("ProduceResponce", "ProduceResponse")],
)
def test_describe_suggests_close_spellings(typed: str, suggested: str) -> None:
    result = CliRunner().invoke(main, ["describe", typed, "--version", "0"])
    assert result.exit_code == 2
    hint = result.output.split("did you mean", 1)[1]
    assert hint.strip().split(", ")[0].rstrip("?") == suggested


@pytest.mark.parametrize(
    ("typed", "title"),
    [("Produce", "ProduceRequest v13 "),  # the newest Apache version, not the KIP-359 proposal's v14
     ("FetchResponse", "FetchResponse v18 "), ("RequestHeader", "RequestHeader v2 ")],
)
def test_describe_without_version_shows_the_newest_released(typed: str, title: str) -> None:
    result = CliRunner().invoke(main, ["describe", typed, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert f"{doc['message']} v{doc['version']} " == title
    assert CliRunner().invoke(main, ["describe", typed]).output.startswith(title)
    missing = CliRunner().invoke(main, ["describe", "FetchReqest"])
    assert missing.exit_code == 2 and "did you mean FetchRequest" in missing.output


# --- generate --------------------------------------------------------------------------------------


def test_generate_makes_an_importable_package(tmp_path: Path) -> None:
    out = tmp_path / "kcodec_gen_test"
    result = run("generate", "--specs", str(ROOT / "schemas"), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "generated" in result.output
    sys.path.insert(0, str(tmp_path))
    try:
        pkg = importlib.import_module("kcodec_gen_test")
        mod = importlib.import_module("kcodec_gen_test.fetch_request")
        assert "FetchRequest" in pkg.MESSAGES
        assert any(row["name"] == "Fetch" for row in pkg.APIS)
        assert mod.INFO.name == "FetchRequest"
        assert 12 in mod.DECODERS
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n == "kcodec_gen_test" or n.startswith("kcodec_gen_test.")]:
            del sys.modules[name]


def test_generate_reports_spec_errors_cleanly(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    (specs / "s1").mkdir(parents=True)
    (specs / "sets.json").write_text(json.dumps([{"name": "s1", "dir": "s1"}]))
    (specs / "s1" / "BadRequest.json").write_text(
        '{"name": "BadRequest", "type": "request", "apiKey": 5000, "validVersions": "0-x", "fields": []}'
    )
    result = CliRunner().invoke(main, ["generate", "--specs", str(specs), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert "failed" in result.output and "validVersions" in result.output
    assert "Traceback" not in result.output
    (tmp_path / "empty").mkdir()
    empty = CliRunner().invoke(
        main, ["generate", "--specs", str(tmp_path / "empty"), "--out", str(tmp_path / "p")]
    )
    assert empty.exit_code == 1 and "no message specs" in empty.output


def test_generate_is_atomic(tmp_path: Path) -> None:
    """A failed run leaves nothing behind and an existing package untouched; a good run replaces the
    whole folder (no stale modules)."""
    bad = tmp_path / "bad"
    (bad / "s1").mkdir(parents=True)
    (bad / "sets.json").write_text(json.dumps([{"name": "s1", "dir": "s1"}]))
    (bad / "s1" / "BadRequest.json").write_text('{"name": "BadRequest", "type": "request", "validVersions": "x"}')
    out = tmp_path / "gen" / "mycodecs"
    result = CliRunner().invoke(main, ["generate", "--specs", str(bad), "--out", str(out)])
    assert result.exit_code == 1
    assert not out.exists() and list((tmp_path / "gen").iterdir()) == []
    out.mkdir()
    (out / "stale.py").write_text("# from an older run\n")
    result = CliRunner().invoke(main, ["generate", "--specs", str(bad), "--out", str(out)])
    assert result.exit_code == 1
    assert [p.name for p in out.iterdir()] == ["stale.py"]
    assert sorted(p.name for p in (tmp_path / "gen").iterdir()) == ["mycodecs"]
    result = run("generate", "--specs", str(ROOT / "schemas"), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert not (out / "stale.py").exists() and (out / "fetch_request.py").is_file()
    assert sorted(p.name for p in (tmp_path / "gen").iterdir()) == ["mycodecs"]


def test_generated_package_decodes_and_encodes(tmp_path: Path) -> None:
    """generate -> use, as the README shows it."""
    out = tmp_path / "mycodecs"
    assert run("generate", "--specs", str(ROOT / "schemas"), "--out", str(out)).exit_code == 0
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from mycodecs.fetch_request import DECODERS, ENCODERS, FetchRequest\n"
        "req = FetchRequest(max_wait_ms=500, topics=[FetchRequest.FetchTopic(topic='t')])\n"
        "out = bytearray(); ENCODERS[12](req, out)\n"
        "msg, end = DECODERS[12](bytes(out), 0, len(out))\n"
        "import kcodec; assert bytes(out) == kcodec.encode(kcodec.decode('FetchRequest', 12, bytes(out)), 12)\n"
        "print(end == len(out), msg.max_wait_ms, msg.topics[0].topic)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "500", "t"]


# --- decode-capture on the shipped sample -----------------------------------------------------------


def test_decode_capture_sample_table() -> None:
    result = run("decode-capture", str(SAMPLE))
    assert result.exit_code == 0, result.output
    for api_name in (
        "ApiVersions",
        "Metadata",
        "Produce",
        "Fetch",
        "ListOffsets",
        "FindCoordinator",
        "OffsetCommit",
    ):
        assert api_name in result.output
    assert "0 undecodable" in result.output and "0 stream issues" in result.output


def test_decode_capture_sample_json_every_frame_decodes() -> None:
    result = run("decode-capture", str(SAMPLE), "--json")
    assert result.exit_code == 0
    events = json_lines(result.output)
    frames = [e for e in events if e["type"] == "frame"]
    assert frames and all(e["type"] == "frame" for e in events)  # no gaps or other stream issues
    assert all(f["error"] is None and f["body"] is not None for f in frames)
    requests = {(f["connection"], f["correlation_id"]): f for f in frames if f["direction"] == "request"}
    responses = [f for f in frames if f["direction"] == "response"]
    # every response is matched with its request (same connection and correlation id, same API)
    for r in responses:
        req = requests[(r["connection"], r["correlation_id"])]
        assert (r["api_key"], r["api_version"]) == (req["api_key"], req["api_version"])
        assert r["latency"] >= 0
    assert len(responses) >= len(requests) - 3  # the last requests of closed connections may go unanswered
    seen = {f["api_name"] for f in frames}
    assert {"ApiVersions", "Metadata", "Produce", "Fetch", "ListOffsets", "FindCoordinator"} <= seen
    produce = next(f for f in frames if f["api_name"] == "Produce" and f["direction"] == "request")
    assert produce["body"]["topicData"][0]["name"] == "kcodec-sample"
    assert produce["header"]["correlationId"] == produce["correlation_id"]


def test_decode_capture_strict_reports_typed_errors_without_crashing() -> None:
    frames = [e for e in iter_capture(SAMPLE, strict=True) if isinstance(e, CapturedFrame)]
    lenient = [e for e in iter_capture(SAMPLE) if isinstance(e, CapturedFrame)]
    assert len(frames) == len(lenient)
    # frames that need leniency (bytes after the body) fail with the typed error in strict mode
    for strict_frame, lenient_frame in zip(frames, lenient, strict=True):
        if lenient_frame.diagnostics:
            assert isinstance(strict_frame.error, DecodeError) and strict_frame.error.offset > 0
        else:
            assert strict_frame.error is None


def test_decode_capture_unreadable_file(tmp_path: Path) -> None:
    bogus = tmp_path / "not.pcap"
    bogus.write_bytes(b"this is not a capture file at all")
    result = CliRunner().invoke(main, ["decode-capture", str(bogus)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    lines = result.output.splitlines()  # one line naming the command and the file, no table header
    assert lines == [f"kcodec decode-capture: {bogus}: not a pcap or pcapng file (starts with 74686973)"]


def _produce_records(frame: dict[str, Any]) -> Any:
    return frame["body"]["topicData"][0]["partitionData"][0]["records"]


def test_decode_capture_records_expanded_json() -> None:
    raw = json_lines(run("decode-capture", str(SAMPLE), "--json").output)
    text = json_lines(run("decode-capture", str(SAMPLE), "--json", "--records", "text").output)
    b64 = json_lines(run("decode-capture", str(SAMPLE), "--json", "--records", "base64").output)
    assert len(raw) == len(text) == len(b64)
    produces = [
        i for i, f in enumerate(raw) if f.get("api_name") == "Produce" and f["direction"] == "request"
    ]
    assert len(produces) == 2
    for i in produces:
        assert isinstance(_produce_records(raw[i]), str)  # default: Kafka JSON's base64 blob
        view = _produce_records(text[i])
        assert view["sizeInBytes"] == len(base64.b64decode(_produce_records(raw[i])))
        (batch,) = view["batches"]
        assert batch["magic"] == 2 and batch["compression"] == "none" and batch["baseOffset"] == 0
        for n, rec in enumerate(batch["records"]):
            assert rec["key"] == f"key-{n}" and rec["headers"] == [
                {"key": "source", "value": "make_sample_capture"}
            ]
        b64_batch = _produce_records(b64[i])["batches"][0]
        assert b64_batch["records"][0]["key"] == base64.b64encode(b"key-0").decode()
    first = _produce_records(text[produces[0]])["batches"][0]["records"]
    assert [r["value"] for r in first] == ["hello", "kafka", "wire"]
    # Fetch responses: the consumer reads the five records back, at their log offsets
    fetched = [
        (r["offset"], r["value"])
        for f in text
        if f.get("api_name") == "Fetch" and f["direction"] == "response"
        for t in f["body"]["responses"]
        for p in t["partitions"]
        for b in p["records"]["batches"]
        for r in b["records"]
    ]
    assert fetched == [(0, "hello"), (1, "kafka"), (2, "wire"), (3, "protocol"), (4, "kcodec")]


def test_decode_capture_records_table() -> None:
    result = run("decode-capture", str(SAMPLE), "--records", "text")
    assert result.exit_code == 0
    assert "kcodec-sample/0: 192B 1 batch 3 records" in result.output
    assert "@0 key='key-0' value='hello' headers=source='make_sample_capt..." in result.output
    assert "@4 key='key-1' value='kcodec'" in result.output  # from a Fetch response
    plain = run("decode-capture", str(SAMPLE))
    assert "@0 key=" not in plain.output


def test_decode_capture_bad_records_do_not_crash(tmp_path: Path) -> None:
    """Produce requests with a CRC-corrupt batch, a corrupt record, a truncated tail, bad framing."""
    import crc32c

    from kcodec.records import NewRecord, build_batch

    good = build_batch([NewRecord(b"ok-0", key=b"k")], base_offset=0)
    crc_bad = bytearray(build_batch([NewRecord(b"crc"), NewRecord(b"\xff")], base_offset=1))
    crc_bad[17] ^= 0x01
    magic_bad = bytearray(build_batch([NewRecord(b"zzz")], base_offset=9))
    magic_bad[16] = 9
    head = bytearray(good[:61])
    head[8:12] = struct.pack(">i", 49 + len(good) - 61 - 2)
    head[17:21] = struct.pack(">I", crc32c.crc32c(bytes(head[21:]) + good[61:-2]))
    cut = bytes(head) + good[61:-2]
    produce = kcodec.message_class("ProduceRequest")
    f = Flow(40030, 9092, 400.0).handshake()
    for corr, records in (
        (1, good + bytes(crc_bad) + good[:30]),  # corrupt CRC, then 30 bytes of an incomplete batch
        (2, good + bytes(magic_bad)),  # unknown magic: nothing after it can be framed
        (3, cut),  # length and CRC fixed, but the record inside is cut short
    ):
        req = produce(
            acks=1,
            timeout_ms=100,
            topic_data=[
                produce.TopicProduceData(
                    name="bad", partition_data=[produce.PartitionProduceData(index=2, records=records)]
                )
            ],
        )
        f.client(kcodec.encode_request(req, 9, correlation_id=corr))
    path = tmp_path / "bad-records.pcap"
    _write_pcap(path, [f])
    result = run("decode-capture", str(path), "--json", "--records", "text")
    assert result.exit_code == 0
    frames = [e for e in json_lines(result.output) if e["type"] == "frame"]
    assert [fr["error"] for fr in frames] == [None, None, None]  # the frames decode; records report
    v1, v2, v3 = (_produce_records(fr) for fr in frames)
    assert [b["records"][0]["value"] for b in v1["batches"]] == ["ok-0", "crc"]
    assert v1["batches"][1]["error"]["type"] == "CrcMismatchError"
    assert v1["batches"][1]["records"][1] == {
        "offset": 2,
        "timestamp": -1,
        "key": None,
        "valueBase64": "/w==",
        "headers": [],
    }
    assert v1["truncatedBytes"] == 30
    assert len(v2["batches"]) == 1 and "unknown magic 9" in v2["error"]["message"]
    (b3,) = v3["batches"]
    assert b3["records"] == [] and b3["recordsError"]["type"] == "CorruptRecordError"
    assert b3["recordsError"]["baseOffset"] == 0 and "error" not in v3
    table = run("decode-capture", str(path), "--records", "text")
    assert table.exit_code == 0 and "Traceback" not in table.output
    assert "bad/2:" in table.output and "CRC32C mismatch" in table.output
    assert "(30 bytes of an incomplete last batch)" in table.output and "unknown magic 9" in table.output
    assert "errors: CorruptRecordError" in table.output


# --- capture module on a synthetic pcap -------------------------------------------------------------

CLIENT_IP, SERVER_IP = "10.0.0.1", "10.0.0.2"  # only written into the file; no traffic is sent


class Flow:
    """Builds the packets of one TCP connection (client -> server) for a synthetic capture."""

    def __init__(self, sport: int, dport: int, t0: float) -> None:
        self.c, self.s = (CLIENT_IP, sport), (SERVER_IP, dport)
        self.cseq, self.sseq = 1000 + sport * 7, 5000 + sport * 11
        self.t = t0
        self.packets: list[tuple[float, bytes]] = []

    def _pkt(
        self, src: tuple[str, int], dst: tuple[str, int], seq: int, ack: int, flags: int, data: bytes = b""
    ) -> bytes:
        tcp = dpkt.tcp.TCP(
            sport=src[1], dport=dst[1], seq=seq & 0xFFFFFFFF, ack=ack & 0xFFFFFFFF, flags=flags, data=data
        )
        ip = dpkt.ip.IP(src=socket.inet_aton(src[0]), dst=socket.inet_aton(dst[0]), p=6, data=tcp)
        ip.len = len(ip)
        eth = dpkt.ethernet.Ethernet(src=b"\x00" * 6, dst=b"\x00" * 6, type=0x0800, data=ip)
        return bytes(eth)

    def emit(self, pkt: bytes) -> None:
        self.t += 0.001
        self.packets.append((self.t, pkt))

    def handshake(self) -> Flow:
        self.emit(self._pkt(self.c, self.s, self.cseq, 0, dpkt.tcp.TH_SYN))
        self.emit(self._pkt(self.s, self.c, self.sseq, self.cseq + 1, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK))
        self.cseq += 1
        self.sseq += 1
        return self

    def segments(self, from_client: bool, data: bytes, size: int = 1 << 16) -> list[tuple[int, bytes]]:
        """Cut ``data`` into (seq, payload) segments and advance the sender's sequence number."""
        seq = self.cseq if from_client else self.sseq
        out = [(seq + i, data[i : i + size]) for i in range(0, len(data), size)]
        if from_client:
            self.cseq += len(data)
        else:
            self.sseq += len(data)
        return out

    def send(self, from_client: bool, segs: list[tuple[int, bytes]]) -> None:
        src, dst = (self.c, self.s) if from_client else (self.s, self.c)
        ack = self.sseq if from_client else self.cseq
        for seq, payload in segs:
            self.emit(self._pkt(src, dst, seq, ack, dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, payload))

    def client(self, data: bytes) -> None:
        self.send(True, self.segments(True, data))

    def server(self, data: bytes) -> None:
        self.send(False, self.segments(False, data))


def _write_pcap(path: Path, flows: list[Flow], *, cut_tail: int = 0) -> None:
    packets = sorted((p for f in flows for p in f.packets), key=lambda p: p[0])
    with open(path, "wb") as f:
        writer = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for ts, pkt in packets:
            writer.writepkt(pkt, ts=ts)
    if cut_tail:
        data = path.read_bytes()
        path.write_bytes(data[:-cut_tail])


def _struct(message: str, struct: str) -> Any:
    return message_info(message).structs[struct].cls


def _api_versions(corr: int) -> tuple[bytes, bytes]:
    req = message_class("ApiVersionsRequest")(
        client_software_name="kcodec-test", client_software_version="1.0"
    )  # type: ignore[call-arg]
    entry = _struct("ApiVersionsResponse", "ApiVersion")(api_key=18, min_version=0, max_version=4)
    resp = message_class("ApiVersionsResponse")(api_keys=[entry])  # type: ignore[call-arg]
    return kcodec.encode_request(req, 3, correlation_id=corr), kcodec.encode_response(
        resp, 3, correlation_id=corr
    )


def _metadata(corr: int, topic: str) -> tuple[bytes, bytes]:
    req = message_class("MetadataRequest")(
        topics=[_struct("MetadataRequest", "MetadataRequestTopic")(name=topic)]
    )  # type: ignore[call-arg]
    broker = _struct("MetadataResponse", "MetadataResponseBroker")(node_id=1, host="broker-1", port=9092)
    resp_topic = _struct("MetadataResponse", "MetadataResponseTopic")(name=topic, partitions=[])
    resp = message_class("MetadataResponse")(brokers=[broker], cluster_id="test", topics=[resp_topic])  # type: ignore[call-arg]
    return kcodec.encode_request(req, 12, correlation_id=corr), kcodec.encode_response(
        resp, 12, correlation_id=corr
    )


@pytest.fixture()
def synthetic(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "synthetic.pcap"
    flows: list[Flow] = []

    # 1: a clean flow whose request segments arrive out of order, retransmitted and overlapping.
    f = Flow(40001, 9092, 100.0).handshake()
    req, resp = _api_versions(1)
    f.client(req)
    f.server(resp)
    mreq, mresp = _metadata(2, "orders")
    segs = f.segments(True, mreq, size=10)
    reordered = [segs[0], segs[2], segs[1], segs[1], *segs[3:]]  # out of order, then a retransmit
    first, second = segs[3], segs[4]
    overlap = (first[0] + 5, first[1][5:] + second[1][:5])  # overlaps the end of 3 and start of 4
    reordered.insert(5, overlap)
    f.send(True, reordered)
    f.server(mresp)
    flows.append(f)

    # 2: a gap: one segment in the middle of a request is missing; the next request is found again.
    g = Flow(40002, 9092, 100.5).handshake()
    r1, p1 = _metadata(7, "lost")
    r2, p2 = _metadata(8, "found")
    segs = g.segments(True, r1, size=16)
    g.send(True, segs[:1] + segs[2:])  # segment 1 never captured
    g.client(r2)
    g.server(p1)
    g.server(p2)
    flows.append(g)

    # 3: a request with a corrupt body (valid framing): a typed DecodeError with offset and path.
    h = Flow(40003, 9092, 101.0).handshake()
    good, _ = _metadata(3, "x")
    corrupt = bytearray(good)
    corrupt[-8:] = b"\xff" * 8  # topic name length / tagged fields become nonsense
    h.client(bytes(corrupt))
    flows.append(h)

    # 4: garbage on the Kafka port (e.g. an HTTP client talking to the broker).
    junk = Flow(40004, 9092, 101.5).handshake()
    junk.client(b"GET / HTTP/1.1\r\nHost: broker\r\n\r\n")
    flows.append(junk)

    # 5: Kafka on a port that is not a Kafka port: found by autodetection.
    k = Flow(40005, 19093, 102.0).handshake()
    areq, aresp = _api_versions(11)
    k.client(areq)
    k.server(aresp)
    flows.append(k)

    # 6: something else on another port: not Kafka.
    other = Flow(40006, 8080, 102.5).handshake()
    other.client(b"SSH-2.0-OpenSSH_9.6\r\n")
    flows.append(other)

    # 7 (last in time): the capture ends in the middle of a response frame.
    t = Flow(40007, 9092, 103.0).handshake()
    treq, tresp = _metadata(21, "tail")
    t.client(treq)
    t.send(False, t.segments(False, tresp[:-9]))
    flows.append(t)

    _write_pcap(path, flows)
    yield path


def _frames(events: list[Any], conn_port: int) -> list[CapturedFrame]:
    return [e for e in events if isinstance(e, CapturedFrame) and e.client.endswith(f":{conn_port}")]


def test_capture_reassembles_out_of_order_retransmitted_and_overlapping(synthetic: Path) -> None:
    events = list(iter_capture(synthetic))
    frames = _frames(events, 40001)
    assert [(f.direction, f.api_name, f.correlation_id) for f in frames] == [
        ("request", "ApiVersions", 1),
        ("response", "ApiVersions", 1),
        ("request", "Metadata", 2),
        ("response", "Metadata", 2),
    ]
    assert all(f.ok and f.error is None for f in frames)
    meta_req = frames[2]
    assert meta_req.body is not None and meta_req.body.topics[0].name == "orders"  # type: ignore[attr-defined]
    assert frames[3].latency is not None and frames[3].latency > 0
    dup = [e for e in events if isinstance(e, CaptureIssue) and e.kind == "retransmits" and e.connection == 1]
    # one full retransmit; the overlapping segment and the segment it reaches into both overlap
    assert len(dup) == 1 and dup[0].length == 3 and "1 retransmitted and 2 overlapping" in dup[0].message
    assert frames[3].to_dict()["body"]["brokers"][0]["host"] == "broker-1"


def test_capture_reports_gap_and_resyncs(synthetic: Path) -> None:
    events = list(iter_capture(synthetic))
    frames = _frames(events, 40002)
    gaps = [
        e
        for e in events
        if isinstance(e, CaptureIssue) and e.kind == "gap" and e.client and e.client.endswith(":40002")
    ]
    assert len(gaps) == 1 and gaps[0].length == 16 and gaps[0].stream_offset == 16
    broken = frames[0]
    assert broken.direction == "request" and isinstance(broken.error, DecodeError)
    assert broken.error.path == "frame.size" and "gap" in str(broken.error)
    assert broken.correlation_id == 7 and broken.api_key == 3
    # the frame after the gap decodes (the broken frame's size tells where it starts)
    ok = [f for f in frames if f.ok]
    assert [(f.direction, f.correlation_id) for f in ok] == [("request", 8), ("response", 7), ("response", 8)]
    assert ok[2].body.topics[0].name == "found"  # type: ignore[union-attr]


def test_capture_corrupt_body_is_a_typed_error(synthetic: Path) -> None:
    (frame,) = _frames(list(iter_capture(synthetic)), 40003)
    assert isinstance(frame.error, DecodeError)
    assert frame.error.offset > 12 and frame.error.path.startswith("MetadataRequest")
    assert (frame.api_key, frame.api_version, frame.correlation_id) == (3, 12, 3)
    d = frame.to_dict()
    assert d["error"]["type"] == "DecodeError" and d["error"]["offset"] == frame.error.offset
    # what precedes the bad varint is shown, marked partial (kcodec.protocol.partial)
    assert d["partial"] is True and d["body"] == {"topics": [{"topicId": "AAAAAAAAAAAAAAAAAAD__w"}]}
    assert d["header"] is not None and d["diagnostics"][-2].startswith("partial body: MetadataRequest v12")


def test_capture_garbage_and_foreign_flows(synthetic: Path) -> None:
    events = list(iter_capture(synthetic))
    (junk,) = _frames(events, 40004)
    assert isinstance(junk.error, DecodeError) and junk.error.path == "frame.size"
    assert "implausible frame size" in str(junk.error)
    auto = _frames(events, 40005)
    assert [(f.direction, f.api_name, f.ok) for f in auto] == [
        ("request", "ApiVersions", True),
        ("response", "ApiVersions", True),
    ]
    assert auto[0].server.endswith(":19093")
    foreign = [e for e in events if isinstance(e, CaptureIssue) and e.kind == "not-kafka"]
    assert len(foreign) == 1 and foreign[0].client is not None and "40006" in foreign[0].message
    no_auto = list(iter_capture(synthetic, autodetect=False))
    assert not _frames(no_auto, 40005)
    assert len([e for e in no_auto if isinstance(e, CaptureIssue) and e.kind == "not-kafka"]) == 2
    assert _frames(list(iter_capture(synthetic, ports=[19093], autodetect=False)), 40005)


def test_capture_truncated_tail(synthetic: Path) -> None:
    events = list(iter_capture(synthetic))
    frames = _frames(events, 40007)
    assert frames[0].ok and frames[0].direction == "request"
    tail = frames[1]
    assert tail.direction == "response" and tail.api_name == "Metadata" and tail.correlation_id == 21
    assert isinstance(tail.error, DecodeError) and "capture ends" in str(tail.error)
    assert tail.size is not None and len(tail.raw) == 4 + tail.size - 9
    trunc = [e for e in events if isinstance(e, CaptureIssue) and e.kind == "truncated"]
    assert len(trunc) == 1 and trunc[0].length == 9 and trunc[0].direction == "response"
    assert events[-1] is trunc[0] or events[-2] is tail  # last in time


def test_capture_cli_on_synthetic_pcap(synthetic: Path) -> None:
    result = run("decode-capture", str(synthetic), "--json")
    assert result.exit_code == 0
    events = json_lines(result.output)
    kinds = {e["kind"] for e in events if e["type"] == "issue"}
    assert {"gap", "truncated", "retransmits", "not-kafka"} <= kinds
    errors = [e["error"] for e in events if e["type"] == "frame" and e["error"]]
    assert errors and all({"type", "message", "offset", "path"} <= set(err) for err in errors)
    table = run("decode-capture", str(synthetic))
    assert table.exit_code == 0 and "undecodable" in table.output and "gap" in table.output


def test_capture_damaged_file_tail_and_pcapng(tmp_path: Path) -> None:
    f = Flow(40010, 9092, 200.0).handshake()
    req, resp = _api_versions(1)
    f.client(req)
    f.server(resp)
    cut = tmp_path / "cut.pcap"
    _write_pcap(cut, [f], cut_tail=len(f.packets[-1][1]) + 8)  # inside the last record's header
    events = list(iter_capture(cut))
    assert any(isinstance(e, CaptureIssue) and e.kind == "capture-file" for e in events)
    assert [e.direction for e in events if isinstance(e, CapturedFrame) and e.ok] == ["request"]
    ng = tmp_path / "flow.pcapng"
    with open(ng, "wb") as out:
        writer = dpkt.pcapng.Writer(out, linktype=dpkt.pcap.DLT_EN10MB)
        for ts, pkt in f.packets:
            writer.writepkt(pkt, ts=ts)
    frames = [e for e in iter_capture(ng) if isinstance(e, CapturedFrame)]
    assert [(fr.direction, fr.ok) for fr in frames] == [("request", True), ("response", True)]


def test_capture_api_versions_v0_fallback(tmp_path: Path) -> None:
    """A broker that does not know the requested ApiVersions version answers in v0 (Kafka's rule)."""
    f = Flow(40020, 9092, 300.0).handshake()
    req, _ = _api_versions(1)
    f.client(req)
    body = struct.pack(">ihihhh", 1, 35, 1, 18, 0, 2)  # correlation id, UNSUPPORTED_VERSION, [(18, 0-2)]
    f.server(struct.pack(">i", len(body)) + body)
    path = tmp_path / "fallback.pcap"
    _write_pcap(path, [f])
    frames = [e for e in iter_capture(path) if isinstance(e, CapturedFrame)]
    resp = frames[1]
    assert resp.ok and resp.api_version == 0 and resp.body is not None
    assert resp.body.error_code == 35  # type: ignore[attr-defined]
    assert resp.body.api_keys[0].max_version == 2  # type: ignore[attr-defined]
    assert resp.diagnostics == ("ApiVersions v3 answered with a v0 UNSUPPORTED_VERSION response",)


def test_versions_offline_on_a_captured_api_versions_response(tmp_path: Path) -> None:
    import json as _json

    import kcodec
    from kcodec.cli import main as cli_main

    resp_cls = kcodec.message_class("ApiVersionsResponse")
    keys = [resp_cls.ApiVersion(api_key=a.key, min_version=a.min_version, max_version=min(a.max_version, 9))  # type: ignore[attr-defined]
            for a in kcodec.apis() if a.key in (0, 1, 3, 18)]
    data = kcodec.encode_response(resp_cls(error_code=0, api_keys=keys), 3, correlation_id=1)
    path = tmp_path / "apiversions.bin"
    path.write_bytes(data)
    result = CliRunner().invoke(cli_main, ["versions", "--captured", str(path), "--json"])
    assert result.exit_code == 0, result.output
    report = _json.loads(result.output)
    fetch = next(a for a in report["apis"] if a["api_key"] == 1)
    assert (fetch["broker_max"], fetch["kcodec_max"], fetch["negotiated"]) == (9, 18, 9)
    assert any("CurrentLeaderEpoch" in f for f in fetch["key_fields"])
    assert "fingerprint" in report and "handshake" in report
    text = CliRunner().invoke(cli_main, ["versions", "--captured", str(path)])
    assert text.exit_code == 0 and "Fetch" in text.output


def test_decode_capture_explains_the_mock_clusters_off_spec_replies() -> None:
    """The sample capture is librdkafka talking to its mock cluster: the mock's ApiVersions v3 error
    reply (1-byte count) and its flexible Metadata replies (a doubled tagged-field section) are named."""
    from kcodec.capture import CapturedFrame, iter_capture

    frames = [ev for ev in iter_capture(SAMPLE) if isinstance(ev, CapturedFrame) and ev.diagnostics]
    api_versions = [f for f in frames if f.api_key == 18]
    metadata = [f for f in frames if f.api_key == 3]
    assert api_versions and metadata
    assert all(any("1-byte ApiKeys count" in d for d in f.diagnostics) for f in api_versions)
    assert all(any("second, empty top-level tagged-field section" in d for d in f.diagnostics) for f in metadata)
