"""Reproduce a finding: send its request alone on a fresh connection and judge the reply again."""

from __future__ import annotations

from dataclasses import dataclass

from kcodec.fuzz.findings import Finding
from kcodec.fuzz.oracle import Sent, Verdict
from kcodec.fuzz.session import replay_frame
from kcodec.fuzz.wire import Reply, alive

__all__ = ["ReplayResult", "replay"]


@dataclass(slots=True)
class ReplayResult:
    finding: Finding
    verdict: Verdict
    reply: Reply
    alive: bool
    alive_detail: str

    @property
    def reproduced(self) -> bool:
        if self.finding.kind in ("broker_died", "broker_unresponsive"):
            return not self.alive
        return self.verdict.kind == self.finding.kind

    def text(self) -> str:
        f = self.finding
        status = "reproduced" if self.reproduced else "not reproduced"
        got = self.verdict.summary if self.verdict.kind else f"reply: {self.reply.outcome} (nothing wrong)"
        return "\n".join([
            f"{status}: {f.kind} {f.api_name} v{f.api_version}",
            f"  recorded: {f.summary}",
            f"  now:      {got}",
            f"  broker alive afterwards: {'yes' if self.alive else 'no'} ({self.alive_detail})",
        ])


def replay(finding: Finding, host: str, port: int, timeout: float = 2.0) -> ReplayResult:
    frame = finding.request()
    header = 4 + (len(frame) >= 12 and _header_size(frame))
    like = Sent(
        finding.api_key, finding.api_version, _cid(frame), frame, frame[header:],
        finding.mutation, finding.detail, finding.frame_level,
    )
    verdict, reply = replay_frame(host, port, frame, timeout, like)
    ok, why = alive(host, port, timeout)
    return ReplayResult(finding, verdict, reply, ok, why)


def _cid(frame: bytes) -> int:
    return int.from_bytes(frame[8:12], "big", signed=True) if len(frame) >= 12 else 0


def _header_size(frame: bytes) -> int:
    """The request header's size in ``frame`` (api key, version, correlation id, client id, tags)."""
    from kcodec.errors import KcodecError
    from kcodec.registry import api

    key = int.from_bytes(frame[4:6], "big", signed=True)
    version = int.from_bytes(frame[6:8], "big", signed=True)
    try:
        hv = api(key).request_header_version(version)
    except KcodecError:
        hv = 1
    size = 8
    if hv >= 1 and len(frame) >= 14:
        n = int.from_bytes(frame[12:14], "big", signed=True)
        size += 2 + max(n, 0)
    if hv >= 2:
        size += 1
    return size
