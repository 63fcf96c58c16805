"""Allocator settings for the pipeline's Python workers: keep freed memory for reuse.

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
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = ["MIMALLOC_PURGE_DELAY_MS", "MMAP_THRESHOLD", "TRIM_THRESHOLD", "keep_freed_memory"]

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
