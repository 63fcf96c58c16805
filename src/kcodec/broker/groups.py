"""The group coordinator: the classic consumer-group protocol (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, session expiry) and committed offsets with their leader epochs (KIP-320)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import NO_LEADER_EPOCH

if TYPE_CHECKING:
    from kcodec.broker.state import ClusterState

#: MEMBER_ID_REQUIRED (KIP-394) from JoinGroup v4 on: a member without an id is given one and rejoins.
MEMBER_ID_REQUIRED_SINCE = 4
OFFSET_METADATA_MAX_BYTES = 4096
SWEEP_INTERVAL_S = 0.1


class GroupState(StrEnum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"


@dataclass(slots=True)
class JoinResult:
    error: ErrorCode
    generation: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)  # for the leader only


@dataclass(slots=True)
class SyncResult:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    last_heartbeat: float
    assignment: bytes = b""
    join: asyncio.Future[JoinResult] | None = None
    sync: asyncio.Future[SyncResult] | None = None


@dataclass(slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclass(slots=True)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending: set[str] = field(default_factory=set)  # ids handed out with MEMBER_ID_REQUIRED
    rebalance_deadline: float = 0.0
    initial_delay: bool = False
    offsets: dict[tuple[str, int], CommittedOffset] = field(default_factory=dict)


class GroupCoordinator:
    """All groups of the cluster (one coordinator object; each group is answered by the broker that
    FindCoordinator names, see ``ClusterState.coordinator_for``)."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.groups: dict[str, Group] = {}

    def _group(self, group_id: str, create: bool) -> Group | None:
        g = self.groups.get(group_id)
        if g is None and create and len(self.groups) < self.cluster.config.max_groups:
            g = self.groups[group_id] = Group(group_id)
        return g

    # --- JoinGroup ----------------------------------------------------------------------------------

    async def join(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        version: int,
    ) -> JoinResult:
        if not group_id:
            return JoinResult(ErrorCode.INVALID_GROUP_ID)
        if not 1 <= session_timeout_ms <= 30 * 60 * 1000:
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT)
        if not protocols or not protocol_type:
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        g = self._group(group_id, create=True)
        if g is None:
            return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED)
        if g.members and g.protocol_type not in (None, protocol_type):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if g.members and not self._supported_by_all(g, protocols, member_id):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if not member_id:
            member_id = f"{client_id or 'member'}-{uuid.uuid4()}"
            if version >= MEMBER_ID_REQUIRED_SINCE:
                g.pending.add(member_id)
                return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id)
        elif member_id not in g.members and member_id not in g.pending:
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id)
        g.pending.discard(member_id)
        now = time.monotonic()
        m = g.members.get(member_id)
        if m is None:
            m = Member(
                member_id,
                group_instance_id,
                session_timeout_ms,
                rebalance_timeout_ms,
                protocol_type,
                protocols,
                now,
            )
            g.members[member_id] = m
        else:
            if m.join is not None and not m.join.done():
                m.join.set_result(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member_id=member_id))
            m.protocols = protocols
            m.session_timeout_ms, m.rebalance_timeout_ms = session_timeout_ms, rebalance_timeout_ms
            m.last_heartbeat = now
        if g.protocol_type is None:
            g.protocol_type = protocol_type
        m.join = asyncio.get_running_loop().create_future()
        if g.state is not GroupState.PREPARING_REBALANCE:
            initial = g.state is GroupState.EMPTY
            self._prepare_rebalance(
                g, self.cluster.config.group_initial_rebalance_delay_ms if initial else None
            )
        self._maybe_complete_join(g)
        return await m.join

    @staticmethod
    def _supported_by_all(g: Group, protocols: list[tuple[str, bytes]], member_id: str) -> bool:
        common = {n for n, _ in protocols}
        for mid, m in g.members.items():
            if mid != member_id:
                common &= {n for n, _ in m.protocols}
        return bool(common)

    def _prepare_rebalance(self, g: Group, delay_ms: int | None) -> None:
        """Enter PreparingRebalance: members must rejoin within the rebalance timeout."""
        if g.state is GroupState.COMPLETING_REBALANCE:
            self._fail_syncs(g, ErrorCode.REBALANCE_IN_PROGRESS)
        g.state = GroupState.PREPARING_REBALANCE
        timeout_ms = max((m.rebalance_timeout_ms for m in g.members.values()), default=0)
        g.initial_delay = delay_ms is not None
        wait_ms = timeout_ms if delay_ms is None else delay_ms
        g.rebalance_deadline = time.monotonic() + wait_ms / 1000
        asyncio.get_running_loop().call_later(wait_ms / 1000 + 0.001, self._rebalance_timer, g.group_id)

    def _rebalance_timer(self, group_id: str) -> None:
        """The rebalance (or initial) delay is over: members that did not rejoin are out."""
        g = self.groups.get(group_id)
        if (
            g is None
            or g.state is not GroupState.PREPARING_REBALANCE
            or time.monotonic() < g.rebalance_deadline
        ):
            return
        for mid in [mid for mid, m in g.members.items() if m.join is None or m.join.done()]:
            self._remove(g, mid)
        self._complete_join(g)

    def _maybe_complete_join(self, g: Group) -> None:
        """Complete the join phase once every member has rejoined (a new group waits out its initial
        rebalance delay first)."""
        if g.state is not GroupState.PREPARING_REBALANCE or not self._all_joined(g):
            return
        if g.initial_delay and time.monotonic() < g.rebalance_deadline:
            return
        self._complete_join(g)

    @staticmethod
    def _all_joined(g: Group) -> bool:
        return bool(g.members) and all(m.join is not None and not m.join.done() for m in g.members.values())

    def _complete_join(self, g: Group) -> None:
        g.generation += 1
        if not g.members:
            g.state, g.leader, g.protocol_name, g.protocol_type = GroupState.EMPTY, None, None, None
            return
        votes: Counter[str] = Counter()
        common = set.intersection(*({n for n, _ in m.protocols} for m in g.members.values()))
        for m in g.members.values():
            votes[next(n for n, _ in m.protocols if n in common)] += 1
        g.protocol_name = max(sorted(votes), key=lambda n: votes[n])
        if g.leader not in g.members:
            g.leader = next(iter(g.members))
        g.state = GroupState.COMPLETING_REBALANCE
        everyone = [
            (mid, m.group_instance_id, next(meta for n, meta in m.protocols if n == g.protocol_name))
            for mid, m in g.members.items()
        ]
        now = time.monotonic()
        for mid, m in g.members.items():
            m.last_heartbeat = now
            if m.join is not None and not m.join.done():
                m.join.set_result(
                    JoinResult(
                        ErrorCode.NONE,
                        g.generation,
                        g.protocol_type,
                        g.protocol_name,
                        g.leader,
                        mid,
                        everyone if mid == g.leader else [],
                    )
                )

    # --- SyncGroup ------------------------------------------------------------------------------------

    async def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> SyncResult:
        g = self.groups.get(group_id)
        if g is None or member_id not in g.members:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation != g.generation:
            return SyncResult(ErrorCode.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != g.protocol_type) or (
            protocol_name is not None and protocol_name != g.protocol_name
        ):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        m = g.members[member_id]
        if g.state is GroupState.PREPARING_REBALANCE:
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        if g.state is GroupState.STABLE:
            return SyncResult(ErrorCode.NONE, m.assignment, g.protocol_type, g.protocol_name)
        m.sync = asyncio.get_running_loop().create_future()
        m.last_heartbeat = time.monotonic()
        if member_id == g.leader:
            for mid, member in g.members.items():
                member.assignment = assignments.get(mid, b"")
            g.state = GroupState.STABLE
            for member in g.members.values():
                if member.sync is not None and not member.sync.done():
                    member.sync.set_result(
                        SyncResult(ErrorCode.NONE, member.assignment, g.protocol_type, g.protocol_name)
                    )
        return await m.sync

    def _fail_syncs(self, g: Group, error: ErrorCode) -> None:
        for m in g.members.values():
            if m.sync is not None and not m.sync.done():
                m.sync.set_result(SyncResult(error))

    # --- Heartbeat, LeaveGroup, expiry --------------------------------------------------------------

    def heartbeat(self, group_id: str, generation: int, member_id: str) -> ErrorCode:
        g = self.groups.get(group_id)
        if g is None or member_id not in g.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        g.members[member_id].last_heartbeat = time.monotonic()
        if g.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        if generation != g.generation:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def leave(self, group_id: str, member_ids: list[str]) -> tuple[ErrorCode, list[ErrorCode]]:
        g = self.groups.get(group_id)
        if g is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, [ErrorCode.UNKNOWN_MEMBER_ID for _ in member_ids]
        errors = []
        left = False
        for mid in member_ids:
            if mid in g.members:
                self._remove(g, mid)
                errors.append(ErrorCode.NONE)
                left = True
            else:
                errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
        if left:
            self._member_gone(g)
        top = ErrorCode.NONE if len(member_ids) != 1 else errors[0]
        return top, errors

    def _remove(self, g: Group, member_id: str) -> None:
        m = g.members.pop(member_id, None)
        if m is None:
            return
        if m.join is not None and not m.join.done():
            m.join.set_result(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID))
        if m.sync is not None and not m.sync.done():
            m.sync.set_result(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        if g.leader == member_id:
            g.leader = None

    def _member_gone(self, g: Group) -> None:
        if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(g, None)
        if g.state is GroupState.PREPARING_REBALANCE:
            if not g.members:
                self._complete_join(g)
            else:
                self._maybe_complete_join(g)

    def expire_sessions(self) -> None:
        """Remove members whose session timed out (members waiting in a join are alive)."""
        now = time.monotonic()
        for g in list(self.groups.values()):
            dead = [
                mid
                for mid, m in g.members.items()
                if (m.join is None or m.join.done()) and now - m.last_heartbeat > m.session_timeout_ms / 1000
            ]
            for mid in dead:
                self._remove(g, mid)
            if dead:
                self._member_gone(g)

    async def run_sweeper(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_INTERVAL_S)
            self.expire_sessions()

    # --- committed offsets --------------------------------------------------------------------------

    def commit_check(self, group_id: str, generation: int, member_id: str) -> ErrorCode:
        """Whether a commit is accepted at all (KIP-320 epochs are stored per partition)."""
        g = self._group(group_id, create=True)
        if g is None:
            return ErrorCode.GROUP_MAX_SIZE_REACHED
        if generation < 0 and not member_id:
            return ErrorCode.NONE if g.state is GroupState.EMPTY else ErrorCode.ILLEGAL_GENERATION
        if member_id not in g.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation != g.generation:
            return ErrorCode.ILLEGAL_GENERATION
        if g.state is not GroupState.STABLE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def commit(
        self, group_id: str, topic: str, partition: int, offset: int, leader_epoch: int, metadata: str | None
    ) -> ErrorCode:
        g = self.groups.get(group_id)
        if g is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if metadata is not None and len(metadata.encode()) > OFFSET_METADATA_MAX_BYTES:
            return ErrorCode.OFFSET_METADATA_TOO_LARGE
        if self.cluster.partition(topic, partition) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        g.offsets[(topic, partition)] = CommittedOffset(offset, leader_epoch, metadata)
        return ErrorCode.NONE

    def committed(self, group_id: str, topic: str, partition: int) -> CommittedOffset:
        g = self.groups.get(group_id)
        found = g.offsets.get((topic, partition)) if g is not None else None
        return found or CommittedOffset(-1, NO_LEADER_EPOCH, "")

    def committed_topics(self, group_id: str) -> dict[str, list[int]]:
        g = self.groups.get(group_id)
        out: dict[str, list[int]] = {}
        for topic, partition in sorted(g.offsets if g is not None else {}):
            out.setdefault(topic, []).append(partition)
        return out

    def forget_topic(self, topic: str) -> None:
        for g in self.groups.values():
            for key in [k for k in g.offsets if k[0] == topic]:
                del g.offsets[key]
