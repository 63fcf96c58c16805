"""Topic ids resolved to names: :class:`TopicDirectory` learns ``id -> name`` from the Metadata
responses (and any other frame naming both) seen so far in a capture, so that later Fetch v13+,
DeleteRecords, ... frames, which carry only topic ids, can be shown with names."""

from __future__ import annotations

from kcodec.capture.facts import Facts

__all__ = ["ZERO_TOPIC_ID", "TopicDirectory"]

ZERO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO: "no id"


class TopicDirectory:
    """``id -> name`` from the frames seen so far (bounded: ``limit`` ids, the oldest forgotten)."""

    __slots__ = ("limit", "names")

    def __init__(self, limit: int = 200_000) -> None:
        self.names: dict[str, str] = {}
        self.limit = limit

    def learn(self, facts: Facts) -> None:
        """Remember every (name, id) pair the frame's facts hold (its topics, then its partitions)."""
        names = self.names
        for name, topic_id in facts.topics:
            if name and topic_id and topic_id != ZERO_TOPIC_ID and names.get(topic_id) != name:
                self._remember(topic_id, name)
        for p in facts.partitions:
            name, topic_id = p.topic, p.topic_id
            if name and topic_id and topic_id != ZERO_TOPIC_ID and names.get(topic_id) != name:
                self._remember(topic_id, name)

    def _remember(self, topic_id: str, name: str) -> None:
        self.names[topic_id] = name
        if len(self.names) > self.limit:
            del self.names[next(iter(self.names))]

    def resolve(self, facts: Facts) -> dict[str, str]:
        """Fill in the names of topics the frame names by id only; ``{id: name}`` of those resolved."""
        found: dict[str, str] = {}
        for p in facts.partitions:
            if p.topic is None and p.topic_id is not None:
                name = self.names.get(p.topic_id)
                if name is not None:
                    p.topic = found[p.topic_id] = name
        for i, (name, topic_id) in enumerate(facts.topics):
            if name is None and topic_id is not None and topic_id in self.names:
                facts.topics[i] = (found.setdefault(topic_id, self.names[topic_id]), topic_id)
        if found:
            facts.error_codes = [(code, _renamed(where, found)) for code, where in facts.error_codes]
        return found


def _renamed(where: str, names: dict[str, str]) -> str:
    topic, sep, rest = where.partition("/")
    return names.get(topic, topic) + sep + rest
