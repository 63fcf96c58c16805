"""Consumer groups in captured traffic: the group each frame is about, and the consumer protocol
embedded in JoinGroup and SyncGroup frames.

Group membership (JoinGroup, SyncGroup) carries the protocol of the group's type as opaque bytes:
for ``protocol_type`` ``"consumer"`` these are Kafka's data messages ``ConsumerProtocolSubscription``
(JoinGroup: ``protocols[].metadata`` in the request, ``members[].metadata`` in the response) and
``ConsumerProtocolAssignment`` (SyncGroup: ``assignments[].assignment`` in the request,
``assignment`` in the response), each written as an int16 version and then the message at that
version (Kafka's ``ConsumerProtocol``). A newer version than kcodec knows is read as the newest it
knows, as Kafka's ``ConsumerProtocol`` reads it (the newer fields come last).

Responses name neither their group nor (JoinGroup below v7, SyncGroup below v5) its protocol type:
:class:`GroupTracker`, one per connection, keeps what each group request said (group, member,
protocol type) until its response, and the protocol type of each group a JoinGroup named on the
connection (a SyncGroup request below v5 does not carry it either). Other protocol types (Kafka
Connect's, whose layouts Kafka defines in Java code rather than as message specs) stay bytes.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final

from kcodec.capture.entities import entity_values
from kcodec.protocol.codec import Diagnostic, decode, message_info
from kcodec.protocol.errors import KcodecError
from kcodec.protocol.model import Message

__all__ = [
    "CONSUMER",
    "GROUP_KEYS",
    "EmbeddedValue",
    "GroupTracker",
    "assignment_of",
    "decode_embedded",
    "embedded_topics",
    "subscription_of",
]

CONSUMER: Final = "consumer"
_JOIN, _SYNC, _HEARTBEAT, _LEAVE = 11, 14, 12, 13
_OFFSET_COMMIT, _OFFSET_FETCH, _FIND_COORDINATOR, _DESCRIBE_GROUPS = 8, 9, 10, 15
_ADD_OFFSETS_TO_TXN, _TXN_OFFSET_COMMIT, _DELETE_GROUPS, _OFFSET_DELETE = 25, 28, 42, 47
_CG_HEARTBEAT, _CG_DESCRIBE = 68, 69
#: The APIs whose frames are about groups (consumer, share and streams groups): FindCoordinator, and
#: those whose requests have a field that names a group (the specs' ``groupId``; tested against them).
GROUP_KEYS: Final = frozenset(
    {
        _JOIN, _SYNC, _HEARTBEAT, _LEAVE, _OFFSET_COMMIT, _OFFSET_FETCH, _FIND_COORDINATOR,
        _DESCRIBE_GROUPS, _ADD_OFFSETS_TO_TXN, _TXN_OFFSET_COMMIT, _DELETE_GROUPS, _OFFSET_DELETE,
        _CG_HEARTBEAT, _CG_DESCRIBE,
        76, 77, 78, 79,  # ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge
        83, 84, 85, 86, 87,  # Initialize/Read/Write/Delete ShareGroupState, ReadShareGroupStateSummary
        88, 89,  # StreamsGroupHeartbeat, StreamsGroupDescribe
        90, 91, 92,  # Describe/Alter/Delete ShareGroupOffsets
        93,  # StreamsGroupTopologyDescriptionUpdate
    }
)  # fmt: skip
_SUBSCRIPTION: Final = "ConsumerProtocolSubscription"
_ASSIGNMENT: Final = "ConsumerProtocolAssignment"
_I16: Final = struct.Struct(">h")
_MAX_WAITING: Final = 4096  # group requests waiting for their response, per connection
_MAX_GROUPS: Final = 1024  # protocol types remembered per connection


@dataclass(slots=True)
class EmbeddedValue:
    """A protocol message found inside a bytes field of a frame's body: ``path`` is the field as
    Kafka's JSON names it (``assignments[0].assignment``), ``type`` the message, ``version`` the one
    its bytes state, ``value`` the message (read at ``min(version, newest known)``). ``group`` and
    ``member`` say whose it is (the member: of the subscription or the assignment; ``""`` when the
    frame does not tell, as a first JoinGroup does not)."""

    path: str
    type: str
    version: int
    value: Message
    group: str | None = None
    member: str | None = None
    generation: int | None = None  # (a SyncGroup's: the generation the assignment is for)

    @property
    def read_as(self) -> int:
        return min(self.version, message_info(self.type).versions[1])

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` object: ``{"path", "type", "version", "value"}`` (``value`` in Kafka's JSON)."""
        from kcodec.protocol.jsonconv import to_json

        return {"path": self.path, "type": self.type, "version": self.version,
                "value": to_json(self.value, self.read_as)}  # fmt: skip


def decode_embedded(
    message_name: str, data: bytes | None, path: str
) -> tuple[tuple[int, Message] | None, str | None]:
    """``data`` (an int16 version, then ``message_name`` at it) decoded: ``((version, value), note)``
    where ``note`` names bytes left over; ``(None, why)`` if it does not decode; ``(None, None)`` for
    no bytes (a SyncGroup response's empty assignment, say)."""
    if not data:
        return None, None
    if len(data) < 2:
        return None, f"{path}: {len(data)} byte, too short for a {message_name} version"
    (version,) = _I16.unpack_from(data, 0)
    low, high = message_info(message_name).versions
    if version < low:
        return None, f"{path}: {message_name} version {version} is not a valid version; kept as bytes"
    read_as = min(version, high)
    diagnostics: list[Diagnostic] = []
    try:
        value = decode(message_name, read_as, memoryview(data)[2:], strict=False, diagnostics=diagnostics)
    except KcodecError as e:
        return None, f"{path}: does not decode as {message_name} v{version} ({e}); kept as bytes"
    note = None
    if diagnostics and version <= high:  # (newer versions append fields: Kafka reads past them too)
        note = f"{path}: {diagnostics[0].reason}"
    return (version, value), note


def subscription_of(value: Message) -> list[str]:
    """The topics of a ``ConsumerProtocolSubscription``."""
    return [str(t) for t in getattr(value, "topics", None) or ()]


def assignment_of(value: Message) -> list[tuple[str, list[int]]]:
    """``(topic, partitions)`` of a ``ConsumerProtocolAssignment``."""
    return [
        (str(tp.topic), sorted(int(p) for p in tp.partitions or ()))
        for tp in getattr(value, "assigned_partitions", None) or ()
    ]


def embedded_topics(embedded: tuple[EmbeddedValue, ...]) -> list[tuple[str, list[str]]]:
    """``(group, topics)`` the embedded values of a frame name (subscribed or assigned)."""
    out: dict[str, list[str]] = {}
    for e in embedded:
        if e.group is None:
            continue
        assigned = e.type == _ASSIGNMENT
        topics = [t for t, _ in assignment_of(e.value)] if assigned else subscription_of(e.value)
        have = out.setdefault(e.group, [])
        have += [t for t in topics if t not in have]
    return list(out.items())


class _Asked:
    """What a group request said, for its response (a plain class: one is made per group request, and
    compiled, a frozen dataclass's fields are set through ``object.__setattr__``)."""

    __slots__ = ("generation", "groups", "member", "protocol_type")

    def __init__(
        self, groups: tuple[str, ...], member: str | None, protocol_type: str | None, generation: int | None
    ) -> None:
        self.groups = groups
        self.member = member
        self.protocol_type = protocol_type
        self.generation = generation


def _s(value: object) -> str | None:
    return value if isinstance(value, str) else None


def request_groups(key: int, version: int, body: Any) -> tuple[str, ...]:
    """The groups a group request names (``()`` for other requests): its fields that name a group
    (``kcodec.capture.entities``: the specs' ``groupId``), and FindCoordinator's keys when they are
    groups' (its ``key_type`` 0: the spec cannot mark a key that is a group id or a transactional id)."""
    if key == _FIND_COORDINATOR:
        if getattr(body, "key_type", 0) != 0:
            return ()  # a transactional id (1) or another kind of key
        if version < 4:
            key_value = _s(getattr(body, "key", None))
            return (key_value,) if key_value else ()
        return tuple(k for k in getattr(body, "coordinator_keys", None) or () if isinstance(k, str))
    return tuple(g for g in entity_values(body, version, "groupId") if isinstance(g, str) and g)


class GroupTracker:
    """One connection's group requests, for their responses; and the protocol type of each group
    joined on it (see the module docstring). ``request``/``response`` take a decoded frame's
    ``(api key, version, correlation id, body)`` and return the groups it is about and the values
    embedded in it, with diagnostics for embedded bytes that do not decode."""

    __slots__ = ("_types", "_waiting")

    def __init__(self) -> None:
        self._waiting: OrderedDict[int, _Asked] = OrderedDict()
        self._types: OrderedDict[str, str] = OrderedDict()

    def _type_of(self, group: str | None, stated: object) -> str | None:
        if isinstance(stated, str) and stated:
            if group is not None:
                self._types[group] = stated
                self._types.move_to_end(group)
                if len(self._types) > _MAX_GROUPS:
                    self._types.popitem(last=False)
            return stated
        return None if group is None else self._types.get(group)

    def request(
        self, key: int, version: int, correlation_id: int, body: Any
    ) -> tuple[tuple[str, ...], list[EmbeddedValue], list[str]]:
        groups = request_groups(key, version, body)
        embedded: list[EmbeddedValue] = []
        notes: list[str] = []
        member = _s(getattr(body, "member_id", None))
        ptype = None
        if key in (_JOIN, _SYNC):
            group = groups[0] if groups else None
            ptype = self._type_of(group, getattr(body, "protocol_type", None))
            if ptype == CONSUMER and key == _JOIN:
                for i, p in enumerate(body.protocols or ()):
                    self._embed(embedded, notes, _SUBSCRIPTION, p.metadata, f"protocols[{i}].metadata",
                                group, member)  # fmt: skip
            elif ptype == CONSUMER:
                for i, a in enumerate(body.assignments or ()):
                    self._embed(embedded, notes, _ASSIGNMENT, a.assignment, f"assignments[{i}].assignment",
                                group, _s(a.member_id), body.generation_id)  # fmt: skip
        if groups:
            waiting = self._waiting
            generation = getattr(body, "generation_id", None) if key == _SYNC else None
            waiting[correlation_id] = _Asked(groups, member, ptype, generation)
            if len(waiting) > _MAX_WAITING:
                waiting.popitem(last=False)
        return groups, embedded, notes

    def response(
        self, key: int, version: int, correlation_id: int, body: Any
    ) -> tuple[tuple[str, ...], list[EmbeddedValue], list[str]]:
        asked = self._waiting.pop(correlation_id, None) if key in GROUP_KEYS else None
        groups = asked.groups if asked is not None else ()
        if body is None:
            return groups, [], []
        if key == _DESCRIBE_GROUPS and not groups:
            groups = tuple(g for g in entity_values(body, version, "groupId") if isinstance(g, str))
        embedded: list[EmbeddedValue] = []
        notes: list[str] = []
        if key in (_JOIN, _SYNC):
            group = groups[0] if groups else None
            stated = getattr(body, "protocol_type", None)
            ptype = self._type_of(group, stated) if stated else (asked.protocol_type if asked else None)
            if ptype == CONSUMER and key == _JOIN:
                for i, m in enumerate(body.members or ()):
                    self._embed(embedded, notes, _SUBSCRIPTION, m.metadata, f"members[{i}].metadata",
                                group, _s(m.member_id))  # fmt: skip
            elif ptype == CONSUMER:
                member = asked.member if asked is not None else None
                generation = asked.generation if asked is not None else None
                self._embed(
                    embedded, notes, _ASSIGNMENT, body.assignment, "assignment", group, member, generation
                )
        return groups, embedded, notes

    @staticmethod
    def _embed(
        out: list[EmbeddedValue],
        notes: list[str],
        name: str,
        data: bytes | None,
        path: str,
        group: str | None,
        member: str | None,
        generation: int | None = None,
    ) -> None:
        found, note = decode_embedded(name, data, path)
        if found is not None:
            out.append(EmbeddedValue(path, name, found[0], found[1], group, member, generation))
        if note is not None:
            notes.append(note)
