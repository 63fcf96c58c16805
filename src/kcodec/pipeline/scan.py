"""Stage 1 on the executors: byte ranges of capture files in, packed TCP segment records out.

Each input is one split of one file (``path``, file order, ``start``, ``end``; ``end`` -1 for "to the
end of the file", and the file's size). The split is read as a stream by the capture package's
packet and segment stages (:func:`kcodec.capture.packets.iter_records` with
:class:`kcodec.capture.packed.SegmentPacker`: no ``Segment`` object, no copy of the payload and no
call per segment). Its segments are grouped by connection key, and each group (at most :data:`CHUNK`
segments, in file order) becomes one record for stage 2 (kept in a stash file, :mod:`~kcodec.pipeline.stash`):
``((key, file order, offset of its first segment), packed)``, where
``packed`` holds, per segment, its TCP facts and *where its payload lies* in the file
(:data:`SEGMENT_DTYPE`: 38 bytes a segment, read back as a NumPy record array), not the payload,
which stage 2 reads back (:mod:`~kcodec.pipeline.payloads`). Stage 2
thus gets one small record per connection and split instead of every payload, and sorting the
records by their key puts each connection's segments in capture order (rotated files:
by file order, then offset).

Problems with the file (a damaged or cut record, a file that is no capture at all, a read error)
become records too, ``((ISSUE_KEY_PREFIX + path, file order, offset), issue JSON)``, so that they
travel to stage 2 and on to the ``diagnostics`` table.
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Callable, Iterator
from typing import Any

from kcodec.capture import CaptureFileError, CaptureIssue, packed
from kcodec.capture.packed import PACKED_FIELDS, SegmentPacker
from kcodec.capture.packets import iter_records
from kcodec.pipeline.sources import local_path, open_input
from kcodec.pipeline.vectorscan import Marks

__all__ = [
    "CHUNK",
    "ISSUE_KEY_PREFIX",
    "READ_TOGETHER",
    "SEGMENT_DTYPE",
    "UNPACKED",
    "Split",
    "scan_split",
    "unpack",
    "unreadable",
]

#: Keys of records that carry a file's issue rather than segments (no TCP key starts with it).
ISSUE_KEY_PREFIX = "\x00file "
#: Segments per record at most.
CHUNK = 8192
#: The packed fields of a segment (:data:`kcodec.capture.packed.PACKED_FIELDS`): sequence and
#: acknowledgment numbers, which endpoint of the key sent it (1: the first), TCP flags, capture time,
#: the record's and the payload's file offsets (-1: no payload) and the payload's length.
SEGMENT_DTYPE = list(PACKED_FIELDS)
#: The order :func:`unpack` gives the fields in.
UNPACKED = ("forward", "flags", "seq", "ack", "timestamp", "offset", "payload_offset", "payload_length")

#: Whether a local file's packets are read together (:mod:`~kcodec.pipeline.vectorscan`) rather than
#: one by one by the capture package's packer: when that runs interpreted. Compiled (a standard
#: wheel), its packer takes fewer instructions than NumPy's reading; stage 1 on a 12.5 MB file
#: (cachegrind): compiled 0.108 G one by one, 0.176 G together; interpreted 0.309 G one by one,
#: 0.226 G together.
READ_TOGETHER = str(getattr(packed, "__file__", "")).endswith(".py")

Split = tuple[str, int, int, int, int, int]  # (path, file order, start, end or -1, file size, capture)
Record = tuple[tuple[str, int, int], Any]  # ((key, file order, first offset), packed bytes | issue JSON)
Done = Callable[[int, int], None]  # (file order, bytes of the split)


def unreadable(path: str, message: str, offset: int | None = None) -> dict[str, Any]:
    """The issue JSON of a file that cannot be read at all (kind ``unreadable-file``)."""
    return {
        "type": "issue",
        "time": None,
        "kind": "unreadable-file",
        "message": message,
        "file": path,
        "file_offset": offset,
    }


def unpack(packed: bytes) -> list[list[Any]]:
    """The fields of packed segments as lists, in :data:`UNPACKED` order."""
    import numpy as np

    array = np.frombuffer(packed, dtype=SEGMENT_DTYPE)
    return [array[name].tolist() for name in UNPACKED]


def _issue(path: str, order: int, offset: int, issue: dict[str, Any]) -> Record:
    return (ISSUE_KEY_PREFIX + path, order, offset), json.dumps(issue, ensure_ascii=False)


def _mapping(path: str, source: Any) -> mmap.mmap | None:
    """A memory mapping of a local input, when its packets are read together (:data:`READ_TOGETHER`;
    None for another file system, an empty file, a pipe)."""
    if not READ_TOGETHER or local_path(path) is None:
        return None
    try:
        return mmap.mmap(source.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None


def _split_items(path: str, start: int, end: int | None, packer: SegmentPacker) -> Iterator[Any]:
    """The split's records, lists of records and issues; a file that cannot be read gives one issue
    dict (from its first split only, so that it is reported once). A local file's packets are read
    together (:mod:`~kcodec.pipeline.vectorscan`), another's one by one by ``packer``."""
    try:
        source = open_input(path)
    except OSError as e:
        if start == 0:
            yield unreadable(path, str(e))
        return
    mapped = _mapping(path, source)
    marks = None if mapped is None else Marks(mapped, packer, CHUNK)
    failed: dict[str, Any] | None = None
    try:
        try:
            yield from iter_records(
                source, packer.make if marks is None else marks.make, start=start, end=end, name=path
            )
        except CaptureFileError as e:
            failed = unreadable(path, str(e)) if start == 0 else {}
        except OSError as e:
            failed = unreadable(path, f"read error: {e}")
        if marks is not None:
            yield marks.finish()
        if failed is None:
            issue = packer.issue()
            if issue is not None:
                yield issue
        elif failed:
            yield failed
    finally:
        if mapped is not None:
            mapped.close()
        source.close()


def scan_split(split: Split, done: Done | None = None) -> Iterator[Record]:
    """Stage 1 for one split: its records (see the module docstring)."""
    path, order, start, end, size, capture = split
    packer = SegmentPacker(path, CHUNK)
    # connections of different captures never share a key, even with the same addresses
    suffix = f" #{capture}" if capture else ""
    for item in _split_items(path, start, None if end < 0 else end, packer):
        if isinstance(item, tuple):
            key, first, packed = item
            yield (key + suffix, order, first), packed
        elif isinstance(item, list):
            for key, first, packed in item:
                yield (key + suffix, order, first), packed
        elif isinstance(item, CaptureIssue):
            yield _issue(path, order, item.file_offset or 0, item.to_dict())
        else:
            yield _issue(path, order, item.get("file_offset") or 0, item)
    for key, first, packed in packer.rest():
        yield (key + suffix, order, first), packed
    if done is not None:
        done(order, (end if end >= 0 else size) - start)
