"""Stage 1 on a local file: the packets' headers read together, by NumPy, instead of one call each.

The record reader (:func:`kcodec.capture.packets.iter_records`) still walks the records and
reports the file's problems; its maker here (:class:`Marks`) only notes where each packet's data
lies in the file, its length, link type, record offset and time. Then :func:`packed_records` reads
the first :data:`HEAD` bytes of every packet from the file's memory mapping as one array and does
what :class:`kcodec.capture.packed.SegmentPacker`'s maker does per packet, on all of them at once:
the common case (Ethernet, IPv4 without options, TCP) is tested, its fields read, the pure ACKs
dropped, the connections named once per direction; any other packet goes through the general
parser (:meth:`~kcodec.capture.packed.SegmentPacker.general`, IP fragments counted). The segments
are then put in order per connection key (by record offset, the order the reader met them) and cut
into records of at most ``chunk`` segments: the packer's own records, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import pairwise
from typing import Any

from kcodec.capture.packed import PACKED_FIELDS, Packed, SegmentPacker
from kcodec.capture.segments import _names_by_ends, _names_of_ends

__all__ = ["BATCH", "HEAD", "Marks", "packed_records"]

#: Bytes of each packet read as an array: Ethernet, IPv4 without options and TCP up to its flags.
HEAD = 48
_NOTED = 5  # values noted per packet: record offset, time, link type, data offset, data length
#: Packets noted at most before they are made records.
BATCH = 1 << 16
_ETHERNET = 1


class Marks:
    """The record maker (:attr:`make`) that notes where each packet lies (see the module docstring),
    for the packets of a file whose bytes are ``mapped``; every :data:`BATCH` packets (and at the end,
    :meth:`flush`) the packets noted become ``packer``'s records, which :attr:`make` returns as a
    list (the reader yields it) so that the notes stay small."""

    __slots__ = ("chunk", "make", "mapped", "notes", "packer")

    def __init__(self, mapped: Any, packer: SegmentPacker, chunk: int) -> None:
        self.mapped = mapped
        self.packer = packer
        self.chunk = chunk
        self.notes: list[float] = []
        self.make: Callable[[int, int, float, int, bytes, int, int, int], list[Packed] | None] = self._maker()

    def _maker(self) -> Callable[[int, int, float, int, bytes, int, int, int], list[Packed] | None]:
        notes = self.notes
        note, full, flush = notes.extend, BATCH * _NOTED, self.flush

        def make(
            _index: int,
            offset: int,
            ts: float,
            linktype: int,
            _buf: bytes,
            start: int,
            stop: int,
            data_offset: int,
        ) -> list[Packed] | None:
            note((offset, ts, linktype, data_offset, stop - start))
            if len(notes) >= full:
                return flush()
            return None

        return make

    def flush(self) -> list[Packed]:
        """The records of the packets noted so far (the notes are cleared)."""
        if not self.notes:
            return []
        records = list(packed_records(self.notes, self.mapped, self.packer, self.chunk))
        self.notes.clear()
        return records


def packed_records(notes: list[float], mapped: Any, packer: SegmentPacker, chunk: int) -> Iterator[Packed]:
    """The records of the packets noted (``mapped``: the file's bytes, a memory mapping), as
    ``packer`` makes them: ``(key, record offset of the first segment, packed segments)``."""
    import numpy as np

    if not notes:
        return
    noted = np.array(notes, dtype=np.float64).reshape(-1, _NOTED)
    offset, ts = noted[:, 0].astype(np.int64), noted[:, 1]
    linktype, at_data, length = (noted[:, i].astype(np.int64) for i in (2, 3, 4))
    packer.saw(float(ts[-1]))
    head = _heads(mapped, at_data)
    fast = _common(head, linktype, length)
    rows, keys = _fast_rows(head[fast], offset[fast], ts[fast], at_data[fast], length[fast])
    other = np.flatnonzero(~fast)
    if len(other):
        rows, keys = _with_others(rows, keys, other, noted, mapped, packer)
    yield from _chunks(rows, keys, chunk)


def _heads(mapped: Any, at_data: Any) -> Any:
    """The first :data:`HEAD` bytes of each packet (those of a shorter one run on into the file,
    or are clipped at its end), as an (n, HEAD) array of bytes."""
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view

    data = np.frombuffer(mapped, dtype=np.uint8)
    try:
        if len(data) < HEAD:
            return np.zeros((len(at_data), HEAD), dtype=np.uint8)
        windows = sliding_window_view(data, HEAD)
        head = windows[np.minimum(at_data, len(data) - HEAD)]  # (a copy: the mapping is released)
        del windows
        return head
    finally:
        del data


def _common(head: Any, linktype: Any, length: Any) -> Any:
    """Which packets are of the common case (the conditions of the packer's inline read)."""
    return (
        (linktype == _ETHERNET)
        & (length >= 54)
        & (head[:, 12] == 8)  # EtherType 0x0800: IPv4
        & (head[:, 13] == 0)
        & (head[:, 14] == 0x45)  # version 4, a 20-byte header
        & (head[:, 23] == 6)  # TCP
        & ((head[:, 20] & 0x3F) == 0)  # neither a fragment (offset) nor more fragments to come
        & (head[:, 21] == 0)
        & (head[:, 46] >= 0x50)  # a TCP header of at least 20 bytes
    )


def _fast_rows(head: Any, offset: Any, ts: Any, at_data: Any, length: Any) -> tuple[Any, list[str]]:
    """The packed rows of common-case packets (pure ACKs and packets too short dropped) and their
    keys: (rows, key of each row as an index into the list of keys)."""
    import numpy as np

    total = head[:, 16].astype(np.int64) << 8 | head[:, 17]
    end = np.minimum(np.where(total >= 20, 14 + total, length), length)
    flags = head[:, 47]
    at = 34 + (head[:, 46] >> 4).astype(np.int64) * 4
    has_data = at < end
    keep = np.flatnonzero((end >= 54) & (has_data | ((flags & 0x07) != 0)))
    if not len(keep):
        return (np.empty(0, dtype=list(PACKED_FIELDS)), np.empty(0, dtype=np.int64)), []
    head, has_data, at, end = head[keep], has_data[keep], at[keep], end[keep]
    ends = np.ascontiguousarray(head[:, 26:38]).view("V12").ravel()
    distinct, which = np.unique(ends, return_inverse=True)
    keys: list[str] = []
    index: dict[str, int] = {}
    key_of = np.empty(len(distinct), dtype=np.int64)
    forward = np.empty(len(distinct), dtype=np.uint8)
    for i, raw in enumerate(distinct):
        b = raw.tobytes()
        key, src, _dst = _names_by_ends.get(b) or _names_of_ends(b)
        k = index.get(key)
        if k is None:
            k = index[key] = len(keys)
            keys.append(key)
        key_of[i] = k
        forward[i] = key.startswith(src) and key[len(src)] == " "
    rows = np.empty(len(keep), dtype=list(PACKED_FIELDS))
    rows["seq"] = np.ascontiguousarray(head[:, 38:42]).view(">u4").ravel()
    rows["ack"] = np.ascontiguousarray(head[:, 42:46]).view(">u4").ravel()
    rows["forward"] = forward[which.ravel()]
    rows["flags"] = flags[keep]
    rows["timestamp"] = ts[keep]
    rows["offset"] = offset[keep]
    rows["payload_offset"] = np.where(has_data, at_data[keep] + at, -1)
    rows["payload_length"] = np.where(has_data, end - at, 0)
    return (rows, key_of[which.ravel()]), keys


def _with_others(
    rows: Any, keys: list[str], other: Any, noted: Any, mapped: Any, packer: SegmentPacker
) -> tuple[Any, list[str]]:
    """``rows`` (with their key indexes) and the rows of the ``other`` packets, read by the general
    parser."""
    import numpy as np

    fast_rows, fast_keys = rows
    index = {key: k for k, key in enumerate(keys)}
    parts: list[bytes] = []
    key_of: list[int] = []
    for i in other.tolist():
        offset, ts, linktype, at_data, length = noted[i].tolist()
        start = int(at_data)
        made = packer.general(0, int(offset), ts, int(linktype), mapped, start, start + int(length), start)
        if made is None:
            continue
        key, one = made
        k = index.get(key)
        if k is None:
            k = index[key] = len(keys)
            keys.append(key)
        parts.append(one)
        key_of.append(k)
    if not parts:
        return rows, keys
    more = np.frombuffer(b"".join(parts), dtype=list(PACKED_FIELDS))
    # (np.concatenate would promote the fields to the machine's byte order)
    both = np.empty(len(fast_rows) + len(more), dtype=list(PACKED_FIELDS))
    both[: len(fast_rows)] = fast_rows
    both[len(fast_rows) :] = more
    return (both, np.concatenate([fast_keys, np.array(key_of, np.int64)])), keys


def _chunks(rows: Any, keys: list[str], chunk: int) -> Iterator[Packed]:
    """The rows per key in record order, cut into records of at most ``chunk`` rows."""
    import numpy as np

    packed, key_of = rows
    if not len(packed):
        return
    order = np.lexsort((packed["offset"], key_of))
    packed, key_of = packed[order], key_of[order]
    starts = np.flatnonzero(np.r_[True, key_of[1:] != key_of[:-1]]).tolist()
    bounds = [*starts, len(packed)]
    step = max(chunk, 1)
    for a, b in pairwise(bounds):
        key = keys[int(key_of[a])]
        for lo in range(a, b, step):
            part = packed[lo : min(lo + step, b)]
            yield key, int(part["offset"][0]), part.tobytes()
