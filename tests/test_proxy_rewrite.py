"""The proxy's address rewriting (kcodec.proxy.rewrite) at every version of every API that advertises
brokers: which fields are endpoints, that only they change, that the header and any bytes after the
body are kept, and that rewriting back gives the original frame byte for byte."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kcodec
from kcodec.protocol.errors import DecodeError
from kcodec.protocol.strategies import messages
from kcodec.proxy.inflight import InFlight, request_key, response_correlation_id
from kcodec.proxy.rewrite import ADDRESS_APIS, endpoint_paths, parse_response, rewrites

BROKERS = [("10.0.0.1", 9092), ("10.0.0.2", 9093), ("broker-3.example", 19094)]
LOCAL = {ep: ("127.0.0.1", 40000 + n) for n, ep in enumerate(BROKERS)}
BACK = {v: k for k, v in LOCAL.items()}


def _frame(body: Any, version: int, correlation_id: int = 7) -> bytes:
    return kcodec.encode_response(body, version, correlation_id=correlation_id)


def _versions(name: str) -> list[int]:
    info = kcodec.api(name)
    return list(range(info.min_version, info.max_version + 1))


def _metadata(version: int) -> Any:
    cls: Any = kcodec.message_class("MetadataResponse")
    brokers = [
        cls.MetadataResponseBroker(node_id=n, host=h, port=p, rack="r" if version >= 1 else None)
        for n, (h, p) in enumerate(BROKERS, 1)
    ]
    part = cls.MetadataResponsePartition(partition_index=0, leader_id=2, replica_nodes=[1, 2, 3])
    topic = cls.MetadataResponseTopic(name="orders", partitions=[part])
    return cls(brokers=brokers, cluster_id="c" if version >= 2 else None, controller_id=1, topics=[topic])


def _find_coordinator(version: int) -> Any:
    cls: Any = kcodec.message_class("FindCoordinatorResponse")
    host, port = BROKERS[1]
    if version < 4:
        return cls(node_id=2, host=host, port=port)
    coords = [
        cls.Coordinator(key=f"group-{n}", node_id=n, host=h, port=p) for n, (h, p) in enumerate(BROKERS, 1)
    ]
    return cls(coordinators=coords)


def _describe_cluster(version: int) -> Any:
    cls: Any = kcodec.message_class("DescribeClusterResponse")
    brokers = [cls.DescribeClusterBroker(broker_id=n, host=h, port=p) for n, (h, p) in enumerate(BROKERS, 1)]
    return cls(cluster_id="c", controller_id=1, brokers=brokers)


def _node_endpoints(name: str) -> Any:
    cls: Any = kcodec.message_class(name)
    nodes = [cls.NodeEndpoint(node_id=n, host=h, port=p) for n, (h, p) in enumerate(BROKERS, 1)]
    return cls(node_endpoints=nodes)


BUILDERS = {"Metadata": _metadata, "FindCoordinator": _find_coordinator, "DescribeCluster": _describe_cluster}


def _addresses(frame: bytes, key: int, version: int) -> list[tuple[str, int]]:
    parsed = parse_response(frame, key, version)
    assert parsed is not None
    body = kcodec.decode_response(frame, key, version, strict=False).body
    return [(str(h.host), int(h.port)) for h in parsed.holders(body)]  # type: ignore[attr-defined]


def _check_round_trip(frame: bytes, key: int, version: int, expected: list[tuple[str, int]]) -> bytes:
    """Rewrite to LOCAL, check what changed, rewrite back and get the original bytes."""
    parsed = parse_response(frame, key, version)
    assert parsed is not None
    assert parsed.endpoints == list(dict.fromkeys(expected))
    new = parsed.apply(lambda h, p: LOCAL.get((h, p)))
    assert new is not None
    assert struct.unpack_from(">i", new)[0] == len(new) - 4  # the size prefix is fixed
    assert _addresses(new, key, version) == [LOCAL[ep] for ep in expected]
    # only the addresses differ: same JSON once they are put back
    name = kcodec.api(key).response
    info = kcodec.api(key)
    body_new = kcodec.decode_response(new, key, version, strict=False).body
    body_old = kcodec.decode_response(frame, key, version, strict=False).body
    assert kcodec.to_json(body_new, version) != kcodec.to_json(body_old, version)
    back = parse_response(new, key, version)
    assert back is not None
    restored = back.apply(lambda h, p: BACK.get((h, p)))
    assert restored == frame, f"{name} v{version} (header v{info.response_header_version(version)})"
    return new


@pytest.mark.parametrize("name", list(BUILDERS))
def test_every_version_of_the_broker_listing_apis(name: str) -> None:
    key = kcodec.api(name).key
    for version in _versions(name):
        assert rewrites(key, version), (name, version)
        body = BUILDERS[name](version)
        expected = BROKERS[1:2] if name == "FindCoordinator" and version < 4 else BROKERS
        _check_round_trip(_frame(body, version), key, version, expected)


@pytest.mark.parametrize(("name", "first"), [("Produce", 10), ("Fetch", 16), ("ShareFetch", 0)])
def test_current_leader_endpoints(name: str, first: int) -> None:
    info = kcodec.api(name)
    for version in _versions(name):
        if version < first:
            assert not rewrites(info.key, version)
            assert (
                parse_response(_frame(kcodec.message_class(info.response)(), version), info.key, version)
                is None
            )
            continue
        _check_round_trip(_frame(_node_endpoints(info.response), version), info.key, version, BROKERS)


def test_where_the_endpoints_are() -> None:
    meta, fc, dc = (kcodec.api(n).key for n in ("Metadata", "FindCoordinator", "DescribeCluster"))
    assert {endpoint_paths(meta, v) for v in _versions("Metadata")} == {((("brokers", True),),)}
    assert endpoint_paths(fc, 3) == ((),)  # the body itself
    assert endpoint_paths(fc, 4) == ((("coordinators", True),),)
    assert endpoint_paths(dc, 0) == ((("brokers", True),),)
    assert endpoint_paths(kcodec.api("ShareAcknowledge").key, 0) == ((("node_endpoints", True),),)
    # ACLs have a Host but no Port; controller APIs are not for clients; unknown versions advertise nothing
    for other in ("DescribeAcls", "DeleteAcls", "DescribeQuorum", "Vote", "ApiVersions"):
        info = kcodec.api(other)
        assert other not in ADDRESS_APIS
        assert not any(rewrites(info.key, v) for v in _versions(other))
    assert not rewrites(meta, 99)


def test_error_replies_and_unchanged_addresses() -> None:
    key = kcodec.api("FindCoordinator").key
    cls: Any = kcodec.message_class("FindCoordinatorResponse")
    not_available = cls(error_code=15, node_id=-1, host="", port=-1)  # COORDINATOR_NOT_AVAILABLE
    parsed = parse_response(_frame(not_available, 3), key, 3)
    assert parsed is not None and parsed.endpoints == []
    assert parsed.apply(lambda h, p: ("127.0.0.1", 1)) is None  # nothing to replace
    parsed = parse_response(_frame(_find_coordinator(2), 2), key, 2)
    assert parsed is not None
    assert parsed.apply(lambda h, p: None) is None  # no listener for it: left as it was
    assert parsed.apply(lambda h, p: (h, p)) is None


def test_bytes_after_the_body_are_kept() -> None:
    # librdkafka's mock cluster writes a second empty tagged-field section after flexible Metadata bodies
    key = kcodec.api("Metadata").key
    frame = _frame(_metadata(12), 12)
    quirky = struct.pack(">i", len(frame) - 4 + 1) + frame[4:] + b"\x00"
    new = _check_round_trip(quirky, key, 12, BROKERS)
    assert new.endswith(b"\x00")
    reply = kcodec.decode_response(new, key, 12, strict=False)
    assert [d.reason for d in reply.diagnostics] == ["1 trailing bytes after MetadataResponse v12"]


def test_the_response_header_is_kept() -> None:
    key = kcodec.api("Metadata").key
    header = kcodec.message_class("ResponseHeader")(correlation_id=5)  # type: ignore[call-arg]
    header.unknown_tagged_fields.append((3, b"xyz"))
    frame = kcodec.encode_response(_metadata(13), 13, correlation_id=5, header=header)
    parsed = parse_response(frame, key, 13)
    assert parsed is not None and parsed.head == frame[4 : 4 + 4 + 1 + 1 + 1 + 3]
    new = _check_round_trip(frame, key, 13, BROKERS)
    assert kcodec.decode_response(new, key, 13).header.unknown_tagged_fields == [(3, b"xyz")]  # type: ignore[attr-defined]


def test_undecodable_responses_raise_with_the_offset() -> None:
    key = kcodec.api("Metadata").key
    frame = _frame(_metadata(9), 9)
    cut = struct.pack(">i", len(frame) - 14) + frame[4:-10]
    with pytest.raises(DecodeError) as err:
        parse_response(cut, key, 9)
    assert 4 < err.value.offset <= len(cut)
    with pytest.raises(DecodeError, match="frame claims"):
        parse_response(frame[:-1], key, 9)


ADDRESS_PAIRS = [
    (name, version)
    for name in ADDRESS_APIS
    for version in _versions(name)
    if rewrites(kcodec.api(name).key, version)
]


@pytest.mark.parametrize(("name", "version"), ADDRESS_PAIRS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_responses_round_trip(name: str, version: int, data: st.DataObject) -> None:
    """Any valid response: every non-placeholder endpoint moved to 127.0.0.1:<port + 1>, then back."""
    info = kcodec.api(name)
    body = data.draw(messages(info.response, version))
    frame = _frame(body, version, correlation_id=data.draw(st.integers(-(2**31), 2**31 - 1)))
    parsed = parse_response(frame, info.key, version)
    assert parsed is not None
    moved: dict[tuple[str, int], tuple[str, int]] = {}
    for n, ep in enumerate(parsed.endpoints):
        moved[ep] = ("127.0.0.1", n)
    new = parsed.apply(lambda h, p: moved.get((h, p)))
    if not moved:
        assert new is None
        return
    assert new is not None
    back = {v: k for k, v in moved.items()}
    again = parse_response(new, info.key, version)
    assert again is not None
    assert again.apply(lambda h, p: back.get((h, p))) == frame


def test_in_flight_requests() -> None:
    table = InFlight(limit=3)
    for cid, key in ((1, 3), (2, 0), (3, 1)):
        table.sent((key, 9, cid))
    assert table.answered(99) is None and len(table) == 3
    assert table.answered(2) == (0, 9)  # 1 was never answered (acks=0 Produce): settled too
    assert len(table) == 1 and table.answered(1) is None
    for cid in range(10, 14):
        table.sent((18, 3, cid))
    assert table.dropped == 2 and len(table) == 3
    table.sent((3, 12, 13))  # a reused correlation id: the newer request is the one answered
    assert table.answered(13) == (3, 12)
    req = kcodec.encode_request(kcodec.message_class("MetadataRequest")(), 12, correlation_id=42)
    assert request_key(req) == (3, 12, 42) and request_key(req[:11]) is None
    assert response_correlation_id(_frame(_metadata(1), 1, correlation_id=-5)) == -5
    assert response_correlation_id(b"\x00\x00\x00\x00") is None


def test_only_the_endpoint_structs_are_built() -> None:
    """parse_response checks the whole body but builds only what holds endpoints; what only a full
    decode finds (invalid UTF-8 in a topic name) surfaces when the frame is written again."""
    key = kcodec.api("Metadata").key
    frame = _frame(_metadata(12), 12)
    assert frame.count(b"orders") == 1
    bad = frame.replace(b"orders", b"\xff\xfe\xfd\xfc\xfb\xfa")
    parsed = parse_response(bad, key, 12)
    assert parsed is not None and parsed.endpoints == BROKERS
    with pytest.raises(DecodeError, match=r"(?i)utf-8"):
        parsed.apply(lambda h, p: LOCAL.get((h, p)))
    # structurally broken bodies are refused at once
    with pytest.raises(DecodeError):
        parse_response(frame[:-3] + b"\xff\xff\xff", key, 12)
