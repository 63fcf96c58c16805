"""Partial aggregates: what one task's frames and issues add to the aggregate tables, mergeable.

Each stage-3 task folds its final rows (connections numbered, topic names resolved) into a
:class:`Partials`; the driver merges the tasks' partials (:meth:`Partials.merge`) and
:mod:`~kcodec.pipeline.aggregates` turns the result into the tables. Everything here is small:
bounded by APIs and versions, topics and errors, client ids, connections, time buckets, fencing
answers, and the partition leader epochs the brokers stated (one entry per statement: the epoch
changes are found in time order across all tasks). Latency percentiles are KLL sketches
(``datasketches``), exact up to :data:`LATENCY_K` values per API/version (as Spark's
``percentile_approx`` with that accuracy) and :data:`TIMELINE_K` per time bucket and API, within
about 0.03 % and 0.3 % of rank beyond.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kcodec.error_codes import ErrorCode
from kcodec.sentinels import NO_LEADER_EPOCH

__all__ = ["LATENCY_K", "TIMELINE_K", "FrameRow", "Partials"]

LATENCY_K = 10000
TIMELINE_K = 1000
FENCING_CODES = frozenset((int(ErrorCode.FENCED_LEADER_EPOCH), int(ErrorCode.UNKNOWN_LEADER_EPOCH)))

FrameRow = dict[str, Any]  # a frames row (the columns the aggregates read)


class _Quantiles:
    """A mergeable quantile sketch of latencies in ms, picklable (kept serialised between uses)."""

    __slots__ = ("k", "sketch")

    def __init__(self, k: int) -> None:
        from datasketches import kll_doubles_sketch

        self.k = k
        self.sketch = kll_doubles_sketch(k)

    def add(self, value: float) -> None:
        self.sketch.update(value)

    def merge(self, other: _Quantiles) -> None:
        self.sketch.merge(other.sketch)

    def quantiles(self, ranks: tuple[float, ...]) -> list[float | None]:
        """Nearest-rank quantiles (None when empty)."""
        if self.sketch.is_empty():
            return [None for _ in ranks]
        return [float(self.sketch.get_quantile(r, True)) for r in ranks]

    def __getstate__(self) -> tuple[int, bytes]:
        return self.k, self.sketch.serialize()

    def __setstate__(self, state: tuple[int, bytes]) -> None:
        from datasketches import kll_doubles_sketch

        self.k, data = state
        self.sketch = kll_doubles_sketch.deserialize(data)


def _frame_bytes(size: int | None) -> int:
    return size + 4 if size is not None else 0


def _span(have: list[Any], t: float, first: int, last: int) -> None:
    if have[first] is None or t < have[first]:
        have[first] = t
    if have[last] is None or t > have[last]:
        have[last] = t


@dataclass(slots=True)
class Partials:
    """The partial aggregates of some frames and issues. ``width``: the timeline's bucket width."""

    width: float
    # (api_key, api_name, api_version) -> [requests, responses, request bytes, response bytes,
    #                                      undecodable, non-conformant, first time, last time]
    api_stats: dict[tuple[Any, ...], list[Any]] = field(default_factory=dict)
    # (api_key, api_name, api_version) -> [count, sum ms, max ms, sketch]
    latency: dict[tuple[Any, ...], list[Any]] = field(default_factory=dict)
    # (api_name, topic, error_code, error_name) -> [count, first time, last time]
    errors: dict[tuple[Any, ...], list[Any]] = field(default_factory=dict)
    # (client_id, software name, software version, api_key, api_name) -> [versions, requests, connections]
    clients: dict[tuple[Any, ...], list[Any]] = field(default_factory=dict)
    fenced: list[dict[str, Any]] = field(default_factory=list)  # fencing answers (rows of the table)
    # (topic, partition) -> [(time, connection, stream_offset, leader_epoch, api_name, client, server,
    #                         client_id)] as the brokers stated them
    stated: dict[tuple[Any, Any], list[tuple[Any, ...]]] = field(default_factory=dict)
    # (bucket, api_name) -> [requests, responses, bytes, error responses, sketch]
    timeline: dict[tuple[float, str], list[Any]] = field(default_factory=dict)
    # frames, requests, responses, undecodable, non-conformant, first time, last time
    totals: list[Any] = field(default_factory=lambda: [0, 0, 0, 0, 0, None, None])
    connections: set[int] = field(default_factory=set)
    client_ids: set[str] = field(default_factory=set)
    apis: set[str] = field(default_factory=set)
    stream_issues: int = 0
    file_issues: int = 0
    unreadable: set[str] = field(default_factory=set)

    # --- adding rows -----------------------------------------------------------------------------

    def issue(self, kind: str, file: str | None) -> None:
        """One row of the diagnostics' issues (a frame's own diagnostics are counted with it)."""
        if file is None:
            self.stream_issues += 1
        elif kind == "unreadable-file":
            self.unreadable.add(file)
        else:
            self.file_issues += 1

    def frame(self, r: FrameRow, pending: dict[tuple[Any, ...], list[tuple[Any, ...]]]) -> None:
        """One frames row. ``pending``: the requests' partitions by (connection, correlation id),
        kept by the caller across the rows of one task, for matching fencing answers."""
        t, request = r["time"], r["direction"] == "request"
        size, undecodable, flagged = r["size"], r["error"] is not None, bool(r["diagnostics"])
        self._totals(r, t, request, undecodable, flagged)
        group = (r["api_key"], r["api_name"], r["api_version"])
        s = self.api_stats.get(group)
        if s is None:
            s = self.api_stats[group] = [0, 0, 0, 0, 0, 0, None, None]
        s[0 if request else 1] += 1
        s[2 if request else 3] += _frame_bytes(size)
        s[4] += undecodable
        s[5] += flagged
        _span(s, t, 6, 7)
        latency = r["latency"]
        if not request and latency is not None:
            ms = latency * 1000.0
            q = self.latency.get(group)
            if q is None:
                q = self.latency[group] = [0, 0.0, ms, _Quantiles(LATENCY_K)]
            q[0] += 1
            q[1] += ms
            q[2] = max(q[2], ms)
            q[3].add(ms)
        for e in r["errors"]:
            key = (r["api_name"], e["topic"], e["error_code"], e["error_name"])
            c = self.errors.get(key)
            if c is None:
                self.errors[key] = [1, t, t]
            else:
                c[0] += 1
                _span(c, t, 1, 2)
        if request and r["api_key"] is not None:
            self._client(r)
        self._timeline(r, t, request, size, latency)
        self._fencing(r, t, request, pending)

    def _totals(self, r: FrameRow, t: float, request: bool, undecodable: bool, flagged: bool) -> None:
        tot = self.totals
        tot[0] += 1
        tot[1 if request else 2] += 1
        tot[3] += undecodable
        tot[4] += flagged
        _span(tot, t, 5, 6)
        if r["connection"] is not None:
            self.connections.add(r["connection"])
        if r["client_id"] is not None:
            self.client_ids.add(r["client_id"])
        if r["api_name"] is not None:
            self.apis.add(r["api_name"])

    def _client(self, r: FrameRow) -> None:
        key = (
            r["client_id"],
            r["client_software_name"],
            r["client_software_version"],
            r["api_key"],
            r["api_name"],
        )
        c = self.clients.get(key)
        if c is None:
            c = self.clients[key] = [set(), 0, set()]
        if r["api_version"] is not None:
            c[0].add(r["api_version"])
        c[1] += 1
        if r["connection"] is not None:
            c[2].add(r["connection"])

    def _timeline(
        self, r: FrameRow, t: float, request: bool, size: int | None, latency: float | None
    ) -> None:
        key = (math.floor(t / self.width) * self.width, r["api_name"] or "unknown")
        b = self.timeline.get(key)
        if b is None:
            b = self.timeline[key] = [0, 0, 0, 0, _Quantiles(TIMELINE_K)]
        b[0 if request else 1] += 1
        b[2] += _frame_bytes(size)
        b[3] += bool(r["errors"])
        if latency is not None:
            b[4].add(latency * 1000.0)

    def _fencing(
        self, r: FrameRow, t: float, request: bool, pending: dict[tuple[Any, ...], list[tuple[Any, ...]]]
    ) -> None:
        who = (r["connection"], r["client"], r["server"], r["client_id"])
        for p in r["partitions"]:
            epoch = p["leader_epoch"]
            if epoch is not None and epoch > NO_LEADER_EPOCH:
                row = (t, r["connection"], r["stream_offset"], epoch, r["api_name"], *who[1:])
                self.stated.setdefault((p["topic"], p["partition"]), []).append(row)
        if request:
            if r["partitions"] and r["connection"] is not None:
                asked = [(p["topic"], p["partition"], p["current_leader_epoch"]) for p in r["partitions"]]
                pending[(r["connection"], r["correlation_id"])] = asked
            return
        asked = pending.pop((r["connection"], r["correlation_id"]), [])
        for e in r["errors"]:
            if e["error_code"] not in FENCING_CODES or e["partition"] is None:
                continue
            current = next(
                (c for topic, part, c in asked if topic == e["topic"] and part == e["partition"]), None
            )
            self.fenced.append(
                {
                    "time": t,
                    "topic": e["topic"],
                    "partition": e["partition"],
                    "event": e["error_name"],
                    "api_name": r["api_name"],
                    "connection": who[0],
                    "client": who[1],
                    "server": who[2],
                    "client_id": who[3],
                    "leader_epoch": None,
                    "previous_leader_epoch": None,
                    "current_leader_epoch": current,
                }
            )

    # --- merging ---------------------------------------------------------------------------------

    def merge(self, o: Partials) -> None:
        for group, s in o.api_stats.items():
            have = self.api_stats.get(group)
            if have is None:
                self.api_stats[group] = s
                continue
            for i in range(6):
                have[i] += s[i]
            _span(have, s[6], 6, 7)
            _span(have, s[7], 6, 7)
        for group, q in o.latency.items():
            lat = self.latency.get(group)
            if lat is None:
                self.latency[group] = q
                continue
            lat[0] += q[0]
            lat[1] += q[1]
            lat[2] = max(lat[2], q[2])
            lat[3].merge(q[3])
        for key, c in o.errors.items():
            err = self.errors.get(key)
            if err is None:
                self.errors[key] = c
                continue
            err[0] += c[0]
            _span(err, c[1], 1, 2)
            _span(err, c[2], 1, 2)
        for key, c in o.clients.items():
            cl = self.clients.get(key)
            if cl is None:
                self.clients[key] = c
                continue
            cl[0] |= c[0]
            cl[1] += c[1]
            cl[2] |= c[2]
        self.fenced += o.fenced
        for tp, rows in o.stated.items():
            self.stated.setdefault(tp, []).extend(rows)
        for key, b in o.timeline.items():
            tl = self.timeline.get(key)
            if tl is None:
                self.timeline[key] = b
                continue
            for i in range(4):
                tl[i] += b[i]
            tl[4].merge(b[4])
        for i in range(5):
            self.totals[i] += o.totals[i]
        if o.totals[5] is not None:
            _span(self.totals, o.totals[5], 5, 6)
            _span(self.totals, o.totals[6], 5, 6)
        self.connections |= o.connections
        self.client_ids |= o.client_ids
        self.apis |= o.apis
        self.stream_issues += o.stream_issues
        self.file_issues += o.file_issues
        self.unreadable |= o.unreadable
