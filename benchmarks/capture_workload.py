"""A generated capture of client/broker traffic for ``bench_capture.py``: ``write_capture(path, mb)``.

Each connection is what a consumer-producer client does with one broker: ApiVersions, Metadata (30
topics of 6 partitions, leader epochs), then rounds of Produce (3 partitions, real record batches of
25 records of ~180 bytes), Fetch (6 partitions, batches on 2 of them; many empty as in a caught-up
consumer), OffsetCommit, Heartbeat and ListOffsets, with their responses, on Ethernet/IPv4/TCP with
correct sequence numbers and MSS-sized segments; 8 connections interleave at a time. Frames are
built with kcodec's classes and written byte-exact; records with kcodec.records.build_batch.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from pcap_build import Conversation, pcap_header, pcap_record

import kcodec
from kcodec.protocol.model import Uuid
from kcodec.records import NewRecord, build_batch

TOPICS = [(f"orders-{i:02d}", Uuid(random.Random(i).randbytes(16))) for i in range(30)]


def _c(name: str) -> Any:
    return kcodec.message_class(name)


def _batch(rng: random.Random, base: int, n: int = 25) -> bytes:
    recs = [
        NewRecord(
            value=(
                f'{{"order":{base + i},"amount":{rng.randint(1, 9999)},'
                f'"note":"{rng.randbytes(50).hex()}"}}'
            ).encode(),
            key=f"customer-{rng.randint(1, 500)}".encode(),
            headers=[("source", b"bench")],
            timestamp=1_700_000_000_000 + base + i,
        )
        for i in range(n)
    ]
    return build_batch(recs, base_offset=base)


def _session(rng: random.Random, rounds: int) -> list[tuple[bytes, bytes]]:
    """(request frame, response frame) pairs of one connection."""
    out: list[tuple[bytes, bytes]] = []
    corr = 0

    def pair(req: Any, resp: Any, v: int) -> None:
        nonlocal corr
        corr += 1
        out.append(
            (
                kcodec.encode_request(req, v, correlation_id=corr, client_id="bench-client"),
                kcodec.encode_response(resp, v, correlation_id=corr),
            )
        )

    av = _c("ApiVersionsResponse")
    pair(
        _c("ApiVersionsRequest")(client_software_name="bench", client_software_version="1.0"),
        av(
            api_keys=[
                av.ApiVersion(api_key=a.key, min_version=a.min_version, max_version=a.max_version)
                for a in kcodec.apis()
            ]
        ),
        3,
    )
    mreq, mresp = _c("MetadataRequest"), _c("MetadataResponse")
    pair(
        mreq(topics=[mreq.MetadataRequestTopic(name=t) for t, _ in TOPICS]),
        mresp(
            brokers=[
                mresp.MetadataResponseBroker(node_id=i, host=f"broker-{i}", port=9092) for i in range(3)
            ],
            cluster_id="bench",
            controller_id=0,
            topics=[
                mresp.MetadataResponseTopic(
                    name=t,
                    topic_id=tid,
                    partitions=[
                        mresp.MetadataResponsePartition(
                            partition_index=p,
                            leader_id=p % 3,
                            leader_epoch=5,
                            replica_nodes=[0, 1, 2],
                            isr_nodes=[0, 1, 2],
                        )
                        for p in range(6)
                    ],
                )
                for t, tid in TOPICS
            ],
        ),
        12,
    )
    preq, presp = _c("ProduceRequest"), _c("ProduceResponse")
    freq, fresp = _c("FetchRequest"), _c("FetchResponse")
    offset = 0
    for r in range(rounds):
        topic, tid = TOPICS[r % len(TOPICS)]
        parts = [(p, _batch(rng, offset + p * 1000)) for p in range(3)]
        pair(
            preq(
                acks=-1,
                timeout_ms=30000,
                topic_data=[
                    preq.TopicProduceData(
                        name=topic,
                        partition_data=[preq.PartitionProduceData(index=p, records=b) for p, b in parts],
                    )
                ],
            ),
            presp(
                responses=[
                    presp.TopicProduceResponse(
                        name=topic,
                        partition_responses=[
                            presp.PartitionProduceResponse(
                                index=p, base_offset=offset, error_code=6 if r % 97 == 5 else 0
                            )
                            for p, _ in parts
                        ],
                    )
                ]
            ),
            9,
        )
        fetched = {p: _batch(rng, offset) for p in (0, 3)} if r % 3 == 0 else {}
        pair(
            freq(
                max_wait_ms=500,
                min_bytes=1,
                topics=[
                    freq.FetchTopic(
                        topic_id=tid,
                        partitions=[
                            freq.FetchPartition(
                                partition=p,
                                current_leader_epoch=5,
                                fetch_offset=offset,
                                partition_max_bytes=1 << 20,
                            )
                            for p in range(6)
                        ],
                    )
                ],
            ),
            fresp(
                responses=[
                    fresp.FetchableTopicResponse(
                        topic_id=tid,
                        partitions=[
                            fresp.PartitionData(
                                partition_index=p,
                                high_watermark=offset + 25,
                                last_stable_offset=offset + 25,
                                records=fetched.get(p, b""),
                                error_code=74 if r % 101 == 7 and p == 1 else 0,
                            )
                            for p in range(6)
                        ],
                    )
                ]
            ),
            13,
        )
        if r % 4 == 0:
            oc, ocr = _c("OffsetCommitRequest"), _c("OffsetCommitResponse")
            pair(
                oc(
                    group_id="bench-group",
                    generation_id_or_member_epoch=3,
                    member_id="member-1",
                    topics=[
                        oc.OffsetCommitRequestTopic(
                            name=topic,
                            partitions=[
                                oc.OffsetCommitRequestPartition(
                                    partition_index=p, committed_offset=offset, committed_leader_epoch=5
                                )
                                for p in range(6)
                            ],
                        )
                    ],
                ),
                ocr(
                    topics=[
                        ocr.OffsetCommitResponseTopic(
                            name=topic,
                            partitions=[
                                ocr.OffsetCommitResponsePartition(partition_index=p) for p in range(6)
                            ],
                        )
                    ]
                ),
                8,
            )
            pair(
                _c("HeartbeatRequest")(group_id="bench-group", generation_id=3, member_id="member-1"),
                _c("HeartbeatResponse")(error_code=27 if r % 50 == 9 else 0),
                4,
            )
        offset += 25
    return out


def write_capture(path: Path, megabytes: float, seed: int = 9092) -> tuple[int, int]:
    """Write a capture of at least ``megabytes`` MB; (frames, bytes) written."""
    rng = random.Random(seed)
    sessions = [_session(rng, 40) for _ in range(4)]  # reused with new ports and times
    return write_sessions(
        path, megabytes, sessions, per_round=8, round_seconds=2.0, spacing=0.0003, step=0.00002,
        client=lambda k: (f"10.20.0.{1 + k % 200}", 40000 + k % 20000), server=("10.20.1.1", 9092),
    )  # fmt: skip


def write_sessions(
    path: Path,
    megabytes: float,
    sessions: list[list[tuple[bytes, bytes]]],
    *,
    per_round: int,
    round_seconds: float,
    spacing: float,
    step: float,
    client: Callable[[int], tuple[str, int]],
    server: tuple[str, int],
) -> tuple[int, int]:
    """Write ``sessions`` (each a list of request and response frames) as connections until the file
    holds ``megabytes`` MB: ``per_round`` connections at a time (connection ``k`` from ``client(k)``,
    playing session ``k`` modulo their count), their packets interleaved in time order, a round every
    ``round_seconds``. Returns (frames, bytes) written."""
    target = int(megabytes * 1_000_000)
    written, frames, n = 0, 0, 0
    t = 1_700_000_000.0
    with open(path, "wb") as f:
        f.write(pcap_header())
        written += 24
        while written < target:
            convs = []
            for i in range(per_round):
                conv = Conversation(client(n + i), server, t=t + i * spacing, step=step).open()
                for req, resp in sessions[(n + i) % len(sessions)]:
                    conv.request(req)
                    conv.response(resp)
                    frames += 2
                conv.close()
                convs.append(conv)
            for ts, data in sorted((p for c in convs for p in c.packets), key=lambda p: p[0]):
                rec = pcap_record(ts, data)
                f.write(rec)
                written += len(rec)
            n += per_round
            t += round_seconds
    return frames, written


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "bench-capture.pcap")
    mb = float(sys.argv[2]) if len(sys.argv) > 2 else 50
    print(write_capture(out, mb))
