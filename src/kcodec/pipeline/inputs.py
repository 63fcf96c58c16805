"""The input files of a run, the captures they belong to, and their splits.

Local files are listed here, others by Spark (the ``binaryFile`` source with its ``content`` column
left out, so only the listing is done: any path Spark reads, folders searched recursively, glob
patterns allowed).

Files are grouped into *captures* (:data:`CAPTURES_BY`): the files of one capture point, such as a
tcpdump ring buffer or the rotated files of ``tcpdump -G``, are one capture, whose connections
continue from file to file; files of different capture points (the same traffic captured on the
client's host and on the broker's) are separate captures, whose connections are never merged even
where their addresses and ports are the same. By default (``auto``) a capture is the files of one
folder whose names are the same but for their digits (``kafka.pcap0`` ... ``kafka.pcap9``,
``broker-2024-06-01_10-00.pcap``); ``folder``: the files of one folder; ``one``: all the files.

Within a capture, files are put in *capture order*: by the time of their first packet (a ring buffer
whose numbers have wrapped still comes in the order it was written), then by path with runs of
digits compared as numbers; captures come in the order of their first file's path. Files larger
than the split size are cut into byte ranges that tasks
read apart (:func:`kcodec.capture.iter_packets` starts a range at its first whole record).
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcodec.pipeline.sources import local_path, open_input
from kcodec.protocol.errors import KcodecError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "CAPTURES_BY",
    "DEFAULT_SPLIT_SIZE",
    "InputFile",
    "PipelineInputError",
    "check_local_inputs",
    "list_inputs",
    "splits",
]

DEFAULT_SPLIT_SIZE = 128 << 20
_DIGITS = re.compile(r"(\d+)")
#: How input files are grouped into captures (see the module docstring); the first is the default.
CAPTURES_BY = ("auto", "folder", "one")
#: Packet records (and issues) read at most to find a file's first packet time.
_FIRST_PACKET_ITEMS = 1000


class PipelineInputError(KcodecError):
    """The inputs name no file, or a path that does not exist."""


@dataclass(frozen=True, slots=True)
class InputFile:
    path: str  # as Spark names it (file:/..., hdfs://..., s3a://...)
    size: int
    order: int = 0  # capture order (0, 1, ...) across all inputs
    capture: int = 0  # the capture it belongs to (0, 1, ...)


def capture_of(path: str, captures_by: str) -> tuple[str, str]:
    """The capture ``path`` belongs to, as a sortable key, by ``captures_by`` (:data:`CAPTURES_BY`)."""
    if captures_by == "one":
        return ("", "")
    folder, _, name = path.rstrip("/").rpartition("/")
    if captures_by == "folder":
        return (folder, "")
    return (folder, _DIGITS.sub("#", name))


def first_packet_time(path: str) -> float | None:
    """The time of the file's first packet record; None if it has none or cannot be read."""
    from kcodec.capture.packets import CaptureFileError, RawPacket, iter_packets

    try:
        source = open_input(path)
    except OSError:
        return None
    try:
        for i, item in enumerate(iter_packets(source, name=path)):
            if isinstance(item, RawPacket):
                return item.timestamp
            if i >= _FIRST_PACKET_ITEMS:
                break
    except (CaptureFileError, OSError):
        return None
    finally:
        source.close()
    return None


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


def list_inputs(spark: SparkSession, inputs: list[str], captures_by: str = "auto") -> list[InputFile]:
    """Every file under ``inputs``, grouped into captures by ``captures_by`` and in capture order
    (see the module docstring). Local paths are listed here; others (HDFS, S3, globs, ...) by Spark.
    Raises :class:`PipelineInputError`."""
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
    return order_files(sorted(found), captures_by, first_packet_time)


def order_files(
    found: list[tuple[str, int]], captures_by: str, first_time: Callable[[str], float | None]
) -> list[InputFile]:
    """``(path, size)`` of the files, as :class:`InputFile` in capture order (``first_time``: a
    file's first packet time, None if unknown: such files come after the others of their capture)."""
    if captures_by not in CAPTURES_BY:
        raise PipelineInputError(f"captures by {captures_by!r}: expected one of {', '.join(CAPTURES_BY)}")
    groups: dict[tuple[str, str], list[tuple[bool, float, tuple[Any, ...], str, int]]] = {}
    for path, size in found:
        t = first_time(path)
        member = (t is None, t or 0.0, natural_key(path), path, size)
        groups.setdefault(capture_of(path, captures_by), []).append(member)
    # captures in the order of their first file by path; a capture's files by their first packet
    captures = sorted((sorted(m) for m in groups.values()), key=lambda m: min(x[2] for x in m))
    files: list[InputFile] = []
    for capture, members in enumerate(captures):
        for _, _, _, path, size in members:
            files.append(InputFile(path, size, len(files), capture))
    return files


def splits(
    files: list[InputFile], split_size: int = DEFAULT_SPLIT_SIZE
) -> list[tuple[str, int, int, int, int, int]]:
    """``(path, file order, start, end, size, capture)`` byte ranges; ``end`` -1: to the end of the
    file."""
    out: list[tuple[str, int, int, int, int, int]] = []
    for f in files:
        start = 0
        while f.size - start > split_size:
            out.append((f.path, f.order, start, start + split_size, f.size, f.capture))
            start += split_size
        out.append((f.path, f.order, start, -1, f.size, f.capture))
    return out
