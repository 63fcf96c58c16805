"""Aggregates over a capture's events, in bounded memory (``kcodec decode-capture --summary``):
frames per API and version, error codes per API, latency percentiles per API (a log-scale histogram,
within 2%), client software (ApiVersions v3+) and the versions each client used, leader-epoch fencing
errors (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH) per partition, stream issues by kind, and consumer
groups (:mod:`kcodec.capture.group_stats`)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kcodec.capture.events import CapturedFrame, CaptureEvent, CaptureIssue
from kcodec.capture.facts import Facts
from kcodec.capture.group_stats import GroupStats
from kcodec.protocol.error_codes import ErrorCode, error_name

__all__ = ["FENCING_CODES", "CaptureStats", "LatencyHistogram", "api_label"]

FENCING_CODES = (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH)
_RATIO = 1.02
_LOG_RATIO = math.log(_RATIO)
_FLOOR = 1e-7  # seconds: latencies below land in the first bucket


class LatencyHistogram:
    """Counts of latencies in buckets growing by 2%: percentiles within 2% in fixed memory."""

    __slots__ = ("buckets", "count", "max", "min")

    def __init__(self) -> None:
        self.buckets: Counter[int] = Counter()
        self.count = 0
        self.max = 0.0
        self.min = math.inf

    def add(self, seconds: float) -> None:
        self.count += 1
        self.max = max(self.max, seconds)
        self.min = min(self.min, seconds)
        b = 0 if seconds <= _FLOOR else int(math.log(seconds / _FLOOR) / _LOG_RATIO) + 1
        self.buckets[b] += 1

    def merge(self, other: LatencyHistogram) -> None:
        """Add another histogram's latencies (the same buckets: the result is as if added here)."""
        self.buckets.update(other.buckets)
        self.count += other.count
        self.max = max(self.max, other.max)
        self.min = min(self.min, other.min)

    def percentile(self, q: float) -> float:
        """The latency below which a fraction ``q`` of them fall (bucket's upper bound, capped at max)."""
        if not self.count:
            return math.nan
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for b in sorted(self.buckets):
            seen += self.buckets[b]
            if seen >= rank:
                upper = _FLOOR * _RATIO**b
                return min(max(upper, self.min), self.max)
        return self.max


@dataclass
class _Client:
    client_id: str
    host: str
    software: set[tuple[str, str]] = field(default_factory=set)
    versions: dict[str, set[int]] = field(default_factory=dict)
    connections: set[object] = field(default_factory=set)


class CaptureStats:
    """Feed every event (``add``), with the facts of decoded frames; read the totals."""

    def __init__(self) -> None:
        self.frames = 0
        self.requests = 0
        self.undecodable = 0
        self.nonconformant = 0
        self.bytes = 0
        self.apis: Counter[tuple[str, int, str]] = Counter()  # (api, version, direction) -> frames
        self.api_bytes: Counter[tuple[str, int]] = Counter()
        self.errors: dict[str, Counter[int]] = {}  # api -> error code -> count
        self.latency: dict[str, LatencyHistogram] = {}
        self.fencing: dict[tuple[str, str], Counter[int]] = {}  # (api, topic/partition) -> code -> n
        self.issues: Counter[str] = Counter()
        self.connections: set[object] = set()  # connection numbers (tagged by shard when merged)
        self._clients: dict[tuple[str, str], _Client] = {}
        self._software: dict[int, tuple[str, str]] = {}  # connection -> client software
        self.groups = GroupStats()  # consumer groups: members, generations, assignments

    def add(self, event: CaptureEvent, facts: Facts | None = None, fencing: bool = True) -> None:
        """One event, with its facts if it is a decoded frame. ``fencing=False``: its leader-epoch
        fencing errors are left to :meth:`add_fencing` (for a caller that learns the names of the
        topics the frame names by id only later: a worker of a parallel decode)."""
        if isinstance(event, CaptureIssue):
            self.issues[event.kind] += 1
            return
        self._frame(event, facts, fencing)

    def add_fencing(self, api: str, where: str, code: int) -> None:
        """A leader-epoch fencing error ``code`` of an ``api`` response, at ``where`` (topic/partition)."""
        self.fencing.setdefault((api, where), Counter())[code] += 1

    def merge(self, other: CaptureStats, tag: int) -> None:
        """Add the totals of another part of the capture (another shard's connections: ``tag`` keeps
        their connection numbers apart from these)."""
        self.frames += other.frames
        self.requests += other.requests
        self.undecodable += other.undecodable
        self.nonconformant += other.nonconformant
        self.bytes += other.bytes
        self.apis.update(other.apis)
        self.api_bytes.update(other.api_bytes)
        for api, codes in other.errors.items():
            self.errors.setdefault(api, Counter()).update(codes)
        for api, h in other.latency.items():
            self.latency.setdefault(api, LatencyHistogram()).merge(h)
        for place, codes in other.fencing.items():
            self.fencing.setdefault(place, Counter()).update(codes)
        self.issues.update(other.issues)
        self.groups.merge(other.groups)
        self.connections.update((tag, n) for n in other.connections)
        for key, c in other._clients.items():
            mine = self._clients.get(key)
            if mine is None:
                mine = self._clients[key] = _Client(c.client_id, c.host)
            mine.software |= c.software
            for api, versions in c.versions.items():
                mine.versions.setdefault(api, set()).update(versions)
            mine.connections.update((tag, n) for n in c.connections)

    def _frame(self, f: CapturedFrame, facts: Facts | None, fencing: bool = True) -> None:
        self.frames += 1
        self.connections.add(f.connection)
        self.bytes += 4 + (f.size or 0)
        if f.direction == "request":
            self.requests += 1
        if f.error is not None:
            self.undecodable += 1
        if f.diagnostics:
            self.nonconformant += 1
        api = api_label(f)
        version = -1 if f.api_version is None else f.api_version
        self.apis[(api, version, f.direction)] += 1
        self.api_bytes[(api, version)] += 4 + (f.size or 0)
        # (a histogram or a Counter made only for an API's first response that needs one: not, as a
        # setdefault argument would, for every response)
        if f.direction == "response" and f.latency is not None:
            histogram = self.latency.get(api)
            if histogram is None:
                histogram = self.latency[api] = LatencyHistogram()
            histogram.add(max(f.latency, 0.0))
        if facts is not None and f.direction == "response" and facts.error_codes:
            errors = self.errors.get(api)
            if errors is None:
                errors = self.errors[api] = Counter()
            for code, where in facts.error_codes:
                errors[code] += 1
                if fencing and code in FENCING_CODES:
                    self.add_fencing(api, where, code)
        if f.direction == "request":
            self._client(f, facts)
        if f.groups:
            self.groups.add(f)

    def _client(self, f: CapturedFrame, facts: Facts | None) -> None:
        client_id = getattr(f.header, "client_id", None) or "-"
        host = f.client.rsplit(":", 1)[0]
        c = self._clients.get((client_id, host))
        if c is None:
            c = self._clients[(client_id, host)] = _Client(client_id, host)
        c.connections.add(f.connection)
        if facts is not None and "client_software_name" in facts.values:
            software = (
                str(facts.values["client_software_name"]),
                str(facts.values.get("client_software_version", "")),
            )
            self._software[f.connection] = software
        sw = self._software.get(f.connection)
        if sw is not None:
            c.software.add(sw)
        if f.api_name is not None and f.api_version is not None:
            c.versions.setdefault(f.api_name, set()).add(f.api_version)

    def clients(self) -> list[dict[str, Any]]:
        return [
            {
                "client_id": c.client_id,
                "host": c.host,
                "software": [f"{n} {v}".strip() for n, v in sorted(c.software)],
                "connections": len(c.connections),
                "versions": {api: sorted(vs) for api, vs in sorted(c.versions.items())},
            }
            for c in sorted(self._clients.values(), key=lambda c: (c.client_id, c.host))
        ]

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``--json --summary`` prints (``"type": "summary"``)."""
        apis: dict[str, dict[str, Any]] = {}
        for (api, version, direction), n in sorted(self.apis.items()):
            entry = apis.setdefault(api, {"versions": {}, "errors": {}, "latency_ms": None})
            per = entry["versions"].setdefault(str(version), {"requests": 0, "responses": 0, "bytes": 0})
            per["requests" if direction == "request" else "responses"] += n
            per["bytes"] = self.api_bytes[(api, version)]
        for api, codes in self.errors.items():
            if codes and api in apis:
                apis[api]["errors"] = {error_name(c): n for c, n in _by_count(codes)}
        for api, h in self.latency.items():
            if api in apis:
                apis[api]["latency_ms"] = {
                    "count": h.count,
                    **{f"p{int(q * 100)}": round(h.percentile(q) * 1000, 3) for q in (0.5, 0.9, 0.99)},
                    "max": round(h.max * 1000, 3),
                }
        return {
            "type": "summary",
            "frames": self.frames,
            "requests": self.requests,
            "responses": self.frames - self.requests,
            "connections": len(self.connections),
            "bytes": self.bytes,
            "undecodable": self.undecodable,
            "nonconformant": self.nonconformant,
            "issues": dict(sorted(self.issues.items())),
            "apis": apis,
            "clients": self.clients(),
            "fencing": [
                {
                    "api": api,
                    "partition": where,
                    "errors": {error_name(c): n for c, n in sorted(codes.items())},
                }
                for (api, where), codes in sorted(self.fencing.items())
            ],
            "groups": self.groups.to_list(),
        }


def api_label(f: CapturedFrame) -> str:
    """The API a frame is counted under: its name, ``key N`` for a key kcodec does not know, ``?``."""
    return f.api_name or (f"key {f.api_key}" if f.api_key is not None else "?")


def _by_count(codes: Counter[int]) -> list[tuple[int, int]]:
    """Most frequent first; equal counts by code (an order that does not depend on the order seen)."""
    return sorted(codes.items(), key=lambda item: (-item[1], item[0]))
