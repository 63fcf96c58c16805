"""Partial aggregates: what one task's frames and issues add to the aggregate tables, mergeable.

Each stage-2 task folds the frames it decodes and the issues it meets into a :class:`Partials`
while the rows are still Python values (:mod:`~kcodec.pipeline.decode`), all but the timeline,
whose bucket width depends on the whole input's time span: each stage-3 task folds its frames'
few timeline columns (:meth:`Partials.timeline_frames`). Stage 2 does not know the connections'
numbers nor the names of the topic ids yet: its partials name a connection by an identity (its
key and its number within the key) and a topic by the label the frame gave (a name, or an id);
the driver merges the tasks' partials (:meth:`Partials.merge`), puts the numbers and names in
(:meth:`Partials.resolved`), and :mod:`~kcodec.pipeline.aggregates` turns the result into the
tables. Everything here is small:
bounded by APIs and versions, topics and errors, client ids, connections, time buckets, fencing
answers, and the partition leader epochs the brokers stated (one entry per statement: the epoch
changes are found in time order across all tasks). Latency percentiles are KLL sketches
(``datasketches``), exact up to :data:`LATENCY_K` values per API/version (as Spark's
``percentile_approx`` with that accuracy) and :data:`TIMELINE_K` per time bucket and API, within
about 0.03 % and 0.3 % of rank beyond.

The ``partitions`` and ``errors`` entries are tuples in the order of their struct's fields
(:data:`~kcodec.pipeline.flatten.partition_struct_fields`,
:data:`~kcodec.pipeline.flatten.error_struct_fields`), as stage 2 makes them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from kcodec.capture.record import CLIENT_COLUMNS, FRAME_NAMES
from kcodec.pipeline.flatten import error_struct_fields, partition_struct_fields
from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import NO_LEADER_EPOCH

__all__ = ["AGGREGATE_COLUMNS", "LATENCY_K", "TIMELINE_K", "FrameColumns", "FrameRow", "Partials"]

LATENCY_K = 10000
TIMELINE_K = 1000
FENCING_CODES = frozenset((int(ErrorCode.FENCED_LEADER_EPOCH), int(ErrorCode.UNKNOWN_LEADER_EPOCH)))

#: The columns of the frames table the aggregates read: a frame's record but its JSON texts, what its
#: connection's client said, and its partitions and errors.
AGGREGATE_COLUMNS = (
    *(n for n in FRAME_NAMES if n not in ("header", "body", "partial", "embedded")),
    *(c.name for c in CLIENT_COLUMNS),
    "partitions",
    "errors",
)
FrameRow = dict[str, Any]  # a frames row (the columns the aggregates read; entries as dicts)
FrameColumns = Mapping[str, Sequence[Any]]  # frames rows as one sequence of values per column

_PARTITION_FIELDS = tuple(name for name, _ in partition_struct_fields)
_ERROR_FIELDS = tuple(name for name, _ in error_struct_fields)
# positions in a ``partitions`` entry
_P_TOPIC, _P_PARTITION = _PARTITION_FIELDS.index("topic"), _PARTITION_FIELDS.index("partition")
_P_EPOCH = _PARTITION_FIELDS.index("leader_epoch")
_P_CURRENT = _PARTITION_FIELDS.index("current_leader_epoch")
# positions in an ``errors`` entry
_E_TOPIC, _E_PARTITION = _ERROR_FIELDS.index("topic"), _ERROR_FIELDS.index("partition")
_E_CODE, _E_NAME = _ERROR_FIELDS.index("error_code"), _ERROR_FIELDS.index("error_name")


class _Quantiles:
    """A mergeable quantile sketch of latencies in ms, picklable (kept serialised between uses)."""

    __slots__ = ("k", "sketch")

    def __init__(self, k: int, serialized: bytes | None = None) -> None:
        from datasketches import kll_doubles_sketch

        self.k = k
        if serialized is None:
            self.sketch = kll_doubles_sketch(k)
        else:
            self.sketch = kll_doubles_sketch.deserialize(serialized)

    def add(self, value: float) -> None:
        self.sketch.update(value)

    def add_all(self, values: list[float]) -> None:
        """Add ``values`` in their order (one call into the sketch for them all)."""
        import numpy as np

        self.sketch.update(np.array(values, dtype=np.float64))

    def merge(self, other: _Quantiles) -> None:
        self.sketch.merge(other.sketch)

    def quantiles(self, ranks: tuple[float, ...]) -> list[float | None]:
        """Nearest-rank quantiles (None when empty)."""
        if self.sketch.is_empty():
            return [None for _ in ranks]
        return [float(self.sketch.get_quantile(r, True)) for r in ranks]

    def __reduce__(self) -> tuple[type[_Quantiles], tuple[int, bytes]]:
        # made again by __init__ (a compiled class cannot be made without it, as pickle's default does)
        return _Quantiles, (self.k, self.sketch.serialize())


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
    # (api_name, topic, error_code, error_name) -> [entries, responses, first time, last time]
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
    connections: set[Any] = field(default_factory=set)  # numbers, or identities before resolved()
    client_ids: set[str] = field(default_factory=set)
    apis: set[str] = field(default_factory=set)
    stream_issues: int = 0
    file_issues: int = 0
    unreadable: set[str] = field(default_factory=set)

    def __reduce__(self) -> tuple[type[Partials], tuple[Any, ...]]:
        # made again from the fields' values: one pickle for the pure and the compiled build (a
        # driver and its executors may run different builds: kcodec.pipeline.ship)
        return Partials, tuple(getattr(self, name) for name in _PARTIALS_FIELDS)

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
        """One frames row (see :meth:`frames`; its ``partitions`` and ``errors`` entries as dicts, a
        field missing: null)."""
        c = {name: [r[name]] for name in AGGREGATE_COLUMNS}
        c["partitions"] = [[tuple(p.get(f) for f in _PARTITION_FIELDS) for p in r["partitions"]]]
        c["errors"] = [[tuple(e.get(f) for f in _ERROR_FIELDS) for e in r["errors"]]]
        self.frames(c, pending)

    def frames(
        self,
        c: FrameColumns,
        pending: dict[tuple[Any, ...], list[tuple[Any, ...]]],
        timeline: bool = True,
    ) -> None:
        """Frames rows in their order, as one sequence of values per column of :data:`AGGREGATE_COLUMNS`
        (``partitions`` and ``errors``: lists of tuples). ``pending``: the requests' partitions by
        (connection, correlation id), kept by the caller across the rows of one task, for matching
        fencing answers. ``timeline``: fold them into the timeline too (see
        :meth:`timeline_frames`). Each aggregate is folded in one pass over the columns it reads: no
        dict per row, and the values are folded in the same order as row by row (sums and sketches
        alike)."""
        times = c["time"]
        if not times:
            return
        requests = [d == "request" for d in c["direction"]]
        undecodable = [e is not None for e in c["error"]]
        flagged = [bool(d) for d in c["diagnostics"]]
        self._totals(c, requests, undecodable, flagged)
        self._api_stats(c, requests, undecodable, flagged)
        self._latency(c, requests)
        self._errors(c)
        self._clients(c, requests)
        if timeline:
            self._timeline(c, requests)
        self._fencing(c, requests, pending)

    def timeline_frames(self, c: FrameColumns) -> None:
        """Frames rows into the timeline only: columns ``time``, ``api_name``, ``size``, ``latency``,
        ``direction`` and ``errors`` (anything true for a frame with errors)."""
        if c["time"]:
            self._timeline(c, [d == "request" for d in c["direction"]])

    def _totals(
        self, c: FrameColumns, requests: list[bool], undecodable: list[bool], flagged: list[bool]
    ) -> None:
        tot, times = self.totals, c["time"]
        n, asked = len(times), sum(requests)
        tot[0] += n
        tot[1] += asked
        tot[2] += n - asked
        tot[3] += sum(undecodable)
        tot[4] += sum(flagged)
        _span(tot, min(times), 5, 6)
        _span(tot, max(times), 5, 6)
        for values, into in ((c["connection"], self.connections), (c["client_id"], self.client_ids)):
            distinct = set(values)
            distinct.discard(None)
            into |= distinct
        apis = set(c["api_name"])
        apis.discard(None)
        self.apis |= apis

    def _api_stats(
        self, c: FrameColumns, requests: list[bool], undecodable: list[bool], flagged: list[bool]
    ) -> None:
        stats = self.api_stats
        columns = (c["api_key"], c["api_name"], c["api_version"], c["size"], c["time"])
        for key, name, version, size, t, request, bad, odd in zip(
            *columns, requests, undecodable, flagged, strict=True
        ):
            group = (key, name, version)
            s = stats.get(group)
            if s is None:
                s = stats[group] = [0, 0, 0, 0, 0, 0, None, None]
            s[0 if request else 1] += 1
            if size is not None:
                s[2 if request else 3] += size + 4  # a frame's bytes: its size field's 4 and the size
            s[4] += bad
            s[5] += odd
            if s[6] is None or t < s[6]:
                s[6] = t
            if s[7] is None or t > s[7]:
                s[7] = t

    def _latency(self, c: FrameColumns, requests: list[bool]) -> None:
        latency = self.latency
        added: dict[tuple[Any, ...], list[float]] = {}  # each group's values, in order
        columns = (c["api_key"], c["api_name"], c["api_version"], c["latency"])
        for key, name, version, seconds, request in zip(*columns, requests, strict=True):
            if request or seconds is None:
                continue
            group = (key, name, version)
            values = added.get(group)
            if values is None:
                values = added[group] = []
            values.append(seconds * 1000.0)
        for group, values in added.items():
            q = latency.get(group)
            if q is None:
                q = latency[group] = [0, 0.0, values[0], _Quantiles(LATENCY_K)]
            total = q[1]
            for ms in values:  # summed one by one, in order (as row by row)
                total += ms
            q[0] += len(values)
            q[1] = total
            q[2] = max(q[2], *values)
            q[3].add_all(values)

    def _errors(self, c: FrameColumns) -> None:
        errors = self.errors
        for name, found, t in zip(c["api_name"], c["errors"], c["time"], strict=True):
            if not found:
                continue
            seen: set[tuple[Any, ...]] = set()
            for e in found:
                key = (name, e[_E_TOPIC], e[_E_CODE], e[_E_NAME])
                first = key not in seen
                seen.add(key)
                have = errors.get(key)
                if have is None:
                    errors[key] = [1, 1, t, t]
                else:
                    have[0] += 1
                    have[1] += first
                    _span(have, t, 2, 3)

    def _clients(self, c: FrameColumns, requests: list[bool]) -> None:
        clients = self.clients
        who = (c["client_id"], c["client_software_name"], c["client_software_version"])
        columns = (*who, c["api_key"], c["api_name"], c["api_version"], c["connection"])
        for client_id, sw_name, sw_version, key, name, version, conn, request in zip(
            *columns, requests, strict=True
        ):
            if not request or key is None:
                continue
            group = (client_id, sw_name, sw_version, key, name)
            have = clients.get(group)
            if have is None:
                have = clients[group] = [set(), 0, set()]
            if version is not None:
                have[0].add(version)
            have[1] += 1
            if conn is not None:
                have[2].add(conn)

    def _timeline(self, c: FrameColumns, requests: list[bool]) -> None:
        timeline, width, floor = self.timeline, self.width, math.floor
        added: dict[tuple[float, str], list[float]] = {}  # the values for each bucket's sketch, in order
        columns = (c["time"], c["api_name"], c["size"], c["errors"], c["latency"])
        for t, name, size, errors, seconds, request in zip(*columns, requests, strict=True):
            key = (floor(t / width) * width, name or "unknown")
            b = timeline.get(key)
            if b is None:
                b = timeline[key] = [0, 0, 0, 0, _Quantiles(TIMELINE_K)]
            b[0 if request else 1] += 1
            if size is not None:
                b[2] += size + 4  # a frame's bytes: its size field's 4 and the size
            b[3] += bool(errors)
            if seconds is not None:
                values = added.get(key)
                if values is None:
                    values = added[key] = []
                values.append(seconds * 1000.0)
        for key, values in added.items():
            timeline[key][4].add_all(values)

    def _fencing(
        self, c: FrameColumns, requests: list[bool], pending: dict[tuple[Any, ...], list[tuple[Any, ...]]]
    ) -> None:
        """Leader epochs stated, and fencing answers matched with their requests' partitions."""
        columns = (c["connection"], c["correlation_id"], c["partitions"], c["errors"])
        for i, (conn, correlation, partitions, errors) in enumerate(zip(*columns, strict=True)):
            if partitions:
                for p in partitions:
                    epoch = p[_P_EPOCH]
                    if epoch is not None and epoch > NO_LEADER_EPOCH:
                        self._stated(c, i, partitions)
                        break
                if requests[i]:
                    if conn is not None:
                        pending[(conn, correlation)] = partitions  # the request's entries, as they are
                    continue
            elif requests[i]:
                continue
            was_asked = pending.pop((conn, correlation), None)
            for e in errors:
                if e[_E_CODE] in FENCING_CODES and e[_E_PARTITION] is not None:
                    self._fenced(c, i, e, was_asked or [])

    def _stated(self, c: FrameColumns, i: int, partitions: list[tuple[Any, ...]]) -> None:
        who = (c["api_name"][i], c["client"][i], c["server"][i], c["client_id"][i])
        for p in partitions:
            epoch = p[_P_EPOCH]
            if epoch is not None and epoch > NO_LEADER_EPOCH:
                row = (c["time"][i], c["connection"][i], c["stream_offset"][i], epoch, *who)
                self.stated.setdefault((p[_P_TOPIC], p[_P_PARTITION]), []).append(row)

    def _fenced(self, c: FrameColumns, i: int, e: tuple[Any, ...], asked: list[tuple[Any, ...]]) -> None:
        topic, partition = e[_E_TOPIC], e[_E_PARTITION]
        current = next(
            (p[_P_CURRENT] for p in asked if p[_P_TOPIC] == topic and p[_P_PARTITION] == partition), None
        )
        self.fenced.append(
            {
                "time": c["time"][i],
                "topic": topic,
                "partition": partition,
                "event": e[_E_NAME],
                "api_name": c["api_name"][i],
                "connection": c["connection"][i],
                "client": c["client"][i],
                "server": c["server"][i],
                "client_id": c["client_id"][i],
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
            err[1] += c[1]
            _span(err, c[2], 2, 3)
            _span(err, c[3], 2, 3)
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

    # --- numbers and names -----------------------------------------------------------------------

    def resolved(self, numbers: Mapping[Any, int], directory: Mapping[str, str]) -> Partials:
        """These partials (folded by stage 2) with each connection identity replaced by its number in
        ``numbers`` (None when it has none, as the frames table's ``connection``) and each topic id by
        its name in ``directory``, as if the frames had been folded with their final columns. (A
        frame that named one topic both by id and by name would count as one response of its
        ``errors`` group there, as two here; no Kafka message names a topic both ways.)"""

        def number(identity: Any) -> int | None:
            return None if identity is None else numbers.get(identity)

        def name(label: str | None) -> str | None:
            return None if label is None else directory.get(label, label)

        out = Partials(self.width, self.api_stats, self.latency, timeline=self.timeline)
        out.totals, out.client_ids, out.apis = self.totals, self.client_ids, self.apis
        out.stream_issues, out.file_issues = self.stream_issues, self.file_issues
        out.unreadable = self.unreadable
        out.connections = {n for n in map(number, self.connections) if n is not None}
        for key, (versions, requests, conns) in self.clients.items():
            out.clients[key] = [versions, requests, {n for n in map(number, conns) if n is not None}]
        for (api_name, topic, code, error), counts in self.errors.items():
            key = (api_name, name(topic), code, error)
            have = out.errors.get(key)
            if have is None:
                out.errors[key] = list(counts)
            else:
                have[0] += counts[0]
                have[1] += counts[1]
                _span(have, counts[2], 2, 3)
                _span(have, counts[3], 2, 3)
        out.fenced = [
            {**r, "topic": name(r["topic"]), "connection": number(r["connection"])} for r in self.fenced
        ]
        for (topic, partition), rows in self.stated.items():
            out.stated.setdefault((name(topic), partition), []).extend(
                (t, number(conn), *rest) for t, conn, *rest in rows
            )
        return out


#: The fields of :class:`Partials`, in order (its pickles carry their values).
_PARTIALS_FIELDS = tuple(f.name for f in fields(Partials))
