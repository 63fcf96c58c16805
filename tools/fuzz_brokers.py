"""Long fuzzing sessions against the brokers of tests/fuzz_targets.py (librdkafka's mock cluster, tansu),
each started in a subprocess on 127.0.0.1 and restarted when it dies, until the time is up.

    python tools/fuzz_brokers.py librdkafka-mock --minutes 5 --out findings/mock --seed 1
    python tools/fuzz_brokers.py tansu --minutes 5 --out findings/tansu

Findings accumulate in --out (one JSON file per kind and API, de-duplicated across restarts); each
segment's numbers and the summary are printed at the end.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fuzz_targets import TARGETS, TargetUnavailable

from kcodec.fuzz.report import render_findings
from kcodec.fuzz.session import FuzzConfig, Session


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", choices=sorted(TARGETS))
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rate", type=float, default=2000.0)
    p.add_argument("--timeout", type=float, default=1.0)
    p.add_argument("--pipeline", type=int, default=1)
    args = p.parse_args()
    end = time.monotonic() + args.minutes * 60
    seed = args.seed
    totals: Counter[str] = Counter()
    sent = 0
    segments = 0
    busy = 0.0
    findings = {}
    while time.monotonic() < end - 2:
        try:
            with TARGETS[args.target]() as target:
                config = FuzzConfig(
                    target.host, target.port, seed=seed, duration=max(end - time.monotonic(), 1.0),
                    iterations=10**9, rate=args.rate, timeout=args.timeout, pipeline=args.pipeline,
                    out=args.out,
                )
                session = Session(config)
                stats = session.run()
                segments += 1
                sent += stats.sent
                busy += stats.elapsed
                totals.update(stats.outcomes)
                findings.update(session.store.findings)
                print(
                    f"segment {segments} (seed {seed}): {stats.sent} requests in {stats.elapsed:.1f} s "
                    f"({stats.rate:.0f}/s), stopped by {stats.stopped_by}; target {target.exit_status()}",
                    flush=True,
                )
                if not target.alive():
                    print("  " + target.log_tail(300).strip().replace("\n", "\n  "), flush=True)
        except TargetUnavailable as e:
            print(f"{args.target} unavailable: {e}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            break
        seed += 1
    print(f"\n{args.target}: {sent} requests in {segments} segments, {busy:.0f} s fuzzing "
          f"({sent / busy if busy else 0:.0f} requests/s); outcomes {dict(totals)}")
    print(render_findings(list(findings.values())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
