"""``kcodec decode-capture -j N``: a capture file decoded by N worker processes, one shard of its
connections each (:mod:`kcodec.capture.shard`), their JSON lines or table rows merged back into the
order, and the bytes, that one process writes.

Each worker reads the whole file (packets and segments are the cheap part) and decodes only its
connections: reassembly, framing, pairing, decoding, facts and the JSON or summary of each frame
(:mod:`kcodec.cli.parallel_items`). What depends on other connections is left to the parent
(:mod:`kcodec.cli.parallel_sink`), which merges the workers' output by key:

- connection numbers (capture-wide: the n-th connection opened is #n);
- topic names: a frame that names topics by id only is given the names learnt from Metadata seen
  earlier on *any* connection, so workers send the ``(id, name)`` pairs their frames hold, and
  the ids they could not name; the parent keeps the one :class:`TopicDirectory`;
- the ``--topic`` filter and ``-c`` (which need those names, or the global order), ``--fail-on``.

A frame's JSON line is built by the worker but for its capture-wide connection number, which the
parent writes in (and, for a frame that names topics by id only, its ``topic_names`` and
``error_codes``, which need the names the parent has learnt); the parent writes the lines of each
merged batch in one write.
A table row is made by the worker; when its frame names topics by id only, with the names the
worker's own connections taught it, and the parent makes it again (from the frame's digest) if the
names it has learnt by then differ.

Workers ignore Ctrl-C (the parent stops them) and send their output in batches, each with a mark
of how far into the capture they are, so that the parent never waits for a worker that has nothing
to say about the part of the capture being merged. Memory: each worker holds what one process
would for its connections; the parent, a batch per worker.
"""

from __future__ import annotations

import io
import pickle
import queue
import signal
import threading
import traceback
from typing import IO, Any, Final, cast

from kcodec.capture import CapturedFrame, CaptureFileError, CaptureIssue
from kcodec.capture.groups import embedded_topics
from kcodec.capture.shard import END, BatchMerge, Closed, Opened, iter_shard
from kcodec.capture.topics import TopicDirectory
from kcodec.cli.capture_filters import EventFilter
from kcodec.cli.capture_output import RecordsMode
from kcodec.cli.capture_table import TableWriter
from kcodec.cli.common import CountingReader
from kcodec.cli.forked import PipeReader, PipeWriter, Worker, start
from kcodec.cli.parallel_items import Mode, ShardSummary, frame_item, shard_reader, to_wire
from kcodec.cli.parallel_sink import MergedOutput

__all__ = ["ParallelRun", "WorkerFailed"]

_BATCH_BYTES: Final = 1 << 20
_READ_AHEAD: Final = 16  # batches (of at most about _BATCH_BYTES) read ahead per worker


class WorkerFailed(Exception):
    """A worker could not decode its shard; the text says why (a traceback if it was a bug)."""

    def __init__(self, text: str, unreadable: bool) -> None:
        super().__init__(text)
        self.unreadable = unreadable  # the file is no capture (exit 1, as one process would)


# --- the worker side ------------------------------------------------------------------------------


def _work(path: str, shard: int, shards: int, options: dict[str, Any], out: PipeWriter) -> None:
    """A worker process: shard ``shard`` of the capture, sent to the parent in batches."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    flt: EventFilter = options.pop("flt")
    records: RecordsMode = options.pop("records")
    mode: Mode = options.pop("mode")
    verbose: bool = options.pop("verbose")
    plain = TableWriter()
    local = TopicDirectory()  # the topic names this shard's frames teach (for table rows)
    summary = ShardSummary(flt) if mode == "summary" else None
    read_facts = shard_reader(mode, flt)
    try:
        with open(path, "rb") as f:
            source = CountingReader(f)
            batch: list[tuple[Any, ...]] = []
            size = 0
            for key, item in iter_shard(cast(IO[bytes], source), shard, shards, position=source, **options):
                if isinstance(item, CapturedFrame):
                    if summary is not None:
                        batch += [(key, tag, data) for tag, data in summary.frame(item)]
                        continue
                    if item.embedded and flt.topics is not None:  # (what the group's frames are about)
                        batch.append((key, "g", embedded_topics(item.embedded)))
                    tag, data = frame_item(item, flt, records, mode, verbose, plain, local, read_facts)
                    if tag == "j":  # (a JSON line: its body's bytes count)
                        size += len(data[4])
                    elif tag == "f":
                        size += len(data.body) if mode == "json" else 1024
                        data = to_wire(data)
                    else:
                        size += 1024
                    batch.append((key, tag, data))
                    if size < _BATCH_BYTES:
                        continue
                elif isinstance(item, CaptureIssue):
                    if summary is not None:
                        summary.issue(item)
                    else:
                        batch.append((key, "i", item))
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
            if summary is not None:  # the shard's totals, last
                batch.append(((END, END, 1), "s", (summary.stats, summary.flags)))
            _send(out, ("done", batch))
    except CaptureFileError as e:
        out.send_bytes(pickle.dumps(("unreadable", str(e))))
    except BrokenPipeError:  # the parent stopped (-c N reached, or its reader went away)
        pass
    except BaseException:  # a bug: its traceback, for the parent to show
        out.send_bytes(pickle.dumps(("bug", traceback.format_exc())))
    finally:
        out.close()


def _send(out: PipeWriter, message: tuple[Any, ...]) -> None:
    """``message`` pickled into a ``BytesIO`` and sent from its buffer. (``pickle.dumps`` builds its
    result in steps: a batch of 1 MiB of JSON bodies took 0.70-0.75 ms to pickle with it, 0.12 ms
    this way, measured.)"""
    buf = io.BytesIO()
    pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(message)
    with buf.getbuffer() as view:
        out.send_bytes(view)


# --- the parent side ------------------------------------------------------------------------------


class ParallelRun:
    """Runs ``jobs`` workers on the capture at ``path`` and hands their merged items to ``output``
    (``options``: ``iter_shard``'s, and what the items need: ``flt``, ``records``, ``mode``,
    ``verbose``)."""

    def __init__(self, path: str, jobs: int, output: MergedOutput, options: dict[str, Any]) -> None:
        self.path = path
        self.jobs = jobs
        self.output = output
        self.options = options
        self._procs: list[Worker] = []
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()  # the merge is over: the reader threads stop putting

    @property
    def count(self) -> int:
        """Bytes of the capture read (by the first worker, which reads it all as every one does)."""
        return int(self.output.position)

    def run(self, progress: Any = None) -> None:
        """Decode and show everything (or ``count`` frames). Raises :class:`WorkerFailed`."""
        readers: list[PipeReader] = []
        try:
            for k in range(self.jobs):
                options = dict(self.options)

                def target(out: PipeWriter, k: int = k, options: dict[str, Any] = options) -> None:
                    _work(self.path, k, self.jobs, options, out)

                try:
                    proc = start(target, [r.fileno() for r in readers], _BATCH_BYTES)
                except OSError as e:
                    text = f"could not start worker process {k + 1} of {self.jobs}: {e}"
                    raise WorkerFailed(text, False) from e
                readers.append(proc.reader)
                self._procs.append(proc)
            self._merge(self._feeds(readers), progress)
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
        """Stop the workers still running (``-c`` reached, Ctrl-C, a closed pipe)."""
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

    def _merge(self, feeds: list[queue.Queue[bytes | None]], progress: Any) -> None:
        merge = BatchMerge(len(feeds))
        while (k := merge.waiting_for()) is not None:
            message = feeds[k].get()
            if message is None:
                raise WorkerFailed(f"worker {k} stopped without finishing", False)
            kind, payload = pickle.loads(message)
            if kind not in ("batch", "done"):
                raise WorkerFailed(payload, kind == "unreadable")
            merge.add(k, payload or [], done=kind == "done")
            if self.output.add(merge.take()):
                return
            if progress is not None:
                progress.update()
