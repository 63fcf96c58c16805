"""Parallel capture decoding: a capture file's connections decoded by several worker processes.

Quick use::

    from kcodec.capture.parallel import decode_parallel
    for event in decode_parallel("traffic.pcap", workers=4):
        ...   # the events of kcodec.capture.iter_capture("traffic.pcap"): same events, same order

- :func:`decode_parallel` yields exactly :func:`~kcodec.capture.iter_capture`'s events, in its order
  and with its connection numbers, decoded by ``workers`` forked processes (each decodes the
  connections of one shard, :mod:`kcodec.capture.shard`); ``workers=None`` chooses
  (:func:`default_workers`); one worker, or a system without ``fork``, decodes in this process.
- :class:`~kcodec.capture.parallel.engine.ParallelRun` is the engine under it (imported only when
  workers are started: choosing how many, :func:`default_workers`, imports none of it): workers that turn
  their shard's events into any picklable items (a :class:`~kcodec.capture.parallel.engine.ShardWork`),
  merged back into capture order in the parent (``kcodec decode-capture -j N`` makes its JSON lines
  and table rows in the workers this way).
- :mod:`~kcodec.capture.parallel.forked`: the worker processes and their pipes.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

from kcodec.capture.connection import DEFAULT_PORTS
from kcodec.capture.events import CapturedFrame, CaptureEvent, CaptureIssue
from kcodec.capture.parallel.forked import WorkerFailed, can_fork
from kcodec.capture.shard import Key, Numbering
from kcodec.capture.stream import iter_capture

__all__ = [
    "MIN_PARALLEL_BYTES",
    "WorkerFailed",
    "can_fork",
    "decode_parallel",
    "default_workers",
    "idle_cores",
]

#: the smallest capture file decoded by several workers by default (a smaller one is done before
#: the workers would have paid for their start and for each reading the whole file)
MIN_PARALLEL_BYTES: Final = 16 << 20
#: at most this many workers by default
MAX_WORKERS: Final = 8


def idle_cores() -> int:
    """The cores this process may run on that are not busy: those it may use (its affinity) less the
    system's load over the last minute (rounded to the nearest core), at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # (not Linux)
        cores = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):  # (no load average on this system: take every core as idle)
        busy = 0.0
    return max(1, cores - int(busy + 0.5))


def default_workers(path: str | Path, min_bytes: int = MIN_PARALLEL_BYTES) -> int:
    """Workers for a capture file when asked to choose (``decode-capture -j auto``, and
    :func:`decode_parallel` with ``workers=None``): 1 (no workers) for anything but a regular file of at
    least ``min_bytes``; otherwise one per idle core (:func:`idle_cores`), at most ``MAX_WORKERS``,
    and 1 when fewer than two are idle. (Workers
    on busy cores only share them: every worker reads and splits the whole file, so they cost more
    CPU than one process and, sharing cores, do not finish sooner.)"""
    try:
        st = os.stat(path)
    except OSError:
        return 1
    if not stat.S_ISREG(st.st_mode) or st.st_size < min_bytes or not can_fork():
        return 1
    idle = idle_cores()
    return min(idle, MAX_WORKERS) if idle >= 2 else 1


class _Events:
    """The :class:`~kcodec.capture.parallel.engine.ShardWork` of :func:`decode_parallel`: the
    events themselves (tag ``"e"``)."""

    def frame(self, key: Key, frame: CapturedFrame, batch: list[tuple[Any, ...]]) -> int:
        batch.append((key, "e", frame))
        return 256 + (frame.size or 0)

    def issue(self, key: Key, issue: CaptureIssue, batch: list[tuple[Any, ...]]) -> None:
        batch.append((key, "e", issue))

    def end(self, batch: list[tuple[Any, ...]]) -> None:
        return None


def decode_parallel(
    path: str | Path,
    *,
    workers: int | None = None,
    ports: Iterable[int] = DEFAULT_PORTS,
    autodetect: bool = True,
    strict: bool = False,
) -> Iterator[CaptureEvent]:
    """The events of :func:`~kcodec.capture.iter_capture` on the capture file at ``path`` (the same
    events, order and connection numbers), decoded by ``workers`` worker processes (None: as
    :func:`default_workers` chooses). Raises :class:`~kcodec.capture.CaptureFileError` if the file is
    no capture, :class:`WorkerFailed` if a worker fails otherwise. Closing the iterator early stops
    the workers."""
    jobs = default_workers(path) if workers is None else workers
    if jobs < 1:
        raise ValueError(f"workers must be at least 1, not {jobs}")
    options = {"ports": tuple(ports), "autodetect": autodetect, "strict": strict}
    if jobs == 1 or not can_fork():
        yield from iter_capture(path, **options)  # type: ignore[arg-type]
        return
    from kcodec.capture.packets import CaptureFileError
    from kcodec.capture.parallel.engine import ParallelRun

    numbering = Numbering()
    run = ParallelRun(str(path), jobs, _Events, options)
    batches = run.batches()
    try:
        for items in batches:
            for _, k, tag, data in items:
                if tag == "e":
                    if data.connection is not None:
                        data.connection = numbering(k, data.connection)
                    yield data
                elif tag == "o":
                    numbering.opened(k, data)
                elif tag == "c":
                    numbering.closed(k, data)
    except WorkerFailed as e:
        if e.unreadable:
            raise CaptureFileError(str(e)) from None
        raise
    finally:  # (closed early: the workers stopped now, not when the generator is collected)
        batches.close()
