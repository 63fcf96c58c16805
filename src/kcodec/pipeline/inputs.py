"""The input files of a run and their splits.

Files are listed by Spark (the ``binaryFile`` source with its ``content`` column left out, so only
the listing is done: any path Spark reads, folders searched recursively, glob patterns allowed) and
put in *capture order*: by path, with runs of digits compared as numbers, so that rotated files
(``trace.pcap``, ``trace.pcap1``, ..., ``trace.pcap10``; or time-stamped names) come in the order
they were written. Files larger than the split size are cut into byte ranges that tasks read apart
(:func:`kcodec.capture.iter_packets` starts a range at its first whole record).
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcodec.errors import KcodecError
from kcodec.pipeline.sources import local_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_SPLIT_SIZE",
    "InputFile",
    "PipelineInputError",
    "check_local_inputs",
    "list_inputs",
    "splits",
]

DEFAULT_SPLIT_SIZE = 128 << 20
_DIGITS = re.compile(r"(\d+)")


class PipelineInputError(KcodecError):
    """The inputs name no file, or a path that does not exist."""


@dataclass(frozen=True, slots=True)
class InputFile:
    path: str  # as Spark names it (file:/..., hdfs://..., s3a://...)
    size: int
    order: int = 0  # capture order (0, 1, ...)


def natural_key(path: str) -> tuple[Any, ...]:
    """Sort key: digit runs compare as numbers (``a2`` before ``a10``)."""
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(path))


def check_local_inputs(inputs: list[str]) -> None:
    """Fail early, before Spark starts, on local inputs that do not exist, hold no file (hidden files
    and folders, ``.x`` and ``_x``, do not count: Spark skips them) or, as globs, match nothing."""
    if not inputs:
        raise PipelineInputError("no input given")
    for name in inputs:
        local = local_path(name)
        if local is None:
            continue  # another file system: Spark lists it
        if any(ch in local for ch in "*?["):
            if "{" not in local and not glob.glob(local):  # Hadoop globs also take {a,b}: Spark's to say
                raise PipelineInputError(f"{name}: the pattern matches no file")
            continue
        path = Path(local)
        if not path.exists():
            raise PipelineInputError(f"{name}: no such file or directory")
        if path.is_dir() and not _local_files(name):
            raise PipelineInputError(
                f"{name}: the folder holds no files (hidden ones, .x and _x, are skipped)"
            )


def _local_files(name: str) -> list[tuple[str, int]] | None:
    """The files under a local input, named as Spark names them (``file:/abs/path``), skipping hidden
    files and folders (``.x``, ``_x``) as Spark does; None if ``name`` is not a plain local path."""
    local = local_path(name)
    if local is None or any(ch in local for ch in "*?["):
        return None
    root = Path(local).resolve()
    if root.is_file():
        return [(f"file:{root}", root.stat().st_size)]
    out: list[tuple[str, int]] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        for n in names:
            if not n.startswith((".", "_")):
                p = Path(folder) / n
                out.append((f"file:{p}", p.stat().st_size))
    return out


def _spark_files(spark: SparkSession, inputs: list[str]) -> list[tuple[str, int]]:
    from pyspark.errors import AnalysisException

    try:
        rows = (
            spark.read.format("binaryFile")
            .option("recursiveFileLookup", "true")
            .load(inputs)
            .select("path", "length")
            .collect()
        )
    except AnalysisException as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PipelineInputError(f"cannot list the inputs: {first}") from None
    return [(r["path"], r["length"]) for r in rows]


def list_inputs(spark: SparkSession, inputs: list[str]) -> list[InputFile]:
    """Every file under ``inputs``, in capture order. Local paths are listed here; others (HDFS, S3,
    globs, ...) by Spark. Raises :class:`PipelineInputError`."""
    found: set[tuple[str, int]] = set()
    remote: list[str] = []
    for name in inputs:
        local = _local_files(name)
        if local is None:
            remote.append(name)
        else:
            found.update(local)
    if remote:
        found.update(_spark_files(spark, remote))
    if not found:
        raise PipelineInputError(f"no files found in {', '.join(inputs)}")
    files = sorted(found, key=lambda f: natural_key(f[0]))
    return [InputFile(path, size, i) for i, (path, size) in enumerate(files)]


def splits(
    files: list[InputFile], split_size: int = DEFAULT_SPLIT_SIZE
) -> list[tuple[str, int, int, int, int]]:
    """``(path, file order, start, end, size)`` byte ranges; ``end`` -1: to the end of the file."""
    out: list[tuple[str, int, int, int, int]] = []
    for f in files:
        start = 0
        while f.size - start > split_size:
            out.append((f.path, f.order, start, start + split_size, f.size))
            start += split_size
        out.append((f.path, f.order, start, -1, f.size))
    return out
