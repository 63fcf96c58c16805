"""A fuzzing session against one broker: negotiate, then send generated and mutated requests over one
or more connections (pipelined), judge every reply, probe liveness after anything suspicious, and
keep the findings (confirmed alone on a fresh connection, then minimized).

Bounds are always on: ``FuzzConfig`` has a finite rate, iteration count and duration by default, and
refuses a target that is not on loopback unless ``allow_remote``. ``Ctrl-C`` ends the session
cleanly (``stopped_by == "interrupted"``) with everything found so far written.
"""

from __future__ import annotations

import random
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcodec.fuzz.findings import Finding, FindingStore, minimize
from kcodec.fuzz.generate import Generator
from kcodec.fuzz.layout import layout
from kcodec.fuzz.mutate import Mutator, mutate_frame
from kcodec.fuzz.oracle import KINDS, Sent, Verdict, judge
from kcodec.fuzz.wire import RawConnection, Reply, alive, is_loopback, request_frame
from kcodec.net.client import Connection
from kcodec.net.client_errors import ClientError
from kcodec.net.negotiation import handshake, negotiate
from kcodec.protocol.codec import decode, encode
from kcodec.protocol.errors import KcodecError
from kcodec.protocol.registry import api, apis

__all__ = ["HISTORY", "FuzzConfig", "FuzzError", "FuzzStats", "Session", "replay_frame"]

#: requests kept for a crash finding: the broker may die of an earlier one than the last
HISTORY = 16


class FuzzError(KcodecError):
    """A session that cannot start: target refused by the safety rules, no handshake, no API left."""


@dataclass(slots=True)
class FuzzConfig:
    host: str
    port: int
    seed: int = 0
    duration: float = 60.0  # seconds
    iterations: int = 10_000
    rate: float = 200.0  # requests per second at most
    timeout: float = 2.0  # seconds to wait for each reply
    apis: dict[int, tuple[int, int] | None] | None = None  # api key -> version range (None: all)
    connections: int = 1
    pipeline: int = 1
    out: Path | None = None
    minimize: bool = True
    valid_rate: float = 0.2  # share of requests sent as generated
    frame_rate: float = 0.1  # share of frame-level mutations (size prefix, header)
    pool_size: int = 4  # generated messages kept per (api, version)
    allow_remote: bool = False

    @property
    def target(self) -> str:
        return f"{self.host}:{self.port}"

    def check(self) -> None:
        for name in ("duration", "rate", "timeout"):
            value = getattr(self, name)
            if not value > 0 or value == float("inf"):
                raise FuzzError(f"{name} must be a positive, finite number, not {value}")
        if self.iterations < 1 or self.connections < 1 or self.pipeline < 1:
            raise FuzzError("iterations, connections and pipeline must be at least 1")
        if not self.allow_remote and not is_loopback(self.host):
            raise FuzzError(f"{self.host} is not a loopback address: pass --allow-remote to fuzz it")


@dataclass(slots=True)
class FuzzStats:
    sent: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    per_api: Counter[str] = field(default_factory=Counter)
    mutations: Counter[str] = field(default_factory=Counter)
    reconnects: int = 0
    probes: int = 0
    findings: int = 0
    started: float = field(default_factory=time.monotonic)
    elapsed: float = 0.0
    stopped_by: str = ""

    @property
    def rate(self) -> float:
        return self.sent / self.elapsed if self.elapsed > 0 else 0.0


@dataclass(slots=True)
class _Pool:
    """Generated bodies of one (api key, version) and their spans (laid out when first mutated)."""

    name: str
    bodies: list[list[Any]]  # [body, spans or None]


class Session:
    """One fuzzing session (see the module docstring). ``run()`` returns the stats; findings are in
    ``store``; ``progress`` is called with the stats about every 100 ms."""

    def __init__(self, config: FuzzConfig, progress: Callable[[FuzzStats], None] | None = None) -> None:
        config.check()
        self.config = config
        self.rng = random.Random(config.seed)
        self.generator = Generator(self.rng)
        self.mutator = Mutator(self.rng)
        self.store = FindingStore(config.out)
        self.stats = FuzzStats()
        self.progress = progress
        self.negotiated: dict[str, int] = {}
        self.ranges: dict[int, tuple[int, int]] = {}
        self.pairs: list[tuple[int, int]] = []
        self._pools: dict[tuple[int, int], _Pool] = {}
        self._conns: list[RawConnection] = []
        self._cid = 0
        self._next_send = 0.0
        self._last_progress = 0.0
        self._iteration = 0
        self._recent: deque[Sent] = deque(maxlen=HISTORY)
        self._previous: list[Sent] = []

    # -- setup -------------------------------------------------------------------------------------

    def negotiate(self) -> None:
        c = self.config
        try:
            with Connection(c.host, c.port, timeout=c.timeout) as conn:
                result = handshake(conn)
        except (ClientError, OSError) as e:
            raise FuzzError(f"no ApiVersions handshake with {c.target}: {e}") from None
        if not result.ok:
            raise FuzzError(f"the ApiVersions handshake with {c.target} failed")
        self.ranges = dict(result.broker_ranges)
        n = negotiate(result)
        self.negotiated = {
            api(k).name: ch.version for k, ch in sorted(n.choices.items()) if ch.version is not None
        }
        known = {info.key: info for info in apis()}
        for key, (lo, hi) in sorted(self.ranges.items()):
            info = known.get(key)
            if info is None:
                continue
            if c.apis is not None:
                if key not in c.apis:
                    continue
                cap = c.apis[key]
                if cap is not None:
                    lo, hi = max(lo, cap[0]), min(hi, cap[1])
            lo, hi = max(lo, info.min_version), min(hi, info.max_version)
            self.pairs.extend((key, v) for v in range(lo, hi + 1))
        if not self.pairs:
            raise FuzzError(f"{c.target} offers none of the selected APIs at a version kcodec knows")

    def _pool(self, key: int, version: int) -> _Pool:
        pool = self._pools.get((key, version))
        if pool is None:
            pool = self._pools[(key, version)] = _Pool(api(key).request, [])
        # one message per (api, version) at first; more (up to pool_size), and fresh ones replacing
        # old ones, now and then: generation costs milliseconds, a mutation microseconds
        if not pool.bodies or self.rng.random() < 0.03:
            msg = self.generator.message(pool.name, version)
            if self.rng.random() < 0.5:
                msg = self.generator.edged(msg, pool.name, version)
            body = encode(msg, version)
            entry: list[Any] = [body, None]
            if len(pool.bodies) < self.config.pool_size:
                pool.bodies.append(entry)
            else:
                pool.bodies[self.rng.randrange(len(pool.bodies))] = entry
        return pool

    # -- the loop ----------------------------------------------------------------------------------

    def run(self) -> FuzzStats:
        c = self.config
        if not self.pairs:
            self.negotiate()
        self.stats = FuzzStats()
        deadline = self.stats.started + c.duration
        self._conns = [RawConnection(c.host, c.port, c.timeout) for _ in range(c.connections)]
        try:
            while True:
                if self._iteration >= c.iterations:
                    self.stats.stopped_by = "iterations"
                    break
                if time.monotonic() >= deadline:
                    self.stats.stopped_by = "duration"
                    break
                conn = self._conns[self._iteration % len(self._conns)]
                if not self._round(conn):
                    self.stats.stopped_by = "broker_died"
                    break
                self._tick()
        except KeyboardInterrupt:
            self.stats.stopped_by = "interrupted"
        finally:
            for conn in self._conns:
                conn.close()
            self.stats.elapsed = time.monotonic() - self.stats.started
            self.store.flush()
        return self.stats

    def _tick(self, force: bool = False) -> None:
        now = time.monotonic()
        self.stats.elapsed = now - self.stats.started
        if self.progress is not None and (force or now - self._last_progress >= 0.1):
            self._last_progress = now
            self.progress(self.stats)

    def _pace(self) -> None:
        now = time.monotonic()
        if self._next_send > now:
            time.sleep(self._next_send - now)
        self._next_send = max(now, self._next_send) + 1.0 / self.config.rate

    def _new_cid(self) -> int:
        self._cid = self._cid + 1 if self._cid < 0x7FFF0000 else 1
        return self._cid

    def _ensure(self, conn: RawConnection) -> bool:
        if conn.open:
            return True
        try:
            conn.connect()
        except OSError:
            return False
        self.stats.reconnects += 1
        return True

    def _next_request(self) -> list[Sent]:
        """The request(s) of one step: valid, body-mutated, or one frame-level mutation."""
        c, rng = self.config, self.rng
        key, version = rng.choice(self.pairs)
        pool = self._pool(key, version)
        entry = rng.choice(pool.bodies)
        body = entry[0]
        roll = rng.random()
        cid = self._new_cid()
        if roll < c.frame_rate:
            fm = mutate_frame(rng, key, version, cid, body, self.ranges[key][1])
            return [Sent(key, version, cid, f, body, fm.name, fm.detail, frame_level=True) for f in fm.frames]
        if roll < c.frame_rate + c.valid_rate:
            return [Sent(key, version, cid, request_frame(key, version, cid, body), body)]
        if entry[1] is None:
            entry[1] = layout(pool.name, version, body)
        m = self.mutator.mutate(body, entry[1])
        return [Sent(key, version, cid, request_frame(key, version, cid, m.body), m.body, m.name, m.detail)]

    def _round(self, conn: RawConnection) -> bool:
        """One step: up to ``pipeline`` requests sent back to back, then their replies judged.
        ``False`` when the broker is gone."""
        c = self.config
        batch: list[Sent] = []
        while len(batch) < c.pipeline:
            step = self._next_request()
            if batch and step[0].frame_level:
                break
            batch.extend(step)
            self._iteration += 1
            if step[0].frame_level:
                break
        if not self._ensure(conn):  # refused right after the previous requests: they are the suspects
            return self._probe(self._previous or batch, "the connection was refused afterwards")
        self._previous = batch
        for sent in batch:
            self._pace()
            outcome = conn.send(sent.frame)
            self._recent.append(sent)
            self.stats.sent += 1
            self.stats.per_api[sent.api_name] += 1
            self.stats.mutations[sent.mutation or "valid"] += 1
            if outcome is not None:
                break
        frame_level = batch[0].frame_level
        wait = min(c.timeout, 0.1) if frame_level else c.timeout  # no reply is owed: a glance
        suspicious = in_step = False
        for sent in batch:
            reply = conn.read_reply(wait)
            self.stats.outcomes[reply.outcome] += 1
            verdict = judge(sent, reply, wait)
            if verdict.kind is not None:
                self._found(sent, reply, verdict)
            suspicious |= verdict.suspicious
            if reply.outcome != "response":
                in_step = False
                break
            in_step = True
        if frame_level or not in_step:
            conn.close()  # the stream may be out of step: start the next request on a fresh one
        # A close that was fine (a malformed request) is checked by the next reconnect: a dead broker
        # refuses it (and these requests are blamed); the probe is for what the oracle found odd.
        if suspicious:
            return self._probe(batch, "after a suspicious reply")
        return True

    def _probe(self, batch: list[Sent], why: str) -> bool:
        c = self.config
        for attempt in range(3):
            self.stats.probes += 1
            ok, _ = alive(c.host, c.port, c.timeout)
            if ok:
                return True
            time.sleep(0.5 * (attempt + 1))
        last = batch[-1]
        ok, detail = alive(c.host, c.port, c.timeout)
        if ok:
            return True
        kind = "broker_died" if "cannot connect" in detail else "broker_unresponsive"
        verdict = Verdict(
            kind,
            f"the broker {'is gone' if kind == 'broker_died' else 'accepts connections but answers nothing'} "
            f"(liveness probe failed 4 times, {why}: {detail}) after "
            f"{'a valid request' if last.valid else last.mutation} {last.api_name} v{last.api_version}",
        )
        history = [s.frame.hex() for s in self._recent if s is not last]
        self._found(last, Reply("closed"), verdict, confirm=False, history=history)
        return False

    # -- findings ----------------------------------------------------------------------------------

    def _found(
        self,
        sent: Sent,
        reply: Reply,
        verdict: Verdict,
        *,
        confirm: bool = True,
        history: list[str] | None = None,
    ) -> None:
        assert verdict.kind is not None
        finding = Finding(
            kind=verdict.kind,
            severity=KINDS[verdict.kind],
            api_name=sent.api_name,
            api_key=sent.api_key,
            api_version=sent.api_version,
            summary=verdict.summary,
            request_hex=sent.frame.hex(),
            response_hex=reply.data.hex() if reply.outcome == "response" else None,
            seed=self.config.seed,
            iteration=self._iteration,
            negotiated=self.negotiated,
            target=self.config.target,
            mutation=sent.mutation,
            detail=sent.detail,
            frame_level=sent.frame_level,
            history_hex=history or [],
        )
        if self.store.known(finding.key):
            self.store.add(finding)
            return
        self.stats.findings += 1
        if confirm:
            self._confirm_and_minimize(finding, sent)
        self.store.add(finding)
        self._tick(force=True)

    def _confirm_and_minimize(self, finding: Finding, sent: Sent) -> None:
        c = self.config

        def kind_of(frame: bytes) -> str | None:
            verdict, _ = replay_frame(c.host, c.port, frame, c.timeout, sent)
            return verdict.kind

        finding.reproduced = kind_of(sent.frame) == finding.kind
        slow = finding.kind in ("no_response", "silent_on_malformed")
        if not (finding.reproduced and c.minimize) or slow or sent.frame_level:
            return
        header = len(sent.frame) - len(sent.body)  # size prefix + header stay; the body shrinks
        name = api(sent.api_key).request

        def still(frame: bytes) -> bool:
            if sent.valid and not _decodes(name, sent.api_version, frame[header:]):
                return False  # a finding about a valid request stays about a valid request
            return kind_of(frame) == finding.kind

        small, _ = minimize(sent.frame, still, keep=header)
        if small != sent.frame:
            finding.original_request_hex = finding.request_hex
            finding.request_hex = small.hex()
            finding.minimized = True


def _decodes(name: str, version: int, body: bytes) -> bool:
    try:
        decode(name, version, body)
    except KcodecError:
        return False
    return True


def replay_frame(
    host: str, port: int, frame: bytes, timeout: float, like: Sent
) -> tuple[Verdict, Reply]:
    """Send ``frame`` alone on a fresh connection and judge the reply as ``like`` was judged
    (a broker that does not come back to the liveness probe afterwards is ``broker_died``)."""
    conn = RawConnection(host, port, timeout)
    try:
        conn.connect()
    except OSError as e:
        return Verdict("broker_died", f"cannot connect: {e}"), Reply("closed")
    try:
        body = frame[len(like.frame) - len(like.body) :]
        sent = Sent(
            like.api_key, like.api_version, like.correlation_id, frame, body,
            like.mutation, like.detail, like.frame_level, like.advertised,
        )
        outcome = conn.send(frame)
        reply = Reply(outcome) if outcome is not None else conn.read_reply(timeout)
        verdict = judge(sent, reply, timeout)
    finally:
        conn.close()
    if verdict.kind is None and (verdict.suspicious or reply.outcome != "response"):
        ok, why = alive(host, port, timeout)
        if not ok:
            verdict = Verdict("broker_died", f"the broker stopped answering after the request ({why})")
    return verdict, reply
