"""Raw kcodec requests for every API the mock broker serves, at any version (tests/test_broker_raw.py)."""

from __future__ import annotations

from typing import Any

import kcodec
from kcodec.protocol.model import Uuid
from kcodec.records import NewRecord, build_batch


def cls(name: str) -> Any:
    return kcodec.message_class(name)


def batch(*values: bytes, producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
          compression: str = "none") -> bytes:
    return build_batch([NewRecord(v, key=b"k", headers=[("h", b"1")], timestamp=1_700_000_000_000 + i)
                        for i, v in enumerate(values)], compression=compression, producer_id=producer_id,
                       producer_epoch=producer_epoch, base_sequence=base_sequence)


def produce(topic: str, topic_id: Uuid, version: int, records: bytes, partition: int = 0,
            current_leader_epoch: int = -1, acks: int = -1) -> Any:
    r = cls("ProduceRequest")
    pd = r.PartitionProduceData(index=partition, records=records, current_leader_epoch=current_leader_epoch)
    td = r.TopicProduceData(partition_data=[pd])
    if version >= 13:
        td.topic_id = topic_id
    else:
        td.name = topic
    return r(acks=acks, timeout_ms=5000, topic_data=[td])


def fetch(topic: str, topic_id: Uuid, version: int, offset: int = 0, current_leader_epoch: int = -1,
          last_fetched_epoch: int = -1, max_wait_ms: int = 0) -> Any:
    r = cls("FetchRequest")
    fp = r.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
    if version >= 9:
        fp.current_leader_epoch = current_leader_epoch
    if version >= 12:
        fp.last_fetched_epoch = last_fetched_epoch
    ft = r.FetchTopic(partitions=[fp])
    if version >= 13:
        ft.topic_id = topic_id
    else:
        ft.topic = topic
    req = r(max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 24, topics=[ft])
    if version >= 7:
        req.session_epoch = -1
    if version < 15:
        req.replica_id = -1
    return req


def list_offsets(topic: str, version: int, timestamp: int = -1, current_leader_epoch: int = -1) -> Any:
    r = cls("ListOffsetsRequest")
    p = r.ListOffsetsPartition(partition_index=0, timestamp=timestamp)
    if version >= 4:
        p.current_leader_epoch = current_leader_epoch
    return r(replica_id=-1, topics=[r.ListOffsetsTopic(name=topic, partitions=[p])])


def offset_for_leader_epoch(topic: str, version: int, leader_epoch: int, current_leader_epoch: int = -1) -> Any:
    r = cls("OffsetForLeaderEpochRequest")
    p = r.OffsetForLeaderPartition(partition=0, leader_epoch=leader_epoch)
    if version >= 2:
        p.current_leader_epoch = current_leader_epoch
    req = r(topics=[r.OffsetForLeaderTopic(topic=topic, partitions=[p])])
    if version >= 3:
        req.replica_id = -1
    return req


def metadata(topics: list[str] | None, version: int) -> Any:
    r = cls("MetadataRequest")
    if topics is None:
        return r(topics=None if version >= 1 else [])
    req = r(topics=[r.MetadataRequestTopic(name=t) for t in topics])
    if version >= 4:
        req.allow_auto_topic_creation = True
    return req


def stop_replica(version: int, topic: str, leader_epoch: int, controller_epoch: int = 1,
                 delete: bool = False) -> Any:
    r = cls("StopReplicaRequest")
    req = r(controller_id=1, controller_epoch=controller_epoch)
    if version >= 1:
        req.broker_epoch = -1
    if version >= 3:
        state = r.StopReplicaPartitionState(partition_index=0, leader_epoch=leader_epoch, delete_partition=delete)
        req.topic_states = [r.StopReplicaTopicState(topic_name=topic, partition_states=[state])]
    elif version >= 1:
        req.delete_partitions = delete
        req.topics = [r.StopReplicaTopicV1(name=topic, partition_indexes=[0])]
    else:
        req.delete_partitions = delete
        req.ungrouped_partitions = [r.StopReplicaPartitionV0(topic_name=topic, partition_index=0)]
    return req


def init_producer_id(version: int, transactional_id: str | None = None, producer_id: int = -1,
                     producer_epoch: int = -1) -> Any:
    req = cls("InitProducerIdRequest")(transactional_id=transactional_id, transaction_timeout_ms=60000)
    if version >= 3:
        req.producer_id, req.producer_epoch = producer_id, producer_epoch
    return req
