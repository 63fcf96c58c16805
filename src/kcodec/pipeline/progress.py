"""Progress of a run, on the driver, stage by stage: files and bytes read by stage 1 (from a Spark
accumulator its tasks add to as they finish a split), then the tasks done of stages 2 and 3 (from
Spark's status tracker), then the aggregation.

:class:`ProgressTracker` owns the accumulator and the stage the job is in. :class:`ProgressDisplay`
shows it with ``rich`` on standard error while the job runs, one line per stage (a stage's line stays
when it is done, with its time), refreshed by a thread a few times a second, only when standard
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


#: The job's stages as the display names them; the first counts bytes, the others tasks.
STAGES = (
    "1/4 reading the captures",
    "2/4 decoding connections",
    "3/4 writing frames and diagnostics",
    "4/4 aggregating",
)


class ProgressTracker:
    """Bytes read per file (by file order), added to by the tasks; the stage the job is in."""

    def __init__(self, sc: SparkContext, files: list[InputFile]) -> None:
        self._acc = sc.accumulator({}, _dict_param())
        self._sc = sc
        self.files = files
        self.total_bytes = sum(f.size for f in files)
        self.stage = 0  # index into STAGES

    @property
    def phase(self) -> str:
        return STAGES[self.stage]

    def tasks(self) -> tuple[int, int]:
        """(tasks done, tasks) of the Spark stages running now; (0, 0) when none runs."""
        status = self._sc.statusTracker()
        done = total = 0
        for stage_id in status.getActiveStageIds():
            info = status.getStageInfo(stage_id)
            if info is not None:
                done += info.numCompletedTasks
                total += info.numTasks
        return done, total

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
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[count]}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        ) as bar:
            shown = 0
            task = bar.add_task(STAGES[0], total=None, count="")
            while not self._stop.wait(0.25):
                stage = self.tracker.stage
                if stage != shown:  # the stage before is done: its line stays, its clock stops
                    bar.update(task, completed=bar.tasks[task].total or 1)
                    bar.stop_task(task)
                    task = bar.add_task(STAGES[stage], total=None, count="")
                    shown = stage
                total, completed, count = self._count(stage)
                if total:
                    bar.update(task, total=total, completed=completed, count=count)

    def _count(self, stage: int) -> tuple[int, int, str]:
        """(total, completed, text) of ``stage``: bytes and files read, or Spark tasks done."""
        t = self.tracker
        if stage == 0:
            files, nbytes = t.snapshot()
            mb = f"{nbytes / 1e6:.1f}/{t.total_bytes / 1e6:.1f} MB"
            return t.total_bytes, nbytes, f"{mb}, {files}/{len(t.files)} files"
        if stage < len(STAGES) - 1:
            done, total = t.tasks()
            return total, done, f"{done}/{total} tasks"
        return 0, 0, ""
