"""``decode(..., lazy=True)``: the same messages as an eager decode, the same bytes back, and no
malformed body accepted at decode time (the skip walk checks every length, count and bound)."""

from __future__ import annotations

from typing import Any

import golden_data as g
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kcodec
from kcodec.protocol import strategies
from kcodec.protocol.errors import DecodeError
from kcodec.protocol.model import LazyArray

MESSAGE_CASES = g.message_cases()


def lazy_arrays(obj: Any) -> int:
    return sum(isinstance(getattr(obj, f), LazyArray) for f in obj._fields_)


def test_every_golden_case_decodes_lazily_to_the_same_message_and_bytes() -> None:
    lazy_seen = 0
    for case in MESSAGE_CASES:
        data = bytes.fromhex(case["hex"])
        name, v = case["message"], case["version"]
        lazy = kcodec.decode(name, v, data, lazy=True)
        lazy_seen += lazy_arrays(lazy)
        assert kcodec.encode(lazy, v) == data, (name, v)  # encodes straight from the unbuilt arrays
        assert lazy == kcodec.decode(name, v, data), (name, v)
        assert kcodec.to_json(lazy, v) == kcodec.to_json(kcodec.decode(name, v, data), v)
    assert lazy_seen > 500


@pytest.mark.parametrize("case", MESSAGE_CASES[::7], ids=[g.case_id(c) for c in MESSAGE_CASES[::7]])
def test_a_cut_body_fails_at_decode_time_lazily_too(case: dict[str, Any]) -> None:
    data = bytes.fromhex(case["hex"])
    for cut in sorted({len(data) // 3, len(data) // 2, len(data) - 1} - {len(data)}):
        with pytest.raises(DecodeError):
            kcodec.decode(case["message"], case["version"], data[:cut])
        with pytest.raises(DecodeError):
            kcodec.decode(case["message"], case["version"], data[:cut], lazy=True)


def metadata(topics: int, name: str = "t") -> Any:
    cls = kcodec.message_class("MetadataResponse")
    topic, part = cls.MetadataResponseTopic, cls.MetadataResponsePartition  # type: ignore[attr-defined]
    return cls(  # type: ignore[call-arg]
        topics=[
            topic(
                name=f"{name}{t}",
                partitions=[
                    part(partition_index=0x0A0B0C00 + 16 * t + p, replica_nodes=[1, 2]) for p in range(3)
                ],
            )
            for t in range(topics)
        ]
    )


def test_lazy_arrays_build_once_on_first_access() -> None:
    data = kcodec.encode(metadata(5), 12)
    msg = kcodec.decoder("MetadataResponse", 12, lazy=True)(data)
    topics = msg.topics
    assert isinstance(topics, LazyArray) and not topics.is_built
    assert len(topics) == 5 and not topics.is_built
    assert "not built yet" in repr(topics)
    assert topics[3].name == "t3" and topics.is_built
    assert [t.name for t in topics] == [f"t{i}" for i in range(5)]
    assert topics.materialize() is topics.materialize()
    assert topics[1:3] == topics.materialize()[1:3]


def test_what_only_building_finds_is_reported_with_the_eager_path() -> None:
    data = bytearray(kcodec.encode(metadata(4, name="é"), 12))
    at = data.index("é2".encode())
    data[at] = 0xFF  # invalid UTF-8 in topics[2].name: lengths are intact, so the walk accepts it
    with pytest.raises(DecodeError) as eager:
        kcodec.decode("MetadataResponse", 12, bytes(data))
    msg = kcodec.decode("MetadataResponse", 12, bytes(data), lazy=True)
    with pytest.raises(DecodeError) as lazy:
        msg.topics.materialize()
    assert lazy.value.path == eager.value.path == "MetadataResponse.topics[2].name"
    assert lazy.value.offset == eager.value.offset


def test_a_bad_count_inside_an_unbuilt_array_fails_at_decode_time() -> None:
    data = bytearray(kcodec.encode(metadata(3), 12))
    at = data.index((0x0A0B0C00 + 2).to_bytes(4, "big"))  # topics[0].partitions[2].partition_index
    assert data[at + 12] == 3
    data[at + 12] = 0x7F  # its replica_nodes: 126 elements
    with pytest.raises(DecodeError) as e:
        kcodec.decode("MetadataResponse", 12, bytes(data), lazy=True)
    assert e.value.path.startswith("MetadataResponse.topics[0].partitions[2].replica_nodes")


SAMPLED = [
    ("MetadataResponse", 12),
    ("FetchRequest", 12),
    ("ApiVersionsResponse", 3),
    ("ProduceRequest", 9),
    ("FetchResponse", 16),
    ("OffsetCommitRequest", 9),
    ("StopReplicaRequest", 3),
]


@pytest.mark.parametrize(("name", "version"), SAMPLED)
def test_lazy_round_trips_random_messages(name: str, version: int) -> None:
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(msg=strategies.messages(name, version), cut=st.floats(0, 1))
    def check(msg: Any, cut: float) -> None:
        data = kcodec.encode(msg, version)
        lazy = kcodec.decode(name, version, data, lazy=True)
        assert kcodec.encode(lazy, version) == data
        assert lazy == msg
        short = data[: int(len(data) * cut)]
        if len(short) < len(data):
            with pytest.raises(DecodeError):
                kcodec.decode(name, version, short, lazy=True)

    check()
