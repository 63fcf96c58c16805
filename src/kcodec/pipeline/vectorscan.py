"""Stage 1 on a local file: the packets' headers read together, by NumPy, instead of one call each.

The record reader (:func:`kcodec.capture.packets.iter_records`) still walks the records and
reports the file's problems; its maker here (:class:`Marks`) only notes where each packet's data
lies in the file, its length, link type, record offset and time. Every :data:`BATCH` packets, and
at the end, the first :data:`HEAD` bytes of the packets noted are read from the file's memory
mapping as one array, which gets what :class:`kcodec.capture.packed.SegmentPacker`'s maker does per
packet, for all of them at once:
the common case (Ethernet, IPv4 without options, TCP) is tested, its fields read, the pure ACKs
dropped, the connections named once per direction; any other packet goes through the general
parser (:meth:`~kcodec.capture.packed.SegmentPacker.general`, IP fragments counted). The segments
are then put in order per connection key (by record offset, the order the reader met them) and cut
into records of at most ``chunk`` segments: the packer's own records, byte for byte, in its order.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

from kcodec.capture.packed import PACKED_FIELDS, Packed, SegmentPacker
from kcodec.capture.segments import _names_by_ends, _names_of_ends

__all__ = ["BATCH", "HEAD", "Marks"]

#: Bytes of each packet read as an array: Ethernet, IPv4 without options and TCP up to its flags.
HEAD = 48
_NOTED = 5  # values noted per packet: record offset, time, link type, data offset, data length
#: Packets noted at most before they are made records.
BATCH = 1 << 16
_ETHERNET = 1


class Marks:
    """The record maker (:attr:`make`) that notes where each packet lies (see the module docstring),
    for the packets of a file whose bytes are ``mapped``. Every :data:`BATCH` packets the packets
    noted are read, and the keys' chunks that are full become ``packer``'s records, which
    :attr:`make` returns as a list (the reader yields it), so that the notes stay small; the rest
    wait for more segments, or for :meth:`finish`. The records come in the order the packer hands
    them on: a chunk once its last segment is read, then at the end the keys' last chunks by their
    first segments (the order of the job's connection keys follows theirs)."""

    __slots__ = ("chunk", "index", "keys", "make", "mapped", "notes", "packer", "pending")

    def __init__(self, mapped: Any, packer: SegmentPacker, chunk: int) -> None:
        self.mapped = mapped
        self.packer = packer
        self.chunk = max(chunk, 1)
        self.notes: list[float] = []
        self.keys: list[str] = []  # the connection keys met, by their index in the rows
        self.index: dict[str, int] = {}
        self.pending: tuple[Any, Any] | None = None  # rows of chunks not yet full, and their keys
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

    def key(self, key: str) -> int:
        """The index of a connection key."""
        k = self.index.get(key)
        if k is None:
            k = self.index[key] = len(self.keys)
            self.keys.append(key)
        return k

    def flush(self) -> list[Packed]:
        """The full chunks of the packets noted so far (the notes are cleared)."""
        return self._records(final=False)

    def finish(self) -> list[Packed]:
        """Every record not yet handed on."""
        return self._records(final=True)

    def _records(self, final: bool) -> list[Packed]:
        import numpy as np

        rows = _rows(self.notes, self.mapped, self)
        self.notes.clear()
        if self.pending is not None:
            rows = _joined(self.pending, rows) if rows is not None else self.pending
            self.pending = None
        if rows is None or not len(rows[0]):
            return []
        packed, key_of = rows
        order = np.lexsort((packed["offset"], key_of))
        packed, key_of = packed[order], key_of[order]
        starts = np.flatnonzero(np.r_[True, key_of[1:] != key_of[:-1]]).tolist()
        full: list[tuple[int, Packed]] = []  # (offset of the last segment, record)
        rest: list[tuple[int, Packed]] = []  # (offset of the first segment, record)
        left: list[Any] = []
        offsets, step = packed["offset"], self.chunk
        for a, b in pairwise([*starts, len(packed)]):
            key = self.keys[int(key_of[a])]
            whole = a + (b - a) // step * step
            for lo in range(a, whole, step):
                full.append(
                    (int(offsets[lo + step - 1]), (key, int(offsets[lo]), packed[lo : lo + step].tobytes()))
                )
            if whole < b:
                if final:
                    rest.append((int(offsets[whole]), (key, int(offsets[whole]), packed[whole:b].tobytes())))
                else:
                    left.append(np.arange(whole, b))
        if left:
            kept = np.concatenate(left)
            self.pending = (packed[kept], key_of[kept])
        full.sort(key=lambda item: item[0])
        rest.sort(key=lambda item: item[0])
        return [record for _, record in full + rest]


def _rows(notes: list[float], mapped: Any, marks: Marks) -> tuple[Any, Any] | None:
    """The packed rows of the packets noted (``mapped``: the file's bytes, a memory mapping) and the
    index of each row's key; None if none were noted."""
    import numpy as np

    if not notes:
        return None
    noted = np.array(notes, dtype=np.float64).reshape(-1, _NOTED)
    offset, ts = noted[:, 0].astype(np.int64), noted[:, 1]
    linktype, at_data, length = (noted[:, i].astype(np.int64) for i in (2, 3, 4))
    marks.packer.saw(float(ts[-1]))
    head = _heads(mapped, at_data)
    fast = _common(head, linktype, length)
    rows = _fast_rows(head[fast], offset[fast], ts[fast], at_data[fast], length[fast], marks)
    other = np.flatnonzero(~fast)
    if len(other):
        rows = _with_others(rows, other, noted, mapped, marks)
    return rows


def _joined(a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
    """Two sets of rows and their keys as one."""
    import numpy as np

    # (np.concatenate would promote the fields to the machine's byte order)
    both = np.empty(len(a[0]) + len(b[0]), dtype=list(PACKED_FIELDS))
    both[: len(a[0])] = a[0]
    both[len(a[0]) :] = b[0]
    return both, np.concatenate([a[1], b[1]])


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


def _fast_rows(head: Any, offset: Any, ts: Any, at_data: Any, length: Any, marks: Marks) -> tuple[Any, Any]:
    """The packed rows of common-case packets (pure ACKs and packets too short dropped) and the
    index of each row's key (:meth:`Marks.key`)."""
    import numpy as np

    total = head[:, 16].astype(np.int64) << 8 | head[:, 17]
    end = np.minimum(np.where(total >= 20, 14 + total, length), length)
    flags = head[:, 47]
    at = 34 + (head[:, 46] >> 4).astype(np.int64) * 4
    has_data = at < end
    keep = np.flatnonzero((end >= 54) & (has_data | ((flags & 0x07) != 0)))
    if not len(keep):
        return np.empty(0, dtype=list(PACKED_FIELDS)), np.empty(0, dtype=np.int64)
    head, has_data, at, end = head[keep], has_data[keep], at[keep], end[keep]
    ends = np.ascontiguousarray(head[:, 26:38]).view("V12").ravel()
    distinct, which = np.unique(ends, return_inverse=True)
    key_of = np.empty(len(distinct), dtype=np.int64)
    forward = np.empty(len(distinct), dtype=np.uint8)
    for i, raw in enumerate(distinct):
        b = raw.tobytes()
        key, src, _dst = _names_by_ends.get(b) or _names_of_ends(b)
        key_of[i] = marks.key(key)
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
    return rows, key_of[which.ravel()]


def _with_others(rows: tuple[Any, Any], other: Any, noted: Any, mapped: Any, marks: Marks) -> tuple[Any, Any]:
    """``rows`` (and their keys) and the rows of the ``other`` packets, read by the general parser."""
    import numpy as np

    parts: list[bytes] = []
    key_of: list[int] = []
    for i in other.tolist():
        offset, ts, linktype, at_data, length = noted[i].tolist()
        start = int(at_data)
        data = mapped[start : start + int(length)]  # (bytes: the compiled packer takes no mapping)
        made = marks.packer.general(0, int(offset), ts, int(linktype), data, 0, len(data), start)
        if made is None:
            continue
        key, one = made
        parts.append(one)
        key_of.append(marks.key(key))
    if not parts:
        return rows
    more = np.frombuffer(b"".join(parts), dtype=list(PACKED_FIELDS))
    return _joined(rows, (more, np.array(key_of, np.int64)))
