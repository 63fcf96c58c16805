"""Stage 2's task: decode one partition of segments and keep its events until the job can number them.

A frame's ``connection`` is its rank among all the connections of the input by first segment, and
topic ids are resolved to names stated anywhere in the input: neither is known until every task has
decoded. So each stage-2 task writes its events (Arrow IPC, uncompressed: written and read once, in
the same format the rows are built in) to a spill file under the output folder and returns one
small record: its partition, the spill file, what it found (:class:`~kcodec.pipeline.decode.Found`:
connection starts, topic names, time span) and its partial aggregates
(:class:`~kcodec.pipeline.partials.Partials`, folded while the rows were Python values: stage 3
need not turn the events back into Python for them). The events never pass through the JVM;
Spark carries only the stage-1 records (segment positions) and these.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from kcodec.pipeline.decode import Found, decode_records, event_arrow_schema
from kcodec.pipeline.memory import fewer_collections
from kcodec.pipeline.outputs import SPILL, Output
from kcodec.pipeline.partials import Partials
from kcodec.pipeline.scan import Record

__all__ = ["decode_task", "read_spill"]


def _attempt() -> str:
    """A label of the running task's attempt (random outside Spark)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return uuid.uuid4().hex[:8]
    return f"{ctx.stageId()}-{ctx.attemptNumber()}"


def decode_task(
    part: int,
    records: Iterable[Record],
    output: Output,
    run: str,
    paths: Sequence[str],
    ports: tuple[int, ...],
    autodetect: bool,
    strict: bool,
) -> Iterator[tuple[int, str | None, Found, int, Partials]]:
    """Stage 2 for partition ``part`` (sorted stage-1 records): one ``(part, spill file or None, found,
    bytes of the spilled batches, partial aggregates but the timeline)``."""
    import pyarrow as pa

    found = Found()
    partials = Partials(0.0)
    name = f"part-{part:05d}-{_attempt()}.arrow"
    rows = nbytes = 0
    sink = output.open_output(SPILL, run, name)
    try:
        with fewer_collections(), pa.ipc.new_stream(sink, event_arrow_schema()) as writer:
            for batch in decode_records(records, paths, ports, autodetect, strict, found, partials):
                writer.write_batch(batch)
                rows += batch.num_rows
                nbytes += batch.nbytes
    finally:
        sink.close()
    yield part, output.path(SPILL, run, name) if rows else None, found, nbytes, partials


def read_spill(output: Output, path: str) -> Iterator[Any]:
    """The event batches of a spill file."""
    import pyarrow as pa

    with output.open_input(path) as f, pa.ipc.open_stream(f) as reader:  # local: memory-mapped
        yield from reader
