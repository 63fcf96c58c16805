"""``kcodec decode-capture -j N``: N worker processes, each decoding a shard of the connections, give
the same bytes as one process, as JSON lines and as the table (frames, issues, connection numbers,
topic names learnt on one connection and used on another, filters, ``-c``, ``-V``, ``--records``,
``--fail-on``), and :mod:`kcodec.capture.shard` merges shards back into exactly the events and order
of ``iter_capture``."""

from __future__ import annotations

import copy
import json
import os
import pickle
import pty
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from interrupt import ctrl_c_as_in_a_terminal
from pcap_build import Conversation, pcap_header, pcap_record

import kcodec
from kcodec.capture import CapturedFrame, iter_capture
from kcodec.capture.facts import Facts, PartitionFacts
from kcodec.capture.segments import iter_segments
from kcodec.capture.shard import Assignment, BatchMerge, iter_sharded
from kcodec.capture.stream import SWEEP_EVERY
from kcodec.capture.topics import TopicDirectory, unnamed_ids
from kcodec.cli.capture_view import digest, summary_from, summary_parts

ROOT = Path(__file__).resolve().parent.parent
RECORDED = [ROOT / "samples" / "sample.pcap", *sorted((ROOT / "tests" / "captures").rglob("*.pcap"))]
TOPIC_ID = uuid.UUID("6b1d3c52-2f1e-4a55-9b3e-0c8f5b7f2a11").bytes

_META: Any = kcodec.message_class("MetadataResponse")
_META_REQ: Any = kcodec.message_class("MetadataRequest")
_FETCH: Any = kcodec.message_class("FetchRequest")
_FETCH_RESP: Any = kcodec.message_class("FetchResponse")
_HEARTBEAT: Any = kcodec.message_class("HeartbeatRequest")
_HEARTBEAT_RESP: Any = kcodec.message_class("HeartbeatResponse")


def _metadata(corr: int) -> tuple[bytes, bytes]:
    req = kcodec.encode_request(_META_REQ(topics=None), 12, correlation_id=corr)
    part = _META.MetadataResponsePartition(partition_index=0, leader_id=1, leader_epoch=7)
    topic = _META.MetadataResponseTopic(name="orders", topic_id=TOPIC_ID, partitions=[part])
    broker = _META.MetadataResponseBroker(node_id=1, host="b1", port=9092)
    resp = kcodec.encode_response(_META(brokers=[broker], topics=[topic]), 12, correlation_id=corr)
    return req, resp


def _fetch(corr: int, error: int) -> tuple[bytes, bytes]:
    fp = _FETCH.FetchPartition(partition=0, current_leader_epoch=7, fetch_offset=corr)
    req = kcodec.encode_request(
        _FETCH(topics=[_FETCH.FetchTopic(topic_id=TOPIC_ID, partitions=[fp])]), 13, correlation_id=corr
    )
    pd = _FETCH_RESP.PartitionData(partition_index=0, error_code=error, high_watermark=corr)
    topic = _FETCH_RESP.FetchableTopicResponse(topic_id=TOPIC_ID, partitions=[pd])
    return req, kcodec.encode_response(_FETCH_RESP(responses=[topic]), 13, correlation_id=corr)


def _heartbeat(corr: int) -> tuple[bytes, bytes]:
    req = kcodec.encode_request(
        _HEARTBEAT(group_id="g", generation_id=1, member_id="m"), 4, correlation_id=corr
    )
    return req, kcodec.encode_response(_HEARTBEAT_RESP(), 4, correlation_id=corr)


def busy_capture(path: Path) -> None:
    """24 connections over about 70 s of capture time, interleaved: Fetch v13 by topic id on most,
    the Metadata that names that id on one of them (opened later than some fetchers), a
    FENCED_LEADER_EPOCH error, heartbeats; most are closed early enough to be swept, one 4-tuple is
    reused (a SYN after its close), one request is sent twice, one is never answered, and one pcap
    record is damaged."""
    rng = random.Random(7)
    packets: list[tuple[float, bytes]] = []
    t0 = 1_700_000_000.0
    ends: dict[int, float] = {}
    for n in range(24):
        start, port = t0 + n * 0.9, 41000 + n
        if n == 23:  # connection 5's 4-tuple again, a second after it closed (before it is swept)
            start, port = ends[5] + 1.0, 41005
        conv = Conversation(("10.1.0.1", port), ("10.1.0.9", 9092), t=start, cseq=1000 + n, step=0.01).open()
        for corr in range(1, 120):
            if n == 3 and corr == 5:
                req, resp = _metadata(corr)
            elif n % 4 == 1:
                req, resp = _heartbeat(corr)
            else:
                req, resp = _fetch(corr, 74 if (n, corr) == (10, 20) else 0)
            if (n, corr) == (7, 9):  # sent twice: the retransmit is reported when the connection is swept
                segments = conv.segments(True, req)
                conv.send(True, segments)
                conv.send(True, segments)
            else:
                conv.request(req)
            if (n, corr) != (17, 119):  # (never answered)
                conv.response(resp)
            conv.t += rng.random() * 0.02
        if n % 6 != 0:
            conv.close()
        ends[n] = conv.t
        packets += conv.packets
    packets.sort(key=lambda p: p[0])
    records = [pcap_record(ts, data) for ts, data in packets]
    damaged = bytearray(records[3000])
    damaged[8:12] = (16 << 20).to_bytes(4, "little")  # incl_len: 16 MiB
    records[3000] = bytes(damaged)
    path.write_bytes(pcap_header() + b"".join(records))


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("parallel") / "busy.pcap"
    busy_capture(path)
    return path


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "kcodec.cli", "decode-capture", *args], capture_output=True, timeout=120
    )


def test_the_busy_capture_has_what_the_tests_need(busy: Path) -> None:
    events = [e.to_dict() for e in iter_capture(busy)]
    segments = sum(1 for _ in iter_segments(busy))
    assert segments > 2 * SWEEP_EVERY  # connections are swept (finished before the end) ...
    frames = [e for e in events if e["type"] == "frame"]
    assert len({e["connection"] for e in frames}) == 24  # ... and a 4-tuple reused
    assert len({(e["client"], e["server"]) for e in frames}) == 23
    kinds = {e["kind"] for e in events if e["type"] == "issue"}
    assert "capture-file" in kinds  # the damaged record
    retransmit = next(i for i, e in enumerate(events) if e["type"] == "issue" and e["kind"] == "retransmits")
    assert any(e["type"] == "frame" and e["connection"] != 8 for e in events[retransmit:])  # (swept)
    shown = [json.loads(line) for line in _cli("--json", "-j", "1", str(busy)).stdout.splitlines()]
    meta = {e["connection"] for e in shown if e.get("api_name") == "Metadata"}
    named = {e["connection"] for e in shown if e.get("topic_names")}
    assert len(meta) == 1 and len(named - meta) > 5  # names learnt on one connection, used on others


@pytest.mark.parametrize("shards", [2, 3, 5])
def test_shards_merge_into_the_events_of_one_decoder(busy: Path, shards: int) -> None:
    for path in [busy, *RECORDED]:
        whole = [e.to_dict() for e in iter_capture(path)]
        assert [e.to_dict() for e in iter_sharded(path, shards)] == whole, path


@pytest.mark.parametrize("mark_every", [1, 3, 96, 4096])
def test_shards_merge_alike_whatever_their_marks(busy: Path, mark_every: int) -> None:
    # a shard is given the others' segments only where it marks or may sweep (the gcd of the two
    # periods: every segment for 1 and 3, every 32nd for 96, every 2048th for 4096)
    whole = [e.to_dict() for e in iter_capture(busy)]
    assert [e.to_dict() for e in iter_sharded(busy, 3, mark_every=mark_every)] == whole


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--topic", "orders"),
        ("--api", "Fetch", "--errors-only"),
        ("--client", ":41003"),
        ("-c", "37"),
        ("--records", "text"),
    ],
    ids=["all", "topic", "api-errors", "client", "count", "records"],
)
@pytest.mark.parametrize("form", ["--json", "table"])
def test_workers_write_the_bytes_one_process_writes(busy: Path, args: tuple[str, ...], form: str) -> None:
    shown = ("--json",) if form == "--json" else ("-V",) if "--client" in args else ()
    one = _cli(*shown, "-j", "1", *args, str(busy))
    assert one.returncode == 0 and one.stdout, one.stderr
    for jobs in ("2", "3") if form == "--json" else ("3",):
        many = _cli(*shown, "-j", jobs, *args, str(busy))
        assert (many.returncode, many.stderr) == (0, b"")
        assert many.stdout == one.stdout, (jobs, args)


def test_recorded_captures_and_fail_on(busy: Path) -> None:
    for path in RECORDED:
        for form in ("--json", "-V"):
            one = _cli(form, "-j", "1", "--fail-on", "diagnostics", str(path))
            many = _cli(form, "-j", "3", "--fail-on", "diagnostics", str(path))
            assert (many.stdout, many.returncode) == (one.stdout, one.returncode), (path, form)
    for what in ("issues", "errors", "error-codes"):
        one = _cli("--json", "-j", "1", "--fail-on", what, str(busy))
        many = _cli("--json", "-j", "2", "--fail-on", what, str(busy))
        assert one.returncode == many.returncode == 3, what


def test_not_a_capture_is_one_line_and_exit_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"this is not a capture at all" * 1000)
    one, many = _cli("--json", "-j", "1", str(bad)), _cli("--json", "-j", "2", str(bad))
    assert one.returncode == many.returncode == 1
    assert (
        many.stderr == one.stderr and len(many.stderr.splitlines()) == 1 and b"Traceback" not in many.stderr
    )


def test_repeated_runs_end_their_reader_threads_before_closing_the_pipes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pipe closed under its reader thread made the thread fail, or, with the descriptor's number
    reused by the next run's pipe, read that pipe's bytes (about 3 % of runs on this input)."""
    import io
    import threading

    from kcodec.capture import DEFAULT_PORTS
    from kcodec.capture.parallel.engine import ParallelRun, WorkerFailed
    from kcodec.cli.capture_filters import EventFilter
    from kcodec.cli.parallel_items import ShardItems
    from kcodec.cli.parallel_sink import MergedOutput

    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"this is not a capture at all" * 1000)
    failed: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failed.append(repr(args.exc_value)))
    options = {"ports": tuple(DEFAULT_PORTS), "autodetect": True, "strict": False}
    for _ in range(60):
        out = MergedOutput(flt=EventFilter(), jsonout=io.BytesIO(), table=None, count=None)
        run = ParallelRun(str(bad), 2, lambda: ShardItems(EventFilter(), "raw", "json", False), options)
        with pytest.raises(WorkerFailed, match="not a pcap or pcapng file"):
            run.run(out.add)
        assert not any(t.name.startswith("kcodec-shard-") for t in threading.enumerate())
    assert failed == []


def test_batch_merge_gives_key_order() -> None:
    rng = random.Random(3)
    keys = sorted({(rng.randrange(1000), rng.randrange(2), rng.randrange(5)) for _ in range(3000)})
    shards: list[list[tuple[Any, ...]]] = [[], [], []]
    for key in keys:
        shards[rng.randrange(3)].append((key, "x"))
    merge = BatchMerge(3)
    out: list[tuple[Any, ...]] = []
    positions = [0, 0, 0]
    while (k := merge.waiting_for()) is not None:
        n = rng.randrange(0, 40)
        batch = shards[k][positions[k] : positions[k] + n]
        positions[k] += n
        merge.add(k, batch, done=positions[k] >= len(shards[k]))
        out += merge.take()
    assert [item[0] for item in out] == keys
    owner = {key: k for k, items in enumerate(shards) for key, _ in items}
    assert [(key, k) for key, k, _ in out] == [(key, owner[key]) for key in keys]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_ctrl_c_stops_the_workers_and_exits_130(busy: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kcodec.cli", "decode-capture", "--json", "-j", "2", str(busy)],
        stdout=subprocess.PIPE,  # not read until the end: the output blocks, so the run is still going
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    try:
        # waits for the workers (running, or finished and not yet waited for), however long they take
        # to start: the deadline is only a safety net
        deadline = time.monotonic() + 120
        while len(children := _children(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(children) == 2
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and b"interrupted" in err
    assert not [pid for pid in children if Path(f"/proc/{pid}").exists()]


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                pass
    return found


def _facts_for_digest(rng: random.Random) -> Facts:
    """Facts with topics named, named by id only (ids that resolve to the same name as each other
    or as a named topic, or that stay unknown), empty names, many topics and many partitions."""
    choices = [
        ("orders", "IdOrders"), (None, "IdOrders"), (None, "IdOrdersOld"), ("", "IdEmpty"), (None, "IdEmpty"),
        (None, "IdUnknown"), ("payments", None), (None, None),
        *[(f"t{i}", f"Id{i}") for i in range(10)], *[(None, f"Id{i}") for i in range(10)],
    ]  # fmt: skip
    facts = Facts()
    for _ in range(rng.randrange(0, 60)):
        topic, topic_id = rng.choice(choices)
        p = PartitionFacts(topic, topic_id, rng.randrange(30), error_code=rng.choice([0, 0, 0, 6, 74]))
        p.values["leader_epoch"] = rng.randrange(5)
        facts.partitions.append(p)
        if p.error_code:
            facts.error_codes.append((p.error_code, f"{topic or topic_id or '?'}/{p.partition}"))
    if not facts.partitions:
        facts.topics = [rng.choice(choices[:8]) for _ in range(rng.randrange(0, 12))]
    return facts


def test_a_digest_finished_with_names_is_the_summary_of_resolved_facts() -> None:
    """What the parent of a parallel table shows for a frame naming topics by id only: the worker's
    digest of the unresolved facts, finished with the names known by then, equals the summary one
    process makes of the resolved facts."""
    rng = random.Random(11)
    known = {
        "IdOrders": "orders",
        "IdOrdersOld": "orders",
        "IdEmpty": "",
        **{f"Id{i}": f"t{i}" for i in range(0, 10, 2)},
    }
    frame = CapturedFrame(0.0, 1, "c:1", "s:9092", "response", 0, 10, b"", api_key=1, api_version=13)
    for _ in range(400):
        facts = _facts_for_digest(rng)
        directory = TopicDirectory()
        directory.learn_pairs([(i, n) for i, n in known.items() if n])
        found = directory.lookup(unnamed_ids(facts))
        finished = summary_from(digest(frame, copy.deepcopy(facts), pending=True), found)
        directory.resolve(facts)
        assert finished == summary_parts(frame, facts)


def _on_a_terminal(*args: str) -> bytes:
    """What decode-capture writes to a terminal 150 columns wide (a pseudo-terminal)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "150", "LINES": "50"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kcodec.cli", "decode-capture", "--no-progress", *args],
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # (EIO: the terminal's other end closed)
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    return out


def test_a_terminal_gets_the_same_rows_from_workers() -> None:
    sample = str(RECORDED[0])
    one = _on_a_terminal("-j", "1", sample)
    assert b"connection #1" in one and b"\x1b[" in one  # (laid out by rich, in colour)
    assert _on_a_terminal("-j", "3", sample) == one


@pytest.mark.parametrize("args", [("--json",), (), ("--json", "--api", "Fetch,Metadata"), ("--errors-only",)])
def test_a_summary_from_workers_is_the_summary_of_one_process(busy: Path, args: tuple[str, ...]) -> None:
    one = _cli("--summary", "-j", "1", *args, str(busy))
    assert one.returncode == 0 and one.stdout, one.stderr
    many = _cli("--summary", "-j", "3", *args, str(busy))
    assert (many.returncode, many.stderr, many.stdout) == (0, b"", one.stdout)
    if args == ("--json",):  # the fencing error at a topic named by id, named from another connection
        fencing = json.loads(one.stdout)["fencing"]
        assert fencing == [{"api": "Fetch", "partition": "orders/0", "errors": {"FENCED_LEADER_EPOCH": 1}}]


def test_summaries_of_the_recorded_captures_and_fail_on() -> None:
    for path in RECORDED:
        one = _cli("--summary", "--json", "-j", "1", "--fail-on", "diagnostics", str(path))
        many = _cli("--summary", "--json", "-j", "2", "--fail-on", "diagnostics", str(path))
        assert (many.stdout, many.returncode) == (one.stdout, one.returncode), path


def test_each_segment_has_exactly_one_shard_and_every_shard_agrees() -> None:
    # every shard's picker, fed the same segments in the same order, keeps each segment in exactly one
    # shard, the one a plain Assignment's owner() gives, past the remembered keys too (CRC there); the
    # others give its time at every tick-th segment and nothing for the rest, and all count alike
    import random

    rng = random.Random(7)
    segments = [(f"10.0.0.{rng.randrange(40)}:{rng.randrange(3)}", rng.randrange(2000)) for _ in range(3000)]
    shards, remember, tick = 3, 25, 16
    pickers = [Assignment(shards, remember=remember).picker(k, tick) for k in range(shards)]
    reference = Assignment(shards, remember=remember)
    loads = [0] * shards
    for n, (key, nbytes) in enumerate(segments, 1):
        ts = n / 10
        said = [pick(key, nbytes, ts) for pick, _ in pickers]
        owner = reference.owner(key, nbytes)
        assert [k for k, x in enumerate(said) if x is True] == [owner], (key, said, owner)
        others = [x for k, x in enumerate(said) if k != owner]
        assert others == [None if n % tick else ts] * (shards - 1), (n, said)
        assert [count() for _, count in pickers] == [n] * shards
        loads[owner] += nbytes
    assert loads == reference.loads and min(loads) > 0


def test_frames_cross_the_pipe_as_plain_tuples_and_come_back_as_records() -> None:
    from kcodec.cli.capture_view import Digest
    from kcodec.cli.parallel_items import JsonFrame, Row, TableFrame, from_wire, to_wire

    row = Row(1.5, 3, "10.0.0.1:40000", "10.0.0.2:9092", "request", 1, 13, "Fetch", 7, 90, None, None)
    head = b'{"type":"frame","time":1.5,"connection":'
    json_frame = JsonFrame(3, 8, [("id", "orders")], [], {"orders"}, head, b"}\n", None)
    parts = [("topic", "orders")]
    table_frame = TableFrame(3, 8, [], ["id"], None, row, parts, None, ["x"], None, {"id": "t"})
    pending = Digest([], [], True, [], [(3, "id/0")], [], [(None, "id", "0 @5")], [], [("dim", "n 1")])
    waiting = table_frame._replace(parts=None, pending=pending, plain=("a", "b"))
    frames: list[tuple[JsonFrame | TableFrame, bool]] = [
        (json_frame, True),
        (table_frame, False),
        (waiting, False),
    ]
    for frame, json_mode in frames:
        wire = to_wire(frame)
        pickled = pickle.dumps(wire, protocol=pickle.HIGHEST_PROTOCOL)
        assert b"Frame" not in pickled and b"Row" not in pickled and b"Digest" not in pickled  # (no class to call)
        back = from_wire(pickle.loads(pickled), json_mode)
        assert back == frame and type(back) is type(frame)
        if isinstance(back, TableFrame):
            assert type(back.row) is Row and back.row.client == "10.0.0.1:40000"
            assert back.pending is None or (type(back.pending) is Digest and back.pending.codes == [(3, "id/0")])


def test_a_plain_row_goes_as_its_lines_unless_it_waits_for_the_parent(busy: Path) -> None:
    """For a file or pipe, a frame that names no topic by id only (with no ``--topic`` filter) goes
    as a ``"r"`` item: its lines, as the :class:`TableFrame` path lays them out, and what the parent
    needs besides them. One that does goes as a ``"p"`` item: its lines made with the names the
    worker knew, and the row, digest and extra lines, as JSON, that the :class:`TableFrame` holds
    (the parent makes the row again from them if the names it knows differ). With ``--topic``,
    frames go as ``"f"`` items, as before."""
    import io

    from kcodec.capture.facts import event_facts
    from kcodec.cli.capture_filters import EventFilter
    from kcodec.cli.capture_table import TableWriter
    from kcodec.cli.parallel_items import _table_frame, frame_item, from_pending_again
    from kcodec.protocol.json_values import uuid_text

    plain = TableWriter(out=io.StringIO())
    tags: dict[str, int] = {}
    for ev in iter_capture(busy):
        if not isinstance(ev, CapturedFrame):
            continue
        for flt in (EventFilter(), EventFilter(topics=frozenset({"orders"}))):
            local = TopicDirectory()
            local.learn_pairs([(uuid_text(TOPIC_ID), "orders")])
            tag, data = frame_item(ev, flt, "raw", "plain", False, plain, local, event_facts)
            facts = event_facts(ev)
            unnamed = unnamed_ids(facts) if facts is not None else []
            tags[tag] = tags.get(tag, 0) + 1
            if flt.topics is not None:
                assert tag == "f"
                continue
            if unnamed:
                assert tag == "p"
                number, flags, pairs, client, server, before, after, ids, assumed, again = data
                pickled = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
                assert pickle.loads(pickled) == data and b"Row" not in pickled and b"Digest" not in pickled
                made = _table_frame(ev, facts, flags, pairs or [], unnamed, None, "raw", False, local, plain)
                assert made.plain == (before, after) and (ids, assumed) == (made.unnamed, made.assumed)
                assert assumed == {uuid_text(TOPIC_ID): "orders"} and "orders[" in after
                assert from_pending_again(again) == (made.row, made.pending, made.extra)
                assert (number, client, server) == (ev.connection, ev.client, ev.server)
                continue
            assert tag == "r"
            number, flags, pairs, client, server, before, after = data
            pickled = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
            assert pickle.loads(pickled) == data and b"Row" not in pickled
            local = TopicDirectory()
            made = _table_frame(ev, facts, flags, pairs or [], [], None, "raw", False, local, plain)
            assert made.plain == (before, after) and made.pending is None
            assert (number, client, server) == (ev.connection, ev.client, ev.server)
    assert tags.get("r", 0) > 100 and tags.get("p", 0) > 100 and tags.get("f", 0) > 100, tags


def test_a_pending_row_that_cannot_be_json_goes_as_a_table_frame() -> None:
    """A ``"p"`` item's row, digest and extra lines go as JSON: a string that is not valid Unicode
    (a lone surrogate, as a lenient decode of a bad topic name may give) cannot, so its frame goes
    as a ``"f"`` item, which pickles anything; and what goes as JSON comes back as it was."""
    from kcodec.cli.capture_view import Digest
    from kcodec.cli.parallel_items import Row, from_pending_again, pending_again

    row = Row(1.7e9, 3, "10.0.0.1:40000", "10.0.0.2:9092", "response", 1, 13, "Fetch", 7, 90, 0.25, True)
    pending = Digest(
        [("error", "DecodeError: x")], [("note", "[n]")], True, [("", "session_epoch 0")], [(74, "id/0")],
        [("", "records 4B")], [(None, "id", "0 @5"), ("t", None, None)], [(None, "id")], [("dim", "n 1")],
    )  # fmt: skip
    again = pending_again(row, pending, ["    record 0"])
    assert again is not None
    back = from_pending_again(again)
    assert back == (row, pending, ["    record 0"]) and type(back[0]) is Row and type(back[1]) is Digest
    assert all(type(x) is tuple for part in (back[1].partitions, back[1].codes, back[1].keys) for x in part)
    assert pending_again(row._replace(client="\udc80"), pending, []) is None
    assert pending_again(row, pending._replace(keys=[("", "topic \udcff")]), []) is None


def test_a_json_line_goes_as_head_and_body_unless_it_waits_for_the_parent(busy: Path) -> None:
    """``--json``: a frame that names no topic by id only (with no ``--topic`` filter) goes as a
    ``"j"`` item, the head and body its :class:`JsonFrame` would hold; the others as ``"f"``."""
    import io

    from kcodec.capture.facts import event_facts
    from kcodec.cli.capture_filters import EventFilter
    from kcodec.cli.capture_table import TableWriter
    from kcodec.cli.parallel_items import JsonFrame, frame_item

    plain = TableWriter(out=io.StringIO())
    everything, named = EventFilter(), EventFilter(topics=frozenset({"orders"}))
    tags: dict[str, int] = {}
    for ev in iter_capture(busy):
        if not isinstance(ev, CapturedFrame):
            continue
        tag, data = frame_item(ev, everything, "raw", "json", False, plain, TopicDirectory(), event_facts)
        tags[tag] = tags.get(tag, 0) + 1
        ftag, frame = frame_item(ev, named, "raw", "json", False, plain, TopicDirectory(), event_facts)
        assert ftag == "f" and isinstance(frame, JsonFrame)
        facts = event_facts(ev)
        if unnamed_ids(facts) if facts is not None else []:
            assert tag == "f" and isinstance(data, JsonFrame) and data.codes is not None
            continue
        assert tag == "j"
        number, flags, pairs, head, body = data
        assert (number, flags, pairs or [], head, body) == (
            frame.connection, frame.flags, frame.pairs, frame.head, frame.body
        )
        assert frame.codes is None and body.endswith(b"}\n") and json.loads(b"{" + body[1:])
    assert tags.get("j", 0) > 100 and tags.get("f", 0) > 100, tags


def test_a_batch_sent_from_the_picklers_buffer_arrives_whole() -> None:
    import threading

    from kcodec.capture.parallel.engine import _send
    from kcodec.capture.parallel.forked import PipeReader, PipeWriter

    r, w = os.pipe()
    reader, writer = PipeReader(r), PipeWriter(w)
    batch = [((i, 0, 0), "j", (3, 1, None, b'{"type":"frame","time":1.5,"connection":', bytes([i]) * 5000))
             for i in range(40)]  # fmt: skip
    got: list[Any] = []
    receiving = threading.Thread(
        target=lambda: got.extend(pickle.loads(reader.recv_bytes()) for _ in range(2))
    )
    receiving.start()  # (the batch is larger than a pipe holds: it is read as it is written)
    _send(writer, ("batch", batch))
    _send(writer, ("done", []))
    receiving.join(10)
    assert got == [("batch", batch), ("done", [])]
    writer.close()
    reader.close()


def _named_ids_reference(facts: Facts) -> list[tuple[str, str]]:  # (the rules, as first written)
    from kcodec.capture.topics import ZERO_TOPIC_ID

    pairs = [(i, n) for n, i in facts.topics if n and i and i != ZERO_TOPIC_ID]
    pairs += [
        (p.topic_id, p.topic)
        for p in facts.partitions
        if p.topic and p.topic_id and p.topic_id != ZERO_TOPIC_ID
    ]
    return pairs


def _unnamed_ids_reference(facts: Facts) -> list[str]:
    ids = [p.topic_id for p in facts.partitions if p.topic is None and p.topic_id is not None]
    ids += [i for n, i in facts.topics if n is None and i is not None]
    return list(dict.fromkeys(ids))


@pytest.mark.parametrize("seed", range(3))
def test_topic_ids_is_named_ids_and_unnamed_ids_in_one_pass(seed: int) -> None:
    from kcodec.capture.facts import event_facts
    from kcodec.capture.topics import ZERO_TOPIC_ID, named_ids, topic_ids

    rng = random.Random(seed)
    names = [None, "", "orders", "pay"]
    ids = [None, "", ZERO_TOPIC_ID, "OLTmUuRNp_I3DZ4mDicTZQ", "q9mJ0bXzRk2VQ3l1N7fZpA"]
    for _ in range(300):  # every mix of names and ids, empty and "no id" ones included
        facts = Facts()
        facts.topics = [(rng.choice(names), rng.choice(ids)) for _ in range(rng.randrange(4))]
        for k in range(rng.randrange(6)):
            facts.partitions.append(PartitionFacts(rng.choice(names), rng.choice(ids), k))
        expected = (_named_ids_reference(facts), _unnamed_ids_reference(facts))
        assert topic_ids(facts) == expected == (named_ids(facts), unnamed_ids(facts))
    for path in RECORDED[:4]:  # and the facts of real frames
        for ev in iter_capture(path):
            facts = event_facts(ev)
            if facts is not None:
                assert topic_ids(facts) == (_named_ids_reference(facts), _unnamed_ids_reference(facts))
