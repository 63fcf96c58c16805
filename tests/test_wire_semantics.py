"""Wire rules beyond the golden corpus: decoder safety, error paths, tagged fields, nulls, headers."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import time

import construct
import pytest

import kcodec
from kcodec.protocol.codec import module
from kcodec.protocol.errors import (
    DecodeError,
    EncodeError,
    KcodecError,
    NullValueError,
    TrailingBytesError,
    UnknownMessageError,
    UnsupportedVersionError,
)
from kcodec.protocol.model import Uuid


def cls(message: str, struct_name: str | None = None) -> type:
    return getattr(module(message), struct_name or message)  # type: ignore[no-any-return]


def fetch_request() -> object:
    fr, ft, fp = cls("FetchRequest"), cls("FetchRequest", "FetchTopic"), cls("FetchRequest", "FetchPartition")
    return fr(
        topics=[ft(topic=f"t{i}", partitions=[fp(partition=p, current_leader_epoch=5) for p in range(2)])
                for i in range(4)]
    )


# --- errors form one hierarchy ------------------------------------------------------------------

def test_error_hierarchy() -> None:
    for err in (DecodeError, EncodeError, NullValueError, UnsupportedVersionError, UnknownMessageError,
                TrailingBytesError, kcodec.errors.SpecError, kcodec.errors.JsonError):
        assert issubclass(err, KcodecError)


# --- decoder safety -------------------------------------------------------------------------------

def test_truncation_names_the_exact_field_and_offset() -> None:
    data = kcodec.encode(fetch_request(), 12)
    cut = 248  # two bytes into topics[3].partitions[0].current_leader_epoch
    with pytest.raises(DecodeError) as exc:
        kcodec.decode("FetchRequest", 12, data[:cut])
    assert exc.value.path == "FetchRequest.topics[3].partitions[0].current_leader_epoch"
    assert exc.value.offset == 247
    assert "at byte 247" in str(exc.value)


def test_every_truncation_raises_decode_error_never_anything_else() -> None:
    data = kcodec.encode(fetch_request(), 12)
    for cut in range(len(data)):
        with pytest.raises(DecodeError) as exc:
            kcodec.decode("FetchRequest", 12, data[:cut])
        assert exc.value.path.startswith("FetchRequest")
        assert 0 <= exc.value.offset <= cut


def test_huge_count_in_tiny_frame_fails_at_once() -> None:
    # 12-byte frame: size prefix, Metadata v0 request header would follow; here the body alone:
    # an int32 array count of 2**31-1 followed by 8 bytes.
    for message in ("MetadataRequest", "MetadataResponse", "ProduceRequest", "FetchResponse"):
        body = struct.pack(">i", 2**31 - 1) + b"\x00" * 8
        start = time.perf_counter()
        with pytest.raises(DecodeError):
            kcodec.decode(message, 0, body)
        assert time.perf_counter() - start < 1.0  # generous: it must not loop 2**31 times


def test_huge_primitive_array_count_is_refused_before_allocating() -> None:
    # MetadataResponse v0 partition replica list ([]int32) claiming 2**31-1 elements.
    mr, broker = cls("MetadataResponse"), cls("MetadataResponse", "MetadataResponseBroker")
    topic, part = cls("MetadataResponse", "MetadataResponseTopic"), cls("MetadataResponse", "MetadataResponsePartition")
    msg = mr(brokers=[broker(node_id=1, host="h", port=1)],
             topics=[topic(name="t", partitions=[part(replica_nodes=[1, 2])])])
    data = bytearray(kcodec.encode(msg, 0))
    idx = data.rfind(struct.pack(">i", 2) + struct.pack(">ii", 1, 2))
    data[idx:idx + 4] = struct.pack(">i", 2**31 - 1)
    with pytest.raises(DecodeError) as exc:
        kcodec.decode("MetadataResponse", 0, bytes(data))
    assert "array count 2147483647" in exc.value.reason
    assert exc.value.path.startswith("MetadataResponse.topics[0].partitions[0].replica_nodes[")


def test_negative_lengths_and_null_in_non_nullable() -> None:
    with pytest.raises(DecodeError, match="not nullable"):
        kcodec.decode("MetadataRequest", 0, struct.pack(">ih", 1, -1))
    with pytest.raises(DecodeError, match="length -2"):
        kcodec.decode("MetadataRequest", 0, struct.pack(">ih", 1, -2))
    with pytest.raises(DecodeError, match="invalid length -2"):  # nullable array: only -1 means null
        kcodec.decode("MetadataRequest", 4, struct.pack(">i", -2) + b"\x00")
    assert kcodec.decode("MetadataRequest", 4, struct.pack(">i", -1) + b"\x00").topics is None


def test_invalid_utf8_is_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="UTF-8") as exc:
        kcodec.decode("MetadataRequest", 0, struct.pack(">ih", 1, 2) + b"\xff\xfe")
    assert exc.value.path == "MetadataRequest.topics[0].name"


def test_overlong_varint_is_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="varint"):
        kcodec.decode("ApiVersionsRequest", 3, b"\xff\xff\xff\xff\xff\xff\x01")


def test_trailing_bytes_strict_and_lenient() -> None:
    body = kcodec.encode(cls("ApiVersionsRequest")(client_software_name="a", client_software_version="b"), 3)
    with pytest.raises(TrailingBytesError) as exc:
        kcodec.decode("ApiVersionsRequest", 3, body + b"xyz")
    assert exc.value.offset == len(body)
    diags: list[kcodec.protocol.codec.Diagnostic] = []
    msg = kcodec.decode("ApiVersionsRequest", 3, body + b"xyz", strict=False, diagnostics=diags)
    assert msg.client_software_name == "a"
    assert len(diags) == 1 and diags[0].offset == len(body) and "3 trailing bytes" in diags[0].reason


def test_memoryview_and_bytearray_inputs_and_zero_copy_records() -> None:
    pr, td, pd = cls("ProduceRequest"), cls("ProduceRequest", "TopicProduceData"), cls("ProduceRequest", "PartitionProduceData")
    records = bytes(range(256)) * 64
    body = kcodec.encode(pr(acks=-1, timeout_ms=1000, topic_data=[td(name="t", partition_data=[pd(index=0, records=records)])]), 9)
    buf = bytearray(body)
    msg = kcodec.decode("ProduceRequest", 9, memoryview(buf))
    rec = msg.topic_data[0].partition_data[0].records
    assert isinstance(rec, memoryview) and rec == records
    assert rec.obj is buf  # a view into the caller's buffer, not a copy
    assert kcodec.encode(msg, 9) == body


# --- tagged fields ----------------------------------------------------------------------------------

def test_unknown_tagged_fields_are_kept_and_written_back_in_tag_order() -> None:
    req = cls("ApiVersionsRequest")(client_software_name="x", client_software_version="y")
    req.unknown_tagged_fields.extend([(3, b""), (7, b"\x01\x02")])
    data = kcodec.encode(req, 3)
    assert data.endswith(b"\x02" + b"\x03\x00" + b"\x07\x02\x01\x02")
    again = kcodec.decode("ApiVersionsRequest", 3, data)
    assert again.unknown_tagged_fields == [(3, b""), (7, b"\x01\x02")]
    assert kcodec.encode(again, 3) == data


def test_unknown_tags_merge_with_known_ones_in_ascending_order() -> None:
    # FetchRequest v12: ClusterId is tag 0 (known). Add unknown tags 1 (not known at v12) and 5.
    msg = cls("FetchRequest")(cluster_id="c")
    msg.unknown_tagged_fields.extend([(1, b"\x08"), (5, b"\x09")])
    data = kcodec.encode(msg, 12)
    assert data.endswith(b"\x03" + b"\x00\x02\x02c" + b"\x01\x01\x08" + b"\x05\x01\x09")
    back = kcodec.decode("FetchRequest", 12, data)
    assert back.cluster_id == "c" and back.unknown_tagged_fields == [(1, b"\x08"), (5, b"\x09")]


def test_tagged_field_read_within_declared_size() -> None:
    base = kcodec.encode(cls("FetchRequest")(), 12)
    assert base.endswith(b"\x00")
    exact = base[:-1] + b"\x01" + b"\x00\x02" + b"\x02c"
    assert kcodec.decode("FetchRequest", 12, exact).cluster_id == "c"
    # ClusterId (tag 0) declared with size 4 but holding a 2-byte compact string: refused (the two
    # extra bytes would vanish on re-encoding, and Kafka's reader would take them for the next tag)
    extra = base[:-1] + b"\x01" + b"\x00\x04" + b"\x02c" + b"\xee\xee"
    with pytest.raises(DecodeError, match="ClusterId .tag 0. ends 2 bytes before its declared size of 4"):
        kcodec.decode("FetchRequest", 12, extra)
    # declared size 1 but the value needs 2 bytes: an error, not a silent misread.
    short = base[:-1] + b"\x01" + b"\x00\x01" + b"\x02c"
    with pytest.raises(DecodeError) as exc:
        kcodec.decode("FetchRequest", 12, short)
    assert exc.value.path == "FetchRequest.cluster_id"
    # a size running past the end of the buffer
    with pytest.raises(DecodeError):
        kcodec.decode("FetchRequest", 12, base[:-1] + b"\x01\x00\x09\x02c")


def test_tagged_fields_written_only_when_not_default() -> None:
    fr = cls("FetchRequest")
    assert kcodec.encode(fr(), 12).endswith(b"\x00")
    assert kcodec.encode(fr(cluster_id=None), 12) == kcodec.encode(fr(), 12)
    assert kcodec.encode(fr(cluster_id=""), 12) != kcodec.encode(fr(), 12)  # "" differs from the null default


# --- absent fields and nulls --------------------------------------------------------------------------

def test_non_default_absent_field_raises_kafkas_message() -> None:
    fp = cls("FetchRequest", "FetchPartition")
    msg = cls("FetchRequest")(topics=[cls("FetchRequest", "FetchTopic")(partitions=[fp(last_fetched_epoch=3)])])
    kcodec.encode(msg, 12)
    with pytest.raises(UnsupportedVersionError, match="Attempted to write a non-default lastFetchedEpoch at version 11"):
        kcodec.encode(msg, 11)
    # CurrentLeaderEpoch (KIP-320) is ignorable: silently dropped below v9, as Kafka does
    old = cls("FetchRequest")(topics=[cls("FetchRequest", "FetchTopic")(partitions=[fp(current_leader_epoch=3)])])
    assert kcodec.encode(old, 8) == kcodec.encode(cls("FetchRequest")(topics=[cls("FetchRequest", "FetchTopic")(partitions=[fp()])]), 8)


def test_ignorable_absent_field_is_dropped() -> None:
    msg = cls("FetchRequest")(max_bytes=10)  # MaxBytes: 3+, ignorable
    assert kcodec.encode(msg, 2) == kcodec.encode(cls("FetchRequest")(), 2)


def test_null_in_non_nullable_version_raises_with_path() -> None:
    t = cls("MetadataRequest", "MetadataRequestTopic")
    with pytest.raises(NullValueError) as exc:
        kcodec.encode(cls("MetadataRequest")(topics=[t(name=None)]), 0)
    assert exc.value.path == "MetadataRequest.topics[0].name"
    kcodec.encode(cls("MetadataRequest")(topics=[t(name=None)]), 10)  # nullable from v10


def test_out_of_range_int_raises_encode_error_with_path() -> None:
    with pytest.raises(EncodeError) as exc:
        kcodec.encode(cls("FetchRequest")(max_wait_ms=2**31), 4)
    assert exc.value.path == "FetchRequest.max_wait_ms"
    with pytest.raises(EncodeError):
        kcodec.encode(cls("MetadataRequest")(topics=[cls("MetadataRequest", "MetadataRequestTopic")(name="x" * 40000)]), 4)


def test_unknown_message_and_version() -> None:
    with pytest.raises(UnknownMessageError):
        kcodec.decode("NoSuchRequest", 0, b"")
    with pytest.raises(UnsupportedVersionError, match="kcodec knows 0-18"):
        kcodec.decode("FetchRequest", 19, b"")
    with pytest.raises(UnsupportedVersionError):
        kcodec.encode(cls("FetchRequest")(), 99)


# --- object model ------------------------------------------------------------------------------------

def test_object_model() -> None:
    fr = cls("FetchRequest")
    msg = fr()
    assert msg.max_bytes == 0x7FFFFFFF and msg.replica_id == -1 and msg.cluster_id is None
    assert msg.topics == [] and fr().topics is not msg.topics  # fresh mutable defaults
    assert not hasattr(msg, "__dict__")
    with pytest.raises(AttributeError):
        msg.no_such_field = 1  # type: ignore[attr-defined]
    assert fr(session_id=3) == fr(session_id=3) != fr(session_id=4)
    assert "session_id=3" in repr(fr(session_id=3))
    assert fr.FetchTopic is cls("FetchRequest", "FetchTopic")  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        fr(3)  # keyword-only


def test_map_key_arrays_keep_order_and_duplicates() -> None:
    t = cls("CreateTopicsRequest", "CreatableTopic")
    msg = cls("CreateTopicsRequest")(topics=[t(name="b"), t(name="a"), t(name="b")])
    back = kcodec.decode("CreateTopicsRequest", 7, kcodec.encode(msg, 7))
    assert [x.name for x in back.topics] == ["b", "a", "b"]


def test_uuid_values() -> None:
    u = Uuid("AAECAwQFBgcICQoLDA0ODw")
    assert bytes(u) == bytes(range(16)) and str(u) == "AAECAwQFBgcICQoLDA0ODw"
    assert Uuid.ZERO == bytes(16)
    with pytest.raises(ValueError):
        Uuid(b"short")


# --- headers, leader-epoch KIPs -----------------------------------------------------------------------

def test_header_version_rules() -> None:
    assert kcodec.api("ApiVersions").response_header_version(3) == 0
    assert kcodec.api("ApiVersions").request_header_version(3) == 2
    assert kcodec.api("ControlledShutdown").request_header_version(0) == 0
    assert kcodec.api("ControlledShutdown").request_header_version(1) == 1
    assert kcodec.api("Fetch").response_header_version(12) == 1
    # RequestHeader.ClientId is never compact: int16 length even in header v2
    hdr = cls("RequestHeader")(request_api_key=1, request_api_version=12, correlation_id=7, client_id="ab")
    assert kcodec.encode(hdr, 2) == struct.pack(">hhih", 1, 12, 7, 2) + b"ab" + b"\x00"


def test_frames_round_trip_and_offsets() -> None:
    frame = kcodec.encode_request(fetch_request(), 12, correlation_id=42, client_id="me")
    req = kcodec.decode_request(frame)
    assert (req.api_key, req.api_version, req.correlation_id, req.header_version) == (1, 12, 42, 2)
    assert req.body == fetch_request()
    with pytest.raises(DecodeError) as exc:
        kcodec.decode_request(frame[:4] + frame[4:-3] + b"\x00\x00\x00"[:0])
    assert exc.value.path == "frame.size"
    resp = cls("ApiVersionsResponse")(error_code=35)
    out = kcodec.encode_response(resp, 3, correlation_id=9)
    assert out[4:8] == struct.pack(">i", 9) and out[8:10] == struct.pack(">h", 35)  # header v0: no tag buffer
    assert kcodec.decode_response(out, 18, 3).body.error_code == 35


@pytest.mark.parametrize(
    ("api", "message", "path", "since"),
    [
        ("Fetch", "FetchRequest", "Topics.Partitions.CurrentLeaderEpoch", 9),  # KIP-320
        ("Fetch", "FetchRequest", "LastFetchedEpoch", 12),
        ("OffsetForLeaderEpoch", "OffsetForLeaderEpochRequest", "CurrentLeaderEpoch", 2),  # KIP-320
        ("ListOffsets", "ListOffsetsRequest", "CurrentLeaderEpoch", 4),  # KIP-320
        ("OffsetCommit", "OffsetCommitRequest", "CommittedLeaderEpoch", 6),  # KIP-320
        ("Metadata", "MetadataResponse", "LeaderEpoch", 7),  # KIP-232
        ("StopReplica", "StopReplicaRequest", "LeaderEpoch", 3),  # KIP-570
        ("InitProducerId", "InitProducerIdRequest", "ProducerEpoch", 3),  # KIP-360
    ],
)
def test_leader_epoch_fields_exist_from_their_kip_version(api: str, message: str, path: str, since: int) -> None:
    info = kcodec.api(api)
    versions = info.versions_with_field(path, response=message.endswith("Response"))
    assert versions and versions[0] == since and versions[-1] == info.max_version


def test_stop_replica_v3_leader_epoch_defaults_and_deletion_sentinel() -> None:
    sr = cls("StopReplicaRequest")
    st, sp = cls("StopReplicaRequest", "StopReplicaTopicState"), cls("StopReplicaRequest", "StopReplicaPartitionState")
    assert sp().leader_epoch == -1  # KIP-570: -1 when absent
    msg = sr(controller_id=1, topic_states=[st(topic_name="t", partition_states=[sp(partition_index=0, leader_epoch=-2, delete_partition=True)])])
    back = kcodec.decode("StopReplicaRequest", 3, kcodec.encode(msg, 3))
    assert back.topic_states[0].partition_states[0].leader_epoch == -2


# --- import cost and layering ----------------------------------------------------------------------

def test_import_is_lazy_and_runtime_never_imports_codegen() -> None:
    code = (
        "import sys, kcodec\n"
        "assert not any(m.startswith('kcodec._generated.') for m in sys.modules), 'eager codec import'\n"
        "kcodec.decode('FetchRequest', 4, bytes(4 * 3 + 4 + 1 + 4))\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('kcodec._generated.'))\n"
        "assert loaded == ['kcodec._generated.fetch_request', 'kcodec._generated.wire_types'], loaded\n"
        "assert 'kcodec.codegen' not in sys.modules and 'jinja2' not in sys.modules and 'hypothesis' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_strings_over_32767_bytes_are_refused_in_every_version() -> None:
    m = cls("MetadataRequest")
    for v in (8, 9):  # int16 length prefix, then compact
        with pytest.raises(EncodeError, match="32767"):
            kcodec.encode(m(topics=[cls("MetadataRequest", "MetadataRequestTopic")(name="x" * 40000)]), v)
    data = b"\x02" + b"\xc2\xb8\x02" + b"x" * 40001 + b"\x00" + b"\x00" + b"\x00"  # compact length 40001+1
    with pytest.raises(DecodeError, match="invalid length 40001"):
        kcodec.decode("MetadataRequest", 9, data)


def test_unknown_tagged_fields_at_a_version_without_them_are_refused() -> None:
    m = cls("MetadataRequest")(topics=[])
    m.unknown_tagged_fields.append((7, b"x"))
    with pytest.raises(UnsupportedVersionError, match="Tagged fields were set, but version 8"):
        kcodec.encode(m, 8)
    assert kcodec.decode("MetadataRequest", 9, kcodec.encode(m, 9)).unknown_tagged_fields == [(7, b"x")]


@pytest.mark.parametrize(
    ("unknown", "reason"),
    [
        ([(0, b"\x02z")], "uses tag 0, which this version defines"),
        ([(9, b""), (3, b"")], "ascending tag order"),
        ([(3, b""), (3, b"")], "ascending tag order"),
    ],
)
def test_bad_unknown_tag_lists_are_refused(unknown: list[tuple[int, bytes]], reason: str) -> None:
    with pytest.raises(EncodeError, match=reason) as exc:
        kcodec.encode(cls("FetchRequest")(cluster_id="c", unknown_tagged_fields=unknown), 12)
    assert exc.value.path == "FetchRequest._tagged_fields"


@pytest.mark.parametrize(
    ("body_hex", "offset", "reason"),
    [
        # HeartbeatResponse v4: throttle, error code, then a tagged section of two fields with tag 5 twice
        ("0000000000000205000500", 9, "tagged field 5 repeats tag 5"),
        ("0000000000000206000500", 9, "tagged field 5 comes after tag 6"),
        # one tag written as a 5-byte varint whose fifth byte carries bits above 32 (5 + 2**32)
        ("00000000000001858080801000", 7, "unsigned varint 4294967301 does not fit 32 bits"),
    ],
)
def test_tag_sections_that_could_not_be_written_back_are_refused_at_decode(
    body_hex: str, offset: int, reason: str
) -> None:
    data = bytes.fromhex(body_hex)
    with pytest.raises(DecodeError) as info:
        kcodec.decode("HeartbeatResponse", 4, data)
    assert info.value.offset == offset and info.value.reason.startswith(reason)
    assert info.value.path == "HeartbeatResponse._tagged_fields"
    with pytest.raises(construct.ConstructError, match=reason):  # the construct backend agrees
        kcodec.construct_schema("HeartbeatResponse", 4).parse(data)


def test_whatever_tag_section_decodes_re_encodes_byte_for_byte() -> None:
    # ascending unknown tags, one of them at 2**31 + 5 (a 5-byte varint within 32 bits)
    data = bytes.fromhex("000000000000" "03" "0500" "0601ff" "858080800800")
    msg = kcodec.decode("HeartbeatResponse", 4, data)
    assert msg.unknown_tagged_fields == [(5, b""), (6, b"\xff"), (2**31 + 5, b"")]
    assert kcodec.encode(msg, 4) == data


def _fetch_response_with_current_leader() -> tuple[bytes, int]:
    """FetchResponse v12 whose partitions[1] carries CurrentLeader (tag 1, 9 bytes); and where its
    tag-size byte is."""
    fr = cls("FetchResponse")
    part = cls("FetchResponse", "PartitionData")
    leader = cls("FetchResponse", "LeaderIdAndEpoch")(leader_id=3, leader_epoch=7)
    topic = cls("FetchResponse", "FetchableTopicResponse")(
        topic="t", partitions=[part(partition_index=0), part(partition_index=1, current_leader=leader)]
    )
    data = kcodec.encode(fr(responses=[topic]), 12)
    at = data.rindex(bytes.fromhex("0109" "00000003" "00000007" "00")) + 1
    return data, at


def test_a_known_tagged_value_ending_before_its_declared_size_is_refused() -> None:
    data, at = _fetch_response_with_current_leader()
    # declare 12 bytes and put 3 more after the 9-byte value: accepted, they would vanish on re-encoding
    bad = data[:at] + b"\x0c" + data[at + 1 : at + 10] + b"\xaa\xbb\xcc" + data[at + 10 :]
    reason = "tagged field CurrentLeader (tag 1) ends 3 bytes before its declared size of 12"
    path = "FetchResponse.responses[0].partitions[1].current_leader"
    with pytest.raises(DecodeError) as eager:
        kcodec.decode("FetchResponse", 12, bad)
    assert (eager.value.reason, eager.value.offset, eager.value.path) == (reason, at + 10, path)
    assert str(eager.value) == f"{reason} at byte {at + 10} in {path}"
    # lazily: the walk checks the section's bounds only; building the array reports the same error
    lazy = kcodec.decode("FetchResponse", 12, bad, lazy=True)
    with pytest.raises(DecodeError) as built:
        lazy.responses.materialize()
    assert (built.value.reason, built.value.offset, built.value.path) == (reason, at + 10, path)
    with pytest.raises(construct.ConstructError, match=re.escape(reason)):  # the construct backend agrees
        kcodec.construct_schema("FetchResponse", 12).parse(bad)
    assert kcodec.decode("FetchResponse", 12, data) is not None  # the honest size still decodes


@pytest.mark.parametrize("size", [8, 0])
def test_a_known_tagged_value_running_past_its_declared_size_is_refused(size: int) -> None:
    data, at = _fetch_response_with_current_leader()
    bad = data[:at] + bytes([size]) + data[at + 1 :]
    with pytest.raises(DecodeError) as e:
        kcodec.decode("FetchResponse", 12, bad)
    assert e.value.path == "FetchResponse.responses[0].partitions[1].current_leader"
    with pytest.raises(construct.ConstructError):
        kcodec.construct_schema("FetchResponse", 12).parse(bad)


def test_a_top_level_known_tagged_value_shorter_than_its_size_is_refused() -> None:
    # FetchRequest v17: ClusterId (tag 0) null in 1 byte (compact length 0) but declaring 3 bytes
    data = bytes.fromhex("00000000000000007fffffff0000000000ffffffff01010101000300aabb")
    with pytest.raises(DecodeError) as e:
        kcodec.decode("FetchRequest", 17, data)
    assert e.value.reason == "tagged field ClusterId (tag 0) ends 2 bytes before its declared size of 3"
    assert (e.value.offset, e.value.path) == (len(data) - 2, "FetchRequest.cluster_id")
    with pytest.raises(DecodeError, match="ClusterId"):
        kcodec.decode("FetchRequest", 17, data, lazy=True)  # the root's section is read, not walked
    with pytest.raises(construct.ConstructError, match="ends 2 bytes before its declared size of 3"):
        kcodec.construct_schema("FetchRequest", 17).parse(data)
