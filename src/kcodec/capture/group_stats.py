"""Per consumer group totals for ``kcodec decode-capture --summary``: the group's protocol, its
generations (each with its leader and protocol), its members with their client ids and hosts, what
each subscribes to, and each member's assignment per generation: who held which partitions, rebalance
after rebalance.

Read from the frames' groups and embedded consumer protocol (:mod:`kcodec.capture.groups`): member
ids and client ids from the requests that name a member (JoinGroup, SyncGroup, Heartbeat,
OffsetCommit, LeaveGroup), generations from JoinGroup responses, assignments from the leader's
SyncGroup request and each member's SyncGroup response. Shards merge (:meth:`GroupStats.merge`) into
what one pass gives: every value is chosen by an order that does not depend on the order seen.
Memory is bounded: at most ``MAX_GROUPS`` groups, ``MAX_MEMBERS`` members per group and
``MAX_GENERATIONS`` generations per group and member (the newest kept; the rest counted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from kcodec.capture.events import CapturedFrame
from kcodec.capture.groups import assignment_of, subscription_of

__all__ = ["GroupStats"]

MAX_GROUPS: Final = 10_000
MAX_MEMBERS: Final = 1_000
MAX_GENERATIONS: Final = 100
_JOIN, _SYNC, _LEAVE = 11, 14, 13
_MEMBER_KEYS: Final = frozenset(
    {8, 11, 12, 13, 14}
)  # OffsetCommit, JoinGroup, Heartbeat, LeaveGroup, SyncGroup

Assignment = tuple[tuple[str, tuple[int, ...]], ...]


@dataclass
class _Member:
    client_ids: set[str] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    subscription: tuple[float, tuple[str, ...]] | None = None  # the latest: (time, topics)
    assignments: dict[int, tuple[float, Assignment]] = field(default_factory=dict)  # generation -> first seen

    def assigned(self, generation: int, time: float, value: Assignment) -> None:
        have = self.assignments.get(generation)
        if have is None or (time, value) < have:
            self.assignments[generation] = (time, value)
            if len(self.assignments) > MAX_GENERATIONS:
                del self.assignments[min(self.assignments)]

    def subscribed(self, time: float, topics: tuple[str, ...]) -> None:
        if self.subscription is None or (time, topics) > self.subscription:
            self.subscription = (time, topics)

    def merge(self, other: _Member) -> None:
        self.client_ids |= other.client_ids
        self.hosts |= other.hosts
        if other.subscription is not None:
            self.subscribed(*other.subscription)
        for generation, (time, value) in other.assignments.items():
            self.assigned(generation, time, value)


@dataclass
class _Group:
    frames: int = 0
    protocol_types: set[str] = field(default_factory=set)
    generations: dict[int, tuple[str, str]] = field(default_factory=dict)  # generation -> (leader, protocol)
    members: dict[str, _Member] = field(default_factory=dict)
    dropped_members: int = 0

    def member(self, member_id: str) -> _Member | None:
        m = self.members.get(member_id)
        if m is None:
            if len(self.members) >= MAX_MEMBERS:
                self.dropped_members += 1
                return None
            m = self.members[member_id] = _Member()
        return m

    def generation(self, generation: int, leader: str, protocol: str) -> None:
        have = self.generations.get(generation)
        if have is None or (leader, protocol) < have:
            self.generations[generation] = (leader, protocol)
            if len(self.generations) > MAX_GENERATIONS:
                del self.generations[min(self.generations)]


class GroupStats:
    """Feed every frame (``add``); ``to_list`` gives the ``groups`` of the summary."""

    def __init__(self) -> None:
        self.groups: dict[str, _Group] = {}
        self.dropped_groups = 0

    def _group(self, name: str) -> _Group | None:
        g = self.groups.get(name)
        if g is None:
            if len(self.groups) >= MAX_GROUPS:
                self.dropped_groups += 1
                return None
            g = self.groups[name] = _Group()
        return g

    def add(self, f: CapturedFrame) -> None:
        if not f.groups:
            return
        for name in f.groups:
            g = self._group(name)
            if g is not None:
                g.frames += 1
        body = f.body
        if body is None or len(f.groups) != 1:
            return
        g = self._group(f.groups[0])
        if g is None:
            return
        key = f.api_key
        if f.direction == "request":
            self._request(g, f, body)
        elif key == _JOIN and not getattr(body, "error_code", 0):
            joined: Any = body
            leader, protocol = getattr(joined, "leader", None), getattr(joined, "protocol_name", None)
            g.generation(int(joined.generation_id), str(leader or ""), str(protocol or ""))
            if getattr(joined, "protocol_type", None):
                g.protocol_types.add(str(joined.protocol_type))
        self._embedded(g, f)

    def _request(self, g: _Group, f: CapturedFrame, body: Any) -> None:
        key = f.api_key
        if key not in _MEMBER_KEYS:
            return
        members = [getattr(body, "member_id", None)]
        if key == _LEAVE:
            members += [m.member_id for m in getattr(body, "members", None) or ()]
        client_id = getattr(f.header, "client_id", None)
        for member_id in members:
            if isinstance(member_id, str) and member_id:
                m = g.member(member_id)
                if m is not None:
                    if client_id:
                        m.client_ids.add(str(client_id))
                    m.hosts.add(f.client.rsplit(":", 1)[0])
        if key == _JOIN and getattr(body, "protocol_type", None):
            g.protocol_types.add(str(body.protocol_type))

    def _embedded(self, g: _Group, f: CapturedFrame) -> None:
        for e in f.embedded:
            if not e.member:
                continue
            m = g.member(e.member)
            if m is None:
                continue
            if e.type == "ConsumerProtocolAssignment":
                if e.generation is not None:
                    value = tuple((t, tuple(ps)) for t, ps in assignment_of(e.value))
                    m.assigned(e.generation, f.timestamp, value)
            else:
                m.subscribed(f.timestamp, tuple(subscription_of(e.value)))

    def merge(self, other: GroupStats) -> None:
        """Add another shard's groups (the result is what one pass over both gives)."""
        self.dropped_groups += other.dropped_groups
        for name, o in other.groups.items():
            g = self._group(name)
            if g is None:
                continue
            g.frames += o.frames
            g.protocol_types |= o.protocol_types
            g.dropped_members += o.dropped_members
            for generation, (leader, protocol) in o.generations.items():
                g.generation(generation, leader, protocol)
            for member_id, om in o.members.items():
                m = g.member(member_id)
                if m is not None:
                    m.merge(om)

    def to_list(self) -> list[dict[str, Any]]:
        """The ``groups`` of ``--json --summary``, by group id."""
        out: list[dict[str, Any]] = []
        for name, g in sorted(self.groups.items()):
            latest = max(g.generations, default=None)
            leader, protocol = g.generations[latest] if latest is not None else (None, None)
            out.append(
                {
                    "group": name,
                    "frames": g.frames,
                    "protocol_type": ",".join(sorted(g.protocol_types)) or None,
                    "protocol": protocol or None,
                    "generation": latest,
                    "leader": leader or None,
                    "generations": [
                        {"generation": n, "leader": lead or None, "protocol": proto or None}
                        for n, (lead, proto) in sorted(g.generations.items())
                    ],
                    "members": [_member(member_id, m) for member_id, m in sorted(g.members.items())],
                }
            )
        return out


def _member(member_id: str, m: _Member) -> dict[str, Any]:
    subscription = m.subscription[1] if m.subscription is not None else None
    return {
        "member": member_id,
        "client_ids": sorted(m.client_ids),
        "hosts": sorted(m.hosts),
        "subscription": None if subscription is None else list(subscription),
        "assignments": [
            {"generation": n, "time": time, "partitions": {t: list(ps) for t, ps in value}}
            for n, (time, value) in sorted(m.assignments.items())
        ],
    }
