"""User code as a kcodec user writes it: must pass ``mypy --strict`` without ignores, and run."""

from __future__ import annotations

import kcodec
from kcodec.protocol.errors import KcodecError
from kcodec.protocol.messages import FetchRequest, MetadataResponse
from kcodec.protocol.sentinels import NO_LEADER_EPOCH
from kcodec.records import NewRecord, build_batch, iter_batches


def fetch_bytes() -> bytes:
    partition = FetchRequest.FetchPartition(partition=0, current_leader_epoch=5, fetch_offset=42)
    topic = FetchRequest.FetchTopic(topic="orders", partitions=[partition])
    return kcodec.encode(FetchRequest(max_wait_ms=500, topics=[topic]), 12)


def leader_epochs(data: bytes) -> list[int]:
    req = kcodec.decode("FetchRequest", 12, data)  # a FetchRequest, not Any
    return [p.current_leader_epoch for t in req.topics for p in t.partitions]


def first_topic(data: bytes) -> str:
    topic: FetchRequest.FetchTopic = kcodec.decode("FetchRequest", 12, data).topics[0]
    return topic.topic


def error_names(meta: MetadataResponse) -> list[str]:
    return [kcodec.error_name(t.error_code) for t in meta.topics]


def bound_codecs(data: bytes) -> bytes:
    dec = kcodec.decoder("FetchRequest", 12)
    enc = kcodec.encoder("FetchRequest", 12)
    return enc(dec(data))


def classes() -> int:
    cls = kcodec.message_class("FetchRequest")
    msg = cls(max_wait_ms=1)
    back = kcodec.from_json("FetchRequest", 12, kcodec.to_json(msg, 12, error_names=True))
    return back.max_wait_ms


def records_roundtrip() -> list[bytes | None]:
    data = build_batch([NewRecord(b"v1"), NewRecord(b"v2", key=b"k")], compression="zstd")
    return [r.value for batch in iter_batches(data) for r in batch]


def frames() -> int:
    frame = kcodec.encode_request(FetchRequest(), 12, correlation_id=7, client_id="me")
    return kcodec.decode_request(frame).correlation_id


def main() -> None:
    data = fetch_bytes()
    assert leader_epochs(data) == [5]
    assert first_topic(data) == "orders"
    assert bound_codecs(data) == data
    assert classes() == 1
    assert records_roundtrip() == [b"v1", b"v2"]
    assert frames() == 7
    meta = MetadataResponse(topics=[MetadataResponse.MetadataResponseTopic(name="t", error_code=3)])
    assert error_names(meta) == ["UNKNOWN_TOPIC_OR_PARTITION"]
    assert kcodec.api("Fetch").max_version >= 12
    assert NO_LEADER_EPOCH == -1
    try:
        kcodec.decode("FetchRequest", 12, b"\x00")
    except KcodecError as e:
        assert "byte" in str(e)
    else:
        raise AssertionError("a 1-byte FetchRequest decoded")
    print("ok")


if __name__ == "__main__":
    main()
