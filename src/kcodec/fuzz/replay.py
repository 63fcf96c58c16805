"""Reproduce a finding: send its request alone on a fresh connection and judge the reply again."""

from __future__ import annotations

from dataclasses import dataclass

from kcodec.fuzz.findings import Finding
from kcodec.fuzz.oracle import Sent, Verdict
from kcodec.fuzz.session import replay_frame
from kcodec.fuzz.wire import RawConnection, Reply, alive, header_size

__all__ = ["ReplayResult", "replay"]


@dataclass(slots=True)
class ReplayResult:
    """What a replay found. ``up_before``: the broker answered the liveness probe before anything was
    sent; when it did not (``unreachable``), nothing was sent and nothing is judged."""

    finding: Finding
    verdict: Verdict
    reply: Reply
    alive: bool
    alive_detail: str
    up_before: bool = True
    target: str = ""  # HOST:PORT it was sent to (or would have been)

    @property
    def unreachable(self) -> bool:
        return not self.up_before

    @property
    def reproduced(self) -> bool:
        """The broker was up, was sent the finding's requests, and then behaved as recorded (for a
        crash: it was gone or answered nothing afterwards)."""
        if self.unreachable:
            return False
        if self.finding.kind in ("broker_died", "broker_unresponsive"):
            return not self.alive
        return self.verdict.kind == self.finding.kind

    def text(self) -> str:
        f = self.finding
        if self.unreachable:
            return (
                f"unreachable: the broker at {self.target or f.target} did not answer before the replay "
                f"({self.alive_detail}): nothing was sent"
            )
        status = "reproduced" if self.reproduced else "not reproduced"
        got = self.verdict.summary if self.verdict.kind else f"reply: {self.reply.outcome} (nothing wrong)"
        return "\n".join([
            f"{status}: {f.kind} {f.api_name} v{f.api_version}",
            f"  recorded: {f.summary}",
            f"  now:      {got}",
            f"  broker alive afterwards: {'yes' if self.alive else 'no'} ({self.alive_detail})",
        ])


def replay(
    finding: Finding, host: str, port: int, timeout: float = 2.0, *, history: bool = True
) -> ReplayResult:
    """Send the finding's request (after its ``history_hex``, each on a fresh connection, if
    ``history``) and judge what happens, then ask the liveness probe. A broker that does not answer
    the liveness probe first is sent nothing (``ReplayResult.unreachable``)."""
    up, why = alive(host, port, timeout)
    if not up:
        return ReplayResult(finding, Verdict(None), Reply("closed"), False, why, False, f"{host}:{port}")
    if history:
        for earlier in finding.history_hex:
            _send_alone(host, port, bytes.fromhex(earlier), min(timeout, 0.5))
    frame = finding.request()
    header = 4 + header_size(frame)
    like = Sent(
        finding.api_key, finding.api_version, _cid(frame), frame, frame[header:],
        finding.mutation, finding.detail, finding.frame_level,
    )
    verdict, reply = replay_frame(host, port, frame, timeout, like)
    ok, why = alive(host, port, timeout)
    return ReplayResult(finding, verdict, reply, ok, why, True, f"{host}:{port}")


def _send_alone(host: str, port: int, frame: bytes, timeout: float) -> None:
    conn = RawConnection(host, port, timeout)
    try:
        conn.connect()
        if conn.send(frame) is None:
            conn.read_reply(timeout)
    except OSError:
        pass
    finally:
        conn.close()


def _cid(frame: bytes) -> int:
    return int.from_bytes(frame[8:12], "big", signed=True) if len(frame) >= 12 else 0
