"""One shard of a capture: the connections :class:`Assignment` gives shard ``k`` of ``n``, decoded by
one :class:`~kcodec.capture.stream.CaptureDecoder`, each event with the key of its place among all
the capture's events.

Several processes can each read the whole file (packets and segments are cheap) and decode a shard
(reassembly, framing, pairing and decoding are not); merging their events by key gives exactly the
events, in exactly the order, of :func:`~kcodec.capture.stream.iter_capture` on the whole capture,
except that connections are numbered within the shard: :class:`Opened` gives, in key order, the
place of each connection's first segment, from which the capture-wide numbers follow (the n-th
connection opened in key order is number n).

Keys are tuples of ints, compared as tuples:

- ``(i, 0, j)``: the j-th event of the capture's i-th segment (counted from 1);
- ``(i, 0, -1)``: :class:`Opened`, a connection opened by segment i (before its events);
- :class:`Closed` after the last event of a connection finished before the end (keyed after it);
- ``(i, 1, c, j)``: the j-th last event of a connection swept after segment i, closed by segment c;
- ``(i, 2, j)``: the j-th issue with the file itself after segment i;
- ``(END, c, j)``: the j-th last event of a connection still open at the end, opened by segment c;
- ``(i, 0, -2)``: :class:`Mark`, at the start and every ``mark_every`` segments: the shard has given
  everything before segment i.
"""

from __future__ import annotations

import heapq
import math
import sys
import zlib
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import IO, Any, Final, TypeVar, cast

from kcodec.capture.connection import DEFAULT_PORTS
from kcodec.capture.events import CaptureEvent, CaptureIssue
from kcodec.capture.framing import MAX_FRAME_SIZE
from kcodec.capture.segments import Pick, Segment, iter_some_segments
from kcodec.capture.stream import SWEEP_EVERY, CaptureDecoder

_T = TypeVar("_T")

__all__ = [
    "END",
    "Assignment",
    "BatchMerge",
    "Closed",
    "Key",
    "Mark",
    "Numbering",
    "Opened",
    "iter_shard",
    "iter_sharded",
    "merge_shards",
]

Key = tuple[int, ...]
END: Final = sys.maxsize


@dataclass(frozen=True, slots=True)
class Opened:
    """The shard's connection ``number`` (numbered within the shard) was opened here."""

    number: int


@dataclass(frozen=True, slots=True)
class Closed:
    """The shard's connection ``number`` is finished: no event of it follows."""

    number: int


@dataclass(frozen=True, slots=True)
class Mark:
    """Progress: ``position`` bytes of the file read; everything keyed before this mark was given."""

    position: int


class Assignment:
    """Which shard decodes each connection (all its segments, both directions: the key is the
    4-tuple in a canonical order): the shard with the fewest bytes of data so far when the
    connection's first segment comes, so that shards get about equal work whatever the connections
    weigh. Every shard, given the same segments in the same order, makes the same choices. Bounded:
    after ``remember`` connection keys, a new key's shard is a CRC of it (the same in every process,
    unlike ``hash()``)."""

    __slots__ = ("loads", "owners", "remember", "shards")

    def __init__(self, shards: int, remember: int = 65536) -> None:
        self.shards = shards
        self.remember = remember
        self.loads = [0] * shards
        self.owners: dict[str, int] = {}

    def owner(self, key: str, nbytes: int) -> int:
        """The shard of a segment of connection ``key`` with ``nbytes`` of data (counted)."""
        k = self.owners.get(key)
        if k is None:
            if len(self.owners) < self.remember:
                loads = self.loads
                k = self.owners[key] = loads.index(min(loads))
            else:
                k = zlib.crc32(key.encode()) % self.shards
        self.loads[k] += nbytes
        return k

    def picker(self, shard: int, tick: int) -> tuple[Pick, Callable[[], int]]:
        """What shard ``shard`` reads the capture's segments with (``pick``, for
        :func:`~kcodec.capture.segments.iter_some_segments`), and ``count() -> int``: the segments
        asked about so far (the last one's number, counted from 1). ``pick`` keeps the shard's own
        segments (see :meth:`owner`); of the others', it gives the time of every ``tick``-th segment
        of the capture, and None for the rest. One call per segment: a known connection's is
        answered without calling :meth:`owner`."""
        owner, owners_get, loads = self.owner, self.owners.get, self.loads
        n = 0

        def pick(key: str, nbytes: int, ts: float) -> bool | float | None:
            nonlocal n
            n += 1
            k = owners_get(key)
            if k is None:
                k = owner(key, nbytes)
            else:
                loads[k] += nbytes
            if k == shard:
                return True
            return None if n % tick else ts

        def count() -> int:
            return n

        return pick, count


def iter_shard(
    source: str | Path | IO[bytes],
    shard: int,
    shards: int,
    *,
    ports: Iterable[int] = DEFAULT_PORTS,
    autodetect: bool = True,
    strict: bool = False,
    max_frame_size: int = MAX_FRAME_SIZE,
    file_issues: bool | None = None,
    mark_every: int = 512,
    position: object = None,
) -> Iterator[tuple[Key, CaptureEvent | Opened | Closed | Mark]]:
    """The keyed events of shard ``shard`` of ``shards`` (see the module docstring).

    ``file_issues``: whether the shard reports the problems with the file itself (damaged records,
    IP fragments); by default shard 0 does. ``position``: an object whose ``count`` is the bytes of
    the file read so far (shown in :class:`Mark`; 0 when None).
    """
    if not 0 <= shard < shards:
        raise ValueError(f"shard {shard} of {shards}")
    if file_issues is None:
        file_issues = shard == 0
    decoder = CaptureDecoder(ports=ports, autodetect=autodetect, strict=strict, max_frame_size=max_frame_size)
    opened_at: dict[int, int] = {}  # connection number -> the segment that opened it
    # the other shards' segments come only where this shard's clock needs their time: where it may
    # sweep closed connections, and where it marks its progress
    pick, count = Assignment(shards).picker(shard, math.gcd(mark_every, SWEEP_EVERY))
    advance, skip = decoder.advance, decoder.skip
    counted = 0  # the segments the decoder has counted
    issues = 0
    yield (0, 0, -2), Mark(getattr(position, "count", 0))
    for item in iter_some_segments(source, pick):
        i = count()
        kind = type(item)
        if kind is not Segment and kind is not float:  # an issue with the file itself
            if file_issues:
                yield (i, 2, issues), cast(CaptureIssue, item)
                issues += 1
            continue
        if i - counted > 1:
            skip(i - counted - 1)
        counted = i
        if i % mark_every == 0:
            yield (i, 0, -2), Mark(getattr(position, "count", 0))
        if kind is float:  # another shard's segment: its time is the clock
            swept = advance(cast(float, item))
        else:
            assert isinstance(item, Segment)
            routed = _routed(i, item, decoder, opened_at)
            if routed:
                yield from routed
            swept = advance(item.timestamp)
        if swept:
            yield from _swept(i, swept)
    for number, events in decoder.finish_each():
        start = opened_at.pop(number)
        for j, ev in enumerate(events):
            yield (END, start, j), ev
    yield (END, END, 0), Mark(getattr(position, "count", 0))


def _routed(
    i: int, seg: Segment, decoder: CaptureDecoder, opened_at: dict[int, int]
) -> list[tuple[Key, CaptureEvent | Opened | Closed]]:
    """Segment ``i`` (this shard's) through the decoder: the connection it opens or reopens, and the
    events it completes. ``opened_at``: connection number -> index of its first segment (kept)."""
    opened = decoder.connections
    before = decoder.open.get(seg.key)
    events = decoder.route(seg)
    if decoder.connections == opened:  # (the common case: no connection opened, so none reopened)
        return [((i, 0, j), ev) for j, ev in enumerate(events)] if events else _NONE
    out: list[tuple[Key, CaptureEvent | Opened | Closed]] = []
    if decoder.connections != opened:
        number = decoder.next_number - 1
        opened_at[number] = i
        if len(opened_at) > 2 * len(decoder.open) + 64:  # (only open ones are needed)
            for gone in opened_at.keys() - {c.number for c in decoder.open.values()}:
                del opened_at[gone]
        out.append(((i, 0, -1), Opened(number)))
    out += [((i, 0, j), ev) for j, ev in enumerate(events)]
    if before is not None and decoder.open.get(seg.key) is not before:  # a SYN reopened the 4-tuple
        out.append(((i, 0, len(events)), Closed(before.number)))
    return out


_NONE: list[tuple[Key, CaptureEvent | Opened | Closed]] = []  # (never appended to)


def _swept(
    i: int, swept: list[tuple[int, int, list[CaptureEvent]]]
) -> Iterator[tuple[Key, CaptureEvent | Closed]]:
    """The last events of the connections swept after item ``i``, each followed by its
    :class:`Closed`."""
    for closed_by, number, events in swept:
        for j, ev in enumerate(events):
            yield (i, 1, closed_by, j), ev
        yield (i, 1, closed_by, len(events)), Closed(number)


class Numbering:
    """Capture-wide connection numbers from the shards' own: fed :class:`Opened` in key order."""

    __slots__ = ("_numbers", "next")

    def __init__(self, first: int = 1) -> None:
        self._numbers: dict[tuple[int, int], int] = {}
        self.next = first

    def opened(self, shard: int, number: int) -> int:
        self._numbers[(shard, number)] = self.next
        self.next += 1
        return self.next - 1

    def __call__(self, shard: int, number: int) -> int:
        """The capture-wide number of the shard's connection ``number``."""
        return self._numbers[(shard, number)]

    def closed(self, shard: int, number: int) -> None:
        """Forget a connection whose events are all out (keeps the table bounded)."""
        self._numbers.pop((shard, number), None)


def merge_shards(streams: Sequence[Iterable[tuple[Key, _T]]]) -> Iterator[tuple[int, Key, _T]]:
    """``(shard, key, item)`` of keyed streams (shard k: ``streams[k]``), in key order. Lazy: a
    stream is read only when its next item may come first, so each stream's :class:`Mark` items
    are what let the merge go past a stretch of the capture where that shard has nothing."""
    tagged = [_tagged(k, stream) for k, stream in enumerate(streams)]
    for key, k, item in heapq.merge(*tagged, key=itemgetter(0)):
        yield k, key, item


def _tagged(k: int, stream: Iterable[tuple[Key, _T]]) -> Iterator[tuple[Key, int, _T]]:
    for key, item in stream:
        yield key, k, item


def iter_sharded(path: str | Path, shards: int, **options: object) -> Iterator[CaptureEvent]:
    """The events of :func:`~kcodec.capture.stream.iter_capture` (same events, same order, same
    numbers), computed as ``shards`` shards in this one process and merged: what a parallel
    decoder does across processes, kept here to show (and test) that the two agree."""
    numbering = Numbering()
    streams = [iter_shard(path, k, shards, **options) for k in range(shards)]  # type: ignore[arg-type]
    for k, _, item in merge_shards(streams):
        if isinstance(item, Mark):
            continue
        if isinstance(item, Opened):
            numbering.opened(k, item.number)
            continue
        if isinstance(item, Closed):
            numbering.closed(k, item.number)
            continue
        if item.connection is not None:
            item.connection = numbering(k, item.connection)
        yield item


class BatchMerge:
    """The keyed items of ``shards`` shards, given in batches (each shard's in key order, each batch
    ending where that shard has got to, e.g. with its :class:`Mark`), taken out in key order as soon
    as no shard can still give an item that comes before them. One sort per batch, no per-item
    bookkeeping: for a parent process merging what worker processes send."""

    def __init__(self, shards: int) -> None:
        self.pending: list[list[tuple[Any, ...]]] = [[] for _ in range(shards)]
        self.last: list[Key | None] = [None] * shards  # the last key each shard gave
        self.done = [False] * shards

    def add(self, shard: int, items: list[tuple[Any, ...]], done: bool = False) -> None:
        """A batch of ``(key, ...)`` tuples from ``shard``; ``done``: its last."""
        if items:
            self.pending[shard].extend(items)
            self.last[shard] = items[-1][0]
        if done:
            self.done[shard] = True

    def waiting_for(self) -> int | None:
        """The shard whose next batch is needed before more can be taken (None: all are done)."""
        best: int | None = None
        for k, done in enumerate(self.done):
            if done:
                continue
            last = self.last[k]
            if last is None:
                return k
            best_last = self.last[best] if best is not None else None
            if best_last is None or last < best_last:
                best = k
        return best

    def take(self) -> list[tuple[Any, ...]]:
        """``(key, shard, *rest)`` of every item no shard can precede any more, in key order."""
        bound: Key | None = None
        for k, done in enumerate(self.done):
            if not done:
                last = self.last[k]
                if last is None:
                    return []
                if bound is None or last < bound:
                    bound = last
        out: list[tuple[Any, ...]] = []
        first = itemgetter(0)
        for k, pending in enumerate(self.pending):
            n = len(pending) if bound is None else bisect_right(pending, bound, key=first)
            if n:
                out += [(item[0], k, *item[1:]) for item in pending[:n]]
                del pending[:n]
        out.sort(key=first)
        return out
