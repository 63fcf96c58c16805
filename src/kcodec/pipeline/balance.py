"""Dealing weighted work into tasks of about equal weight, so that no core waits at the end of a stage.

- Stage 2's partitions: stage 1's records are weighed per connection key (:func:`key_weights`: the
  payload bytes a task will read back and decode, plus a per-segment cost) and the keys dealt into
  the partitions (:func:`assign_keys`), heaviest partition first, since Spark starts a stage's
  tasks in partition order and hands the next one to the first free core: the last tasks to start
  are the lightest. With connections hashed to partitions instead, the busier of 2 cores got
  1.06x its even share of the benchmark's stage 2 (10 partitions of its 64 connections), and 1.12x
  with 4 partitions per core.
- Stage 1's tasks: the input's byte-range splits by bytes (:func:`scan_groups`): a task costs the
  JVM about 45 ms of CPU besides its work, more than scanning a 5 MB split, so many small files
  are not one task each.
- Stage 3's tasks: spill files by bytes (:func:`balanced_groups`).

Both deal the largest item first to the group with the least weight so far (longest processing
time first).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

__all__ = [
    "SCAN_TASKS_PER_CORE",
    "SEGMENT_WEIGHT",
    "assign_keys",
    "balanced_groups",
    "key_weights",
    "scan_groups",
]

T = TypeVar("T")

#: The cost of decoding one segment besides its payload, in payload bytes (a segment's Python
#: objects and reassembly cost about a microsecond; a payload byte about 20 ns).
SEGMENT_WEIGHT = 64


def key_weights(records: Iterable[tuple[tuple[str, int, int], Any]]) -> dict[str, int]:
    """Weight per connection key of stage-1 records (issue records weigh 1)."""
    import numpy as np

    from kcodec.pipeline.scan import SEGMENT_DTYPE

    weights: dict[str, int] = {}
    for (key, _order, _first), value in records:
        if isinstance(value, str):
            weight = 1
        else:
            segments = np.frombuffer(value, dtype=SEGMENT_DTYPE)
            weight = int(segments["payload_length"].sum()) + SEGMENT_WEIGHT * len(segments)
        weights[key] = weights.get(key, 0) + weight
    return weights


def _deal(weights: Sequence[int], groups: int) -> list[list[int]]:
    """Indexes of ``weights`` dealt into ``groups`` groups (heaviest first, to the lightest group);
    the groups ordered by weight, heaviest first."""
    count = max(1, groups)
    loads = [(0, i) for i in range(count)]
    dealt: list[list[int]] = [[] for _ in range(count)]
    totals = [0] * count
    for k in sorted(range(len(weights)), key=lambda k: -weights[k]):
        load, i = heapq.heappop(loads)
        dealt[i].append(k)
        totals[i] = load + weights[k]
        heapq.heappush(loads, (totals[i], i))
    return [dealt[i] for i in sorted(range(count), key=lambda i: -totals[i])]


def assign_keys(weights: dict[str, int], partitions: int) -> dict[str, int]:
    """Connection key -> partition (0 the heaviest) for ``partitions`` partitions."""
    keys = list(weights)
    dealt = _deal([weights[k] for k in keys], partitions)
    return {keys[k]: part for part, group in enumerate(dealt) for k in group}


def balanced_groups(sizes: Sequence[tuple[T, int]], groups: int) -> list[list[T]]:
    """``sizes`` ((item, size) pairs) dealt into at most ``groups`` groups of about equal total size;
    each group in the items' order, the groups in the order of their first items."""
    dealt = _deal([size for _, size in sizes], min(groups, len(sizes)))
    ordered = sorted((sorted(group) for group in dealt if group), key=lambda group: group[0])
    return [[sizes[k][0] for k in group] for group in ordered]


#: Stage-1 tasks per core at least (when the input has as many splits), so that the cores finish
#: the scan together and its progress moves in steps.
SCAN_TASKS_PER_CORE = 2


def scan_groups(plan: Sequence[tuple[Any, ...]], cores: int, split_size: int) -> list[list[Any]]:
    """Stage 1's splits (``(path, file order, start, end or -1, file size, capture)``) dealt into its
    tasks, of about equal bytes: one task per ``split_size`` bytes of input, and at least
    :data:`SCAN_TASKS_PER_CORE` per core, but never more tasks than splits (a large file's splits
    stay one task each; small files share one)."""
    sizes = [(split, (split[3] if split[3] >= 0 else split[4]) - split[2]) for split in plan]
    total = sum(size for _, size in sizes)
    tasks = max(SCAN_TASKS_PER_CORE * max(cores, 1), -(-total // max(split_size, 1)))
    return balanced_groups(sizes, tasks)
