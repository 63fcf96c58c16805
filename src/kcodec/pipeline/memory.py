"""Memory settings for the pipeline's Python workers: keep freed memory for reuse; collect
garbage less often.

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
aggregates' rows), and with CPython's default thresholds the cyclic collector ran every 700 of
them, walking the young objects each time and the older ones every tenth and hundredth time; on the
benchmark's data that was 0.4-0.6 of 6.5 CPU-s in stages 2 and 3 (12 % of stage 3). Raised
thresholds keep at most :data:`YOUNG_OBJECTS` uncollected objects in between.
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
    "YOUNG_OBJECTS",
    "fewer_collections",
    "keep_freed_memory",
]

#: Allocations from this size up get their own mapping (glibc's largest allowed value).
MMAP_THRESHOLD = 32 << 20
#: Free memory at the heap top beyond this is returned to the kernel.
TRIM_THRESHOLD = 256 << 20
#: mimalloc returns freed pages to the kernel after this many milliseconds.
MIMALLOC_PURGE_DELAY_MS = 2000

#: Allocations (net of frees) of container objects between two collections of the youngest
#: generation, while :func:`fewer_collections` is in force.
YOUNG_OBJECTS = 100_000

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
    """Raise the cyclic garbage collector's thresholds for the duration (restored after)."""
    before = gc.get_threshold()
    gc.set_threshold(YOUNG_OBJECTS, 50, 1000)
    try:
        yield
    finally:
        gc.set_threshold(*before)
