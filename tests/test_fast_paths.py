"""The speed paths give exactly what the plain paths give: bound decoders/encoders, zero-copy encode
chunks, the collector pause on large bodies, and one-call reading of arrays of same-width structs
(which must hand over to the element-by-element reader when an element has tagged fields or the
buffer is short)."""

from __future__ import annotations

import gc

import pytest

import kcodec
from kcodec.protocol import codec
from kcodec.protocol.errors import (
    DecodeError,
    TrailingBytesError,
    UnknownMessageError,
    UnsupportedVersionError,
)
from kcodec.protocol.model import Message


def api_versions(n: int, tagged_at: tuple[int, ...] = ()) -> Message:
    cls = kcodec.message_class("ApiVersionsResponse")
    key = cls.ApiVersion  # type: ignore[attr-defined]
    keys = [
        key(
            api_key=k,
            min_version=k % 3,
            max_version=k % 17,
            unknown_tagged_fields=[(7, b"\x01\x02")] if k in tagged_at else None,
        )
        for k in range(n)
    ]
    return cls(error_code=0, api_keys=keys, throttle_time_ms=5)  # type: ignore[call-arg]


@pytest.mark.parametrize("tagged_at", [(), (0,), (5,), (59,), (3, 4, 40)])
def test_same_width_struct_arrays_hand_elements_with_tagged_fields_over(
    tagged_at: tuple[int, ...],
) -> None:
    msg = api_versions(60, tagged_at)
    data = kcodec.encode(msg, 3)
    back = kcodec.decode("ApiVersionsResponse", 3, data)
    assert back == msg
    assert [k.api_key for k in back.api_keys if k._unknown_tagged_fields] == list(tagged_at)
    assert kcodec.encode(back, 3) == data


def test_same_width_struct_arrays_report_a_short_buffer_at_the_element() -> None:
    data = kcodec.encode(api_versions(10), 3)
    # error_code (2) + count (1) + 10 elements of 7 bytes: cut inside element 4
    cut = data[: 2 + 1 + 4 * 7 + 3]
    with pytest.raises(DecodeError) as e:
        kcodec.decode("ApiVersionsResponse", 3, cut)
    assert "api_keys[4]" in str(e.value)


def test_bound_decoder_and_encoder_match_decode_and_encode() -> None:
    msg = api_versions(12)
    data = kcodec.encode(msg, 3)
    dec, enc = kcodec.decoder("ApiVersionsResponse", 3), kcodec.encoder("ApiVersionsResponse", 3)
    assert dec(data) == msg and dec(memoryview(data)) == msg and dec(bytearray(data)) == msg
    assert enc(msg) == data
    with pytest.raises(TrailingBytesError):
        dec(data + b"\x00")
    with pytest.raises(TypeError):
        enc(kcodec.message_class("ApiVersionsRequest")())
    with pytest.raises(UnsupportedVersionError):
        kcodec.decoder("ApiVersionsResponse", 99)
    with pytest.raises(UnknownMessageError):
        kcodec.encoder("NoSuchMessage", 0)


def test_encode_chunks_keep_large_values_uncopied() -> None:
    cls = kcodec.message_class("ProduceRequest")
    topic, part = cls.TopicProduceData, cls.PartitionProduceData  # type: ignore[attr-defined]
    big = bytes(range(256)) * 64  # 16 KiB: kept as its own chunk
    small = b"x" * 100  # copied in
    msg = cls(
        acks=-1,
        timeout_ms=1000,
        topic_data=[  # type: ignore[call-arg]
            topic(
                name="t",
                partition_data=[
                    part(index=0, records=big),
                    part(index=1, records=small),
                    part(index=2, records=memoryview(big)),
                ],
            )
        ],
    )
    chunks = kcodec.encode_chunks(msg, 9)
    assert b"".join(chunks) == kcodec.encode(msg, 9) == kcodec.encoder("ProduceRequest", 9)(msg)
    assert any(c is big for c in chunks)
    assert not any(c is small for c in chunks)
    assert kcodec.decode("ProduceRequest", 9, b"".join(chunks)) == msg


def test_blobs_lay_out_large_values_where_they_were_written() -> None:
    """``kcodec.protocol.blobs``: large values set aside at the offset they go (the start, back to back, the
    end) come out in order with the bytes around them, without empty parts and uncopied."""
    from kcodec.protocol.blobs import blob, joined, parts
    from kcodec.protocol.chunked import ChunkedOut

    big, other = bytes(range(256)) * 40, memoryview(b"y" * 9000)
    out = ChunkedOut()
    assert parts(out) == [] and joined(out) == b""
    blob(out, big)  # at offset 0: no empty part before it
    out += b"ab"
    blob(out, other)
    blob(out, big)  # back to back: nothing between them
    assert [bytes(p) for p in parts(out)] == [big, b"ab", bytes(other), big]
    assert parts(out)[0] is big and parts(out)[2] is other
    out += b"cd"
    assert joined(out) == big + b"ab" + bytes(other) + big + b"cd"
    assert bytes(parts(out)[-1]) == b"cd"
    plain = ChunkedOut(b"xyz")
    assert joined(plain) == b"xyz" and [bytes(p) for p in parts(plain)] == [b"xyz"]


@pytest.mark.parametrize("size", [126, 127, 128, 0x3FFE, 0x3FFF, 0x4000, 102400, 0x1FFFFE, 0x1FFFFF, 0x200000])
def test_records_lengths_written_in_place_are_kafkas_varints(size: int) -> None:
    """Compact lengths of one to three varint bytes are written in place (no write_uvarint call): at
    every byte-count boundary they are the varint write_uvarint writes, in every entry point."""
    from kcodec.protocol._wire import write_uvarint

    cls = kcodec.message_class("ProduceRequest")
    topic, part = cls.TopicProduceData, cls.PartitionProduceData  # type: ignore[attr-defined]
    records = bytes(range(256)) * (size // 256) + bytes(size % 256)
    msg = cls(acks=-1, timeout_ms=1, topic_data=[topic(name="t", partition_data=[part(index=7, records=records)])])  # type: ignore[call-arg]
    varint = bytearray()
    write_uvarint(varint, size + 1)
    data = kcodec.encode(msg, 9)
    head = b"\x00\xff\xff\x00\x00\x00\x01\x02\x02t\x02\x00\x00\x00\x07"  # no txn id, acks, timeout, one topic "t", index 7
    assert data[: len(head)] == head and data[len(head) : len(head) + len(varint)] == varint
    assert data[len(head) + len(varint) : -3] == records
    assert kcodec.encoder("ProduceRequest", 9)(msg) == b"".join(kcodec.encode_chunks(msg, 9)) == data
    assert kcodec.decode("ProduceRequest", 9, data) == msg


def _collections_during(data: bytes) -> int:
    """Collector runs while the two decoding entry points decode ``data`` (collector enabled)."""
    inside = [False]
    seen: list[str] = []

    def spy(phase: str, info: dict[str, int]) -> None:
        if inside[0] and phase == "start":
            seen.append(phase)

    decode = kcodec.decoder("MetadataResponse", 12)
    before = gc.isenabled()
    gc.enable()
    gc.collect()
    gc.callbacks.append(spy)
    try:
        inside[0] = True
        kcodec.decode("MetadataResponse", 12, data)
        decode(data)
        inside[0] = False
    finally:
        gc.callbacks.remove(spy)
        (gc.enable if before else gc.disable)()
    return len(seen)


def test_the_collector_pause_saves_collections(monkeypatch: pytest.MonkeyPatch) -> None:
    cls = kcodec.message_class("MetadataResponse")
    topic = cls.MetadataResponseTopic  # type: ignore[attr-defined]
    data = kcodec.encode(cls(topics=[topic(name=f"t{i:05d}") for i in range(5000)]), 12)  # type: ignore[call-arg]
    paused = _collections_during(data)
    # at most the one deferred young-generation pass per call, when the collector resumes
    assert paused <= 2
    monkeypatch.setattr(codec, "GC_PAUSE_BYTES", 1 << 40)
    assert _collections_during(data) > paused


@pytest.mark.parametrize("was_enabled", [True, False])
def test_large_bodies_pause_the_collector_and_restore_its_state(was_enabled: bool) -> None:
    cls = kcodec.message_class("MetadataResponse")
    topic = cls.MetadataResponseTopic  # type: ignore[attr-defined]
    big = cls(topics=[topic(name=f"t{i:05d}") for i in range(2000)])  # type: ignore[call-arg]
    big_data = kcodec.encode(big, 12)
    assert len(big_data) >= codec.GC_PAUSE_BYTES
    before = gc.isenabled()
    (gc.enable if was_enabled else gc.disable)()
    try:
        assert kcodec.decode("MetadataResponse", 12, big_data) == big
        assert kcodec.decoder("MetadataResponse", 12)(big_data) == big
        assert gc.isenabled() is was_enabled
        with pytest.raises(DecodeError):
            kcodec.decode("MetadataResponse", 12, big_data[:-5])
        assert gc.isenabled() is was_enabled
    finally:
        (gc.enable if before else gc.disable)()


@pytest.mark.parametrize("version", [0, 3])
def test_same_width_elements_written_in_place_still_name_the_bad_field(version: int) -> None:
    from kcodec.protocol.errors import EncodeError

    msg = api_versions(5)
    msg.api_keys[2].min_version = 70000
    with pytest.raises(EncodeError) as e:
        kcodec.encode(msg, version)
    assert "api_keys[2].min_version" in str(e.value)


def test_compact_arrays_of_ints_written_with_their_length() -> None:
    cls = kcodec.message_class("MetadataResponse")
    topic, part = cls.MetadataResponseTopic, cls.MetadataResponsePartition  # type: ignore[attr-defined]
    for n in (0, 1, 31, 32, 126, 127, 200):
        p = part(partition_index=1, replica_nodes=list(range(n)), isr_nodes=[7] * n, offline_replicas=[])
        msg = cls(topics=[topic(name="t", partitions=[p])])  # type: ignore[call-arg]
        for v in (1, 9, 12):
            assert kcodec.decode("MetadataResponse", v, kcodec.encode(msg, v)) == msg


def test_elements_read_in_place_report_errors_at_the_element() -> None:
    cls = kcodec.message_class("MetadataResponse")
    topic, part = cls.MetadataResponseTopic, cls.MetadataResponsePartition  # type: ignore[attr-defined]
    msg = cls(  # type: ignore[call-arg]
        topics=[
            topic(name=f"t{t}", partitions=[
                part(partition_index=0x01020300 + 16 * t + p, replica_nodes=[1, 2], isr_nodes=[1])
                for p in range(3)
            ])
            for t in range(2)
        ]
    )
    data = bytearray(kcodec.encode(msg, 12))
    at = data.index((0x01020300 + 16 + 2).to_bytes(4, "big"))
    assert data[at + 12] == 3  # compact count of replica_nodes (2 + 1)
    data[at + 12] = 0x7F  # 126 replicas: more than the bytes left
    with pytest.raises(DecodeError) as e:
        kcodec.decode("MetadataResponse", 12, bytes(data))
    assert e.value.path == "MetadataResponse.topics[1].partitions[2].replica_nodes[5]"
    assert e.value.offset > at
    # a cut inside the tagged-field section of an element read in place
    with pytest.raises(DecodeError) as e:
        kcodec.decode("MetadataResponse", 12, bytes(data[: at + 12]))
    assert "topics[1].partitions[2]" in e.value.path


@pytest.mark.parametrize("version", [1, 9, 12])
def test_elements_written_in_place_report_errors_at_the_element(version: int) -> None:
    from kcodec.protocol.errors import EncodeError

    cls = kcodec.message_class("MetadataResponse")
    topic, part = cls.MetadataResponseTopic, cls.MetadataResponsePartition  # type: ignore[attr-defined]
    msg = cls(  # type: ignore[call-arg]
        topics=[topic(name=f"t{t}", partitions=[part(partition_index=p, isr_nodes=[1, 2]) for p in range(3)])
                for t in range(2)]
    )
    msg.topics[1].partitions[2].isr_nodes = [1, 2**40]
    with pytest.raises(EncodeError) as e:
        kcodec.encode(msg, version)
    assert e.value.path.startswith("MetadataResponse.topics[1].partitions[2].isr_nodes")
    msg.topics[1].partitions[2].isr_nodes = [1]
    assert kcodec.decode("MetadataResponse", version, kcodec.encode(msg, version)) == msg


def test_a_bool_is_not_a_version_even_once_the_int_one_is_cached() -> None:
    msg = kcodec.message_class("ApiVersionsRequest")()
    data = kcodec.encode(msg, 1)
    assert kcodec.decode("ApiVersionsRequest", 1, data) == msg
    with pytest.raises(UnsupportedVersionError):
        kcodec.decode("ApiVersionsRequest", True, data)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedVersionError):
        kcodec.encode(msg, True)  # type: ignore[arg-type]


@pytest.mark.parametrize("version", [0, 4, 6, 10])
def test_nested_elements_written_in_place_report_errors_at_the_inner_element(version: int) -> None:
    """ListOffsets topics are written in the loop of the request, their partitions in the topic's."""
    from kcodec.protocol.errors import EncodeError

    cls = kcodec.message_class("ListOffsetsRequest")
    topic, part = cls.ListOffsetsTopic, cls.ListOffsetsPartition  # type: ignore[attr-defined]
    msg = cls(  # type: ignore[call-arg]
        topics=[topic(name=f"t{t}", partitions=[part(partition_index=p, timestamp=-1) for p in range(3)])
                for t in range(3)]
    )
    data = kcodec.encode(msg, version)
    assert kcodec.encode(kcodec.decode("ListOffsetsRequest", version, data), version) == data
    msg.topics[2].partitions[1].timestamp = 2**70
    with pytest.raises(EncodeError) as e:
        kcodec.encode(msg, version)
    assert e.value.path.startswith("ListOffsetsRequest.topics[2].partitions[1].timestamp")
    msg.topics[2].partitions[1].timestamp = -1
    msg.topics[1].name = None
    with pytest.raises(EncodeError) as e:
        kcodec.encode(msg, version)
    assert e.value.path.startswith("ListOffsetsRequest.topics[1].name")



def _foreign(value: object, make: str, element: bool = False) -> object:
    """``value`` with every struct element of its arrays (at any depth) replaced by an object of
    another class holding the same fields: an instance of a subclass (``make == "subclass"``) or a
    plain namespace (``"duck"``); ``"same"`` copies it with the same classes. Structs that are not
    array elements keep their class (a struct field's default is compared with one of its class)."""
    from types import SimpleNamespace

    from kcodec.protocol.model import Struct

    if isinstance(value, list):
        return [_foreign(v, make, True) for v in value]
    if not isinstance(value, Struct):
        return value
    fields = {name: _foreign(getattr(value, name), make) for name in value._fields_}
    unknown = value._unknown_tagged_fields  # type: ignore[attr-defined]
    if not element or make == "same":
        return type(value)(**fields, unknown_tagged_fields=unknown)
    if make == "duck":
        return SimpleNamespace(**fields, _unknown_tagged_fields=unknown)
    sub = type(f"Sub{type(value).__name__}", (type(value),), {})
    return sub(**fields, unknown_tagged_fields=unknown)


def _richest(name: str, version: int) -> Message:
    """The golden case of ``name`` at ``version`` with the most bytes, decoded."""
    from golden_data import message_cases

    case = max((c for c in message_cases() if c["message"] == name and c["version"] == version),
               key=lambda c: len(c["hex"]))
    return kcodec.decode(name, version, bytes.fromhex(case["hex"]))


def _last_element(msg: object) -> object:
    """The last element of the first non-empty array of structs, as deep as they go."""
    found = None
    for name in getattr(msg, "_fields_", None) or [k for k in vars(msg) if not k.startswith("_")]:
        value = getattr(msg, name)
        if isinstance(value, list) and value and not isinstance(value[-1], int | str | bytes):
            found = _last_element(value[-1]) or value[-1]
            break
    return found


@pytest.mark.parametrize("make", ["subclass", "duck"])
@pytest.mark.parametrize(
    ("name", "version"),  # arrays of structs written in place: inline, shaped, same width
    [("ListOffsetsRequest", 4), ("MetadataResponse", 12), ("ApiVersionsResponse", 3), ("ProduceRequest", 9),
     ("FetchRequest", 12)],
)
def test_elements_of_another_class_are_written_as_the_struct_class_writes_them(
    name: str, version: int, make: str
) -> None:
    """The compiled build reads elements of exactly their struct's class through native attributes and
    hands any other object to the element's own encoder: the bytes, and the errors, stay the pure
    build's (which reads every element by attribute name)."""
    from kcodec.protocol.errors import EncodeError

    msg = _richest(name, version)
    data = kcodec.encode(msg, version)
    try:
        other = _foreign(msg, make)
    except TypeError as e:  # the compiled build's struct classes are native, and final
        assert make == "subclass" and kcodec.compiled and "cannot inherit from compiled" in str(e)
        return
    same = _foreign(msg, "same")
    assert kcodec.encode(other, version) == data  # type: ignore[arg-type]
    assert kcodec.encoder(name, version)(other) == data  # type: ignore[arg-type]
    # a bad field in the deepest last element: the same error, at the same path, whatever its class
    errors, bad = [], object()
    for m in (same, other):
        element = _last_element(m)
        assert element is not None
        duck = make == "duck" and m is other
        fields = [f for f in vars(element) if not f.startswith("_")] if duck else type(element)._fields_  # type: ignore[attr-defined]
        setattr(element, fields[0], bad)
        with pytest.raises(EncodeError) as e:
            kcodec.encode(m, version)  # type: ignore[arg-type]
        errors.append((e.value.path, str(e.value)))
    assert errors[0] == errors[1]
