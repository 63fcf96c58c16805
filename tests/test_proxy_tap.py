"""The proxy's tap without a network: what it decodes live equals what ``kcodec decode-capture``'s reader
gets from the pcap it writes (IPv4 and IPv6, frames larger than a segment, a cut frame, a reset), and
the synthesised TCP is consistent (handshake, sequence and acknowledgement numbers, FIN/RST)."""

from __future__ import annotations

import io
from typing import Any

import pytest

import kcodec
from kcodec.capture import CapturedFrame, CaptureEvent, RawPacket, iter_capture, iter_packets
from kcodec.capture.segments import TH_ACK, TH_FIN, TH_RST, TH_SYN, Segment, iter_segments
from kcodec.proxy import PcapWriter, Tap, capture_time
from kcodec.proxy.pcap import MSS
from kcodec.records import NewRecord, build_batch


def _produce(cid: int, value_size: int) -> bytes:
    cls: Any = kcodec.message_class("ProduceRequest")
    records = build_batch([NewRecord(key=b"k", value=b"v" * value_size)]) if value_size else None
    part = cls.PartitionProduceData(index=0, records=records)
    body = cls(acks=-1, timeout_ms=1000, topic_data=[cls.TopicProduceData(name="t", partition_data=[part])])
    return kcodec.encode_request(body, 9, correlation_id=cid)


def _produce_response(cid: int) -> bytes:
    cls: Any = kcodec.message_class("ProduceResponse")
    part = cls.PartitionProduceResponse(index=0, base_offset=42)
    body = cls(responses=[cls.TopicProduceResponse(name="t", partition_responses=[part])])
    return kcodec.encode_response(body, 9, correlation_id=cid)


def _record(client: tuple[str, int], server: tuple[str, int], script: list[tuple[str, bytes]], **close: Any):  # type: ignore[no-untyped-def]
    out = io.BytesIO()
    writer = PcapWriter(out)
    live: list[CaptureEvent] = []
    tap = Tap(1, client, server, live.append, writer)
    tap.opened()
    for direction, data in script:
        tap.data(direction, data)  # type: ignore[arg-type]
    tap.closed(close.get("first", "client"), reset=close.get("reset", False))
    writer.flush()
    return live, out.getvalue()


@pytest.mark.parametrize(
    ("client", "server"),
    [(("127.0.0.1", 50001), ("127.0.0.1", 40001)), (("::1", 50001), ("::1", 40001))],
)
def test_live_and_recorded_agree(client: tuple[str, int], server: tuple[str, int]) -> None:
    big = _produce(2, 3 * MSS)  # spans four segments
    script = [
        ("request", _produce(1, 10)),
        ("response", _produce_response(1)),
        ("request", big),
        ("response", _produce_response(2)),
    ]
    live, pcap = _record(client, server, script)
    frames = [e for e in live if isinstance(e, CapturedFrame)]
    assert [(f.direction, f.correlation_id, f.error) for f in frames] == [
        ("request", 1, None),
        ("response", 1, None),
        ("request", 2, None),
        ("response", 2, None),
    ]
    assert frames[0].client == (f"[{client[0]}]:50001" if ":" in client[0] else f"{client[0]}:50001")
    back = list(iter_capture(io.BytesIO(pcap), ports=[server[1]]))
    assert [e.to_dict() for e in back] == [e.to_dict() for e in live]
    # ... and by autodetection (no port given): the SYN and the first request tell the sides apart
    assert [e.to_dict() for e in iter_capture(io.BytesIO(pcap))] == [e.to_dict() for e in live]


def test_synthesised_tcp() -> None:
    _, pcap = _record(
        ("127.0.0.1", 50001),
        ("127.0.0.1", 40001),
        [("request", _produce(1, 2 * MSS)), ("response", _produce_response(1))],
    )
    segs = [s for s in iter_segments(io.BytesIO(pcap), keep_acks=True) if isinstance(s, Segment)]
    flags = [(s.src.endswith(":50001"), s.flags & (TH_SYN | TH_FIN | TH_RST | TH_ACK)) for s in segs]
    assert flags[:3] == [(True, TH_SYN), (False, TH_SYN | TH_ACK), (True, TH_ACK)]
    assert flags[-3:] == [(True, TH_FIN | TH_ACK), (False, TH_FIN | TH_ACK), (True, TH_ACK)]
    next_seq: dict[str, int] = {}
    for s in segs:
        if s.src in next_seq:
            assert s.seq == next_seq[s.src]
        next_seq[s.src] = (s.seq + len(s.payload) + bool(s.flags & (TH_SYN | TH_FIN))) & 0xFFFFFFFF
        if s.flags & TH_ACK and s.dst in next_seq:
            assert s.ack == next_seq[s.dst]  # acknowledges everything the other side sent
        assert len(s.payload) <= MSS
    assert sum(len(s.payload) for s in segs) == len(_produce(1, 2 * MSS)) + len(_produce_response(1))


def test_a_cut_frame_and_a_reset() -> None:
    whole = _produce(1, 100)
    live, pcap = _record(
        ("127.0.0.1", 50001), ("127.0.0.1", 40001), [("request", whole[:60])], first="client", reset=True
    )
    assert [(e.to_dict()["type"], e.to_dict().get("kind")) for e in live] == [
        ("frame", None),  # the part that came, with its error
        ("issue", "truncated"),
    ]
    assert [e.to_dict() for e in iter_capture(io.BytesIO(pcap))] == [e.to_dict() for e in live]
    segs = [s for s in iter_segments(io.BytesIO(pcap)) if isinstance(s, Segment)]
    assert segs[-1].flags & TH_RST and segs[-1].src == "127.0.0.1:50001"


def test_capture_time_is_what_a_pcap_reader_reads() -> None:
    out = io.BytesIO()
    writer = PcapWriter(out)
    stamps = [capture_time() for _ in range(50)]
    for ts in stamps:
        writer.write(ts, b"\x00" * 60)
    read = [p.timestamp for p in iter_packets(io.BytesIO(out.getvalue())) if isinstance(p, RawPacket)]
    assert read == stamps


def test_records_survive() -> None:
    live, _ = _record(("127.0.0.1", 50001), ("127.0.0.1", 40001), [("request", _produce(7, 5000))])
    (frame,) = [e for e in live if isinstance(e, CapturedFrame)]
    body: Any = frame.body
    records = body.topic_data[0].partition_data[0].records
    assert bytes(records) == build_batch([NewRecord(key=b"k", value=b"v" * 5000)])


def test_dpkt_reads_the_packets() -> None:
    """An independent reader (dpkt) agrees: Ethernet/IP/TCP headers, IPv4 header checksums, payloads."""
    import dpkt

    script = [("request", _produce(1, 2 * MSS)), ("response", _produce_response(1))]
    for client, server in ((("127.0.0.1", 50001), ("127.0.0.2", 40001)), (("::1", 50001), ("::1", 40001))):
        _, pcap = _record(client, server, script)
        payload = b""
        for _, buf in dpkt.pcap.Reader(io.BytesIO(pcap)):
            ip = dpkt.ethernet.Ethernet(buf).data
            tcp = ip.data
            assert isinstance(tcp, dpkt.tcp.TCP) and {tcp.sport, tcp.dport} == {50001, 40001}
            if isinstance(ip, dpkt.ip.IP):
                assert ip.len == len(bytes(ip)) and dpkt.in_cksum(bytes(ip)[:20]) == 0
            else:
                assert ip.plen == len(bytes(tcp))
            payload += tcp.data
        assert payload == b"".join(data for _, data in script)
