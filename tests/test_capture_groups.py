"""Consumer groups in captures: the consumer protocol embedded in JoinGroup/SyncGroup frames decoded
(``kcodec.capture.groups``), ``--group``, ``--topic`` for a group's frames, and ``--summary``'s
groups, on ``tests/captures/consumer_groups.pcap``: real clients (librdkafka's ``rd-group`` and
kafka-python's ``py-group``, two members each, the second joining later: a rebalance) against
kcodec's broker, recorded by tcpdump on loopback (``tools/record_groups_capture.py``)."""

from __future__ import annotations

import base64
import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kcodec.capture import ConnectionDecoder
from kcodec.protocol.codec import message_class
from kcodec.protocol.frames import encode_request, encode_response

ROOT = Path(__file__).resolve().parent.parent
GROUPS = ROOT / "tests" / "captures" / "consumer_groups.pcap"
_GROUP_APIS = {"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch",
               "FindCoordinator", "DescribeGroups"}  # fmt: skip


def cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kcodec.cli", "decode-capture", str(GROUPS), *args],
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    return done.stdout.decode()


def frames(*args: str) -> list[dict[str, Any]]:
    objs = [json.loads(line) for line in cli("--json", *args).splitlines()]
    return [o for o in objs if o["type"] == "frame"]


@pytest.fixture(scope="module")
def every() -> list[dict[str, Any]]:
    return frames()


# --- an independent reader of the consumer protocol (Kafka's ConsumerProtocol layout, v0 fields) ---


def _read_string(data: bytes, at: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">h", data, at)
    return data[at + 2 : at + 2 + n].decode(), at + 2 + n


def read_subscription_topics(data: bytes) -> tuple[int, list[str]]:
    """(version, topics): an int16 version, then an int32 count of int16-length topic names."""
    (version,) = struct.unpack_from(">h", data, 0)
    (count,) = struct.unpack_from(">i", data, 2)
    at, topics = 6, []
    for _ in range(count):
        topic, at = _read_string(data, at)
        topics.append(topic)
    return version, topics


def read_assignment(data: bytes) -> tuple[int, dict[str, list[int]]]:
    """(version, {topic: partitions}): int16 version, int32 count of (topic, int32 count, int32s)."""
    (version,) = struct.unpack_from(">h", data, 0)
    (count,) = struct.unpack_from(">i", data, 2)
    at, out = 6, {}
    for _ in range(count):
        topic, at = _read_string(data, at)
        (n,) = struct.unpack_from(">i", data, at)
        out[topic] = list(struct.unpack_from(f">{n}i", data, at + 4))
        at += 4 + 4 * n
    return version, out


def _bytes_at(body: dict[str, Any], path: str) -> bytes:
    value: Any = body
    for part in path.replace("]", "").replace("[", ".").split("."):
        value = value[int(part)] if part.isdigit() else value[part]
    return base64.b64decode(value)


# --- embedded values -------------------------------------------------------------------------------


def test_the_capture_has_both_groups_with_a_rebalance(every: list[dict[str, Any]]) -> None:
    assert GROUPS.stat().st_size < 300_000
    joins = [f for f in every if f["api_name"] == "JoinGroup" and f["direction"] == "request"]
    assert {(f["body"]["groupId"], f["header"]["clientId"]) for f in joins} >= {
        ("rd-group", "rd-a"), ("rd-group", "rd-b"), ("py-group", "py-a"), ("py-group", "py-b"),
    }  # fmt: skip
    for group in ("rd-group", "py-group"):
        generations = {
            f["body"]["generationId"]
            for f in every
            if f["api_name"] == "JoinGroup" and f["direction"] == "response" and f["body"]["errorCode"] == 0
            and f["body"]["memberId"].startswith(group[:2])
        }  # fmt: skip
        assert {1, 2} <= generations, group


def test_every_frame_has_an_embedded_list(every: list[dict[str, Any]]) -> None:
    assert len(every) > 300
    assert all(isinstance(f["embedded"], list) for f in every)
    with_values = [f for f in every if f["embedded"]]
    assert {f["api_name"] for f in with_values} == {"JoinGroup", "SyncGroup"}
    assert not [f for f in every if f["diagnostics"]]  # the clients are conformant: no note added


def test_embedded_values_are_the_bytes_fields_read_independently(every: list[dict[str, Any]]) -> None:
    paths: dict[tuple[str, str], set[str]] = {}
    for f in every:
        if f["api_name"] not in ("JoinGroup", "SyncGroup") or f["body"] is None:
            continue
        for e in f["embedded"]:
            assert set(e) == {"path", "type", "version", "value"}
            data = _bytes_at(f["body"], e["path"])
            if e["type"] == "ConsumerProtocolSubscription":
                version, topics = read_subscription_topics(data)
                assert e["value"]["topics"] == topics
            else:
                assert e["type"] == "ConsumerProtocolAssignment"
                version, assigned = read_assignment(data)
                assert {a["topic"]: a["partitions"] for a in e["value"]["assignedPartitions"]} == assigned
            assert e["version"] == version
            shape = "".join(c for c in e["path"] if not c.isdigit())
            paths.setdefault((f["api_name"], f["direction"]), set()).add(shape)
    assert paths == {
        ("JoinGroup", "request"): {"protocols[].metadata"},
        ("JoinGroup", "response"): {"members[].metadata"},
        ("SyncGroup", "request"): {"assignments[].assignment"},
        ("SyncGroup", "response"): {"assignment"},
    }
    # every non-empty bytes field of the consumer protocol was decoded (SyncGroup v3 responses, which
    # do not say their protocol type, included: librdkafka's)
    for f in every:
        if f["api_name"] == "SyncGroup" and f["direction"] == "response" and f["body"]["assignment"]:
            assert [e["path"] for e in f["embedded"]] == ["assignment"]
    versions = {(f["api_version"], f["direction"]) for f in every if f["api_name"] == "SyncGroup"}
    assert (3, "response") in versions and (5, "response") in versions


def test_final_assignments_split_the_partitions(every: list[dict[str, Any]]) -> None:
    last: dict[str, dict[str, list[int]]] = {}
    for f in every:
        if f["api_name"] == "SyncGroup" and f["direction"] == "response" and f["embedded"]:
            (e,) = f["embedded"]
            member = f["client"]
            last[member] = {a["topic"]: a["partitions"] for a in e["value"]["assignedPartitions"]}
    orders = sorted(p for a in last.values() for p in a.get("orders", []))
    payments = sorted(p for a in last.values() for p in a.get("payments", []))
    assert orders == [0, 1, 2, 3] and payments == [0, 1]


def _member_frames(assignment: bytes, protocol_type: str | None) -> list[bytes]:
    """A JoinGroup (v5, stating ``protocol_type``), its response, and a SyncGroup (v3: no protocol
    type) with ``assignment`` bytes and its response, as a client and a broker write them."""
    join = message_class("JoinGroupRequest")(
        group_id="g", session_timeout_ms=6000, rebalance_timeout_ms=6000, member_id="m-1",
        protocol_type=protocol_type or "connect", protocols=[],
    )  # type: ignore[call-arg]  # fmt: skip
    joined = message_class("JoinGroupResponse")(
        generation_id=1, protocol_name="range", leader="m-1", member_id="m-1", members=[]
    )  # type: ignore[call-arg]
    a = message_class("SyncGroupRequest").SyncGroupRequestAssignment(member_id="m-1", assignment=assignment)  # type: ignore[attr-defined]
    sync = message_class("SyncGroupRequest")(group_id="g", generation_id=1, member_id="m-1", assignments=[a])  # type: ignore[call-arg]
    synced = message_class("SyncGroupResponse")(assignment=assignment)  # type: ignore[call-arg]
    return [
        encode_request(join, 5, correlation_id=1),
        encode_response(joined, 5, correlation_id=1),
        encode_request(sync, 3, correlation_id=2),
        encode_response(synced, 3, correlation_id=2),
    ]


def _decode(frames_: list[bytes]) -> list[Any]:
    dec = ConnectionDecoder(1, client="10.0.0.1:50000", server="10.0.0.2:9092")
    out: list[Any] = []
    for i, data in enumerate(frames_):
        out += dec.feed_bytes("request" if i % 2 == 0 else "response", data, float(i))
    return out + dec.finish()


def test_bytes_that_do_not_decode_get_a_diagnostic_and_stay_bytes() -> None:
    good = (
        struct.pack(">hi", 0, 1)
        + struct.pack(">h", 6)
        + b"orders"
        + struct.pack(">iii", 2, 0, 1)
        + struct.pack(">i", -1)
    )
    events = _decode(_member_frames(good, "consumer"))
    sync_req, sync_resp = events[2], events[3]
    assert [e.to_json()["value"]["assignedPartitions"] for e in sync_req.embedded] == [
        [{"topic": "orders", "partitions": [0, 1]}]
    ]
    assert sync_resp.embedded[0].member == "m-1" and sync_resp.embedded[0].generation == 1
    bad = good[:-6]  # cut inside the partitions
    events = _decode(_member_frames(bad, "consumer"))
    for ev, path in ((events[2], "assignments[0].assignment"), (events[3], "assignment")):
        d = ev.to_dict()
        assert d["embedded"] == [] and d["error"] is None
        (note,) = d["diagnostics"]
        assert note.startswith(f"{path}: does not decode as ConsumerProtocolAssignment v0")
        assert "kept as bytes" in note
        body_bytes = (
            d["body"]["assignment"] if path == "assignment" else d["body"]["assignments"][0]["assignment"]
        )
        assert base64.b64decode(body_bytes) == bad
    extra = _decode(_member_frames(good + b"\x00", "consumer"))[3]
    assert extra.embedded and extra.diagnostics == (
        "assignment: 1 trailing bytes after ConsumerProtocolAssignment v0",
    )


def test_other_protocol_types_stay_bytes() -> None:
    good = struct.pack(">hi", 0, 0) + struct.pack(">i", -1)
    for ev in _decode(_member_frames(good, None)):  # protocol type "connect"
        assert ev.embedded == () and ev.diagnostics == ()


# --- the table and -V --------------------------------------------------------------------------------


def test_table_and_verbose_show_who_holds_what() -> None:
    table = cli("--api", "SyncGroup", "--group", "rd-group")
    rows = [line for line in table.splitlines() if " SyncGroup " in line]
    assert any("-> orders[0,1,2,3]" in r and " -> SyncGroup" in r for r in rows)  # the leader's, gen 1
    assert any("assigned orders[0,1,2,3]" in r for r in rows)
    assert sum("assigned orders[0,1]" in r or "assigned orders[2,3]" in r for r in rows) == 2
    leader_rows = [r for r in rows if " -> SyncGroup" in r and "assignments 2" in r]
    assert leader_rows and all("rd-a-" in r and "rd-b-" in r for r in leader_rows)
    verbose = cli("--api", "JoinGroup", "--group", "py-group", "-V", "-c", "4")
    assert "protocols[0].metadata (ConsumerProtocolSubscription v" in verbose
    assert "topics: ['payments']" in verbose


# --- filters ----------------------------------------------------------------------------------------


def test_group_filter_keeps_the_groups_requests_and_their_responses(every: list[dict[str, Any]]) -> None:
    kept = frames("--group", "rd-group")
    assert {f["api_name"] for f in kept} <= _GROUP_APIS
    assert {"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetFetch", "FindCoordinator"} <= {
        f["api_name"] for f in kept
    }
    requests = {(f["client"], f["correlation_id"]) for f in kept if f["direction"] == "request"}
    responses = {(f["client"], f["correlation_id"]) for f in kept if f["direction"] == "response"}
    assert requests == responses
    for f in kept:
        if f["direction"] == "request":
            body = f["body"]
            named = body.get("groupId") or body.get("key") or body.get("coordinatorKeys")
            named = named or [g["groupId"] for g in body.get("groups", [])]  # (OffsetFetch v8+)
            assert named in ("rd-group", ["rd-group"]), f
    # exactly the requests that name the group (and nothing of py-group)
    expected = {
        (f["client"], f["correlation_id"])
        for f in every
        if f["direction"] == "request" and f["api_name"] in _GROUP_APIS
        and "rd-group" in json.dumps(f["body"])
    }  # fmt: skip
    assert requests == expected
    both = frames("--group", "rd-group,py-group")
    assert len(both) == len(kept) + len(frames("--group", "py-group"))


def test_an_empty_group_is_a_usage_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kcodec.cli", "decode-capture", str(GROUPS), "--group", ","],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "names no group" in done.stderr and "Traceback" not in done.stderr


def test_topic_filter_keeps_the_frames_of_groups_that_use_the_topic(every: list[dict[str, Any]]) -> None:
    kept = frames("--topic", "orders")
    heartbeats = [f for f in kept if f["api_name"] == "Heartbeat"]
    assert heartbeats and all(
        f["body"]["groupId"] == "rd-group" for f in heartbeats if f["body"] and "groupId" in f["body"]
    )
    assert {f["api_name"] for f in kept} >= {"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "Fetch"}
    assert not [f for f in kept if "py-group" in json.dumps(f["body"])]
    # the group's frames after its first subscription named the topic are all there
    first = next(i for i, f in enumerate(every) if any(
        "orders" in json.dumps(e["value"]) for e in f["embedded"]))  # fmt: skip
    group_frames = {
        (f["client"], f["direction"], f["correlation_id"])
        for f in frames("--group", "rd-group")
        if f["time"] >= every[first]["time"]
    }
    assert group_frames <= {(f["client"], f["direction"], f["correlation_id"]) for f in kept}


# --- summary ------------------------------------------------------------------------------------------


def _members(group: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["client_ids"][0]: m for m in group["members"]}


def test_summary_has_a_section_per_group() -> None:
    (s,) = [json.loads(line) for line in cli("--json", "--summary").splitlines()]
    groups = {g["group"]: g for g in s["groups"]}
    assert set(groups) == {"rd-group", "py-group"}
    rd = groups["rd-group"]
    assert rd["protocol_type"] == "consumer" and rd["protocol"] == "range" and rd["generation"] == 2
    members = _members(rd)
    assert set(members) == {"rd-a", "rd-b"} and rd["leader"] == members["rd-a"]["member"]
    assert members["rd-a"]["subscription"] == ["orders"]
    history = {c: [(a["generation"], a["partitions"]) for a in m["assignments"]] for c, m in members.items()}
    assert history["rd-a"][0] == (1, {"orders": [0, 1, 2, 3]})
    assert history["rd-b"][0][0] == 2
    gen2 = sorted(p for c in members for g, a in history[c] if g == 2 for p in a["orders"])
    assert gen2 == [0, 1, 2, 3] and len(history["rd-b"][0][1]["orders"]) == 2
    py = groups["py-group"]
    members = _members(py)
    assert set(members) == {"py-a", "py-b"} and py["protocol_type"] == "consumer"
    first = members["py-a"]["assignments"][0]
    assert first["generation"] == 1 and first["partitions"] == {"payments": [0, 1]}
    last = py["generation"]
    held = [
        a["partitions"]["payments"]
        for m in members.values()
        for a in m["assignments"]
        if a["generation"] == last
    ]
    assert sorted(p for ps in held for p in ps) == [0, 1] and len(held) == 2
    text = cli("--summary")
    assert "Consumer group 'rd-group'" in text and "Consumer group 'py-group'" in text
    assert "g1: orders[0,1,2,3]; g2: orders[0,1]" in text or "g1: orders[0,1,2,3]; g2: orders[2,3]" in text


# --- one process and several give the same output ------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("--json",),
        ("--json", "--group", "py-group"),
        ("--json", "--topic", "payments"),
        ("--topic", "orders"),
        ("--group", "rd-group", "-V"),
        ("--summary",),
        ("--json", "--summary"),
        ("--json", "--summary", "--group", "rd-group"),
    ],
)
def test_one_process_and_workers_give_the_same_output(args: tuple[str, ...]) -> None:
    one = cli(*args, "-j", "1")
    assert one and cli(*args, "-j", "2") == one
