"""Progress of a run, on the driver: files and bytes read (from a Spark accumulator the stage-1
tasks add to as they finish a split), and the phase the job is in.

:class:`ProgressTracker` owns the accumulator. :class:`ProgressDisplay` shows it with ``rich`` on
standard error while the job runs, refreshed by a thread a few times a second, only when standard
error is a terminal (or when asked to); it is gone once the run ends.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark import SparkContext

    from kcodec.pipeline.inputs import InputFile

__all__ = ["ProgressDisplay", "ProgressTracker"]


def _dict_param() -> Any:
    from pyspark.accumulators import AccumulatorParam

    class DictSum(AccumulatorParam[dict[int, int]]):
        def zero(self, value: dict[int, int]) -> dict[int, int]:
            return {}

        def addInPlace(self, a: dict[int, int], b: dict[int, int]) -> dict[int, int]:
            for k, v in b.items():
                a[k] = a.get(k, 0) + v
            return a

    return DictSum()


class ProgressTracker:
    """Bytes read per file (by file order), added to by the tasks."""

    def __init__(self, sc: SparkContext, files: list[InputFile]) -> None:
        self._acc = sc.accumulator({}, _dict_param())
        self.files = files
        self.total_bytes = sum(f.size for f in files)
        self.phase = "reading and decoding"

    def callback(self) -> Callable[[int, int], None]:
        """The function a task calls after each split: ``done(file_order, bytes)`` (picklable)."""
        acc = self._acc

        def done(order: int, nbytes: int) -> None:
            acc.add({order: nbytes})

        return done

    def snapshot(self) -> tuple[int, int]:
        """(files done, bytes done) so far."""
        done: dict[int, int] = dict(self._acc.value)
        nbytes = sum(done.values())
        files = sum(1 for f in self.files if done.get(f.order, 0) >= f.size)
        return files, min(nbytes, self.total_bytes)


class ProgressDisplay:
    """A live progress line on standard error (only when it is a terminal, or ``force``)."""

    def __init__(self, tracker: ProgressTracker, *, force: bool = False) -> None:
        self.tracker = tracker
        self.enabled = force or sys.stderr.isatty()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ProgressDisplay:
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="kcodec-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

        t = self.tracker
        console = Console(stderr=True)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TextColumn("{task.fields[files]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as bar:
            task = bar.add_task(t.phase, total=t.total_bytes, files="")
            while not self._stop.wait(0.25):
                files, nbytes = t.snapshot()
                bar.update(
                    task,
                    completed=nbytes,
                    description=t.phase,
                    files=f"{files}/{len(t.files)} files",
                )
