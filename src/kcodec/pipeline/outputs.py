"""The output folder, on any file system pyarrow reaches: local paths (``/x``, ``file:/x``) and
``hdfs://``, ``s3://``, ``gs://``, ... (with the nodes' Hadoop libraries and credentials), from the
driver and from the executors alike.

:class:`Output` names the tables under the folder and writes Parquet there with pyarrow: the small
tables as one file each (by the driver), the ``frames`` and ``diagnostics`` files by the tasks that
computed their rows (each task writes its own files, named by its partition, so that a retried
task replaces its own files). The task's events wait in ``_spill`` (a hidden folder, as Spark and
pyarrow readers skip names starting with ``_``) until the job has numbered the connections.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from kcodec.pipeline.sources import local_path

__all__ = ["SPILL", "Output", "OutputCheckError"]

#: The folder under the output where stage 2's events wait for stage 3.
SPILL = "_spill"


class OutputCheckError(OSError):
    """What the job wrote is not where it was asked for, or not all of it."""


@dataclass(frozen=True, slots=True)
class Output:
    """The output folder: an absolute local path or a URI (see :meth:`resolve`); picklable, for the
    tasks."""

    root: str

    @classmethod
    def resolve(cls, root: str) -> Output:
        """The folder ``root`` as the driver names it: a relative local path is made absolute here,
        on the driver, since the executors would resolve it against their own working directories
        (on a cluster, not the user's)."""
        root = root.rstrip("/") or "/"
        local = local_path(root)
        if local is None:
            return cls(root)
        return cls(os.path.abspath(os.path.expanduser(local)))

    def count_rows(self, name: str) -> int:
        """Rows of the Parquet table ``name`` under the folder (0 if it is not there)."""
        import pyarrow.dataset as ds
        from pyarrow import fs

        filesystem, base = self.filesystem()
        target = f"{base}/{name}"
        if filesystem.get_file_info(target).type != fs.FileType.Directory:
            return 0
        dataset = ds.dataset(target, filesystem=filesystem, format="parquet", partitioning="hive")
        return int(dataset.count_rows())

    def check_rows(self, name: str, expected: int) -> None:
        """Raise :class:`OutputCheckError` unless table ``name`` holds ``expected`` rows."""
        found = self.count_rows(name)
        if found != expected:
            raise OutputCheckError(
                f"the {name} table under {self.root} has {found} rows, but the job counted {expected}: "
                "its tasks wrote elsewhere (is the folder shared by the driver and every executor?)"
            )

    def filesystem(self) -> tuple[Any, str]:
        """(pyarrow FileSystem, the folder's path in it)."""
        from pyarrow import fs

        local = local_path(self.root)
        if local is not None:
            return fs.LocalFileSystem(use_mmap=True), os.path.abspath(local)
        filesystem, path = fs.FileSystem.from_uri(self.root)
        return filesystem, path.rstrip("/")

    def path(self, *parts: str) -> str:
        """A path under the folder, in its file system."""
        _, base = self.filesystem()
        return "/".join((base, *parts))

    def clear(self, name: str) -> None:
        """Remove the table (or folder) ``name`` if it is there, and create it empty."""
        filesystem, base = self.filesystem()
        target = f"{base}/{name}"
        info = filesystem.get_file_info(target)
        from pyarrow import fs

        if info.type == fs.FileType.Directory:
            filesystem.delete_dir(target)
        elif info.type == fs.FileType.File:
            filesystem.delete_file(target)
        filesystem.create_dir(target, recursive=True)

    def remove(self, name: str) -> None:
        filesystem, base = self.filesystem()
        from pyarrow import fs

        if filesystem.get_file_info(f"{base}/{name}").type == fs.FileType.Directory:
            filesystem.delete_dir(f"{base}/{name}")

    def remove_if_empty(self, name: str) -> None:
        filesystem, base = self.filesystem()
        from pyarrow import fs

        target = f"{base}/{name}"
        if filesystem.get_file_info(target).type != fs.FileType.Directory:
            return
        if not filesystem.get_file_info(fs.FileSelector(target)):
            filesystem.delete_dir(target)

    def write_file(self, table: Any, *parts: str) -> None:
        """Write ``table`` (a pyarrow Table) as one Parquet file at ``parts`` under the folder."""
        import pyarrow.parquet as pq

        filesystem, base = self.filesystem()
        path = "/".join((base, *parts))
        filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
        pq.write_table(table, path, filesystem=filesystem)

    def write_partitioned(
        self,
        batches: Any,
        schema: Any,
        name: str,
        columns: list[str],
        basename: str,
        options: dict[str, Any] | None = None,
    ) -> None:
        """Write record ``batches`` (an iterable, streamed) under table ``name`` in hive-style folders of
        ``columns`` (``date=.../api=...``, as Spark lays out a partitioned table), one file per folder
        named ``basename`` + ``-0.parquet`` (:class:`~kcodec.pipeline.partitioned.PartitionedWriter`;
        ``options``: ``ParquetWriter`` keyword arguments)."""
        from kcodec.pipeline.partitioned import PartitionedWriter

        filesystem, base = self.filesystem()
        with PartitionedWriter(filesystem, f"{base}/{name}", schema, columns, basename, options) as writer:
            for batch in batches:
                writer.write(batch)

    def open_output(self, *parts: str) -> Any:
        filesystem, base = self.filesystem()
        path = "/".join((base, *parts))
        filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
        return filesystem.open_output_stream(path)

    def open_input(self, path: str) -> Any:
        """A file under the folder, by its path in the folder's file system (as :meth:`path` gives)."""
        filesystem, _ = self.filesystem()
        return filesystem.open_input_file(path)
