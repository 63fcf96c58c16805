"""Memory settings for the pipeline's Python workers: keep freed memory for reuse; no cyclic
garbage collection while a task runs.

A stage-2 or stage-3 task allocates and frees the same few sizes over and over: 1 MB file spans
read back for payloads, a batch's JSON strings, Arrow buffers of a few MB. With the allocators'
defaults that memory goes back to the kernel as soon as it is freed (glibc serves requests from
128 kB up with their own ``mmap`` and trims its heap top beyond 128 kB; mimalloc, which pyarrow
allocates with, purges freed pages after 10 ms), so the next batch faults it in again, and the
kernel zeroes every page it hands out (2 MB at a time with transparent huge pages). On the
benchmark's data that zeroing was 16 % of the tasks' CPU. :func:`keep_freed_memory` raises
glibc's mmap and trim thresholds (``mallopt``) and mimalloc's purge delay (``MIMALLOC_PURGE_DELAY``,
read when pyarrow loads, so it must run before); the memory a worker holds stays bounded by its
largest batch plus these thresholds.

:func:`fewer_collections` is for the tasks themselves (on any cluster): a task makes hundreds of
thousands of short-lived, acyclic objects (decoded messages, JSON dicts, row tuples, the partial
aggregates' rows), and keeps a batch's rows alive until the batch is written (tens of thousands of
containers). With the cyclic collector running, each collection of the youngest generation walked
the rows alive at that moment and the older generations walked them again as they were promoted:
with thresholds raised to 100,000 new objects that was still 0.3 of 0.95 CPU-s of stage 2 on 37.5 MB
of the benchmark's data. Reference counting frees these objects; the cyclic garbage a stage-2 task
left on that input was 1,792 objects in all. So the collector is off while a task runs, and what
cycles it left are collected when it is turned back on (a reused Spark worker collects after each
task).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "MIMALLOC_PURGE_DELAY_MS",
    "MMAP_THRESHOLD",
    "TRIM_THRESHOLD",
    "fewer_collections",
    "keep_freed_memory",
]

#: Allocations from this size up get their own mapping (glibc's largest allowed value).
MMAP_THRESHOLD = 32 << 20
#: Free memory at the heap top beyond this is returned to the kernel.
TRIM_THRESHOLD = 256 << 20
#: mimalloc returns freed pages to the kernel after this many milliseconds.
MIMALLOC_PURGE_DELAY_MS = 2000

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def keep_freed_memory() -> bool:
    """Apply the settings to this process (and the processes it forks later). Returns whether
    glibc's were applied (False on another C library)."""
    os.environ.setdefault("MIMALLOC_PURGE_DELAY", str(MIMALLOC_PURGE_DELAY_MS))
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )


@contextmanager
def fewer_collections() -> Iterator[None]:
    """No cyclic garbage collection for the duration: the collector is disabled, and turned back on
    after if it was on (reference counting still frees every acyclic object at once)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
