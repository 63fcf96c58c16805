"""Reading segment payloads back from the input files, by position (stage 2 on the executors).

Stage 1 stashes each TCP segment's *position* (file, ``payload_offset``, length) for stage 2,
not its bytes; stage 2 reads the bytes itself from the input files, which every executor can open
(:func:`~kcodec.pipeline.sources.open_input`: local paths, ``hdfs://``, ``s3://``, ...). Within one
connection the positions grow, and the segments of one message lie close together in the file
(only the other side's ACKs between them), so :class:`PayloadReader` reads runs of near positions
as one span (``os.pread`` on local files, ``read_at`` on pyarrow's files) and cuts the payloads out
of it; a local file is memory-mapped instead and each payload is cut straight from the mapping
(one copy per payload, no span buffer). A few files stay open at a time. (A local input must not be
truncated while the job reads it: a mapped page beyond its new end cannot be read.)
"""

from __future__ import annotations

import mmap
import os
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from kcodec.pipeline.sources import local_path, open_input

__all__ = ["MAX_GAP", "MAX_SPAN", "PayloadReader"]

#: Positions at most this far past the previous payload's end are read in the same span.
MAX_GAP = 4096
#: A span is not grown beyond this many bytes.
MAX_SPAN = 1 << 20
_OPEN_FILES = 8


class _File:
    """One open input: ``read(offset, length)`` without moving a shared position; a local file is
    also memory-mapped (``mapped``: its bytes as far as it reached when opened)."""

    __slots__ = ("fd", "handle", "mapped")

    def __init__(self, path: str, map_local: bool = True) -> None:
        local = local_path(path)
        self.fd = -1
        self.handle: Any = None
        self.mapped: mmap.mmap | None = None
        if local is not None:
            self.fd = os.open(local, os.O_RDONLY)
            try:
                if not map_local:
                    raise ValueError("not mapped")
                self.mapped = mmap.mmap(self.fd, 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):  # empty, or not a regular file: read() instead
                self.mapped = None
        else:
            self.handle = open_input(path)

    def read(self, offset: int, length: int) -> bytes:
        if self.fd >= 0:
            return os.pread(self.fd, length, offset)
        data: bytes = self.handle.read_at(length, offset).to_pybytes()
        return data

    def close(self) -> None:
        if self.mapped is not None:
            self.mapped.close()
        if self.fd >= 0:
            os.close(self.fd)
        elif self.handle is not None:
            self.handle.close()


class PayloadReader:
    """Payloads of segments by (file order, offset, length); ``paths[order]`` names each file.

    ``read_run`` takes the positions of consecutive rows and returns their payloads, cutting them
    from the mapping of a local file (``map_local``) or reading every run of near positions in one
    file as one span. A file cut shorter since stage 1 gives shorter
    (possibly empty) payloads: the reassembly then reports the bytes as missing.
    """

    def __init__(self, paths: Sequence[str], map_local: bool = True) -> None:
        self.paths = paths
        self.map_local = map_local
        self._open: OrderedDict[int, _File] = OrderedDict()
        self.reads = 0

    def _file(self, order: int) -> _File:
        f = self._open.get(order)
        if f is not None:
            self._open.move_to_end(order)
            return f
        f = _File(self.paths[order], self.map_local)
        self._open[order] = f
        if len(self._open) > _OPEN_FILES:
            _, old = self._open.popitem(last=False)
            old.close()
        return f

    def read_file(self, order: int, offsets: Sequence[int], lengths: Sequence[int]) -> list[bytes]:
        """The payloads at the given positions, all in file ``order`` (as :meth:`read_run`); a mapped
        file's are cut in one comprehension, without the per-row bookkeeping of runs."""
        f = self._file(order)
        mapped = f.mapped
        if mapped is None:
            return self.read_run([order] * len(offsets), offsets, lengths)
        self.reads += 1
        return [
            mapped[at : at + n] if n > 0 and at >= 0 else b"" for at, n in zip(offsets, lengths, strict=True)
        ]

    def read_run(self, orders: Sequence[int], offsets: Sequence[int], lengths: Sequence[int]) -> list[bytes]:
        """The payloads at the given positions (length 0 or offset -1: ``b""``)."""
        out: list[bytes] = [b""] * len(orders)
        i, n = 0, len(orders)
        while i < n:
            if lengths[i] <= 0 or offsets[i] < 0:
                i += 1
                continue
            order, start = orders[i], offsets[i]
            f = self._file(order)
            if f.mapped is not None:  # cut every payload of the file's run straight from the mapping
                i = self._cut_run(f.mapped, orders, offsets, lengths, i, out)
                continue
            end = start + lengths[i]
            j = i + 1
            while j < n:  # grow the span over the next rows of the same file close after it
                if lengths[j] <= 0 or offsets[j] < 0:
                    j += 1
                    continue
                at = offsets[j]
                if orders[j] != order or at < end or at - end > MAX_GAP or at + lengths[j] - start > MAX_SPAN:
                    break
                end = at + lengths[j]
                j += 1
            span = f.read(start, end - start)
            self.reads += 1
            for k in range(i, j):
                if lengths[k] > 0 and offsets[k] >= 0:
                    lo = offsets[k] - start
                    out[k] = span[lo : lo + lengths[k]]
            i = j
        return out

    def _cut_run(
        self,
        mapped: mmap.mmap,
        orders: Sequence[int],
        offsets: Sequence[int],
        lengths: Sequence[int],
        i: int,
        out: list[bytes],
    ) -> int:
        """Fill ``out`` from row ``i`` on while the rows are of the same file; the next row's index."""
        order, n = orders[i], len(orders)
        self.reads += 1
        while i < n and orders[i] == order:
            length, at = lengths[i], offsets[i]
            if length > 0 and at >= 0:
                out[i] = mapped[at : at + length]
            i += 1
        return i

    def close(self) -> None:
        for f in self._open.values():
            f.close()
        self._open.clear()
