"""Long fuzzing sessions against the brokers of tests/fuzz_targets.py (librdkafka's mock cluster, tansu),
each started in a subprocess on 127.0.0.1 and restarted when it dies, until the time is up.

    python tools/fuzz_brokers.py librdkafka-mock --minutes 5 --out findings/mock --seed 1
    python tools/fuzz_brokers.py tansu --minutes 5 --out findings/tansu

Findings accumulate in --out (one JSON file per kind and API, de-duplicated across restarts). Each
crash (broker_died / broker_unresponsive) is then replayed alone against a fresh broker, minimized
there (one fresh broker per try) and annotated with the process's exit status and log tail. Each
segment's numbers and the summary are printed at the end.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fuzz_targets import TARGETS, Target, TargetUnavailable

from kcodec.fuzz.findings import Finding, FindingStore, minimize
from kcodec.fuzz.replay import replay
from kcodec.fuzz.report import render_findings
from kcodec.fuzz.session import FuzzConfig, Session
from kcodec.fuzz.wire import header_size

CRASHES = ("broker_died", "broker_unresponsive")


def crashes_alone(
    start: Callable[[], AbstractContextManager[Target]],
    frame: bytes,
    f: Finding,
    history: list[str] | None = None,
) -> tuple[bool, str, str]:
    """Whether ``frame`` (after ``history``, if given) takes a fresh broker down; its exit status and
    log tail."""
    probe = Finding(**{**f.to_json(), "request_hex": frame.hex(), "history_hex": history or []})
    with start() as target:
        result = replay(probe, target.host, target.port, timeout=1.0)
        time.sleep(0.2)
        return result.up_before and not result.alive, target.exit_status(), target.log_tail(400)


def confirm_crashes(name: str, store: FindingStore, max_tries: int) -> None:
    """Find each crash's culprit against fresh brokers: the request alone, else one of the requests
    sent just before it, else the whole sequence; then minimize a culprit that crashes alone."""
    start = TARGETS[name]
    for f in list(store.findings.values()):
        if f.kind not in CRASHES:
            continue
        frame = f.request()
        down, status, log = crashes_alone(start, frame, f)
        if not down:
            for earlier in reversed(f.history_hex):
                down, status, log = crashes_alone(start, bytes.fromhex(earlier), f)
                if down:
                    f.summary += f" (the culprit is a request sent {len(f.history_hex)} or fewer before it)"
                    f.original_request_hex, f.request_hex = f.request_hex, earlier
                    frame = bytes.fromhex(earlier)
                    f.api_key = int.from_bytes(frame[4:6], "big", signed=True)
                    f.api_version = int.from_bytes(frame[6:8], "big", signed=True)
                    f.history_hex = []
                    break
        if down:
            f.reproduced = True

            def still_crashes(candidate: bytes, f: Finding = f) -> bool:
                return crashes_alone(start, candidate, f)[0]

            small, _ = minimize(frame, still_crashes, keep=4 + header_size(frame), max_tries=max_tries)
            if small != frame:
                f.original_request_hex = f.original_request_hex or f.request_hex
                f.request_hex, f.minimized = small.hex(), True
                down, status, log = crashes_alone(start, small, f)
        else:
            down, status, log = crashes_alone(start, frame, f, f.history_hex)
            f.reproduced = down
            if down:
                f.summary += f" (reproduced only after the {len(f.history_hex)} requests sent before it)"
        f.target_status, f.target_log = status, log.strip()[-400:]
        store.write(f)
        print(f"  {f.kind} {f.api_name} v{f.api_version}: reproduced: {f.reproduced}; {status}; "
              f"{len(f.request())} bytes", flush=True)


def segments(args: argparse.Namespace) -> Iterator[tuple[Session, Target]]:
    end = time.monotonic() + args.minutes * 60
    seed = args.seed
    while time.monotonic() < end - 2:
        with TARGETS[args.target]() as target:
            config = FuzzConfig(
                target.host, target.port, seed=seed, duration=max(end - time.monotonic(), 1.0),
                iterations=10**9, rate=args.rate, timeout=args.timeout, pipeline=args.pipeline, out=args.out,
            )
            session = Session(config)
            session.run()
            yield session, target
        seed += 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", choices=sorted(TARGETS))
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rate", type=float, default=2000.0)
    p.add_argument("--timeout", type=float, default=1.0)
    p.add_argument("--pipeline", type=int, default=1)
    p.add_argument("--minimize-tries", type=int, default=24)
    args = p.parse_args()
    totals: Counter[str] = Counter()
    sent = n = 0
    busy = 0.0
    try:
        for session, target in segments(args):
            stats = session.stats
            n += 1
            sent += stats.sent
            busy += stats.elapsed
            totals.update(stats.outcomes)
            print(
                f"segment {n} (seed {session.config.seed}): {stats.sent} requests in {stats.elapsed:.1f} s "
                f"({stats.rate:.0f}/s), stopped by {stats.stopped_by}; target {target.exit_status()}",
                flush=True,
            )
    except TargetUnavailable as e:
        print(f"{args.target} unavailable: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    store = FindingStore(args.out)
    store.findings, store.earlier = store.earlier, {}
    print(f"\n{args.target}: {sent} requests in {n} segments, {busy:.0f} s fuzzing "
          f"({sent / busy if busy else 0:.0f} requests/s); outcomes {dict(totals)}")
    print("replaying and minimizing the crashes against fresh brokers:", flush=True)
    confirm_crashes(args.target, store, args.minimize_tries)
    print(render_findings(list(store.findings.values())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
