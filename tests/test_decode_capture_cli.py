"""``kcodec decode-capture`` as a tool: stdin, filters, JSON-lines rules, summary, exit codes, table."""

from __future__ import annotations

import fcntl
import io
import json
import os
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from interrupt import ctrl_c_as_in_a_terminal
from pcap_build import Conversation, pcap
from rich.console import Console

import kcodec
from kcodec.capture import CapturedFrame, iter_capture
from kcodec.capture.facts import frame_facts
from kcodec.cli import main
from kcodec.cli.capture_table import TableWriter
from kcodec.cli.capture_view import summary_parts

ROOT = Path(__file__).resolve().parent.parent
# The sample as recorded against librdkafka's mock cluster (before samples/sample.pcap was re-recorded
# against Apache Kafka): these tests count its frames and explain its off-spec replies.
SAMPLE = ROOT / "tests" / "captures" / "mock_sample.pcap"
QUIRKS = ROOT / "tests" / "captures" / "mock_quirks.pcap"


def run(*args: str, input: bytes | None = None) -> Any:
    return CliRunner().invoke(main, ["decode-capture", *args], input=input, catch_exceptions=False)


def lines(result: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def test_stdin_gives_the_same_output_as_the_file() -> None:
    from_file = run(str(SAMPLE), "--json")
    from_stdin = run("-", "--json", input=SAMPLE.read_bytes())
    assert from_stdin.exit_code == 0 and from_stdin.stdout == from_file.stdout


def test_json_lines_rules() -> None:
    events = lines(run(str(QUIRKS), "--json"))
    frames = [e for e in events if e["type"] == "frame"]
    keys = {
        "type",
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
        "header",
        "body",
        "error",
        "diagnostics",
        "error_codes",
    }
    for f in frames:
        assert keys <= set(f) and isinstance(f["diagnostics"], list)
        assert (f["error"] is None) or f["diagnostics"][-1].startswith(f["error"]["type"])
    assert any(f["diagnostics"] for f in frames) and any(not f["diagnostics"] for f in frames)
    error_replies = [f for f in frames if f["api_name"] == "ApiVersions" and f["error_codes"]]
    assert error_replies[0]["error_codes"] == [{"code": 35, "name": "UNSUPPORTED_VERSION", "where": ""}]


def _is_row(line: str) -> bool:
    return line[:2].isdigit() and (" -> " in line or " <- " in line)


def test_size_means_the_same_in_table_and_json() -> None:
    frames = [e for e in lines(run(str(SAMPLE), "--json")) if e["type"] == "frame"]
    table = [line for line in run(str(SAMPLE)).stdout.splitlines() if _is_row(line)]
    assert len(table) == len(frames)
    for row, f in zip(table, frames, strict=True):
        assert row.split()[6] == str(f["size"])  # time, conn, arrow, api, version, corr, size


def test_filters() -> None:
    base = [e for e in lines(run(str(SAMPLE), "--json")) if e["type"] == "frame"]
    fetch = lines(run(str(SAMPLE), "--json", "--api", "fetch,FetchRequest", "--api", "1"))
    assert fetch and {e["api_name"] for e in fetch} == {"Fetch"}
    assert len(fetch) == sum(e["api_name"] == "Fetch" for e in base)
    two = lines(run(str(SAMPLE), "--json", "--api", "Produce,Metadata"))
    assert {e["api_name"] for e in two} == {"Produce", "Metadata"}
    port = base[0]["client"].rsplit(":", 1)[1]
    one = lines(run(str(SAMPLE), "--json", "--client", f":{port}"))
    assert one and {e["connection"] for e in one} == {base[0]["connection"]}
    assert len(lines(run(str(SAMPLE), "--json", "--server", "127.0.0.1:9092"))) == len(base)
    assert lines(run(str(SAMPLE), "--json", "--server", ":9093")) == []
    topic = lines(run(str(SAMPLE), "--json", "--topic", "kcodec-sample"))
    apis = {e["api_name"] for e in topic}
    assert {"Produce", "Fetch", "Metadata", "OffsetCommit", "ListOffsets"} <= apis
    # and the frames of the group that subscribes to the topic (its Heartbeats name no topic)
    assert {"JoinGroup", "SyncGroup", "Heartbeat"} <= apis
    assert lines(run(str(SAMPLE), "--json", "--topic", "nope, kcodec-sample")) == topic
    assert lines(run(str(SAMPLE), "--json", "--topic", "nope", "--topic", "kcodec-sample")) == topic
    fetches = [e for e in topic if e["api_name"] == "Fetch"]  # Fetch v13+ names topics by id only
    assert fetches and all(list(e["topic_names"].values()) == ["kcodec-sample"] for e in fetches)
    assert len(lines(run(str(SAMPLE), "--json", "-c", "3"))) == 3
    errors = lines(run(str(SAMPLE), "--json", "--errors-only"))
    assert errors and all(e["error_codes"] or e["error"] for e in errors)


def test_an_address_filter_matches_any_way_of_writing_the_address() -> None:
    from kcodec.cli.capture_filters import parse_addresses

    (v6,) = parse_addresses(["[0:0:0:0:0:0:0:1]:9092"], "--server")
    assert v6.matches("[::1]:9092") and not v6.matches("[::1]:9093") and not v6.matches("127.0.0.1:9092")
    (v4,) = parse_addresses(["127.0.0.1"], "--client")
    assert v4.matches("127.0.0.1:40000") and not v4.matches("127.0.0.10:40000")
    (port,) = parse_addresses([":9092"], "--server")
    assert port.matches("[fd00::5]:9092") and port.matches("10.0.0.5:9092")


def test_usage_errors_are_one_line_and_exit_2() -> None:
    for args in (
        ["--api", "Nope"],
        ["--client", "host:99999"],
        ["--server", "kafka-1:9092"],  # (a capture's endpoints are addresses: a name matches none)
        ["--fail-on", "warnings"],
        ["-c", "0"],
        ["--api", ""],  # (an empty variable in a script: not "every API")
        ["--api", " , "],
        ["--topic", ""],  # (not "no topic": a filter that would keep nothing)
        ["--topic", ","],
    ):
        result = CliRunner().invoke(main, ["decode-capture", str(SAMPLE), *args])
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output and "Invalid value" in result.output
        assert len(result.output.strip().splitlines()) == 1
    bad = CliRunner().invoke(main, ["decode-capture", str(SAMPLE), "--api", "Fetc"])
    assert "did you mean Fetch" in bad.output


def test_unreadable_files_exit_1(tmp_path: Path) -> None:
    bogus = tmp_path / "x.pcap"
    bogus.write_bytes(b"not a capture")
    for path in (bogus, tmp_path / "missing.pcap"):
        result = CliRunner().invoke(main, ["decode-capture", str(path)])
        assert result.exit_code == 1 and "Traceback" not in result.output
        assert len(result.stderr.strip().splitlines()) == 1 and str(path) in result.stderr


def test_fail_on(tmp_path: Path) -> None:
    assert run(str(SAMPLE), "--fail-on", "errors,issues").exit_code == 0
    assert run(str(SAMPLE), "--fail-on", "diagnostics").exit_code == 3  # the mock's off-spec replies
    assert run(str(SAMPLE), "--fail-on", "error-codes").exit_code == 3  # UNSUPPORTED_VERSION replies
    assert run(str(SAMPLE), "--api", "Produce", "--fail-on", "error-codes,diagnostics").exit_code == 0
    conv = Conversation(("10.0.0.1", 5000), ("10.0.0.2", 9092)).open()
    req = kcodec.encode_request(kcodec.message_class("HeartbeatRequest")(group_id="g"), 4, correlation_id=1)  # type: ignore[call-arg]
    conv.request(req[:-3])  # the capture ends inside the request
    path = tmp_path / "cut.pcap"
    path.write_bytes(pcap(conv.packets))
    assert run(str(path), "--fail-on", "issues").exit_code == 3
    assert run(str(path), "--fail-on", "errors").exit_code == 3


def _unread(fd: int) -> int:
    """Bytes written to a pipe and not yet read from it (FIONREAD works on either end on Linux)."""
    return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])


def test_ctrl_c_exits_130_without_a_traceback() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kcodec.cli", "decode-capture", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(SAMPLE.read_bytes()[:5000])  # part of a capture; then nothing more comes
        proc.stdin.flush()
        # interrupted once it has read all of it (it is then waiting for more), however long it took
        # to start; the deadline is only a safety net
        deadline = time.monotonic() + 120
        while _unread(proc.stdin.fileno()) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert _unread(proc.stdin.fileno()) == 0
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and b"interrupted" in err


def test_summary() -> None:
    (s,) = lines(run(str(SAMPLE), "--json", "--summary"))
    assert s["type"] == "summary" and s["frames"] == 71 and s["undecodable"] == 0
    assert s["apis"]["Fetch"]["versions"]["16"]["requests"] > 0
    assert s["apis"]["ApiVersions"]["errors"] == {"UNSUPPORTED_VERSION": 5}
    lat = s["apis"]["Metadata"]["latency_ms"]
    assert lat["count"] > 0 and 0 <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]
    (producer,) = [c for c in s["clients"] if c["client_id"] == "kcodec-sample-producer"]
    assert producer["software"] == ["confluent-kafka-python 2.16.1-rdkafka-2.16.0"]
    assert producer["versions"]["Produce"] == [10] and producer["versions"]["ApiVersions"] == [0, 3]
    assert s["fencing"] == []
    text = run(str(SAMPLE), "--summary").stdout
    assert "Latency (ms)" in text and "UNSUPPORTED_VERSION" in text and "confluent-kafka-python" in text


def _fencing_capture(path: Path) -> None:
    fetch: Any = kcodec.message_class("FetchRequest")
    resp: Any = kcodec.message_class("FetchResponse")
    conv = Conversation(("10.0.0.1", 5001), ("10.0.0.2", 9092)).open()
    req = fetch(
        topics=[
            fetch.FetchTopic(
                topic="t", partitions=[fetch.FetchPartition(partition=3, current_leader_epoch=4)]
            )
        ]
    )
    body = resp(
        responses=[
            resp.FetchableTopicResponse(
                topic="t", partitions=[resp.PartitionData(partition_index=3, error_code=74)]
            )
        ]
    )
    conv.request(kcodec.encode_request(req, 11, correlation_id=1))
    conv.response(kcodec.encode_response(body, 11, correlation_id=1))
    path.write_bytes(pcap(conv.packets))


def test_fencing_errors_per_partition_and_error_names_lead(tmp_path: Path) -> None:
    path = tmp_path / "fenced.pcap"
    _fencing_capture(path)
    (s,) = lines(run(str(path), "--json", "--summary"))
    assert s["fencing"] == [{"api": "Fetch", "partition": "t/3", "errors": {"FENCED_LEADER_EPOCH": 1}}]
    rows = run(str(path)).stdout.splitlines()
    response = next(r for r in rows if _is_row(r) and " <- " in r)
    summary = response.split("  ", 1)[1].strip()
    assert (
        summary.split("  ")[-1].startswith("FENCED_LEADER_EPOCH (74) t/3")
        or "FENCED_LEADER_EPOCH (74) t/3" in summary
    )
    assert response.index("FENCED_LEADER_EPOCH") < response.index("t[")  # the error comes first
    request = next(r for r in rows if _is_row(r) and " -> " in r)
    assert "current epoch 4" in request
    assert run(str(path), "--errors-only", "--json").stdout.count('"type":"frame"') == 1


def test_piped_table_is_not_cut_or_padded() -> None:
    out = run(str(QUIRKS)).stdout.splitlines()
    assert not [line for line in out if line != line.rstrip()]
    long = [line for line in out if "[quirk: ApiVersions reply with a 1-byte ApiKeys count" in line]
    assert long and max(len(line) for line in long) > 100  # one line, nothing cut


def test_quirk_notes_are_short_in_the_table_and_whole_in_verbose_and_json() -> None:
    """A peer deviation's diagnostic repeats on every frame of the peer: the table names it (``quirk:
    ...``); -V and --json keep the whole text, which says how the frame was read."""
    whole = "the layout librdkafka's mock cluster writes for ApiVersions v3+ requests"
    table = run(str(QUIRKS), "--api", "ApiVersions").stdout
    assert whole not in table and table.count("[quirk: ApiVersions reply with a 1-byte ApiKeys count") >= 15
    assert max(len(line) for line in table.splitlines()) < 250
    metadata = run(str(QUIRKS), "--api", "Metadata").stdout
    assert "[quirk: doubled tagged-field section (librdkafka mock)]" in metadata
    verbose = run(str(QUIRKS), "--api", "ApiVersions", "-V").stdout
    assert verbose.count("! reply is") >= 15 and whole in verbose
    notes = [d for o in lines(run(str(QUIRKS), "--json")) for d in o.get("diagnostics", [])]
    assert sum(whole in d for d in notes) >= 15 and not [d for d in notes if d.startswith("quirk:")]


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_terminal_rows_fit_the_width(width: int) -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=True, color_system=None, highlight=False)
    table = TableWriter(console=console)
    for ev in iter_capture(QUIRKS):
        if isinstance(ev, CapturedFrame):
            facts = (
                frame_facts(ev.body, ev.api_version)
                if ev.body is not None and ev.api_version is not None
                else None
            )
            table.frame(ev, summary_parts(ev, facts), [])
    text = buf.getvalue().splitlines()
    assert text and max(len(line) for line in text) <= width
    assert sum("quirk: ApiVersions reply" in line for line in text) >= 1  # notes wrap, they are not dropped


def test_verbose_view() -> None:
    out = run(str(SAMPLE), "-V", "--api", "OffsetCommit").stdout
    assert "committedOffset: 5" in out and "groupId: 'kcodec-sample-group'" in out
    assert "Traceback" not in out


def test_progress_flag_does_not_disturb_output() -> None:
    assert run(str(SAMPLE), "--json", "--progress").stdout == run(str(SAMPLE), "--json").stdout


def test_broken_pipe_is_quiet() -> None:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    p = subprocess.run(
        f"{sys.executable} -m kcodec.cli decode-capture --json {SAMPLE} | head -1",
        shell=True,
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 1 and b"Traceback" not in p.stderr


def test_one_process_decoding_imports_only_what_it_uses() -> None:
    """Start-up is most of the time for a small capture: decoding one in one process (table and JSON)
    does not import the parallel decoder (multiprocessing, tempfile), the partial-body reader (only a
    frame that fails to decode needs it), socket or difflib (an unknown --api name's suggestions).
    (The wire walk is imported: any decode that fails reads the body again with it to name the field,
    and the sample's ApiVersions reply is first tried as Kafka's v0 fallback layout.)"""
    script = (
        "import os, sys\n"
        "from kcodec.cli import main\n"
        "os.dup2(os.open(os.devnull, os.O_WRONLY), 1)\n"
        f"for extra in ([], ['--json']):\n"
        f"    try:\n"
        f"        main(['decode-capture', *extra, {str(SAMPLE)!r}], standalone_mode=False)\n"
        f"    except SystemExit:\n"
        f"        pass\n"
        "heavy = ['kcodec.capture.parallel.engine', 'multiprocessing', 'tempfile',\n"
        "         'kcodec.protocol.partial', 'socket', 'difflib']\n"
        "sys.stderr.write(' '.join(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # (frames that fail to decode, and their partial bodies: test_capture_quirks)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_records_of_a_fetch_response_are_labelled_by_topic_name(jobs: str) -> None:
    """Fetch v13+ names topics by id only: the records' lines name the topic the row above names,
    in one process and with workers (which learn the names from another connection's Metadata)."""
    out = run(str(SAMPLE), "--records", "text", "-j", jobs).stdout
    fetch = [line for line in out.splitlines() if "<- Fetch v16" in line and "records" in line]
    assert len(fetch) == 2 and all("kcodec-sample[" in line for line in fetch)
    assert "    kcodec-sample/0: 192B 1 batch 3 records" in out
    assert "    kcodec-sample/0: 153B 1 batch 2 records" in out
    assert "nPFTy3J5SPa0Gax2XvtwOA" not in out  # the topic's id


def _stderr_on_a_terminal(stdout: Any, *args: str) -> bytes:
    """What decode-capture draws on its stderr, a terminal (a pty), with ``stdout`` as given."""
    import pty

    master, slave = pty.openpty()
    try:
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"}
        env.pop("NO_COLOR", None)
        done = subprocess.run(
            [sys.executable, "-m", "kcodec.cli", "decode-capture", *args, str(SAMPLE)],
            stdout=stdout, stderr=slave, env=env, timeout=120,
        )
        assert done.returncode == 0
        os.close(slave)
        slave = -1
        drawn = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other end is closed and everything was read
                break
            if not chunk:
                break
            drawn += chunk
        return drawn
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)


def test_no_progress_bar_when_the_frames_go_to_a_pipe(tmp_path: Path) -> None:
    """A pipe's reader may print to the terminal the bar would be drawn on (``| grep``): no bar; a
    file shows nowhere: the bar (``--no-progress`` and ``--progress`` as asked)."""
    assert _stderr_on_a_terminal(subprocess.PIPE) == b""
    with (tmp_path / "out.txt").open("wb") as f:
        assert _stderr_on_a_terminal(f) != b""  # (the bar, drawn then erased)
        assert _stderr_on_a_terminal(f, "--no-progress") == b""
    assert _stderr_on_a_terminal(subprocess.PIPE, "--progress") != b""
    assert _stderr_on_a_terminal(subprocess.PIPE, "--summary") != b""
