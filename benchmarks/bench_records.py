"""Record batch decode/encode throughput (MB/s of uncompressed record bytes) for a ~1 MiB batch.

Run: ``python benchmarks/bench_records.py``.  Compares kcodec.records with kafka-python's
``kafka.record`` and aiokafka's ``aiokafka.record`` readers where installed and where they support
the codec (their codec libraries are optional).  No assertions; numbers only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from kcodec.records import Compression, NewRecord, build_batch, iter_batches

N_RECORDS = 2048
VALUE_SIZE = 480  # ~1 MiB of keys + values + headers


def _records() -> list[NewRecord]:
    rnd = os.urandom(VALUE_SIZE // 2).hex().encode()  # compressible-ish text
    return [
        NewRecord(
            rnd[i % 7 :] + rnd[: i % 7],
            key=b"key-%d" % i,
            headers=[("h", b"v")],
            timestamp=1_700_000_000_000 + i,
        )
        for i in range(N_RECORDS)
    ]


def _best(fn: Callable[[], object], seconds: float = 0.5) -> float:
    best = float("inf")
    deadline = time.perf_counter() + seconds
    while True:
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
        if time.perf_counter() > deadline:
            return best


def _kcodec_decode(data: bytes) -> int:
    return sum(len(r.value or b"") for b in iter_batches(data) for r in b.records())


def _foreign_decode(memory_records: Any, data: bytes) -> int:
    mr = memory_records(data)
    n = 0
    while mr.has_next():
        for rec in mr.next_batch():
            n += len(rec.value or b"")
    return n


def main() -> None:
    recs = _records()
    raw_size = len(build_batch(recs))
    print(f"batch: {N_RECORDS} records, {raw_size / 2**20:.2f} MiB uncompressed; MB/s of uncompressed bytes")
    readers: dict[str, Any] = {}
    try:
        from kafka.record import MemoryRecords as KafkaPythonRecords

        readers["kafka-python"] = KafkaPythonRecords
    except ImportError:
        pass
    try:
        from aiokafka.record.memory_records import MemoryRecords as AioRecords  # type: ignore[import-untyped]

        readers["aiokafka"] = AioRecords
    except ImportError:
        pass
    header = f"{'codec':8} {'kcodec enc':>11} {'kcodec dec':>11}" + "".join(
        f" {n + ' dec':>17}" for n in readers
    )
    print(header)
    for codec in Compression:
        data = build_batch(recs, compression=codec)
        mb = raw_size / 1e6
        enc = mb / _best(partial(build_batch, recs, compression=codec))
        dec = mb / _best(partial(_kcodec_decode, data))
        row = f"{codec.value:8} {enc:11.1f} {dec:11.1f}"
        for reader in readers.values():
            try:
                _foreign_decode(reader, data)
                row += f" {mb / _best(partial(_foreign_decode, reader, data)):17.1f}"
            except Exception as e:  # codec library missing in that package
                row += f" {'n/a (' + type(e).__name__ + ')':>17}"
        print(row)


if __name__ == "__main__":
    main()
