"""A capture file decoded by N worker processes, one shard of its connections each
(:mod:`kcodec.capture.shard`), their output merged back into capture order.

Each worker reads the whole file (packets and segments are the cheap part) and decodes only its
connections: reassembly, framing, pairing and decoding, then whatever its :class:`ShardWork` makes
of each event (the events themselves for :func:`~kcodec.capture.parallel.decode_parallel`; JSON
lines, table rows or summary totals for ``kcodec decode-capture -j N``). What depends on other
connections is left to the parent, which merges the workers' items by key: connection numbers
(capture-wide: the n-th connection opened is #n, from the ``"o"``/``"c"`` items and
:class:`~kcodec.capture.shard.Numbering`), and whatever the work's own items leave to it.

Items are ``(key, tag, data)`` tuples (``key``: the event's place in the capture). The engine's own
tags: ``"o"``/``"c"`` a connection opened/closed (its number in the shard), ``"m"`` a mark (the
bytes of the file read so far); the work chooses the others.

Workers ignore Ctrl-C (the parent stops them) and send their items in batches, each with a mark
of how far into the capture they are, so that the parent never waits for a worker that has nothing
to say about the part of the capture being merged. Memory: each worker holds what one process
would for its connections; the parent, a batch per worker.
"""

from __future__ import annotations

import copyreg
import io
import pickle
import queue
import signal
import threading
import traceback
from collections.abc import Callable, Generator, Iterator
from typing import IO, Any, Final, Protocol, cast

from kcodec.capture.counting import CountingReader
from kcodec.capture.events import CapturedFrame, CaptureIssue
from kcodec.capture.packets import CaptureFileError
from kcodec.capture.parallel.forked import PipeReader, PipeWriter, Worker, WorkerFailed, start
from kcodec.capture.shard import END, BatchMerge, Closed, Key, Opened, iter_shard
from kcodec.protocol.errors import KcodecError

__all__ = ["END", "ParallelRun", "ShardWork", "WorkerFailed"]

_BATCH_BYTES: Final = 1 << 20
_READ_AHEAD: Final = 16  # batches (of at most about _BATCH_BYTES) read ahead per worker
Item = tuple[Any, ...]


class ShardWork(Protocol):
    """What a worker makes of its shard's events (made in the worker, by the run's factory)."""

    def frame(self, key: Key, frame: CapturedFrame, batch: list[Item]) -> int:
        """Append the frame's items to ``batch``; the bytes they count towards a full batch."""

    def issue(self, key: Key, issue: CaptureIssue, batch: list[Item]) -> None:
        """Append an issue's items to ``batch``."""

    def end(self, batch: list[Item]) -> None:
        """Append the shard's last items to ``batch`` (e.g. its totals, keyed ``(END, END, 1)``)."""


# --- the worker side ------------------------------------------------------------------------------


def _work(
    path: str, shard: int, shards: int, work: ShardWork, options: dict[str, Any], out: PipeWriter
) -> None:
    """A worker process: shard ``shard`` of the capture, sent to the parent in batches."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with open(path, "rb") as f:
            source = CountingReader(f)
            batch: list[Item] = []
            size = 0
            for key, item in iter_shard(cast(IO[bytes], source), shard, shards, position=source, **options):
                if isinstance(item, CapturedFrame):
                    size += work.frame(key, item, batch)
                    if size < _BATCH_BYTES:
                        continue
                elif isinstance(item, CaptureIssue):
                    work.issue(key, item, batch)
                    continue
                elif isinstance(item, Opened):
                    batch.append((key, "o", item.number))
                    continue
                elif isinstance(item, Closed):
                    batch.append((key, "c", item.number))
                    continue
                else:  # a Mark: send what there is (the parent learns how far this shard has got)
                    batch.append((key, "m", item.position))
                _send(out, ("batch", batch))
                batch, size = [], 0
            work.end(batch)
            _send(out, ("done", batch))
    except CaptureFileError as e:
        out.send_bytes(pickle.dumps(("unreadable", str(e))))
    except BrokenPipeError:  # the parent stopped (enough was read, or its reader went away)
        pass
    except BaseException:  # a bug: its traceback, for the parent to show
        out.send_bytes(pickle.dumps(("bug", traceback.format_exc())))
    finally:
        out.close()


def _bytes_of(view: memoryview) -> tuple[type[bytes], tuple[bytes]]:
    return bytes, (view.tobytes(),)


def _rebuilt(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


def _error_of(error: BaseException) -> tuple[Any, ...]:
    return _rebuilt, (type(error), error.args, dict(vars(error)))


def _kinds(base: type[BaseException]) -> list[type[BaseException]]:
    out = [base]
    for sub in base.__subclasses__():
        out += _kinds(sub)
    return out


def _pickling() -> dict[Any, Any]:
    """How items are pickled: as usual, but a memoryview (a decoded frame's records point into its
    bytes) as the bytes it shows, and kcodec's errors (a frame's typed error, whose ``__init__``
    takes more than the message pickle would give it) with their attributes as they are."""
    table: dict[Any, Any] = {**copyreg.dispatch_table, memoryview: _bytes_of}
    for kind in _kinds(KcodecError):
        table[kind] = _error_of
    return table


def _send(out: PipeWriter, message: tuple[Any, ...]) -> None:
    """``message`` pickled into a ``BytesIO`` and sent from its buffer. (``pickle.dumps`` builds its
    result in steps: a batch of 1 MiB of JSON bodies took 0.70-0.75 ms to pickle with it, 0.12 ms
    this way, measured.)"""
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _pickling()
    pickler.dump(message)
    with buf.getbuffer() as view:
        out.send_bytes(view)


# --- the parent side ------------------------------------------------------------------------------


class ParallelRun:
    """Runs ``jobs`` workers on the capture at ``path``, each with the :class:`ShardWork`
    ``make_work()`` makes (called in the worker, after the fork), and merges their items
    (``options``: :func:`~kcodec.capture.shard.iter_shard`'s: ``ports``, ``autodetect``, ``strict``)."""

    def __init__(
        self, path: str, jobs: int, make_work: Callable[[], ShardWork], options: dict[str, Any]
    ) -> None:
        self.path = path
        self.jobs = jobs
        self.make_work = make_work
        self.options = options
        self.position = 0  # bytes of the file read (by the first worker, which reads it all as each does)
        self._procs: list[Worker] = []
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()  # the merge is over: the reader threads stop putting

    @property
    def count(self) -> int:
        """Bytes of the capture read so far (for a progress bar)."""
        return self.position

    def run(self, add: Callable[[list[Item]], bool], progress: Any = None) -> None:
        """Hand every merged batch of ``(key, shard, tag, data)`` items to ``add`` (which returns
        True to stop early). Raises :class:`WorkerFailed`."""
        for items in self.batches():
            if add(items):
                return
            if progress is not None:
                progress.update()

    def batches(self) -> Generator[list[Item], None, None]:
        """The merged items, a batch at a time, in capture order; the workers are stopped when the
        iteration ends (closing the generator stops them too). Raises :class:`WorkerFailed`."""
        readers: list[PipeReader] = []
        try:
            for k in range(self.jobs):

                def target(out: PipeWriter, k: int = k) -> None:
                    _work(self.path, k, self.jobs, self.make_work(), dict(self.options), out)

                try:
                    proc = start(target, [r.fileno() for r in readers], _BATCH_BYTES)
                except OSError as e:
                    text = f"could not start worker process {k + 1} of {self.jobs}: {e}"
                    raise WorkerFailed(text, False) from e
                readers.append(proc.reader)
                self._procs.append(proc)
            yield from self._merge(self._feeds(readers))
        finally:
            self._stopping.set()
            self.stop()
            # a pipe is closed only once its reader thread is done with it: closed under a thread
            # blocked in recv_bytes, the thread fails (a traceback at exit), or, if the descriptor's
            # number is reused by the next run's pipe, reads that pipe's bytes
            for k, reader in enumerate(readers):
                thread = self._threads[k] if k < len(self._threads) else None  # (none: never read)
                if thread is not None:
                    thread.join(5)
                if thread is None or not thread.is_alive():
                    reader.close()
            self._threads = []

    def stop(self) -> None:
        """Stop the workers still running (enough read, Ctrl-C, a closed pipe)."""
        for proc in self._procs:
            proc.terminate()
        for proc in self._procs:
            proc.join(5)
        self._procs = []

    def _feeds(self, readers: list[PipeReader]) -> list[queue.Queue[bytes | None]]:
        """A queue of each worker's messages, filled by a thread that reads ahead (up to
        ``_READ_AHEAD``), so that a worker does not wait for the merge to reach its part of the
        capture before going on; None when the worker's pipe closes. A thread ends at the end of its
        pipe (the worker done, or stopped by :meth:`stop`), and once the merge is over it no longer
        waits for room in its queue."""
        feeds: list[queue.Queue[bytes | None]] = []
        for k, reader in enumerate(readers):
            messages: queue.Queue[bytes | None] = queue.Queue(_READ_AHEAD)

            def read(reader: PipeReader = reader, messages: queue.Queue[bytes | None] = messages) -> None:
                try:
                    while self._put(messages, reader.recv_bytes()):
                        pass
                except (EOFError, OSError):
                    self._put(messages, None)

            thread = threading.Thread(target=read, name=f"kcodec-shard-{k}", daemon=True)
            thread.start()
            self._threads.append(thread)
            feeds.append(messages)
        return feeds

    def _put(self, messages: queue.Queue[bytes | None], message: bytes | None) -> bool:
        """Put ``message`` in the queue when there is room; False if the merge ended first."""
        while not self._stopping.is_set():
            try:
                messages.put(message, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _merge(self, feeds: list[queue.Queue[bytes | None]]) -> Iterator[list[Item]]:
        merge = BatchMerge(len(feeds))
        while (k := merge.waiting_for()) is not None:
            message = feeds[k].get()
            if message is None:
                raise WorkerFailed(f"worker {k} stopped without finishing", False)
            kind, payload = pickle.loads(message)
            if kind not in ("batch", "done"):
                raise WorkerFailed(payload, kind == "unreadable")
            payload = payload or []
            if k == 0 and payload and payload[-1][1] == "m":
                self.position = payload[-1][2]
            merge.add(k, payload, done=kind == "done")
            yield merge.take()
