"""Spark's Python daemon for local runs (``spark.python.daemon.module``): pyspark's own daemon, with
the cost of starting a Python worker cut.

Spark starts its Python workers with ``pyspark.zip`` and ``py4j-*.zip`` first on ``PYTHONPATH``.
Python cannot cache bytecode for modules imported from a zip, so every worker compiled pyspark's
worker modules from source (about 0.5 CPU-s each), and every task re-read the zips' directories
(``importlib.invalidate_caches`` when a task sets up its files). When those zips are the ones
shipped inside the pyspark installed in this environment (a pip-installed pyspark, as in a local
run), they hold the same files as the installed package: this daemon takes them off ``sys.path``,
so that pyspark is imported from the installed package, with its compiled bytecode. It then imports
pyspark's worker and the pipeline's executor-side modules once, before forking the workers, which
inherit them. That includes the libraries the tasks use, NumPy, pyarrow, pandas (pyarrow imports
pandas on its first ``pa.array`` when it is installed, as it is with pyspark) and datasketches:
about 0.6 CPU-s that every worker of a run paid again. The daemon must not have threads of its
own when it forks, so it imports them with those libraries' background threads off: OpenBLAS's pool
(``OPENBLAS_NUM_THREADS=1``; the tasks use no linear algebra) and the background thread of the
jemalloc linked into pyarrow (``JE_ARROW_MALLOC_CONF``; pyarrow allocates with mimalloc by default).
The workers inherit those settings (Spark itself runs Python workers with one OpenMP thread), and
the allocator settings of :mod:`kcodec.pipeline.memory`, which keep freed memory for reuse
rather than having the kernel zero it again for the next batch. What
is imported is then frozen (``gc.freeze``): a reused worker runs a full garbage collection after
every task, which no longer walks the imported modules and classes. Then pyspark's daemon runs as
usual.
"""

from __future__ import annotations

import gc
import os
import sys

from kcodec.pipeline.memory import keep_freed_memory

__all__ = ["main", "without_bundled_zips"]


def _installed(path: list[str], package: str) -> str | None:
    """The directory on ``path`` (not a zip) holding ``package``, or None."""
    for entry in path:
        if (
            entry
            and not entry.endswith(".zip")
            and os.path.isfile(os.path.join(entry, package, "__init__.py"))
        ):
            return entry
    return None


def without_bundled_zips(path: list[str]) -> list[str]:
    """``path`` without the zips of the pyspark installed on it (``<pyspark>/python/lib/*.zip``),
    when the packages they hold are installed on ``path`` too; otherwise ``path`` as it is."""
    site = _installed(path, "pyspark")
    if site is None:
        return path
    lib = os.path.join(os.path.abspath(site), "pyspark", "python", "lib")
    has_py4j = _installed(path, "py4j") is not None

    def bundled(entry: str) -> bool:
        if not entry.endswith(".zip") or os.path.dirname(os.path.abspath(entry)) != lib:
            return False
        name = os.path.basename(entry)
        return name == "pyspark.zip" or (name.startswith("py4j") and has_py4j)

    return [entry for entry in path if not bundled(entry)]


#: Environment that keeps the libraries' background threads from starting (see the module docstring).
QUIET_THREADS = {"OPENBLAS_NUM_THREADS": "1", "JE_ARROW_MALLOC_CONF": "background_thread:false"}


def _import_libraries() -> None:
    """Import NumPy, pyarrow and pandas into the daemon, with their background threads off, and
    datasketches (the partial aggregates' latency sketches, made by every stage-2 task)."""
    for name, value in QUIET_THREADS.items():
        os.environ.setdefault(name, value)
    keep_freed_memory()  # before pyarrow loads mimalloc (see kcodec.pipeline.memory)
    import datasketches  # noqa: F401  (imports NumPy; nothing of pyarrow's)
    import pyarrow as pa
    import pyarrow.compute
    import pyarrow.dataset
    import pyarrow.ipc
    import pyarrow.parquet

    pa.array([b""])  # pyarrow imports pandas (if installed) on its first conversion from Python


def main() -> None:
    kept = without_bundled_zips(sys.path)
    for entry in set(sys.path) - set(kept):
        sys.path_importer_cache.pop(entry, None)
    sys.path[:] = kept
    import pyspark.worker  # noqa: F401  (imported once here, inherited by every forked worker)
    from pyspark.daemon import manager

    import kcodec.pipeline.scan
    import kcodec.pipeline.spill
    import kcodec.pipeline.stash
    import kcodec.pipeline.write  # noqa: F401

    _import_libraries()
    gc.freeze()  # what is imported now is never garbage: the workers' collections skip it
    manager()


if __name__ == "__main__":
    main()
