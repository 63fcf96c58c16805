"""Record batch decode/encode throughput (MB/s of uncompressed record bytes) for a ~1 MiB batch.

Run: ``python benchmarks/bench_records.py [--seconds S] [--in-process]``.  For every codec, compares
kcodec.records with kafka-python's ``kafka.record`` (pure Python) and aiokafka's ``aiokafka.record``
(C extension) where installed and where they support the codec (their codec libraries are optional):
encode = build one batch from the records, decode = iterate the batches and every record, touching
each value.  The figure is the best of repeated runs within the time budget.

Each figure is measured in a fresh Python process: the allocator's state left by earlier
measurements (glibc's dynamic mmap threshold, freed arenas) changes the cost of the 1 MiB buffers
compressors allocate by up to 2x, which made in-process figures depend on what ran before them.
``--in-process`` measures everything in one process (faster, noisier).  No assertions; numbers only.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from kcodec.records import Compression, NewRecord, build_batch, iter_batches

N_RECORDS = 2048
VALUE_SIZE = 480  # ~1 MiB of keys + values + headers


def _records() -> list[NewRecord]:
    rnd = random.Random(42).randbytes(VALUE_SIZE // 2).hex().encode()  # compressible-ish text, fixed
    return [
        NewRecord(
            rnd[i % 7 :] + rnd[: i % 7],
            key=b"key-%d" % i,
            headers=[("h", b"v")],
            timestamp=1_700_000_000_000 + i,
        )
        for i in range(N_RECORDS)
    ]


def _best(fn: Callable[[], object], seconds: float) -> float:
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


def _foreign_encode(builder_cls: Any, codec_id: int, recs: list[NewRecord]) -> bytes:
    builder = builder_cls(
        magic=2,
        compression_type=codec_id,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for i, r in enumerate(recs):
        builder.append(i, r.timestamp, r.key, r.value, list(r.headers))
    return bytes(builder.build())


def _libraries() -> dict[str, tuple[Any, Any]]:
    """name -> (MemoryRecords reader class, DefaultRecordBatchBuilder class)."""
    libs: dict[str, tuple[Any, Any]] = {}
    try:
        from kafka.record import MemoryRecords as KafkaPythonRecords
        from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaPythonBuilder

        libs["kafka-python"] = (KafkaPythonRecords, KafkaPythonBuilder)
    except ImportError:
        pass
    try:
        from aiokafka.record.default_records import (  # type: ignore[import-untyped]
            DefaultRecordBatchBuilder as AioBuilder,
        )
        from aiokafka.record.memory_records import MemoryRecords as AioRecords  # type: ignore[import-untyped]

        libs["aiokafka"] = (AioRecords, AioBuilder)
    except ImportError:
        pass
    return libs


def _measure(fn: Callable[[], object], mb: float, seconds: float) -> str:
    try:
        fn()
    except Exception as e:  # codec library missing in that package
        return "n/a (" + type(e).__name__ + ")"
    return f"{mb / _best(fn, seconds):.1f}"


def _figure(lib: str, codec: Compression, op: str, recs: list[NewRecord], seconds: float) -> str:
    """One MB/s figure (or "n/a (...)") for library ``lib``, ``codec`` and ``op`` ("enc"/"dec")."""
    mb = len(build_batch(recs)) / 1e6
    if lib == "kcodec":
        if op == "enc":
            return _measure(partial(build_batch, recs, compression=codec), mb, seconds)
        return _measure(partial(_kcodec_decode, build_batch(recs, compression=codec)), mb, seconds)
    reader, builder = _libraries()[lib]
    if op == "enc":
        return _measure(partial(_foreign_encode, builder, codec.id, recs), mb, seconds)
    return _measure(partial(_foreign_decode, reader, build_batch(recs, compression=codec)), mb, seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="time budget per measurement")
    parser.add_argument("--in-process", action="store_true", help="measure everything in this process")
    parser.add_argument("--one", nargs=3, metavar=("LIB", "CODEC", "OP"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    recs = _records()
    if args.one:
        lib, codec, op = args.one
        print(_figure(lib, Compression(codec), op, recs, args.seconds))
        return
    raw_size = len(build_batch(recs))
    print(f"batch: {N_RECORDS} records, {raw_size / 2**20:.2f} MiB uncompressed; MB/s of uncompressed bytes")
    names = ["kcodec", *_libraries()]
    header = f"{'codec':8}" + "".join(f" {n + ' ' + what:>17}" for n in names for what in ("enc", "dec"))
    print(header)
    for codec in Compression:
        cells = []
        for lib in names:
            for op in ("enc", "dec"):
                if args.in_process:
                    cells.append(_figure(lib, codec, op, recs, args.seconds))
                    continue
                cmd = [sys.executable, __file__, "--one", lib, codec.value, op]
                cmd += ["--seconds", str(args.seconds)]
                done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
                cells.append(done.stdout.strip() or f"failed ({done.returncode})")
        print(f"{codec.value:8}" + "".join(f" {c:>17}" for c in cells))


if __name__ == "__main__":
    main()
