"""Decode the Kafka traffic in packet captures (pcap, pcapng), in stages that can run apart.

Quick use::

    from kcodec.capture import iter_capture, CapturedFrame
    for event in iter_capture("traffic.pcap"):          # or "-" (stdin), or a binary file object
        if isinstance(event, CapturedFrame) and event.ok:
            print(event.api_name, event.direction, event.body)

Events stream out as frames complete; memory is bounded by the connections open at a time and the
requests waiting for responses on them, not by the size of the capture. Nothing in a capture makes
this raise (only a file that is no pcap/pcapng at all: ``CaptureFileError``): undecodable frames
carry their typed error, and stream and file problems are ``CaptureIssue`` events.

Stages (each a module; the records between them are plain, picklable data):

1. **packets** (:mod:`~kcodec.capture.packets`): ``iter_packets(source, start=0, end=None)`` yields
   ``RawPacket`` (link-layer bytes, time, link type, file offset) and ``CaptureIssue`` (kind
   ``capture-file``: a damaged record header, after which it resynchronises; a file cut short).
   ``start``/``end`` read one byte range of a file (a split of a multi-GB file): from the first
   plausible record at or after ``start`` to the record that starts before ``end``.
2. **segments** (:mod:`~kcodec.capture.segments`): ``iter_segments(source, start, end)`` yields
   ``Segment`` (connection ``key``, ``src``/``dst``, ``seq``, ``ack``, ``flags``, ``timestamp``, ``payload``,
   ``file``, ``index``, ``offset``; see ``SEGMENT_SCHEMA``) and the file's issues. A segment is a
   flat row: ``dataclasses.asdict(seg)`` and ``Segment(**row)`` convert both ways.
   ``segment_facts_maker(file, build)`` hands the same fields to ``build``, with the payload's
   length instead of a copy of its bytes (for a job that keeps where payloads lie).
3. **per connection**, sans-I/O (:mod:`~kcodec.capture.connection`): ``ConnectionDecoder(number)``
   takes a connection's segments in capture order (``feed_segment``) or its two byte streams as a
   proxy sees them (``ConnectionDecoder(n, client=..., server=...)`` then
   ``feed_bytes("request"|"response", data, time)``), and ``finish()``; every call returns the
   events it completed. Inside: reassembly (:mod:`~kcodec.capture.reassembly`: gaps, retransmits,
   overlaps, reordering, a start that was not captured, sequence wrap; bounded buffering), framing
   and pairing (:mod:`~kcodec.capture.framing`: size-prefixed frames, resynchronisation, requests
   waiting by correlation id), decoding (:mod:`~kcodec.capture.decoding`: ``CapturedFrame`` with
   known peer deviations read into their real values, see :mod:`kcodec.protocol.quirks`).
4. **many connections** (:mod:`~kcodec.capture.stream`): ``CaptureDecoder`` routes segments of any
   number of connections (port reuse included) and finishes closed ones; ``decode_segments(segs)``
   and ``iter_capture(source)`` are the generators around it.
5. **shards** (:mod:`~kcodec.capture.shard`): ``iter_shard(path, k, n)`` decodes the connections
   that fall to shard ``k`` of ``n`` (every shard reads the whole file; connections are dealt by
   the bytes each shard has so far), each event keyed by its place in the capture, so that
   ``merge_shards`` (lazily) or ``BatchMerge`` (batch by batch, for worker processes) merge the
   shards back into ``iter_capture``'s exact events and order; ``Numbering`` turns the shards'
   connection numbers into the capture's. :func:`kcodec.capture.parallel.decode_parallel` runs this
   in worker processes (``decode_parallel(path, workers=4)`` yields ``iter_capture``'s events), as
   ``kcodec decode-capture -j N`` does.

Running stage 3 on the segments of one connection, as a Spark job does after grouping the rows of
stage 2 by ``key`` (rotated files: order by file, then ``offset``)::

    from kcodec.capture import CaptureDecoder, Segment

    def decode_group(rows, first_number):
        decoder = CaptureDecoder(ports=[9092], first_number=first_number)  # handles port reuse
        for row in sorted(rows, key=lambda r: (r["file"], r["offset"])):
            yield from decoder.feed(Segment(**row))
        yield from decoder.finish()

    events = [e.to_dict() for e in decode_group(rows_of_one_key, 1)]   # the --json objects

A connection is Kafka traffic if one of its ports is a Kafka port (``ports``, default 9092; that side
is the broker) or, with ``autodetect``, if the first bytes one side sends are a Kafka request.
Presentation (tables, summaries) is the command line's (``kcodec.cli``), not this package's.
"""

from __future__ import annotations

from kcodec.capture.connection import DEFAULT_PORTS, ConnectionDecoder
from kcodec.capture.decoding import FrameDecoder
from kcodec.capture.events import (
    CapturedFrame,
    CaptureEvent,
    CaptureIssue,
    Direction,
    IssueKind,
    UnmatchedResponseError,
    error_dict,
)
from kcodec.capture.framing import MAX_FRAME_SIZE, Framer, Pairing, RawFrame
from kcodec.capture.packets import CaptureFileError, RawPacket, iter_packets
from kcodec.capture.reassembly import HalfStream
from kcodec.capture.segments import (
    SEGMENT_SCHEMA,
    Segment,
    SegmentBuilder,
    iter_segments,
    segment_facts_maker,
    segment_of,
)
from kcodec.capture.stream import CaptureDecoder, decode_segments, iter_capture

__all__ = [
    "DEFAULT_PORTS",
    "MAX_FRAME_SIZE",
    "SEGMENT_SCHEMA",
    "CaptureDecoder",
    "CaptureEvent",
    "CaptureFileError",
    "CaptureIssue",
    "CapturedFrame",
    "ConnectionDecoder",
    "Direction",
    "FrameDecoder",
    "Framer",
    "HalfStream",
    "IssueKind",
    "Pairing",
    "RawFrame",
    "RawPacket",
    "Segment",
    "SegmentBuilder",
    "UnmatchedResponseError",
    "decode_segments",
    "error_dict",
    "iter_capture",
    "iter_packets",
    "iter_segments",
    "segment_facts_maker",
    "segment_of",
]
