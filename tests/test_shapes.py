"""Elements read and written by their *shape* (one struct call per element whose width varies only
through arrays of fixed-width values, e.g. a Metadata partition) give exactly what the field-by-field
path gives: the same bytes, the same messages, and on damaged input the same error, offset and path."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

import kcodec
from kcodec.protocol import _wire
from kcodec.protocol.codec import module
from kcodec.protocol.errors import KcodecError
from kcodec.protocol.model import Message

SHAPED_MODULES = ("MetadataResponse", "LeaderAndIsrRequest", "UpdateMetadataRequest", "AlterPartitionRequest")


def _caches() -> Iterator[dict[Any, Any]]:
    for name in SHAPED_MODULES:
        mod = module(name)
        for attr, value in vars(mod).items():
            if attr.startswith(("_SHAPE_WRITERS_", "_SHAPE_READERS_")):
                yield value


@pytest.fixture
def shapes(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A switch between the shape path (on) and the field-by-field path (off)."""

    class Switch:
        def set(self, on: bool) -> None:
            for cache in _caches():
                cache.clear()
            monkeypatch.setattr(_wire, "SHAPES_MAX", 64 if on else 0)

    switch = Switch()
    yield switch
    for cache in _caches():
        cache.clear()


def metadata(replica_counts: list[tuple[int, int, int]], tagged_at: tuple[int, ...] = ()) -> Message:
    cls = kcodec.message_class("MetadataResponse")
    part, topic = cls.MetadataResponsePartition, cls.MetadataResponseTopic  # type: ignore[attr-defined]
    parts = [
        part(
            error_code=i % 3,
            partition_index=i,
            leader_id=i % 7,
            leader_epoch=i,
            replica_nodes=list(range(r)),
            isr_nodes=list(range(100, 100 + s)),
            offline_replicas=list(range(-o, 0)),
            unknown_tagged_fields=[(9, b"\x05")] if i in tagged_at else None,
        )
        for i, (r, s, o) in enumerate(replica_counts)
    ]
    topics = [
        topic(name=f"t{t}", partitions=parts[t::2]) for t in range(2)
    ]
    return cls(throttle_time_ms=1, topics=topics, cluster_id="c")  # type: ignore[call-arg]


# the common shape, others, lengths at and past the one-byte limit (126 / 127+), and back again
MIXED = [(3, 3, 0)] * 5 + [(3, 2, 1), (1, 1, 0), (0, 0, 0), (126, 1, 0), (127, 3, 0), (3, 3, 0)]
MIXED += [(130, 130, 2)]


@pytest.mark.parametrize("version", [9, 10, 12, 13])
@pytest.mark.parametrize("tagged_at", [(), (0,), (4, 5, 11)])
def test_shapes_give_the_bytes_and_messages_of_the_field_by_field_path(
    shapes: Any, version: int, tagged_at: tuple[int, ...]
) -> None:
    msg = metadata(MIXED, tagged_at)
    shapes.set(False)
    plain = kcodec.encode(msg, version)
    shapes.set(True)
    for _ in range(2):  # the second time every shape is cached
        assert kcodec.encode(msg, version) == plain
        back = kcodec.decode("MetadataResponse", version, plain)
        assert back == msg
    assert any(_caches()), "the shape caches were not used"
    shapes.set(False)
    assert kcodec.decode("MetadataResponse", version, plain) == msg


def _outcome(data: bytes, version: int) -> tuple[str, Any]:
    try:
        msg = kcodec.decode("MetadataResponse", version, data)
    except KcodecError as e:
        return "error", (type(e).__name__, str(e))
    return "ok", kcodec.encode(msg, version)


def test_damaged_bodies_fail_alike_with_and_without_shapes(shapes: Any) -> None:
    rng = random.Random(20261122)
    data = kcodec.encode(metadata(MIXED * 2, (7,)), 12)
    cases: list[bytes] = []
    for _ in range(600):
        b = bytearray(data)
        kind = rng.randrange(3)
        if kind == 0:
            b = b[: rng.randrange(len(b))]
        elif kind == 1:
            for _ in range(rng.randint(1, 3)):
                b[rng.randrange(len(b))] = rng.choice((0, 1, 2, 4, 127, 128, 255, rng.randrange(256)))
        else:
            at = rng.randrange(len(b))
            b[at:at] = bytes([rng.randrange(256)])
        cases.append(bytes(b))
    shapes.set(False)
    expected = [_outcome(c, 12) for c in cases]
    shapes.set(True)
    assert [_outcome(c, 12) for c in cases] == expected
    assert sum(kind == "error" for kind, _ in expected) > 300  # the damage mostly shows


def test_write_errors_name_the_field_in_an_element_written_by_shape(shapes: Any) -> None:
    shapes.set(True)
    msg = metadata([(3, 3, 0)] * 6)
    kcodec.encode(msg, 12)  # every shape cached
    msg.topics[1].partitions[2].isr_nodes = [1, 2**31]  # type: ignore[attr-defined]
    with pytest.raises(KcodecError) as e:
        kcodec.encode(msg, 12)
    assert "topics[1].partitions[2].isr_nodes" in str(e.value)
    msg.topics[1].partitions[2].isr_nodes = None  # type: ignore[attr-defined]
    with pytest.raises(KcodecError) as e:
        kcodec.encode(msg, 12)
    assert "topics[1].partitions[2].isr_nodes" in str(e.value)


def test_the_shape_caches_stay_bounded(shapes: Any) -> None:
    shapes.set(True)
    counts = [(r, s, 0) for r in range(20) for s in range(10)]  # 200 shapes
    msg = metadata(counts)
    data = kcodec.encode(msg, 12)
    assert kcodec.decode("MetadataResponse", 12, data) == msg
    for cache in _caches():
        assert len(cache) <= _wire.SHAPES_MAX
    shapes.set(False)
    assert kcodec.encode(msg, 12) == data
