"""The pipeline's executor-side parts without Spark: payloads read back by position, the Python
daemon's path clean-up, and partial aggregates that merge to the same tables however the rows are
split among tasks."""

from __future__ import annotations

import json
import pickle
import random
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("datasketches", reason="the pipeline needs pip install -e '.[spark]'")

from kcodec.pipeline.aggregates import aggregate_tables
from kcodec.pipeline.balance import (
    SCAN_TASKS_PER_CORE,
    assign_keys,
    balanced_groups,
    key_weights,
    scan_groups,
)
from kcodec.pipeline.daemon import without_bundled_zips
from kcodec.pipeline.job import PARTITION_BYTES, default_partitions
from kcodec.pipeline.partials import Partials
from kcodec.pipeline.payloads import MAX_GAP, PayloadReader
from kcodec.pipeline.scan import SEGMENT_DTYPE, scan_split, unpack


def test_payloads_are_read_back_by_position(tmp_path: Path) -> None:
    rng = random.Random(3)
    blobs = [rng.randbytes(200_000), rng.randbytes(50_000)]
    paths = []
    for i, blob in enumerate(blobs):
        (tmp_path / f"f{i}").write_bytes(blob)
        paths.append(f"file:{tmp_path / f'f{i}'}")
    # runs of near positions (one span), a jump past MAX_GAP, another file, an overlap, empty rows
    wanted = [
        (0, 100, 50),
        (0, 150, 10),
        (0, 200, 1448),
        (0, 1648 + MAX_GAP + 1, 30),
        (1, 0, 7),
        (0, -1, 0),
        (1, 10, 100),
        (1, 60, 20),
        (0, 199_990, 10),
    ]
    expected = [b"" if at < 0 else blobs[f][at : at + n] for f, at, n in wanted]
    reader = PayloadReader(paths, map_local=False)  # spans read with pread
    assert reader.read_run(*(list(col) for col in zip(*wanted, strict=True))) == expected
    assert reader.reads == 5  # (0: 100-1648), (0: far), (1: 0-110), (1: the overlap), (0: end)
    mapped = PayloadReader(paths)  # local files are memory-mapped: one run per stretch of a file
    assert mapped.read_run(*(list(col) for col in zip(*wanted, strict=True))) == expected
    assert mapped.reads == 4  # (0: rows 0-3), (1: row 4), (1: rows 6-7), (0: row 8)
    in_file0 = [(at, n) for f, at, n in wanted if f == 0]  # read_file: the rows of one file
    want0 = [b"" if at < 0 else blobs[0][at : at + n] for at, n in in_file0]
    for r in (reader, mapped):
        assert r.read_file(0, *(list(col) for col in zip(*in_file0, strict=True))) == want0
    reader.close()
    mapped.close()
    (tmp_path / "f1").write_bytes(blobs[1][:40])  # cut short since it was scanned: short payloads
    for map_local in (False, True):
        cut = PayloadReader(paths, map_local)
        assert cut.read_run([1, 1], [30, 45], [20, 5]) == [blobs[1][30:40], b""]
        assert cut.read_file(1, [30, 45], [20, 5]) == [blobs[1][30:40], b""]
        cut.close()


def _odd_capture(tmp_path: Path, pcapng: bool) -> Path:
    """Packets the common-case parser does not take: a VLAN tag, IP options, an IP fragment, a
    pure ACK, a non-TCP packet, among plain ones; as pcap or pcapng."""
    from pcap_build import ACK, PSH, SYN, pcap, tcp_packet
    from pcap_build import pcapng as to_pcapng

    c, s = ("10.1.0.1", 40000), ("10.1.0.2", 9092)
    plain = tcp_packet(c, s, 1000, 0, SYN)
    data = tcp_packet(c, s, 1001, 1, PSH | ACK, b"\x00\x00\x00\x02hi")
    vlan = data[:12] + b"\x81\x00\x00\x07" + data[12:]
    total = (len(data) - 14 + 4).to_bytes(2, "big")
    ip_options = data[:14] + b"\x46" + data[15:16] + total + data[18:34] + b"\x01\x01\x01\x00" + data[34:]
    fragment = data[:20] + b"\x20\x00" + data[22:]  # more fragments
    ack = tcp_packet(s, c, 1, 1007, ACK)
    arp = b"\xff" * 6 + b"\x00" * 6 + b"\x08\x06" + b"\x00" * 28
    odd = (plain, data, vlan, ip_options, fragment, ack, arp, data)
    packets = [(1.0 + i / 10, pkt) for i, pkt in enumerate(odd)]
    path = tmp_path / ("odd.pcapng" if pcapng else "odd.pcap")
    path.write_bytes(to_pcapng(packets) if pcapng else pcap(packets))
    return path


@pytest.mark.parametrize("mapped", [True, False], ids=["read-together", "one-by-one"])
@pytest.mark.parametrize("which", ["sample", "quirks", "rotated", "cut", "odd-pcap", "odd-pcapng", "split"])
def test_scanned_segments_unpack_to_what_the_capture_package_read(
    which: str, mapped: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stage 1 packs each segment's fields, not a ``Segment``: a local file's packets read together
    by NumPy (``mapped``), another's one by one by the capture package's packer; stage 2 unpacks
    with NumPy's record dtype: the records must hold exactly what
    :func:`kcodec.capture.iter_segments` reads, field for field, issues included, whatever the
    packets (the uncommon ones go the capture package's general way) and wherever a split starts."""
    import numpy as np

    import kcodec.pipeline.scan as scan

    monkeypatch.setattr(scan, "READ_TOGETHER", mapped)  # (one by one: as for a file elsewhere)

    from kcodec.capture import CaptureIssue, iter_segments
    from kcodec.pipeline.scan import ISSUE_KEY_PREFIX

    here = Path(__file__).parent
    captures = {
        "sample": here.parent / "samples" / "sample.pcap",
        "quirks": here / "captures" / "mock_quirks.pcap",
        "rotated": here / "captures" / "rotated" / "part-02.pcap",
        "split": here / "captures" / "mock_quirks.pcap",
    }
    if which == "cut":
        path = tmp_path / "cut.pcap"
        path.write_bytes(captures["sample"].read_bytes()[:-7])
    elif which.startswith("odd"):
        path = _odd_capture(tmp_path, which == "odd-pcapng")
    else:
        path = captures[which]
    size = path.stat().st_size
    ranges = [(0, size // 2), (size // 2, -1)] if which == "split" else [(0, -1)]
    for start, end in ranges:
        want: dict[str, list[tuple[Any, ...]]] = {}
        want_issues: list[str] = []
        with open(path, "rb") as f:
            for seg in iter_segments(f, name=str(path), start=start, end=None if end < 0 else end):
                if isinstance(seg, CaptureIssue):
                    want_issues.append(seg.message)
                    continue
                row = (
                    int(seg.key.startswith(seg.src + " ")),
                    seg.flags,
                    seg.seq,
                    seg.ack,
                    seg.timestamp,
                    seg.offset,
                    seg.payload_offset,
                    len(seg.payload),
                )
                want.setdefault(seg.key, []).append(row)
        got: dict[str, list[tuple[Any, ...]]] = {}
        got_issues: list[str] = []
        for (key, order, first), packed in scan_split((str(path), 0, start, end, size, 0)):
            assert order == 0
            if key.startswith(ISSUE_KEY_PREFIX):
                got_issues.append(json.loads(packed)["message"])
                continue
            assert isinstance(packed, bytes) and len(packed) % np.dtype(SEGMENT_DTYPE).itemsize == 0
            rows = list(zip(*unpack(packed), strict=True))
            assert first == rows[0][5]
            got.setdefault(key, []).extend(rows)
        assert got == want and got_issues == want_issues
        assert sum(map(len, got.values())) >= (2 if which.startswith("odd") else 10)
    if which.startswith("odd"):
        assert any("IP fragments" in m for m in got_issues)  # the fragment was seen, and reported


def test_connection_partitions_follow_the_input_size_within_1_to_8_per_core() -> None:
    assert default_partitions(1_000_000, 2) == 2  # a small input: one task per core
    assert default_partitions(5 * PARTITION_BYTES, 2) == 5
    assert default_partitions(1_000_000_000, 2) == 8  # 4 per core at most
    assert default_partitions(1_000_000_000, 1) == 4
    assert default_partitions(0, 0) == 1


def test_daemon_imports_the_libraries_and_stays_single_threaded() -> None:
    """The daemon forks the workers after importing NumPy, pyarrow and pandas: it must still be a
    single thread then (a thread holding a lock at the fork would leave the worker deadlocked)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "JE_ARROW_MALLOC_CONF")}
    probe = (
        "import os, sys\n"
        "from kcodec.pipeline.daemon import _import_libraries\n"
        "_import_libraries()\n"
        "assert {'numpy', 'pyarrow', 'pyarrow.parquet', 'pyarrow.dataset'} <= set(sys.modules)\n"
        "print(len(os.listdir('/proc/self/task')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "1"


def test_daemon_takes_the_installed_pysparks_zips_off_the_path(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    (site / "pyspark" / "python" / "lib").mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    lib = site / "pyspark" / "python" / "lib"
    path = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip"), "/other/x.zip", str(site)]
    assert without_bundled_zips(path) == [str(lib / "py4j-0.10.9.9-src.zip"), "/other/x.zip", str(site)]
    (site / "py4j").mkdir()
    (site / "py4j" / "__init__.py").write_text("")
    assert without_bundled_zips(path) == ["/other/x.zip", str(site)]
    elsewhere = ["/opt/spark/python/lib/pyspark.zip", str(site)]  # a cluster's own Spark: kept
    assert without_bundled_zips(elsewhere) == elsewhere
    assert without_bundled_zips(["/opt/spark/python/lib/pyspark.zip"]) == [
        "/opt/spark/python/lib/pyspark.zip"
    ]


def _rows(n: int, rng: random.Random) -> list[dict[str, Any]]:
    """Frames rows as stage 3 gives them to the partials: requests and their responses on a few
    connections, errors (fencing among them), leader epochs that change."""
    rows: list[dict[str, Any]] = []
    t = 1_700_000_000.0
    for i in range(n):
        conn = rng.randrange(1, 6)
        api = rng.choice([(1, "Fetch", 12), (0, "Produce", 9), (3, "Metadata", 12), (None, None, None)])
        t += rng.random() * 0.05
        topic = rng.choice(["a", "b"])
        base = {
            "connection": conn,
            "client": f"c{conn}",
            "server": "s",
            "api_key": api[0],
            "api_name": api[1],
            "api_version": api[2],
            "correlation_id": i,
            "client_id": rng.choice(["app-1", "app-2", None]),
            "client_software_name": "x",
            "client_software_version": "1",
        }
        cle = rng.choice([3, 4, -1])
        rows.append(
            {
                **base,
                "time": t,
                "direction": "request",
                "stream_offset": i * 100,
                "size": rng.randrange(10, 5000),
                "latency": None,
                "error": None,
                "diagnostics": [],
                "partitions": [
                    {"topic": topic, "partition": 0, "leader_epoch": None, "current_leader_epoch": cle}
                ],
                "errors": [],
            }
        )
        code = rng.choice([0, 0, 0, 74, 75, 3])
        epoch = rng.choice([7, 7, 7, 8]) if api[1] == "Metadata" else None
        rows.append(
            {
                **base,
                "time": t + 0.002,
                "direction": "response",
                "stream_offset": i * 120,
                "size": rng.choice([None, rng.randrange(10, 5000)]),
                "latency": rng.random() / 100,
                "error": rng.choice([None, None, "x"]),
                "diagnostics": rng.choice([[], ["odd"]]),
                "partitions": [
                    {"topic": topic, "partition": 0, "leader_epoch": epoch, "current_leader_epoch": None}
                ],
                "errors": [{"topic": topic, "partition": 0, "error_code": code, "error_name": f"E{code}"}]
                if code
                else [],
            }
        )
    return rows


def _fold(rows: list[dict[str, Any]]) -> Partials:
    p = Partials(0.5)
    pending: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for r in rows:
        p.frame(r, pending)
    p.issue("gap", None)
    p.issue("unreadable-file", "f")
    return p


def test_partials_merge_to_the_tables_of_all_rows_at_once() -> None:
    rng = random.Random(11)
    rows = _rows(400, rng)
    whole = aggregate_tables(_fold(rows), 3, 1000)
    assert whole["fencing"] and whole["latency"] and whole["errors"] and whole["timeline"]
    assert any(r["event"] == "LEADER_EPOCH_CHANGE" for r in whole["fencing"])
    for parts in (2, 5):
        by_conn: dict[int, list[dict[str, Any]]] = {}
        for r in rows:  # as the job splits them: whole connections per task
            by_conn.setdefault(r["connection"] % parts, []).append(r)
        merged = Partials(0.5)
        for group in by_conn.values():
            merged.merge(_fold(group))
        tables = aggregate_tables(merged, 3, 1000)
        summary = dict(tables["summary"][0])
        assert summary.pop("stream_issues") == len(by_conn) and summary.pop("unreadable_files") == 1
        want = dict(whole["summary"][0])
        del want["stream_issues"], want["unreadable_files"]
        assert summary == want
        for a, b in zip(tables["latency"], whole["latency"], strict=True):  # sums in another order
            assert a["mean_ms"] == pytest.approx(b["mean_ms"])
            assert {**a, "mean_ms": 0} == {**b, "mean_ms": 0}
        for name in ("api_stats", "errors", "clients", "fencing", "timeline"):
            assert tables[name] == whole[name], name


def test_task_results_pickle_as_constructor_calls_the_same_in_every_build() -> None:
    """What a stage-2 task returns to the driver (its Found and Partials, latency sketches inside)
    pickles as calls of the classes on the fields' values, with no state set afterwards: a compiled
    driver reads a pure executor's pickle and the other way round (shipped kcodec runs pure)."""
    import pickletools

    from kcodec.pipeline.decode import Found

    partials = _fold(_rows(200, random.Random(3)))
    found = Found(starts=[(0, 24, "k", 1)], names={"id": (1.5, "t")}, first_time=1.0, last_time=2.0, frames=9)
    for obj in (partials, found):
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        ops = {op.name for op, _arg, _pos in pickletools.genops(data)}
        assert "BUILD" not in ops and "NEWOBJ" not in ops, ops  # no __setstate__, no bare __new__
        back = pickle.loads(data)
        assert type(back) is type(obj)
    again = pickle.loads(pickle.dumps(partials))
    assert aggregate_tables(again, 3, 1000) == aggregate_tables(partials, 3, 1000)
    assert pickle.loads(pickle.dumps(found)) == found


def test_partials_folded_before_numbering_resolve_to_the_tables_of_the_final_rows() -> None:
    """Stage 2 folds frames whose connections are (key, local number) and whose topics may be ids;
    resolved with the numbers and names the job finds, the tables are those of the final rows."""
    rows = _rows(400, random.Random(5))
    numbers = {("10.0.0.1:1 10.0.0.2:9092", n): 10 + n for n in range(1, 6)}
    identity = {number: key for key, number in numbers.items()}
    directory = {"id-a": "a"}  # topic "a" named by its id in stage 2

    def raw(row: dict[str, Any]) -> dict[str, Any]:
        ids = {"a": "id-a"}
        return {
            **row,
            "connection": identity[row["connection"] + 10],
            "partitions": [{**p, "topic": ids.get(p["topic"], p["topic"])} for p in row["partitions"]],
            "errors": [{**e, "topic": ids.get(e["topic"], e["topic"])} for e in row["errors"]],
        }

    final = [{**r, "connection": r["connection"] + 10} for r in rows]
    want = aggregate_tables(_fold(final), 3, 1000)
    assert want["fencing"] and want["errors"] and any(r["topic"] == "a" for r in want["errors"])
    got = aggregate_tables(_fold([raw(r) for r in rows]).resolved(numbers, directory), 3, 1000)
    assert got == want


def test_class_data_sharing_archive_is_written_once_then_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kcodec.pipeline import cds

    monkeypatch.setenv("KCODEC_CACHE", str(tmp_path))
    monkeypatch.delenv("KCODEC_SPARK_CDS", raising=False)
    home = Path("/some/java")
    first = cds.plan_archive(home)  # this run writes it: its JVM, at exit, to a temporary name
    assert first.lock is not None and "-XX:ArchiveClassesAtExit=" in first.options
    temp = Path(first.options.split("=", 1)[1].split()[0])
    assert cds.plan_archive(home).options == ""  # the lock is fresh and has no JVM yet: wait
    first.record_jvm(2**22 + 12345)  # a JVM no longer running (beyond Linux's default pid_max)
    temp.write_bytes(b"archive")
    second = cds.plan_archive(home)  # moves the finished archive into place and uses it
    archive = temp.with_name(temp.name.removesuffix(".tmp"))
    assert second.lock is None and second.options.startswith(f"-XX:SharedArchiveFile={archive} ")
    assert archive.read_bytes() == b"archive" and not temp.exists() and not first.lock.exists()
    assert cds.plan_archive(home).options == second.options
    monkeypatch.setenv("KCODEC_SPARK_CDS", "0")
    assert cds.plan_archive(home).options == ""
    # another environment: its JVM wrote nothing (killed): no archive, and no second try
    monkeypatch.delenv("KCODEC_SPARK_CDS")
    other = cds.plan_archive(Path("/other/java"))
    assert other.lock is not None
    other.record_jvm(2**22 + 12346)
    assert cds.plan_archive(Path("/other/java")).options == ""
    assert cds.plan_archive(Path("/other/java")).options == "" and not other.lock.exists()


def test_spill_files_are_dealt_into_groups_of_about_equal_bytes() -> None:
    sizes = [("a", 50), ("b", 10), ("c", 40), ("d", 30), ("e", 20), ("f", 45)]
    groups = balanced_groups(sizes, 2)
    assert sorted(x for g in groups for x in g) == ["a", "b", "c", "d", "e", "f"]
    loads = [sum(dict(sizes)[x] for x in g) for g in groups]
    assert sorted(loads) == [95, 100]  # largest first, each to the lighter group
    assert all(g == sorted(g) for g in groups)  # each group keeps the items' order
    assert balanced_groups(sizes, 10) == [[x] for x, _ in sizes]  # no more groups than items
    assert balanced_groups(sizes[:1], 0) == [["a"]] and balanced_groups([], 2) == []


def test_small_files_share_a_scan_task_and_large_files_keep_one_per_split() -> None:
    from kcodec.pipeline.inputs import InputFile, splits

    rotated = [InputFile(f"capture.pcap{i}", 12_500_000, i) for i in range(16)]  # 200 MB in 16 files
    for cores in (1, 2):
        groups = scan_groups(splits(rotated, 128 << 20), cores, 128 << 20)
        assert len(groups) == SCAN_TASKS_PER_CORE * cores
        assert sorted(split[0] for g in groups for split in g) == sorted(f.path for f in rotated)
        assert {len(g) for g in groups} == {16 // len(groups)}  # equal bytes
    big = splits([InputFile("big.pcap", 1_000_000_000, 0)], 128 << 20)
    assert scan_groups(big, 2, 128 << 20) == [[split] for split in big]  # 8 splits of 128 MB at most
    one = splits([InputFile("one.pcap", 1000, 0)], 128 << 20)
    assert scan_groups(one, 4, 128 << 20) == [one]  # no more tasks than splits


def test_connection_keys_are_dealt_heaviest_partition_first() -> None:
    weights = {"k1": 100, "k2": 10, "k3": 60, "k4": 50, "k5": 5}
    assignment = assign_keys(weights, 2)
    loads = [sum(w for k, w in weights.items() if assignment[k] == part) for part in (0, 1)]
    assert loads == [115, 110]  # k1 (100) and k3 (60) apart; partition 0 the heavier
    assert set(assign_keys(weights, 10).values()) <= set(range(10))
    assert assign_keys(weights, 10)["k1"] == 0  # the heaviest partition starts first


def test_stage_one_records_are_weighed_by_payload_bytes_and_segments(tmp_path: Path) -> None:
    import numpy as np

    packed = np.zeros(3, dtype=SEGMENT_DTYPE)
    packed["payload_length"] = [100, 0, 50]
    records = [
        (("a b", 0, 0), packed.tobytes()),
        (("a b", 1, 0), packed[:1].tobytes()),
        (("\x00file x", 0, 0), "{}"),
    ]
    from kcodec.pipeline.balance import SEGMENT_WEIGHT

    assert key_weights(records) == {"a b": 250 + 4 * SEGMENT_WEIGHT, "\x00file x": 1}


class _CountingOutput:
    """An :class:`~kcodec.pipeline.outputs.Output` whose files count their ``read_at`` calls."""

    def __init__(self, root: str) -> None:
        from kcodec.pipeline.outputs import Output

        self.output = Output(root)
        self.root = root
        self.reads = [0]

    def open_input(self, path: str) -> Any:
        f, reads = self.output.open_input(path), self.reads

        class Counted:
            def read_at(self, n: int, at: int) -> Any:
                reads[0] += 1
                return f.read_at(n, at)

            def close(self) -> None:
                f.close()

        return Counted()


def test_remote_stash_reads_are_planned_into_few_requests() -> None:
    """Records of one stash file go in one request while they lie within MAX_SKIP of each other
    and the request stays under MAX_READ; other files' records apart."""
    from kcodec.pipeline.stash import MAX_READ, MAX_SKIP, _plan_spans

    def ref(path: str, at: int, length: int) -> Any:
        return (("k", 0, at), path, at, length, False, 1)

    refs = [ref("a", 0, 10), ref("b", 5, 5), ref("a", 10, 10), ref("a", 20 + MAX_SKIP + 1, 10)]
    refs += [ref("c", 0, MAX_READ - 1), ref("c", MAX_READ - 1, 2)]
    spans = _plan_spans(refs)
    assert spans[0] == spans[2] == (spans[0][0], 0, 20, 2)  # a's first two, read together
    assert spans[3][1:] == (20 + MAX_SKIP + 1, 10, 1)  # too far: a request of its own
    assert spans[1][1:] == (5, 5, 1)
    assert spans[4][1:] == (0, MAX_READ - 1, 1) and spans[5][1:] == (MAX_READ - 1, 2, 1)  # size cap
    assert len({s[0] for s in spans.values()}) == 5


def test_stashed_records_read_back_equal_the_scan_and_weigh_the_same(tmp_path: Path) -> None:
    from kcodec.pipeline.outputs import Output
    from kcodec.pipeline.stash import read_stashed, stash_task, weigh

    sample = Path(__file__).parent.parent / "samples" / "sample.pcap"
    damaged = tmp_path / "damaged.pcap"
    damaged.write_bytes(sample.read_bytes()[:-7])  # a cut last record: an issue record too
    out = Output(str(tmp_path / "out"))
    for order, path in enumerate((sample, damaged)):
        split = (str(path), order, 0, -1, path.stat().st_size, 0)
        want = list(scan_split(split))
        refs = stash_task(split, out, "run")
        assert [ref[0] for ref in refs] == [head for head, _ in want]
        assert list(read_stashed(refs, out)) == want
        assert weigh(refs) == key_weights(want)
        # a stage-2 task reads any subset, in any order; on a remote file system (coalesce) its
        # records come in few requests, the same records
        picked = refs[::-2]
        assert list(read_stashed(picked, out)) == [want[refs.index(ref)] for ref in picked]
        counting = _CountingOutput(out.root)
        coalesced = list(read_stashed(picked, counting, coalesce=True))  # type: ignore[arg-type]
        assert coalesced == [want[refs.index(ref)] for ref in picked]
        assert counting.reads[0] == 1 < len(picked)  # the sample's stash is small: one request
        issues = [value for _, value in want if isinstance(value, str)]
        assert bool(issues) == (path == damaged)  # the cut file's issue travels as a record too


def test_error_entries_and_responses_are_counted_apart() -> None:
    """A Fetch response with FENCED_LEADER_EPOCH on two partitions of one topic is two entries but one
    response for that topic; the top-level error (topic None) is a key of its own."""
    rows = _rows(1, random.Random(3))
    base = {**rows[0], "api_name": "Fetch", "direction": "response"}
    fenced = {"topic": "t", "error_code": 74, "error_name": "FENCED_LEADER_EPOCH"}
    top = {"topic": None, "partition": None, "error_code": 74, "error_name": "FENCED_LEADER_EPOCH"}
    frames = [
        {**base, "errors": [top, {**fenced, "partition": 0}, {**fenced, "partition": 1}]},
        {**base, "time": base["time"] + 1, "errors": [{**fenced, "partition": 0}]},
    ]
    tables = aggregate_tables(_fold(frames), 1, 1000)
    rows_by_topic = {r["topic"]: r for r in tables["errors"] if r["api_name"] == "Fetch"}
    assert (rows_by_topic["t"]["count"], rows_by_topic["t"]["responses"]) == (3, 2)
    assert (rows_by_topic[None]["count"], rows_by_topic[None]["responses"]) == (1, 1)


def test_a_relative_output_is_made_absolute_on_the_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Executors resolve a relative path against their own working directory: the driver resolves it."""
    from kcodec.pipeline.outputs import Output

    monkeypatch.chdir(tmp_path)
    assert Output.resolve("out/").root == str(tmp_path / "out")
    assert Output.resolve(f"file:{tmp_path}/x").root == str(tmp_path / "x")
    assert Output.resolve("hdfs://nn:8020/data/out/").root == "hdfs://nn:8020/data/out"


def test_a_table_with_fewer_rows_than_the_job_counted_is_an_error(tmp_path: Path) -> None:
    import pyarrow as pa

    from kcodec.pipeline.outputs import Output, OutputCheckError

    out = Output.resolve(str(tmp_path / "out"))
    with pytest.raises(OutputCheckError, match=r"frames table .* has 0 rows, but the job counted 3"):
        out.check_rows("frames", 3)
    out.write_file(pa.table({"x": [1, 2]}), "frames", "date=2026-01-01", "api=Fetch", "part-0.parquet")
    out.write_file(pa.table({"x": [3]}), "frames", "date=2026-01-01", "api=Produce", "part-0.parquet")
    out.check_rows("frames", 3)
    with pytest.raises(OutputCheckError):
        out.check_rows("frames", 4)


def test_a_failed_python_worker_is_shown_by_the_exception_it_raised() -> None:
    """Spark's first line only says a Python worker failed; the CLI shows what it raised, and how to
    ship kcodec when the executors lack it."""
    from kcodec.cli.pipeline import _one_line

    text = (
        "\n  An exception was thrown from the Python worker. Please see the stack trace below.\n"
        "Traceback (most recent call last):\n"
        '  File "/x/pyspark/worker.py", line 1, in main\n'
        "    func, profiler, deserializer, serializer = read_command(pickleSer, infile)\n"
        "ModuleNotFoundError: No module named 'kcodec'\n"
    )
    line = _one_line(RuntimeError(text))
    assert line.startswith("a Python worker failed: ModuleNotFoundError: No module named 'kcodec'")
    assert "--ship" in line
    other = text.replace("ModuleNotFoundError: No module named 'kcodec'", "ValueError: bad")
    assert _one_line(RuntimeError(other)) == "a Python worker failed: ValueError: bad"
    assert _one_line(RuntimeError("Job aborted\nmore")) == "Job aborted"


def test_the_shipped_zip_holds_the_package_sources(tmp_path: Path) -> None:
    import zipfile

    from kcodec.pipeline.ship import package_zip

    names = set(zipfile.ZipFile(package_zip(tmp_path / "k.zip")).namelist())
    assert {"kcodec/__init__.py", "kcodec/pipeline/decode.py", "kcodec/_generated/__init__.py"} <= names
    assert not any("__pycache__" in n or n.endswith(".so") for n in names)


def test_the_shipped_zip_runs_as_the_installed_build_does(tmp_path: Path) -> None:
    """Executors import the shipped package from the zip, where compiled modules cannot load: its
    sources run interpreted, those of a compiled build's codecs too, and decode what the installed
    build decodes."""
    import subprocess
    import sys

    from kcodec.pipeline.ship import package_zip

    shipped = package_zip(tmp_path / "k.zip")
    script = (
        "import runpy, sys\n"
        "sys.path.insert(0, sys.argv.pop(1))\n"
        "import kcodec.capture.packets, kcodec._generated.request_header as h\n"
        "assert h.__file__.endswith('.py') and kcodec.capture.packets.__file__.endswith('.py')\n"
        "sys.argv[0] = 'kcodec'\n"
        "runpy.run_module('kcodec.cli', run_name='__main__')\n"
    )
    captures = Path(__file__).parent / "captures"
    for name in ("apache_kafka_java.pcap", "apache_kafka_librdkafka.pcap", "consumer_groups.pcap"):
        args = ["decode-capture", "--json", str(captures / name)]
        want = subprocess.run([sys.executable, "-m", "kcodec.cli", *args], capture_output=True, check=True)
        got = subprocess.run([sys.executable, "-c", script, str(shipped), *args], capture_output=True)
        assert got.returncode == 0, got.stderr.decode()[-2000:]
        assert got.stdout == want.stdout and want.stdout.count(b"\n") > 20, name


class _FakeStage:
    def __init__(self, done: int, total: int) -> None:
        self.numCompletedTasks, self.numTasks = done, total


class _FakeContext:
    """What ProgressTracker asks of a SparkContext: an accumulator and the status tracker."""

    def __init__(self) -> None:
        self.active: dict[int, _FakeStage] = {}

    def accumulator(self, value: Any, param: Any) -> Any:
        class Acc:
            def __init__(self) -> None:
                self.value = value

            def add(self, more: dict[int, int]) -> None:
                self.value = param.addInPlace(self.value, more)

        return Acc()

    def statusTracker(self) -> Any:  # noqa: N802 - Spark's name
        active = self.active

        class Status:
            def getActiveStageIds(self) -> list[int]:  # noqa: N802
                return list(active)

            def getStageInfo(self, i: int) -> _FakeStage | None:  # noqa: N802
                return active.get(i)

        return Status()


def test_progress_counts_bytes_then_tasks_stage_by_stage() -> None:
    """Progress showed 100 % once the scan was done, long before the end: each stage has its line."""
    from kcodec.pipeline.inputs import InputFile
    from kcodec.pipeline.progress import STAGES, ProgressDisplay, ProgressTracker

    sc = _FakeContext()
    tracker = ProgressTracker(sc, [InputFile("a", 100, 0), InputFile("b", 50, 1)])  # type: ignore[arg-type]
    display = ProgressDisplay(tracker, force=False)
    tracker.callback()(0, 100)
    assert display._count(0) == (150, 100, "0.0/0.0 MB, 1/2 files")
    tracker.stage = 1
    sc.active = {7: _FakeStage(3, 8)}
    assert tracker.phase == STAGES[1] and display._count(1) == (8, 3, "3/8 tasks")
    tracker.stage = 2
    sc.active = {9: _FakeStage(1, 2), 10: _FakeStage(0, 2)}
    assert display._count(2) == (4, 1, "1/4 tasks")
    tracker.stage = 3
    assert display._count(3) == (0, 0, "")



def test_files_are_grouped_into_captures_and_ordered_by_their_first_packet() -> None:
    """A ring buffer whose numbers wrapped comes in the order it was written; the same traffic
    captured on two hosts (two folders, or two names) is two captures."""
    from kcodec.cli.pipeline import pipeline_command
    from kcodec.pipeline.inputs import CAPTURES_BY, order_files

    times = {
        "file:/c/broker/kafka.pcap8": 80.0,
        "file:/c/broker/kafka.pcap9": 90.0,
        "file:/c/broker/kafka.pcap0": 100.0,  # wrapped: written after 9
        "file:/c/broker/kafka.pcap1": 110.0,
        "file:/c/client/kafka.pcap0": 85.0,
        "file:/c/client/client-trace.pcap": 70.0,
        "file:/c/client/broken.pcap": None,
    }
    found = [(p, 10) for p in times]
    files = order_files(found, "auto", times.get)
    by_capture: dict[int, list[str]] = {}
    for f in files:
        by_capture.setdefault(f.capture, []).append(f.path.rsplit("/c/", 1)[1])
    assert sorted(by_capture.values()) == [
        ["broker/kafka.pcap8", "broker/kafka.pcap9", "broker/kafka.pcap0", "broker/kafka.pcap1"],
        ["client/broken.pcap"],
        ["client/client-trace.pcap"],
        ["client/kafka.pcap0"],
    ]
    assert [f.order for f in files] == list(range(len(files)))
    folders = order_files(found, "folder", times.get)
    assert len({f.capture for f in folders}) == 2
    client = [f.path.rsplit("/", 1)[1] for f in folders if "/client/" in f.path]
    assert client == ["client-trace.pcap", "kafka.pcap0", "broken.pcap"]  # by time; unknown last
    assert {f.capture for f in order_files(found, "one", times.get)} == {0}
    option = next(p for p in pipeline_command.params if p.name == "captures_by")
    assert tuple(option.type.choices) == CAPTURES_BY  # type: ignore[attr-defined]


def test_stage_one_records_are_the_packers_whatever_the_batches_and_chunks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A local file's packets read together make the records the capture package's packer makes
    one packet at a time, byte for byte and in its order (the order in which the job meets the
    connection keys decides ties when it deals them into partitions), the issues alike; whatever
    the batches the packets are read in and the chunks the segments are cut into."""
    import kcodec.pipeline.scan as scan
    import kcodec.pipeline.vectorscan as vectorscan

    here = Path(__file__).parent
    paths = [here / "captures" / "mock_quirks.pcap", here.parent / "samples" / "sample.pcap"]
    paths += [_odd_capture(tmp_path, False), _odd_capture(tmp_path, True)]
    cut = tmp_path / "cut.pcap"  # (cut short: an issue, and the cut packet's captured part)
    cut.write_bytes(paths[1].read_bytes()[:-7])
    paths.append(cut)

    def records(path: Path, mapped: bool) -> tuple[list[Any], list[Any]]:
        with monkeypatch.context() as m:
            m.setattr(scan, "READ_TOGETHER", mapped)
            out = list(scan.scan_split((str(path), 0, 0, -1, path.stat().st_size, 0)))
        issues = [r for r in out if r[0][0].startswith(scan.ISSUE_KEY_PREFIX)]
        return [r for r in out if r not in issues], issues

    for batch, chunk in ((vectorscan.BATCH, scan.CHUNK), (3, 2), (5, 1)):
        monkeypatch.setattr(vectorscan, "BATCH", batch)
        monkeypatch.setattr(scan, "CHUNK", chunk)
        made = 0
        for path in paths:
            got, want = records(path, True), records(path, False)
            assert got == want, (path, batch, chunk)
            made += len(got[0])
        assert made >= (10 if chunk == scan.CHUNK else 40)  # (smaller chunks: more records)
