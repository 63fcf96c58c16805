"""What the facts extractors (generated, ``kcodec._generated.facts_``, or built at run time,
``kcodec.protocol.facts_build``) fill in (see ``kcodec.capture.facts``):
the records of one frame's facts, and how a place in a frame is named.

Kept apart from ``kcodec.capture`` so that the generated code (the codec runtime's layer) can build
them without importing the tools built on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Facts", "PartitionFacts", "where"]


@dataclass(slots=True)
class PartitionFacts:
    """One topic-partition entry of a frame."""

    topic: str | None
    topic_id: str | None
    partition: int | None
    error_code: int = 0
    values: dict[str, Any] = field(default_factory=dict)
    records_bytes: int | None = None


@dataclass(slots=True, init=False)
class Facts:
    """What the extractor found in one body (each list and dict empty unless given)."""

    error_codes: list[tuple[int, str]]  # (code, where) of non-zero codes
    partitions: list[PartitionFacts]
    topics: list[tuple[str | None, str | None]]  # (name, id) in order
    brokers: list[tuple[int, str, int]]  # (node id, host, port)
    values: dict[str, Any]
    counts: dict[str, int]  # field -> size, other arrays of structs
    records_bytes: int

    # (written out, not default factories: one is made per frame, and compiled, each factory was a
    # call through the type: 6.3k instructions a Facts against 1.5k)
    def __init__(
        self,
        error_codes: list[tuple[int, str]] | None = None,
        partitions: list[PartitionFacts] | None = None,
        topics: list[tuple[str | None, str | None]] | None = None,
        brokers: list[tuple[int, str, int]] | None = None,
        values: dict[str, Any] | None = None,
        counts: dict[str, int] | None = None,
        records_bytes: int = 0,
    ) -> None:
        self.error_codes = [] if error_codes is None else error_codes
        self.partitions = [] if partitions is None else partitions
        self.topics = [] if topics is None else topics
        self.brokers = [] if brokers is None else brokers
        self.values = {} if values is None else values
        self.counts = {} if counts is None else counts
        self.records_bytes = records_bytes


def where(topic: str | None, partition: int | None) -> str:
    """Where an error code is: ``"topic/partition"``, ``"topic"``, ``"?/partition"`` or ``""``."""
    if topic is None and partition is None:
        return ""
    return f"{topic or '?'}" + ("" if partition is None else f"/{partition}")
