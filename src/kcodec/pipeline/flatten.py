"""The columns people query, read out of a frame's Kafka JSON: topics, partitions with their error
codes and leader epochs, every non-zero error code, the top-level error code.

Works on the plain JSON objects ``CapturedFrame.to_dict`` gives (``header``/``body``), the same for
every API and version:

- a **topic** is an element of an array that names one: ``topic`` / ``topicName``, or ``name`` in an
  array whose field name says topics (``topics``, ``topicData``, ...) or in an element that holds an
  array of partitions; ``topicId`` stands in where there is no name (Fetch v13+);
- a **partition** is an element of an array with ``partitionIndex`` / ``partition`` /
  ``partitionId`` / ``index`` (an int) under such a topic;
- ``leader_epoch`` is the partition leader's epoch as the broker states it: ``currentLeader``'s
  ``leaderEpoch`` (Fetch and Produce responses, KIP-951), the partition's ``leaderEpoch`` in
  Metadata responses and in the controller's LeaderAndIsr / UpdateMetadata requests; elsewhere a
  ``leaderEpoch`` means something else (the epoch of an offset) and is not taken;
- ``current_leader_epoch``: a request's ``currentLeaderEpoch`` (KIP-320 fencing: Fetch, ListOffsets,
  OffsetForLeaderEpoch), :data:`~kcodec.sentinels.NO_LEADER_EPOCH` when the client gives none;
- ``errors``: every non-zero ``errorCode`` anywhere in the body, with the topic and partition it
  belongs to (if any).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kcodec.error_codes import error_name

__all__ = ["Flat", "flatten_body", "partition_struct_fields"]

_METADATA, _LEADER_AND_ISR, _UPDATE_METADATA = 3, 4, 6
#: (api key, direction) whose partitions' ``leaderEpoch`` is the partition leader's epoch.
_LEADER_EPOCH_AT = {(_METADATA, "response"), (_LEADER_AND_ISR, "request"), (_UPDATE_METADATA, "request")}
_TOPIC_NAME_KEYS = ("topic", "topicName")
_PARTITION_KEYS = ("partitionIndex", "partition", "partitionId", "index")

#: The fields of one ``partitions`` entry (Spark/Arrow struct), in order.
partition_struct_fields: tuple[tuple[str, str], ...] = (
    ("topic", "string"),
    ("partition", "int"),
    ("error_code", "int"),
    ("error_name", "string"),
    ("leader_epoch", "int"),
    ("current_leader_epoch", "int"),
)


@dataclass(slots=True)
class Flat:
    """The flattened columns of one frame's body."""

    topics: list[str] = field(default_factory=list)
    partitions: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    error_code: int | None = None
    error_name: str | None = None


def _topic_of(item: dict[str, Any], array_field: str) -> str | None:
    for key in _TOPIC_NAME_KEYS:
        value = item.get(key)
        if isinstance(value, str):
            return value
    name = item.get("name")
    if isinstance(name, str) and (
        "topic" in array_field.lower()
        or any(isinstance(v, list) and "partition" in k.lower() for k, v in item.items())
    ):
        return name
    topic_id = item.get("topicId")
    return topic_id if isinstance(topic_id, str) else None


def _partition_of(item: dict[str, Any]) -> int | None:
    for key in _PARTITION_KEYS:
        value = item.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


class _Walker:
    __slots__ = ("epoch_here", "flat", "seen_topics")

    def __init__(self, epoch_here: bool) -> None:
        self.flat = Flat()
        self.seen_topics: set[str] = set()
        self.epoch_here = epoch_here

    def error(self, code: Any, topic: str | None, partition: int | None) -> None:
        if isinstance(code, int) and code:
            self.flat.errors.append(
                {"topic": topic, "partition": partition, "error_code": code, "error_name": error_name(code)}
            )

    def walk(self, obj: dict[str, Any], topic: str | None) -> None:
        for key, value in obj.items():
            if key == "errorCode":
                continue
            if isinstance(value, list):
                if value and isinstance(value[0], dict):
                    self.array(key, value, topic)
            elif isinstance(value, dict):
                self.walk(value, topic)

    def array(self, field_name: str, items: list[Any], topic: str | None) -> None:
        for item in items:
            if not isinstance(item, dict):
                continue
            partition = _partition_of(item) if topic is not None else None
            if partition is not None:
                self.partition(item, topic, partition)
                continue
            named = _topic_of(item, field_name)
            here = topic
            if named is not None:
                here = named
                if named not in self.seen_topics:
                    self.seen_topics.add(named)
                    self.flat.topics.append(named)
            self.error(item.get("errorCode"), here if named is not None else topic, None)
            self.walk(item, here)

    def partition(self, item: dict[str, Any], topic: str | None, partition: int) -> None:
        code = item.get("errorCode")
        leader = item.get("currentLeader")
        epoch = leader.get("leaderEpoch") if isinstance(leader, dict) else None
        if epoch is None and self.epoch_here:
            epoch = item.get("leaderEpoch")
        current = item.get("currentLeaderEpoch")
        self.flat.partitions.append(
            {
                "topic": topic,
                "partition": partition,
                "error_code": code if isinstance(code, int) else None,
                "error_name": error_name(code) if isinstance(code, int) and code else None,
                "leader_epoch": epoch if isinstance(epoch, int) else None,
                "current_leader_epoch": current if isinstance(current, int) else None,
            }
        )
        self.error(code, topic, partition)
        self.walk(item, topic)


def flatten_body(body: dict[str, Any] | None, api_key: int | None, direction: str) -> Flat:
    """The flattened columns of a frame's body JSON (an empty :class:`Flat` for no body)."""
    if body is None:
        return Flat()
    walker = _Walker((api_key, direction) in _LEADER_EPOCH_AT)
    top = body.get("errorCode")
    if isinstance(top, int):
        walker.flat.error_code = top
        walker.flat.error_name = error_name(top)
        walker.error(top, None, None)
    walker.walk(body, None)
    return walker.flat
