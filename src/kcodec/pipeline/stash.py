"""Stage 1's records kept in files under the output folder until stage 2 reads them, instead of in
Spark's block manager and shuffle.

A stage-1 task writes the values of its records (:func:`~kcodec.pipeline.scan.scan_split`: packed
segment positions, or a file issue's JSON) one after the other into one *stash* file under
``_spill/<run>/`` and returns only an index of them (:class:`Stashed`: per record its key, where
its bytes lie in the file and its weight). The driver weighs the connection keys from the indexes,
deals them into partitions of about equal weight (:mod:`~kcodec.pipeline.balance`) and hands each
stage-2 task the references of its records, sorted as the shuffle sorted them (by connection key,
file order, first offset); the task reads them back with :func:`read_stashed`.

The shuffle this replaces cost a Spark stage of its own between the two (one small Python task
per split reading the kept records back, keying and pickling them again for the JVM's shuffle
write: about 0.6 s of the job's wall time on 1 GB, much of it per-task start-up that two cores do
not share out) and the JVM's CPU to keep, write and read the records. The files are where the
spill files already are: every executor writes and reads the output folder.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from kcodec.pipeline.balance import SEGMENT_WEIGHT
from kcodec.pipeline.outputs import SPILL, Output
from kcodec.pipeline.scan import SEGMENT_DTYPE, Done, Record, Split, scan_split

__all__ = ["Ref", "Stashed", "read_stashed", "stash_task", "weigh"]

#: One stashed record: ((key, file order, first offset), stash file, offset, length, is an issue,
#: weight).
Ref = tuple[tuple[str, int, int], str, int, int, bool, int]
#: What a stage-1 task returns: its records' references.
Stashed = list[Ref]


def _weight(value: bytes | str) -> int:
    """A record's weight: its segments' payload bytes plus :data:`SEGMENT_WEIGHT` a segment (an
    issue weighs 1)."""
    if isinstance(value, str):
        return 1
    import numpy as np

    segments = np.frombuffer(value, dtype=SEGMENT_DTYPE)
    return int(segments["payload_length"].sum()) + SEGMENT_WEIGHT * len(segments)


def _attempt() -> str:
    """A label of the running task's attempt (random outside Spark)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return uuid.uuid4().hex[:8]
    return f"{ctx.stageId()}-{ctx.partitionId()}-{ctx.attemptNumber()}"


def stash_task(split: Split, output: Output, run: str, done: Done | None = None) -> Stashed:
    """Stage 1 for one split: its records written to a stash file; their references."""
    name = f"scan-{split[1]:05d}-{split[2]:016x}-{_attempt()}.bin"
    path = output.path(SPILL, run, name)
    refs: Stashed = []
    at = 0
    sink = output.open_output(SPILL, run, name)
    try:
        for head, value in scan_split(split, done):
            data = value.encode() if isinstance(value, str) else value
            sink.write(data)
            refs.append((head, path, at, len(data), isinstance(value, str), _weight(value)))
            at += len(data)
    finally:
        sink.close()
    return refs


def weigh(refs: Iterable[Ref]) -> dict[str, int]:
    """Weight per connection key of stashed records."""
    weights: dict[str, int] = {}
    for (key, _order, _first), *_rest, weight in refs:
        weights[key] = weights.get(key, 0) + weight
    return weights


def read_stashed(refs: Iterable[Ref], output: Output) -> Iterator[Record]:
    """The records ``refs`` point to, in their order (read from the stash files; locally memory-mapped)."""
    files: dict[str, Any] = {}
    try:
        for head, path, at, length, issue, _weight in refs:
            f = files.get(path)
            if f is None:
                f = files[path] = output.open_input(path)
            data = f.read_at(length, at)
            yield head, data.decode() if issue else data
    finally:
        for f in files.values():
            f.close()
