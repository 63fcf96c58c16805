"""The mock broker's partition log (offsets, byte budget, truncation, epoch cache) and its group
coordinator (joins, rebalances, session expiry), without sockets."""

from __future__ import annotations

import asyncio
import time

import broker_requests as rq

import kcodec
from kcodec.broker import AsyncMockCluster, BrokerConfig
from kcodec.broker.groups import GroupState
from kcodec.broker.log import PartitionLog
from kcodec.protocol.error_codes import ErrorCode
from kcodec.records import NewRecord, build_batch, iter_batches


def batch(n: int, size: int = 10) -> bytes:
    return build_batch([NewRecord(b"v" * size, timestamp=1000 + i) for i in range(n)])


def offsets(log: PartitionLog, start: int = 0) -> list[int]:
    return [r.offset for data in log.read(start, 1 << 30, at_least_one=True) for b in iter_batches(data)
            for r in b.records()]


def test_offsets_epochs_and_reads() -> None:
    log = PartitionLog(1 << 20)
    log.begin_epoch(0)
    assert log.append(batch(3), 3, 1002, 0).base_offset == 0
    log.begin_epoch(2)
    assert log.append(batch(2), 2, 1001, 2).base_offset == 3
    assert (log.log_end_offset, log.high_watermark, log.epochs) == (5, 5, ((0, 0), (2, 3)))
    assert offsets(log) == [0, 1, 2, 3, 4] and offsets(log, 4) == [3, 4]  # whole batches
    assert [b.partition_leader_epoch for d in log.read(0, 1 << 30, at_least_one=True) for b in iter_batches(d)] == [0, 2]
    first = len(log.batches[0].data)
    assert len(log.read(0, first - 1, at_least_one=True)) == 1  # KIP-74: one batch even if larger
    assert log.read(0, first - 1, at_least_one=False) == []
    assert log.end_offset_for_epoch(1) == (0, 3) and log.epoch_at(4) == 2


def test_byte_budget_drops_the_oldest_batches() -> None:
    one = batch(1, 1000)
    log = PartitionLog(3 * len(one) + 10)
    log.begin_epoch(0)
    for i in range(5):
        log.append(one, 1, 1000, 0 if i < 2 else 1)
    assert (log.log_start_offset, log.log_end_offset, len(log.batches)) == (2, 5, 3)
    assert log.size_bytes == 3 * len(one) and log.epochs == ((1, 2),)
    huge = PartitionLog(1024)
    huge.begin_epoch(0)
    huge.append(batch(1, 5000), 1, 1000, 0)
    assert len(huge.batches) == 1  # the newest batch is always kept


def test_truncation_drops_a_straddling_batch_whole() -> None:
    log = PartitionLog(1 << 20)
    log.begin_epoch(0)
    log.append(batch(3), 3, 1000, 0)
    log.append(batch(3), 3, 1000, 0)
    assert log.truncate(4) == 3 and offsets(log) == [0, 1, 2]
    assert log.truncate(3) == 3 and log.truncate(0) == 0 and log.batches == []
    log.begin_epoch(1)
    assert log.append(batch(1), 1, 1000, 1).base_offset == 0 and log.epochs == ((1, 0),)


def test_fetch_below_the_log_start_is_out_of_range() -> None:
    async def main() -> None:
        cluster = await AsyncMockCluster(BrokerConfig(partition_max_bytes=2048)).start()
        try:
            cluster.create_topic("r", 1)
            for _ in range(6):
                cluster.append("r", 0, [NewRecord(b"x" * 600)])
            info = cluster.describe("r", 0)
            assert info.log_start_offset > 0 and info.log_end_offset == 6
            tid = cluster.state.topics["r"].topic_id
            # ReplicaManager.readFromLog: an out-of-range read is answered from createLogReadResult(e),
            # without the log start offset (-1); the consumer resets with ListOffsets
            for offset, error, start in (
                (0, ErrorCode.OFFSET_OUT_OF_RANGE, -1),
                (info.log_start_offset, ErrorCode.NONE, info.log_start_offset),
            ):
                frame = kcodec.encode_request(rq.fetch("r", tid, 12, offset), 12, correlation_id=1)
                reply = await cluster.servers[0].process(frame)
                assert reply is not None
                part = kcodec.decode_response(b"".join(reply), 1, 12).body.responses[0].partitions[0]
                assert (part.error_code, part.log_start_offset) == (error, start)
        finally:
            await cluster.stop()

    asyncio.run(main())


def test_group_rebalance_and_session_expiry() -> None:
    async def main() -> None:
        cluster = await AsyncMockCluster(BrokerConfig()).start()
        groups = cluster.state.groups
        protocols = [("range", b"meta")]
        try:
            async def join(member_id: str, session_ms: int = 10_000) -> object:
                return await groups.join("g", member_id, None, "c", session_ms, 2_000, "consumer", protocols, 5)

            first = await join("")
            assert first.error is ErrorCode.MEMBER_ID_REQUIRED  # KIP-394 from v4
            a = await join(first.member_id, session_ms=300)
            assert (a.error, a.generation, a.leader) == (ErrorCode.NONE, 1, first.member_id)
            assert [m[0] for m in a.members] == [first.member_id]
            sync = await groups.sync("g", 1, first.member_id, None, None, {first.member_id: b"assign-a"})
            assert (sync.error, sync.assignment) == (ErrorCode.NONE, b"assign-a")
            # a second member joins: the first learns of the rebalance from its heartbeat and rejoins
            second_id = (await join("")).member_id
            pending = asyncio.ensure_future(join(second_id))
            await asyncio.sleep(0.05)
            assert groups.heartbeat("g", 1, first.member_id) is ErrorCode.REBALANCE_IN_PROGRESS
            again, b = await asyncio.gather(join(first.member_id, session_ms=300), pending)
            assert again.generation == b.generation == 2 and len(again.members) == 2 and b.members == []
            assert groups.commit_check("g", 2, second_id) is ErrorCode.REBALANCE_IN_PROGRESS
            # the first member stops heartbeating: its session (300 ms) expires, the group rebalances
            deadline = time.monotonic() + 5
            while first.member_id in groups.groups["g"].members and time.monotonic() < deadline:
                groups.heartbeat("g", 2, second_id)
                await asyncio.sleep(0.05)
            g = groups.groups["g"]
            assert first.member_id not in g.members and g.state is GroupState.PREPARING_REBALANCE
            alone = await join(second_id)
            assert (alone.generation, alone.leader) == (3, second_id)
            assert groups.leave("g", [second_id]) == (ErrorCode.NONE, [ErrorCode.NONE])
            assert g.state is GroupState.EMPTY and g.generation == 4
        finally:
            await cluster.stop()

    asyncio.run(main())
