"""Topic ids resolved to names: :class:`TopicDirectory` learns ``id -> name`` from the Metadata
responses (and any other frame naming both) seen so far in a capture, so that later Fetch v13+,
DeleteRecords, ... frames, which carry only topic ids, can be shown with names."""

from __future__ import annotations

from typing import Final

from kcodec.capture.facts import Facts

__all__ = ["ZERO_TOPIC_ID", "TopicDirectory", "named_ids", "renamed", "topic_ids", "unnamed_ids"]

ZERO_TOPIC_ID: Final = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO: "no id"


class TopicDirectory:
    """``id -> name`` from the frames seen so far (bounded: ``limit`` ids, the oldest forgotten)."""

    __slots__ = ("limit", "names")

    def __init__(self, limit: int = 200_000) -> None:
        self.names: dict[str, str] = {}
        self.limit = limit

    def learn(self, facts: Facts) -> None:
        """Remember every (name, id) pair the frame's facts hold (its topics, then its partitions)."""
        self.learn_pairs(named_ids(facts))

    def learn_pairs(self, pairs: list[tuple[str, str]]) -> None:
        """:meth:`learn` of the ``(id, name)`` pairs :func:`named_ids` took from a frame's facts."""
        names = self.names
        for topic_id, name in pairs:
            if names.get(topic_id) != name:
                self._remember(topic_id, name)

    def lookup(self, ids: list[str]) -> dict[str, str]:
        """What :meth:`resolve` returns for a frame whose :func:`unnamed_ids` are ``ids``."""
        names = self.names
        return {topic_id: names[topic_id] for topic_id in ids if topic_id in names}

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
            facts.error_codes = [(code, renamed(where, found)) for code, where in facts.error_codes]
        return found


def named_ids(facts: Facts) -> list[tuple[str, str]]:
    """The ``(id, name)`` pairs :meth:`TopicDirectory.learn` would remember from these facts, in its
    order (topics, then partitions): so that another process can do the learning (a decoder running
    in parallel)."""
    return topic_ids(facts)[0]


def unnamed_ids(facts: Facts) -> list[str]:
    """The ids of the topics these facts name by id only, each once, in the order
    :meth:`TopicDirectory.resolve` looks them up (partitions first, then topics)."""
    return topic_ids(facts)[1]


def topic_ids(facts: Facts) -> tuple[list[tuple[str, str]], list[str]]:
    """``(named_ids(facts), unnamed_ids(facts))`` in one pass over the partitions (a parallel
    decoder's worker sends both for every frame). A pair is named when both its name and its id are
    set and the id is not the all-zero "no id"; an id is unnamed when its name is None."""
    named: list[tuple[str, str]] = []
    unnamed: list[str] = []
    for p in facts.partitions:
        topic_id = p.topic_id
        if topic_id is not None:
            name = p.topic
            if name is None:
                unnamed.append(topic_id)
            elif name and topic_id and topic_id != ZERO_TOPIC_ID:
                named.append((topic_id, name))
    topics = facts.topics
    if topics:
        named[:0] = [(i, n) for n, i in topics if n and i and i != ZERO_TOPIC_ID]
        unnamed += [i for n, i in topics if n is None and i is not None]
    return named, list(dict.fromkeys(unnamed)) if len(unnamed) > 1 else unnamed


def renamed(where: str, names: dict[str, str]) -> str:
    """An error code's place (``topic/partition``) with the topic's id replaced by its name."""
    topic, sep, rest = where.partition("/")
    return names.get(topic, topic) + sep + rest
