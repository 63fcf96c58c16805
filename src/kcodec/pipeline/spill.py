"""Stage 2's task: decode one partition of segments and keep its events until the job can number them.

A frame's ``connection`` is its rank among all the connections of the input by first segment, and
topic ids are resolved to names stated anywhere in the input: neither is known until every task has
decoded. So each stage-2 task writes its events (Arrow IPC, uncompressed: written and read once, in
the same format the rows are built in) to a spill file under the output folder and returns one
small row: its partition, the spill file, and what it found (:class:`~kcodec.pipeline.decode.Found`:
connection starts, topic names, time span). The events never pass through the JVM; Spark carries
only the stage-1 rows (segment positions) and these few rows.
"""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from kcodec.pipeline.decode import Found, decode_batches, event_arrow_schema
from kcodec.pipeline.outputs import SPILL, Output

__all__ = ["TASK_COLUMNS", "decode_task", "read_spill"]

#: (column, Spark type) of the one row a stage-2 task returns.
TASK_COLUMNS: tuple[tuple[str, str], ...] = (("part", "int"), ("spill", "string"), ("found", "binary"))


def _partition() -> tuple[int, str]:
    """(partition id, attempt label) of the running Spark task ((0, random) outside Spark)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return 0, uuid.uuid4().hex[:8]
    return ctx.partitionId(), f"{ctx.stageId()}-{ctx.attemptNumber()}"


def decode_task(
    batches: Iterable[Any],
    output: Output,
    run: str,
    paths: Sequence[str],
    ports: tuple[int, ...],
    autodetect: bool,
    strict: bool,
) -> Iterator[Any]:
    """mapInArrow function of stage 2: sorted segment batches in, one :data:`TASK_COLUMNS` row out."""
    import pyarrow as pa

    part, attempt = _partition()
    found = Found()
    name = f"part-{part:05d}-{attempt}.arrow"
    schema = event_arrow_schema()
    rows = 0
    sink = output.open_output(SPILL, run, name)
    try:
        with pa.ipc.new_stream(sink, schema) as writer:
            for batch in decode_batches(batches, paths, ports, autodetect, strict, found):
                writer.write_batch(batch)
                rows += batch.num_rows
    finally:
        sink.close()
    spill = output.path(SPILL, run, name) if rows else None
    out_schema = pa.schema([("part", pa.int32()), ("spill", pa.string()), ("found", pa.binary())])
    yield pa.RecordBatch.from_pylist(
        [{"part": part, "spill": spill, "found": pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL)}],
        schema=out_schema,
    )


def read_spill(output: Output, path: str) -> Iterator[Any]:
    """The event batches of a spill file."""
    import pyarrow as pa

    with output.open_input(path) as f, pa.ipc.open_stream(f) as reader:
        yield from reader
