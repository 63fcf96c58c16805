"""Transactional requests for tests of the mock broker's transaction coordinator, as kcodec messages."""

from __future__ import annotations

from typing import Any

from kcodec.broker.handlers.common import cls


def add_partitions_to_txn(
    version: int,
    transactional_id: str,
    topic: str,
    partitions: tuple[int, ...] = (0,),
    producer_id: int = 1,
    producer_epoch: int = 0,
    verify_only: bool = False,
) -> Any:
    r = cls("AddPartitionsToTxnRequest")
    topics = [r.AddPartitionsToTxnTopic(name=topic, partitions=list(partitions))]
    if version >= 4:
        return r(
            transactions=[
                r.AddPartitionsToTxnTransaction(
                    transactional_id=transactional_id,
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    verify_only=verify_only,
                    topics=topics,
                )
            ]
        )
    return r(
        v3_and_below_transactional_id=transactional_id,
        v3_and_below_producer_id=producer_id,
        v3_and_below_producer_epoch=producer_epoch,
        v3_and_below_topics=topics,
    )


def add_offsets_to_txn(
    transactional_id: str, group: str, producer_id: int = 1, producer_epoch: int = 0
) -> Any:
    return cls("AddOffsetsToTxnRequest")(
        transactional_id=transactional_id,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        group_id=group,
    )


def end_txn(transactional_id: str, commit: bool, producer_id: int = 1, producer_epoch: int = 0) -> Any:
    return cls("EndTxnRequest")(
        transactional_id=transactional_id,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        committed=commit,
    )


def txn_offset_commit(
    transactional_id: str,
    group: str,
    topic: str,
    offset: int = 1,
    producer_id: int = 1,
    producer_epoch: int = 0,
    partition: int = 0,
) -> Any:
    r = cls("TxnOffsetCommitRequest")
    part = r.TxnOffsetCommitRequestPartition(partition_index=partition, committed_offset=offset)
    return r(
        transactional_id=transactional_id,
        group_id=group,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        topics=[r.TxnOffsetCommitRequestTopic(name=topic, partitions=[part])],
    )
