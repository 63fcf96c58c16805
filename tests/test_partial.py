"""kcodec.protocol.partial: a body that does not decode is read as far as it goes. On real bodies (golden
fixtures made by Kafka's serializer, frames recorded in samples/sample.pcap and tests/captures/) cut
at every offset, and with one length, count, string or tagged-field size broken: the reader never
raises, stops with the codec's own DecodeError (offset, path, reason), and what it shows is the
full decode's JSON restricted to what precedes the bad spot (tests/damage.py)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
from damage import damaged, field_map, restrict
from golden_data import message_cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kcodec
from kcodec.capture import CapturedFrame, ConnectionDecoder, iter_capture
from kcodec.protocol import strategies
from kcodec.protocol.codec import decode_at
from kcodec.protocol.errors import DecodeError
from kcodec.protocol.partial import read_partial

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = [ROOT / "samples" / "sample.pcap", *sorted((ROOT / "tests" / "captures").rglob("*.pcap"))]


def codec_error(name: str, version: int, body: bytes) -> tuple[int, str, str] | None:
    try:
        kcodec.decode(name, version, body)
    except DecodeError as e:
        return e.offset, e.path, e.reason
    return None


def check_cuts(name: str, version: int, data: bytes, offsets: Any) -> int:
    """``data`` cut at each offset: the codec's error, and the full JSON up to the cut."""
    full = kcodec.to_json(kcodec.decode(name, version, data), version)
    ends, starts = field_map(name, version, data)
    n = 0
    for k in offsets:
        body = data[:k]
        p = read_partial(name, version, body)
        assert p.error is not None and not p.complete
        assert (p.error.offset, p.error.path, p.error.reason) == codec_error(name, version, body), (name, k)
        assert p.to_json() == restrict(name, version, full, ends, starts, k), (name, version, k)
        n += 1
    return n


def _offsets(size: int, every: int = 1500, spread: int = 400) -> range | list[int]:
    return range(size) if size <= every else sorted({size * i // spread for i in range(spread)} | {size - 1})


def test_golden_bodies_cut_at_every_offset() -> None:
    n = 0
    for case in message_cases():
        data = bytes.fromhex(case["hex"])
        n += check_cuts(case["message"], case["version"], data, _offsets(len(data), 100, 8))
    assert n > 25_000


@cache
def recorded_bodies() -> list[tuple[str, int, bytes]]:
    """(message, version, body bytes) of every decoded frame of the recorded captures."""
    out = []
    for path in CAPTURES:
        for ev in iter_capture(str(path)):
            if isinstance(ev, CapturedFrame) and ev.ok and ev.body is not None and ev.api_version is not None:
                header_name = "RequestHeader" if ev.direction == "request" else "ResponseHeader"
                assert ev.header_version is not None
                _, end = decode_at(header_name, ev.header_version, memoryview(ev.raw)[4:])
                body = ev.raw[4 + end :]
                name = type(ev.body).MESSAGE_NAME
                try:
                    kcodec.decode(name, ev.api_version, body)
                except DecodeError:  # a body read leniently (trailing bytes, a known quirk)
                    continue
                out.append((name, ev.api_version, body))
    return out


def test_recorded_frames_cut_at_every_offset() -> None:
    bodies = recorded_bodies()
    assert len(bodies) > 50
    n = sum(check_cuts(name, v, body, _offsets(len(body))) for name, v, body in bodies)
    assert n > 10_000


def test_broken_items_stop_where_the_codec_does() -> None:
    """One length or count corrupted, invalid UTF-8 in one string, a tagged-field size too big, an
    unknown tag with a bad size: the codec's error, and before the broken item exactly the full
    decode's JSON. Where the breakage is caught at the item itself (a string or tag running past
    the end, bad UTF-8), the partial object is exactly the full JSON restricted to before it."""
    n = exact = 0
    sources = [(c["message"], c["version"], bytes.fromhex(c["hex"])) for c in message_cases()]
    for name, version, data in [*sources[::3], *recorded_bodies()]:
        if len(data) > 1200:
            continue
        full = kcodec.to_json(kcodec.decode(name, version, data), version)
        ends, starts = field_map(name, version, data)
        for what, spot, body in damaged(name, version, data):
            p = read_partial(name, version, body)
            got = None if p.error is None else (p.error.offset, p.error.path, p.error.reason)
            assert got == codec_error(name, version, body), (name, version, what)
            shown = p.to_json()
            want = restrict(name, version, full, ends, starts, spot)
            assert restrict(name, version, shown, ends, starts, spot) == want, (name, version, what)
            if p.error is not None and p.error.offset <= spot + 5 and "->" not in what:
                assert shown == want, (name, version, what)
                exact += 1
            n += 1
    assert n > 8_000 and exact > 500


def test_invalid_utf8_in_one_string() -> None:
    msg = kcodec.message_class("MetadataRequest")(
        topics=[kcodec.message_class("MetadataRequest").MetadataRequestTopic(name=t) for t in ("a", "bb", "c")]
    )
    data = bytearray(kcodec.encode(msg, 9))
    at = data.index(b"bb")
    data[at + 1] = 0xFF
    p = read_partial("MetadataRequest", 9, bytes(data))
    assert p.error is not None and p.error.reason.startswith("invalid UTF-8")
    assert p.error.path == "MetadataRequest.topics[1].name" and p.error.offset == at + 1
    assert p.to_json() == {"topics": [{"name": "a"}, {}]}
    assert "topics (cut)" in p.describe()


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_generated_messages_cut_anywhere(data: st.DataObject) -> None:
    name, version = data.draw(st.sampled_from(strategies.pairs()))
    body = kcodec.encode(data.draw(strategies.messages(name, version)), version)
    if not body:
        return
    k = data.draw(st.integers(0, len(body) - 1))
    check_cuts(name, version, body, [k])


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(strategies.pairs()), st.binary(max_size=200))
def test_never_raises_on_garbage(pair: tuple[str, int], garbage: bytes) -> None:
    name, version = pair
    p = read_partial(name, version, garbage)
    expected = codec_error(name, version, garbage)
    got = None if p.error is None else (p.error.offset, p.error.path, p.error.reason)
    if expected is not None or got is None or not got[2].endswith(f"after {name} v{version}"):
        assert got == expected
    assert isinstance(p.to_json(), dict)


def test_a_whole_body_is_its_json() -> None:
    case = next(c for c in message_cases() if c["message"] == "FetchResponse")
    data = bytes.fromhex(case["hex"])
    p = read_partial("FetchResponse", case["version"], data)
    assert p.complete and p.to_json() == kcodec.to_json(kcodec.decode("FetchResponse", case["version"], data),
                                                        case["version"])
    with pytest.raises(kcodec.errors.UnsupportedVersionError):
        read_partial("FetchResponse", 999, data)


# -- in the capture decoder ------------------------------------------------------------------------


def _frames(requests: list[bytes], responses: list[bytes]) -> list[CapturedFrame]:
    dec = ConnectionDecoder(1, client="10.0.0.1:50000", server="10.0.0.2:9092")
    events = []
    for req in requests:
        events += dec.feed_bytes("request", req, 1.0)
    for resp in responses:
        events += dec.feed_bytes("response", resp, 2.0)
    events += dec.finish()
    return [e for e in events if isinstance(e, CapturedFrame)]


def _cut_frame(frame: bytes, keep: int) -> bytes:
    """The frame with its body cut to its first ``keep`` bytes after the header, size prefix fixed."""
    body = frame[4:keep]
    return len(body).to_bytes(4, "big") + body


def test_capture_frame_with_a_cut_body_shows_the_partial_body() -> None:
    meta = kcodec.message_class("MetadataResponse")
    topic, part = meta.MetadataResponseTopic, meta.MetadataResponsePartition
    resp = meta(
        brokers=[meta.MetadataResponseBroker(node_id=1, host="b1", port=9092)],
        cluster_id="c1", controller_id=1,
        topics=[topic(name="orders", partitions=[part(partition_index=i, leader_id=1, leader_epoch=7,
                                                      replica_nodes=[1], isr_nodes=[1]) for i in range(4)])],
    )
    req = kcodec.message_class("MetadataRequest")(topics=None)
    whole = kcodec.encode_response(resp, 12, correlation_id=5)
    header_end = 4 + 4 + 1  # size, correlation id, empty tagged section (response header v1)
    body = whole[header_end:]
    cut = _cut_frame(whole, len(whole) - 30)
    frames = _frames([kcodec.encode_request(req, 12, correlation_id=5, client_id="c")], [cut])
    f = frames[1]
    assert f.error is not None and f.partial is not None and f.header is not None
    d = f.to_dict()
    assert d["partial"] is True and d["header"] == {"correlationId": 5}
    assert d["error"]["offset"] == f.partial.error.offset  # type: ignore[union-attr]
    assert d["diagnostics"][-1] == f"{type(f.error).__name__}: {f.error}"
    assert d["diagnostics"][-2].startswith("partial body: MetadataResponse v12 read ")
    ends, starts = field_map("MetadataResponse", 12, body)
    k = len(cut) - header_end
    assert d["body"] == restrict("MetadataResponse", 12, kcodec.to_json(resp, 12), ends, starts, k)
    assert d["body"]["topics"][0]["name"] == "orders" and len(d["body"]["topics"][0]["partitions"]) >= 2
    assert frames[0].to_dict()["partial"] is False


def test_capture_frame_whose_header_breaks_has_no_partial_body() -> None:
    req = kcodec.encode_request(kcodec.message_class("MetadataRequest")(topics=None), 12, correlation_id=5,
                                client_id="client")
    cut = _cut_frame(req, 4 + 2 + 2 + 4 + 2 + 3)  # inside the client id
    f = _frames([cut], [])[0]
    assert f.error is not None and f.partial is None and f.to_dict()["body"] is None


def test_capture_frame_cut_by_the_end_of_the_capture_shows_the_partial_body() -> None:
    fetch = kcodec.message_class("FetchRequest")
    topic, part = fetch.FetchTopic, fetch.FetchPartition
    req = fetch(max_wait_ms=500, topics=[topic(topic="orders", partitions=[
        part(partition=i, current_leader_epoch=3, fetch_offset=100 + i) for i in range(6)])])
    whole = kcodec.encode_request(req, 12, correlation_id=9, client_id="app")
    captured = whole[: len(whole) - 40]  # the capture ends 40 bytes before the frame does
    (f,) = _frames([captured], [])
    assert f.error is not None and f.error.reason.startswith("frame truncated")
    assert f.partial is not None and f.header is not None
    d = f.to_dict()
    assert d["partial"] is True and d["header"]["clientId"] == "app"
    assert d["diagnostics"][-1].startswith("DecodeError: frame truncated")
    assert d["diagnostics"][-2].startswith("partial body: FetchRequest v12 read ")
    body = whole[4 + 2 + 2 + 4 + 2 + 3 + 1 :]
    ends, starts = field_map("FetchRequest", 12, body)
    want = restrict("FetchRequest", 12, kcodec.to_json(req, 12), ends, starts, len(captured) - (len(whole) - len(body)))
    assert d["body"] == want and len(want["topics"][0]["partitions"]) >= 3
