"""Streaming: decoding a capture takes memory bounded by the connections open at a time and the
requests in flight on them, not by the size of the capture. A 200 MB generated capture decodes (frames
converted to JSON objects, as ``--json`` does) in about the peak memory of a 20 MB one; each runs in a
fresh interpreter, which reports its own peak resident size."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from pcap_build import Conversation, pcap_header, pcap_record

import kcodec

_PRODUCE: Any = kcodec.message_class("ProduceRequest")
_PRODUCE_RESP: Any = kcodec.message_class("ProduceResponse")


def _produce(corr: int, payload: bytes) -> tuple[bytes, bytes]:
    part = _PRODUCE.PartitionProduceData(index=corr % 8, records=payload)
    req = _PRODUCE(
        acks=-1, timeout_ms=1000, topic_data=[_PRODUCE.TopicProduceData(name="bulk", partition_data=[part])]
    )
    presp = _PRODUCE_RESP.PartitionProduceResponse(index=corr % 8, base_offset=corr * 100)
    resp = _PRODUCE_RESP(
        responses=[_PRODUCE_RESP.TopicProduceResponse(name="bulk", partition_responses=[presp])]
    )
    return kcodec.encode_request(req, 9, correlation_id=corr), kcodec.encode_response(
        resp, 9, correlation_id=corr
    )


def write_capture(path: Path, megabytes: int) -> int:
    """Connections one after the other (4 open at a time), each with a few 256 KiB Produce requests
    and 20 small ones, with their responses."""
    payload = bytes(range(256)) * 1024
    target = megabytes * 1_000_000
    written = 0
    frames = 0
    t = 1_700_000_000.0
    with open(path, "wb") as f:
        f.write(pcap_header())
        n = 0
        while written < target:
            convs = [
                Conversation(("10.9.0.1", 30000 + (n + i) % 30000), ("10.9.0.2", 9092), t=t, mss=16384).open()
                for i in range(4)
            ]
            for conv in convs:
                for corr in range(1, 4):
                    req, resp = _produce(corr, payload)
                    conv.request(req)
                    conv.response(resp)
                    frames += 2
                for corr in range(10, 30):  # and small frames
                    req, resp = _produce(corr, payload[:100])
                    conv.request(req)
                    conv.response(resp)
                    frames += 2
                conv.close()
            packets = sorted((p for c in convs for p in c.packets), key=lambda p: p[0])
            for ts, data in packets:
                rec = pcap_record(ts, data)
                f.write(rec)
                written += len(rec)
            n += 4
            t += 10.0
    return frames


_MEASURE = """
import resource, sys
from kcodec.capture import iter_capture, CapturedFrame
frames = 0
for ev in iter_capture(sys.argv[1]):
    ev.to_dict()
    frames += isinstance(ev, CapturedFrame) and ev.ok
print(frames, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _peak(path: Path) -> tuple[int, int]:
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True, check=True, timeout=300
    ).stdout.split()
    return int(out[0]), int(out[1])  # frames decoded, peak RSS in KiB


def test_memory_does_not_grow_with_the_capture(tmp_path: Path) -> None:
    small, large = tmp_path / "20mb.pcap", tmp_path / "200mb.pcap"
    small_frames = write_capture(small, 20)
    large_frames = write_capture(large, 200)
    assert large.stat().st_size >= 200_000_000
    got_small, rss_small = _peak(small)
    got_large, rss_large = _peak(large)
    assert (got_small, got_large) == (small_frames, large_frames)  # every frame decoded
    # ten times the data, about the same peak: within 25% (+16 MiB of allocator noise)
    assert rss_large <= rss_small * 1.25 + 16 * 1024, (rss_small, rss_large)
