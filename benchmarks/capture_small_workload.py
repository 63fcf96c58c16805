"""A generated capture of small frames for ``bench_capture.py``: ``write_small_capture(path, mb)``.

What real client traffic mostly is: many short connections, each a client's start-up and a few
rounds of its routine. A consumer: ApiVersions, Metadata (two topics of three partitions),
FindCoordinator, JoinGroup (the consumer protocol's subscription) and SyncGroup (its assignment),
then rounds of Heartbeat, OffsetCommit, ListOffsets and empty Fetches; a producer: ApiVersions,
Metadata, then small Produces (a batch of one or two records of ~60 bytes). Each with its response,
on Ethernet/IPv4/TCP with correct sequence numbers; 16 connections interleave at a time. Frames
average under 200 bytes; the capture, counting packet and TCP headers and each connection's
handshake and close, under 300 bytes a frame. Frames are built with kcodec's classes and written
byte-exact; records with kcodec.records.build_batch.
"""

from __future__ import annotations

import random
import struct
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from capture_workload import write_sessions

import kcodec
from kcodec.protocol.model import Uuid
from kcodec.records import NewRecord, build_batch

TOPICS = [(f"events-{i:02d}", Uuid(random.Random(100 + i).randbytes(16))) for i in range(12)]
GROUPS = [f"app-group-{i}" for i in range(6)]


def _c(name: str) -> Any:
    return kcodec.message_class(name)


def _embedded(name: str, version: int, **fields: Any) -> bytes:
    """A consumer-protocol value as JoinGroup/SyncGroup carry it: its int16 version, then its body."""
    return struct.pack(">h", version) + kcodec.encode(_c(name)(**fields), version)


class _Session:
    """The (request, response) frames of one connection."""

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        self.corr = 0
        self.pairs: list[tuple[bytes, bytes]] = []

    def pair(self, req: Any, resp: Any, v: int) -> None:
        self.corr += 1
        self.pairs.append(
            (
                kcodec.encode_request(req, v, correlation_id=self.corr, client_id=self.client_id),
                kcodec.encode_response(resp, v, correlation_id=self.corr),
            )
        )

    def start(self, topics: list[tuple[str, Uuid]]) -> None:
        """ApiVersions (the client's own list of APIs, as a broker answers), Metadata."""
        av = _c("ApiVersionsResponse")
        self.pair(
            _c("ApiVersionsRequest")(client_software_name="bench", client_software_version="2.1"),
            av(
                api_keys=[
                    av.ApiVersion(api_key=a.key, min_version=a.min_version, max_version=a.max_version)
                    for a in kcodec.apis()
                ]
            ),
            3,
        )
        mreq, mresp = _c("MetadataRequest"), _c("MetadataResponse")
        self.pair(
            mreq(topics=[mreq.MetadataRequestTopic(name=t) for t, _ in topics]),
            mresp(
                brokers=[mresp.MetadataResponseBroker(node_id=0, host="kafka-0", port=9092)],
                cluster_id="c1",
                controller_id=0,
                topics=[
                    mresp.MetadataResponseTopic(
                        name=t,
                        topic_id=tid,
                        partitions=[
                            mresp.MetadataResponsePartition(
                                partition_index=p,
                                leader_id=0,
                                leader_epoch=3,
                                replica_nodes=[0],
                                isr_nodes=[0],
                            )
                            for p in range(6)
                        ],
                    )
                    for t, tid in topics
                ],
            ),
            12,
        )


def _consumer(rng: random.Random, n: int, rounds: int) -> list[tuple[bytes, bytes]]:
    s = _Session(f"consumer-{n}")
    topics = [TOPICS[(n + k) % len(TOPICS)] for k in (0, 4, 7)]
    group, member = GROUPS[n % len(GROUPS)], f"consumer-{n}-{rng.randbytes(4).hex()}"
    s.start(topics)
    s.pair(
        _c("FindCoordinatorRequest")(key_type=0, coordinator_keys=[group]),
        _c("FindCoordinatorResponse")(
            coordinators=[
                _c("FindCoordinatorResponse").Coordinator(key=group, node_id=0, host="kafka-0", port=9092)
            ]
        ),
        4,
    )
    subscription = _embedded("ConsumerProtocolSubscription", 1, topics=[t for t, _ in topics])
    jreq, jresp = _c("JoinGroupRequest"), _c("JoinGroupResponse")
    s.pair(
        jreq(
            group_id=group,
            session_timeout_ms=45000,
            rebalance_timeout_ms=300000,
            member_id=member,
            protocol_type="consumer",
            protocols=[jreq.JoinGroupRequestProtocol(name="range", metadata=subscription)],
        ),
        jresp(
            generation_id=7,
            protocol_type="consumer",
            protocol_name="range",
            leader=member,
            member_id=member,
            members=[jresp.JoinGroupResponseMember(member_id=member, metadata=subscription)],
        ),
        9,
    )
    owned = [(t, [p for p in range(6) if (p + n) % 2 == 0]) for t, _ in topics]
    assignment = _embedded(
        "ConsumerProtocolAssignment",
        1,
        assigned_partitions=[
            _c("ConsumerProtocolAssignment").TopicPartition(topic=t, partitions=ps) for t, ps in owned
        ],
    )
    sreq = _c("SyncGroupRequest")
    s.pair(
        sreq(
            group_id=group,
            generation_id=7,
            member_id=member,
            protocol_type="consumer",
            protocol_name="range",
            assignments=[sreq.SyncGroupRequestAssignment(member_id=member, assignment=assignment)],
        ),
        _c("SyncGroupResponse")(protocol_type="consumer", protocol_name="range", assignment=assignment),
        5,
    )
    (topic, tid), parts = topics[0], owned[0][1]
    offset = rng.randrange(1000, 100000)
    freq, fresp = _c("FetchRequest"), _c("FetchResponse")
    oc, ocr = _c("OffsetCommitRequest"), _c("OffsetCommitResponse")
    lreq, lresp = _c("ListOffsetsRequest"), _c("ListOffsetsResponse")
    for r in range(rounds):
        s.pair(
            _c("HeartbeatRequest")(group_id=group, generation_id=7, member_id=member),
            _c("HeartbeatResponse")(error_code=27 if r % 40 == 39 else 0),
            4,
        )
        s.pair(
            freq(
                max_wait_ms=500,
                min_bytes=1,
                session_id=0,
                session_epoch=-1,
                topics=[
                    freq.FetchTopic(
                        topic_id=tid,
                        partitions=[
                            freq.FetchPartition(
                                partition=p,
                                current_leader_epoch=3,
                                fetch_offset=offset,
                                partition_max_bytes=1 << 20,
                            )
                            for p in parts
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
                                partition_index=p, high_watermark=offset, last_stable_offset=offset
                            )
                            for p in parts
                        ],
                    )
                ]
            ),
            13,
        )
        if r % 2 == 1:
            s.pair(
                oc(
                    group_id=group,
                    generation_id_or_member_epoch=7,
                    member_id=member,
                    topics=[
                        oc.OffsetCommitRequestTopic(
                            name=topic,
                            partitions=[
                                oc.OffsetCommitRequestPartition(
                                    partition_index=p, committed_offset=offset, committed_leader_epoch=3
                                )
                                for p in parts
                            ],
                        )
                    ],
                ),
                ocr(
                    topics=[
                        ocr.OffsetCommitResponseTopic(
                            name=topic,
                            partitions=[ocr.OffsetCommitResponsePartition(partition_index=p) for p in parts],
                        )
                    ]
                ),
                8,
            )
        if r % 3 == 0:
            s.pair(
                lreq(
                    replica_id=-1,
                    topics=[
                        lreq.ListOffsetsTopic(
                            name=topic,
                            partitions=[lreq.ListOffsetsPartition(partition_index=parts[0], timestamp=-1)],
                        )
                    ],
                ),
                lresp(
                    topics=[
                        lresp.ListOffsetsTopicResponse(
                            name=topic,
                            partitions=[
                                lresp.ListOffsetsPartitionResponse(
                                    partition_index=parts[0], timestamp=-1, offset=offset, leader_epoch=3
                                )
                            ],
                        )
                    ]
                ),
                7,
            )
    return s.pairs


def _producer(rng: random.Random, n: int, rounds: int) -> list[tuple[bytes, bytes]]:
    s = _Session(f"producer-{n}")
    topic, _ = TOPICS[n % len(TOPICS)]
    s.start([TOPICS[n % len(TOPICS)]])
    preq, presp = _c("ProduceRequest"), _c("ProduceResponse")
    offset = rng.randrange(1000, 100000)
    for r in range(rounds):
        part, count = r % 3, 1 + r % 3
        batch = build_batch(
            [
                NewRecord(
                    value=(
                        f'{{"id":{offset + i},"v":{rng.randint(1, 999)},"tag":"{rng.randbytes(16).hex()}"}}'
                    ).encode(),
                    key=f"k{rng.randint(1, 99)}".encode(),
                    timestamp=1_700_000_000_000 + offset + i,
                )
                for i in range(count)
            ],
            base_offset=0,
        )
        s.pair(
            preq(
                acks=1,
                timeout_ms=30000,
                topic_data=[
                    preq.TopicProduceData(
                        name=topic, partition_data=[preq.PartitionProduceData(index=part, records=batch)]
                    )
                ],
            ),
            presp(
                responses=[
                    presp.TopicProduceResponse(
                        name=topic,
                        partition_responses=[presp.PartitionProduceResponse(index=part, base_offset=offset)],
                    )
                ]
            ),
            9,
        )
        offset += count
    return s.pairs


def write_small_capture(path: Path, megabytes: float, seed: int = 9093) -> tuple[int, int]:
    """Write a capture of at least ``megabytes`` MB of short connections; (frames, bytes) written."""
    rng = random.Random(seed)
    # reused with new ports and times: 3 consumers for each producer, of 2 to 10 rounds
    sessions = [
        _producer(rng, n, 3 + n % 7) if n % 4 == 3 else _consumer(rng, n, 2 + n % 9) for n in range(48)
    ]
    return write_sessions(
        path, megabytes, sessions, per_round=16, round_seconds=1.0, spacing=0.0002, step=0.00005,
        client=lambda k: (f"10.30.{k // 250 % 250}.{1 + k % 250}", 32768 + k % 28000),
        server=("10.30.255.1", 9092),
    )  # fmt: skip


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "bench-small.pcap")
    mb = float(sys.argv[2]) if len(sys.argv) > 2 else 50
    frames, size = write_small_capture(out, mb)
    print(f"{out}: {size} bytes, {frames} frames, {size / frames:.0f} bytes a frame")
