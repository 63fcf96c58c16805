"""What the facts extractors of ``kcodec._generated.facts_`` fill in (see ``kcodec.capture.facts``):
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


@dataclass(slots=True)
class Facts:
    """What the extractor found in one body."""

    error_codes: list[tuple[int, str]] = field(default_factory=list)  # (code, where) of non-zero codes
    partitions: list[PartitionFacts] = field(default_factory=list)
    topics: list[tuple[str | None, str | None]] = field(default_factory=list)  # (name, id) in order
    brokers: list[tuple[int, str, int]] = field(default_factory=list)  # (node id, host, port)
    values: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # field -> size, other arrays of structs
    records_bytes: int = 0


def where(topic: str | None, partition: int | None) -> str:
    """Where an error code is: ``"topic/partition"``, ``"topic"``, ``"?/partition"`` or ``""``."""
    if topic is None and partition is None:
        return ""
    return f"{topic or '?'}" + ("" if partition is None else f"/{partition}")
