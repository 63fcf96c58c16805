"""Benchmark workloads (message bodies), built with kcodec's own classes; shared by the benchmark scripts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kcodec.protocol.codec import module
from kcodec.protocol.model import Uuid


@dataclass(frozen=True)
class Workload:
    name: str
    message: str
    version: int
    build: Callable[[], Any]


def _cls(message: str, struct: str | None = None) -> Any:
    return getattr(module(message), struct or message)


def metadata_response() -> Any:
    m = "MetadataResponse"
    broker, topic, part = (
        _cls(m, "MetadataResponseBroker"),
        _cls(m, "MetadataResponseTopic"),
        _cls(m, "MetadataResponsePartition"),
    )
    return _cls(m)(
        throttle_time_ms=0,
        brokers=[
            broker(node_id=i, host=f"broker-{i}.kafka.internal", port=9092, rack=f"rack-{i % 3}")
            for i in range(50)
        ],
        cluster_id="kcodec-bench-cluster",
        controller_id=1,
        topics=[
            topic(
                error_code=0,
                name=f"topic-{t:04d}",
                topic_id=Uuid(t.to_bytes(16, "big")),
                is_internal=False,
                partitions=[
                    part(
                        error_code=0,
                        partition_index=p,
                        leader_id=p % 50,
                        leader_epoch=7,
                        replica_nodes=[p % 50, (p + 1) % 50, (p + 2) % 50],
                        isr_nodes=[p % 50, (p + 1) % 50, (p + 2) % 50],
                        offline_replicas=[],
                    )
                    for p in range(10)
                ],
                topic_authorized_operations=-2147483648,
            )
            for t in range(200)
        ],
    )


def fetch_request() -> Any:
    m = "FetchRequest"
    topic, part = _cls(m, "FetchTopic"), _cls(m, "FetchPartition")
    return _cls(m)(
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=52428800,
        isolation_level=1,
        session_id=0,
        session_epoch=-1,
        topics=[
            topic(
                topic=f"topic-{t}",
                partitions=[
                    part(
                        partition=p,
                        current_leader_epoch=5,
                        fetch_offset=123456789 + p,
                        last_fetched_epoch=4,
                        log_start_offset=-1,
                        partition_max_bytes=1048576,
                    )
                    for p in range(10)
                ],
            )
            for t in range(10)
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


def produce_request() -> Any:
    m = "ProduceRequest"
    topic, part = _cls(m, "TopicProduceData"), _cls(m, "PartitionProduceData")
    payload = bytes(range(256)) * 400  # 100 KiB per partition
    return _cls(m)(
        transactional_id=None,
        acks=-1,
        timeout_ms=30000,
        topic_data=[topic(name="events", partition_data=[part(index=p, records=payload) for p in range(10)])],
    )


def api_versions_response() -> Any:
    m = "ApiVersionsResponse"
    key = _cls(m, "ApiVersion")
    return _cls(m)(
        error_code=0,
        api_keys=[key(api_key=k, min_version=0, max_version=k % 17) for k in range(60)],
        throttle_time_ms=0,
    )


def list_offsets_request() -> Any:
    m = "ListOffsetsRequest"
    topic, part = _cls(m, "ListOffsetsTopic"), _cls(m, "ListOffsetsPartition")
    return _cls(m)(
        replica_id=-1,
        isolation_level=0,
        topics=[
            topic(name="events", partitions=[part(partition_index=0, current_leader_epoch=3, timestamp=-1)])
        ],
    )


WORKLOADS = [
    Workload(
        "MetadataResponse v12: 50 brokers, 200 topics x 10 partitions",
        "MetadataResponse",
        12,
        metadata_response,
    ),
    Workload("FetchRequest v12: 10 topics x 10 partitions", "FetchRequest", 12, fetch_request),
    Workload("ProduceRequest v9: 10 partitions x 100 KiB records", "ProduceRequest", 9, produce_request),
    Workload("ApiVersionsResponse v3: 60 keys", "ApiVersionsResponse", 3, api_versions_response),
    Workload("ListOffsetsRequest v4: 1 partition", "ListOffsetsRequest", 4, list_offsets_request),
]
