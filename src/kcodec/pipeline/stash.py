"""Stage 1's records kept in files under the output folder until stage 2 reads them, instead of in
Spark's block manager and shuffle.

A stage-1 task writes the values of its records (:func:`~kcodec.pipeline.scan.scan_split`: packed
segment positions, or a file issue's JSON) one after the other into one *stash* file under
``_spill/<run>/`` and returns only an index of them (:class:`Stashed`: per record its key, where
its bytes lie in the file and its weight). The driver weighs the connection keys from the indexes,
deals them into partitions of about equal weight (:mod:`~kcodec.pipeline.balance`) and hands each
stage-2 task the references of its records, sorted as the shuffle sorted them (by connection key,
file order, first offset); the task reads them back with :func:`read_stashed` (from a local file's
memory mapping; on a remote file system, the records it needs from one stash file in a few
requests rather than one each).

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
from kcodec.pipeline.sources import local_path

__all__ = ["MAX_READ", "MAX_SKIP", "Ref", "Stashed", "read_stashed", "stash_task", "weigh"]

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


#: Stash bytes read in one request at most, when a remote stash file's records are read together.
MAX_READ = 16 << 20
#: Records further apart than this in a remote stash file are read in separate requests.
MAX_SKIP = 1 << 20


def read_stashed(refs: Iterable[Ref], output: Output, coalesce: bool | None = None) -> Iterator[Record]:
    """The records ``refs`` point to, in their order. A local stash file is memory-mapped and each
    record read from the mapping; on a remote file system (``coalesce``; default: the output is not
    local) the records a task needs from one stash file are read in few requests: the refs are
    planned first, and each request covers neighbouring records of one file (at most
    :data:`MAX_SKIP` bytes between them, :data:`MAX_READ` bytes in all), instead of one ranged read
    per record (an object store's request costs tens of milliseconds). A request's bytes are dropped
    once its last record has been handed on."""
    refs = list(refs)
    if coalesce is None:
        coalesce = local_path(output.root) is None
    spans = _plan_spans(refs) if coalesce else {}
    files: dict[str, Any] = {}
    held: dict[int, tuple[bytes, int]] = {}  # span number -> (its bytes, records still to hand on)
    try:
        for i, (head, path, at, length, issue, _weight) in enumerate(refs):
            f = files.get(path)
            if f is None:
                f = files[path] = output.open_input(path)
            span = spans.get(i)
            if span is None:
                data = f.read_at(length, at)
            else:
                number, start, size, count = span
                have = held.get(number)
                if have is None:
                    have = held[number] = (f.read_at(size, start), count)
                block, left = have
                data = block[at - start : at - start + length]
                if left == 1:
                    del held[number]
                else:
                    held[number] = (block, left - 1)
            yield head, data.decode() if issue else data
    finally:
        for f in files.values():
            f.close()


def _plan_spans(refs: list[Ref]) -> dict[int, tuple[int, int, int, int]]:
    """For each ref (by index): (span number, span start, span size, records in the span), where a
    span is a run of the refs' records in one stash file, by offset, read in one request."""
    by_file: dict[str, list[int]] = {}
    for i, ref in enumerate(refs):
        by_file.setdefault(ref[1], []).append(i)
    spans: dict[int, tuple[int, int, int, int]] = {}
    number = 0
    for indexes in by_file.values():
        indexes.sort(key=lambda i: refs[i][2])
        group: list[int] = []
        start = end = 0
        for i in [*indexes, -1]:
            at, length = (refs[i][2], refs[i][3]) if i >= 0 else (0, 0)
            if group and (i < 0 or at - end > MAX_SKIP or max(end, at + length) - start > MAX_READ):
                for j in group:
                    spans[j] = (number, start, end - start, len(group))
                number += 1
                group = []
            if i < 0:
                break
            if not group:
                start = end = at
            group.append(i)
            end = max(end, at + length)
    return spans
