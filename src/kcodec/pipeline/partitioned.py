"""Record batches -> a table partitioned in hive-style folders (``date=.../api=.../``), one Parquet
file per folder, as Spark lays out a partitioned table.

pyarrow's ``dataset.write_dataset`` does the same through its query engine, which on the frames
(a few kB of body JSON a row) cost 4-5x the Parquet encoding itself: every batch is split per folder
by a hash-grouping plan and queued through its threads. Here each batch is split with one filter
per folder value present in it (a frames batch holds a handful of APIs), the pieces wait per folder
until a row group's worth has come (:data:`ROW_GROUP_ROWS` rows or :data:`ROW_GROUP_BYTES`), and
each folder's file is written by one ``pyarrow.parquet.ParquetWriter``. The partition columns are
not stored in the files (their values are in the folder names), as with ``write_dataset``.
"""

from __future__ import annotations

import itertools
from typing import Any
from urllib.parse import quote

__all__ = ["ROW_GROUP_BYTES", "ROW_GROUP_ROWS", "PartitionedWriter"]

#: A folder's buffered rows are written as a row group once they reach this many rows ...
ROW_GROUP_ROWS = 65536
#: ... or this many bytes.
ROW_GROUP_BYTES = 32 << 20


class _Folder:
    """One folder's file and the rows waiting for its next row group."""

    __slots__ = ("bytes", "pending", "rows", "writer")

    def __init__(self, writer: Any) -> None:
        self.writer = writer
        self.pending: list[Any] = []
        self.rows = 0
        self.bytes = 0

    def add(self, batch: Any) -> None:
        self.pending.append(batch)
        self.rows += batch.num_rows
        self.bytes += batch.nbytes
        if self.rows >= ROW_GROUP_ROWS or self.bytes >= ROW_GROUP_BYTES:
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa

        if self.pending:
            self.writer.write_table(pa.Table.from_batches(self.pending), row_group_size=max(self.rows, 1))
        self.pending, self.rows, self.bytes = [], 0, 0

    def close(self) -> None:
        self.flush()
        self.writer.close()


class PartitionedWriter:
    """Writes batches of ``schema`` under ``base`` (a folder in ``filesystem``) in folders of the
    values of ``columns``; each folder gets one file, ``basename + "-0.parquet"``, written with the
    ``pyarrow.parquet.ParquetWriter`` keyword arguments ``options``. Use as a context manager (the
    files are complete when it exits)."""

    def __init__(
        self,
        filesystem: Any,
        base: str,
        schema: Any,
        columns: list[str],
        basename: str,
        options: dict[str, Any] | None = None,
    ) -> None:
        self.filesystem = filesystem
        self.base = base
        self.columns = columns
        self.basename = basename
        self.options = options or {}
        self.file_schema = schema
        for name in columns:
            self.file_schema = self.file_schema.remove(self.file_schema.get_field_index(name))
        self.folders: dict[tuple[Any, ...], _Folder] = {}

    def __enter__(self) -> PartitionedWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, batch: Any) -> None:
        """Add one record batch (of the writer's schema)."""
        import pyarrow.compute as pc

        if batch.num_rows == 0:
            return
        keys = [batch.column(name) for name in self.columns]
        data = batch.drop_columns(self.columns)
        values = self._values(keys)
        if len(values) == 1:
            self._folder(values[0]).add(data)
            return
        for value in values:
            mask = None
            for column, v in zip(keys, value, strict=True):
                here = pc.is_null(column) if v is None else pc.equal(column, v)
                mask = here if mask is None else pc.and_(mask, here)
            self._folder(value).add(data.filter(mask))

    @staticmethod
    def _values(keys: list[Any]) -> list[tuple[Any, ...]]:
        """The distinct combinations of the partition columns' values in a batch. When every column
        holds one value (the usual frames batch: one API and day), that is found without grouping
        (``unique`` per column: about 0.02 ms, a group-by about 0.5 ms)."""
        import pyarrow as pa

        distinct = [k.unique() for k in keys]
        if all(len(d) == 1 for d in distinct) or len(keys) == 1:
            return list(itertools.product(*(d.to_pylist() for d in distinct)))
        table = pa.table({str(i): k for i, k in enumerate(keys)})
        grouped = table.group_by([str(i) for i in range(len(keys))]).aggregate([])
        return list(zip(*(grouped.column(str(i)).to_pylist() for i in range(len(keys))), strict=True))

    def _folder(self, value: tuple[Any, ...]) -> _Folder:
        folder = self.folders.get(value)
        if folder is None:
            import pyarrow.parquet as pq

            parts = [
                f"{name}={'__HIVE_DEFAULT_PARTITION__' if v is None else quote(str(v), safe='')}"
                for name, v in zip(self.columns, value, strict=True)
            ]
            directory = "/".join((self.base, *parts))
            self.filesystem.create_dir(directory, recursive=True)
            path = f"{directory}/{self.basename}-0.parquet"
            writer = pq.ParquetWriter(path, self.file_schema, filesystem=self.filesystem, **self.options)
            folder = self.folders[value] = _Folder(writer)
        return folder

    def close(self) -> None:
        folders, self.folders = self.folders, {}
        for folder in folders.values():
            folder.close()
