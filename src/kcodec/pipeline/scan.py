"""Stage 1 on the executors: byte ranges of capture files in, packed TCP segment records out.

Each input is one split of one file (``path``, file order, ``start``, ``end``; ``end`` -1 for "to the
end of the file", and the file's size). The split is read as a stream by
:func:`kcodec.capture.iter_segments` (the capture package's packet and segment stages). Its segments
are grouped by connection key, and each group (at most :data:`CHUNK` segments, in file order) becomes
one record for stage 2 (kept in a stash file, :mod:`~kcodec.pipeline.stash`):
``((key, file order, offset of its first segment), packed)``, where
``packed`` holds, per segment, its TCP facts and *where its payload lies* in the file
(:data:`SEGMENT_DTYPE`: 38 bytes a segment, packed with ``struct``, read back as a NumPy record
array), not the payload, which stage 2 reads back (:mod:`~kcodec.pipeline.payloads`). Stage 2
thus gets one small record per connection and split instead of every payload, and sorting the
records by their key puts each connection's segments in capture order (rotated files:
by file order, then offset).

Problems with the file (a damaged or cut record, a file that is no capture at all, a read error)
become records too, ``((ISSUE_KEY_PREFIX + path, file order, offset), issue JSON)``, so that they
travel to stage 2 and on to the ``diagnostics`` table.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterator
from typing import Any

from kcodec.capture import CaptureFileError, CaptureIssue, Segment, iter_segments
from kcodec.pipeline.sources import open_input

__all__ = [
    "CHUNK",
    "ISSUE_KEY_PREFIX",
    "SEGMENT_DTYPE",
    "Split",
    "scan_split",
    "unpack",
    "unreadable",
]

#: Keys of records that carry a file's issue rather than segments (no TCP key starts with it).
ISSUE_KEY_PREFIX = "\x00file "
#: Segments per record at most.
CHUNK = 8192
#: The packed fields of a segment: which endpoint of the key sent it (1: the first), TCP flags,
#: sequence and acknowledgment numbers, capture time, the record's and the payload's file offsets
#: (-1: no payload) and the payload's length.
SEGMENT_DTYPE = [
    ("forward", "u1"),
    ("flags", "u1"),
    ("seq", "<u4"),
    ("ack", "<u4"),
    ("timestamp", "<f8"),
    ("offset", "<i8"),
    ("payload_offset", "<i8"),
    ("payload_length", "<i4"),
]

Split = tuple[str, int, int, int, int]  # (path, file order, start, end or -1, file size)
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


def _split_items(path: str, start: int, end: int | None) -> Iterator[Segment | CaptureIssue | dict[str, Any]]:
    """The segments and issues of one split; a file that cannot be read gives one issue dict (from
    its first split only, so that it is reported once)."""
    try:
        source = open_input(path)
    except OSError as e:
        if start == 0:
            yield unreadable(path, str(e))
        return
    try:
        yield from iter_segments(source, start=start, end=end, name=path)
    except CaptureFileError as e:
        if start == 0:
            yield unreadable(path, str(e))
    except OSError as e:
        yield unreadable(path, f"read error: {e}")
    finally:
        source.close()


#: :data:`SEGMENT_DTYPE` as a ``struct`` format (NumPy packs a record dtype without padding, too).
_SEGMENT = struct.Struct("<BBIIdqqi")


def unpack(packed: bytes) -> list[list[Any]]:
    """The fields of packed segments as lists, in :data:`SEGMENT_DTYPE` order."""
    import numpy as np

    array = np.frombuffer(packed, dtype=SEGMENT_DTYPE)
    return [array[name].tolist() for name, _ in SEGMENT_DTYPE]


def _issue(path: str, order: int, offset: int, issue: dict[str, Any]) -> Record:
    return (ISSUE_KEY_PREFIX + path, order, offset), json.dumps(issue, ensure_ascii=False)


def scan_split(split: Split, done: Done | None = None) -> Iterator[Record]:
    """Stage 1 for one split: its records (see the module docstring)."""
    path, order, start, end, size = split
    groups: dict[str, tuple[int, bytearray]] = {}  # key -> (first offset, packed segments)
    pack, full = _SEGMENT.pack, CHUNK * _SEGMENT.size
    for item in _split_items(path, start, None if end < 0 else end):
        if isinstance(item, Segment):
            key = item.key
            group = groups.get(key)
            if group is None:
                group = groups[key] = (item.offset, bytearray())
            packed = group[1]
            packed += pack(
                key.startswith(item.src) and key[len(item.src)] == " ",
                item.flags,
                item.seq,
                item.ack,
                item.timestamp,
                item.offset,
                item.payload_offset,
                len(item.payload),
            )
            if len(packed) >= full:
                yield (key, order, group[0]), bytes(packed)
                del groups[key]
        elif isinstance(item, CaptureIssue):
            yield _issue(path, order, item.file_offset or 0, item.to_dict())
        else:
            yield _issue(path, order, item.get("file_offset") or 0, item)
    for key, (first, packed) in groups.items():
        yield (key, order, first), bytes(packed)
    if done is not None:
        done(order, (end if end >= 0 else size) - start)
