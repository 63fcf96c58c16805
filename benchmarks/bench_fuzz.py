"""Fuzzer throughput against local brokers, beside a plain kcodec client measured in the same run.

    python benchmarks/bench_fuzz.py [--seconds 10]

For each broker of tests/fuzz_targets.py (librdkafka's mock cluster, tansu; each in a subprocess on
127.0.0.1): requests/s of kcodec.net.client.Connection sending MetadataRequest one at a time (the
baseline), and of fuzzing sessions: valid generated ApiVersions and Metadata requests of every version
(one at a time, then 16 pipelined), the same mutated, valid requests of every API, and the default
mix (80 % mutated), each as a ratio to the baseline. Sessions include generation, judging every reply,
closed connections, reconnects, liveness probes, findings (confirmed and minimized) and the brokers'
own waits and silences (a silent reply costs the timeout, 1 s here). Then self-fuzz executions/s of kcodec's
decoders (tools/selffuzz.py's mutation loop, no broker). No thresholds: the numbers are printed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fuzz_targets import TARGETS, TargetUnavailable  # noqa: E402

import kcodec  # noqa: E402
from kcodec.fuzz.session import FuzzConfig, Session  # noqa: E402
from kcodec.net.client import Connection  # noqa: E402


def baseline(host: str, port: int, seconds: float) -> float:
    req = kcodec.message_class("MetadataRequest")(topics=[])
    n = 0
    with Connection(host, port, timeout=5) as conn:
        end = time.monotonic() + seconds
        start = time.monotonic()
        while time.monotonic() < end:
            conn.request(req, 4)
            n += 1
        return n / (time.monotonic() - start)


def session_rate(host: str, port: int, seconds: float, **kw: object) -> tuple[float, str]:
    with tempfile.TemporaryDirectory() as tmp:
        config = FuzzConfig(host, port, seed=5, duration=seconds, iterations=10**9, rate=100_000,
                            timeout=1.0, out=Path(tmp), **kw)  # type: ignore[arg-type]
        s = Session(config)
        stats = s.run()
        return stats.rate, stats.stopped_by


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=float, default=10.0)
    args = p.parse_args()
    secs = args.seconds
    rows = []
    fast = {18: None, 3: None}  # ApiVersions and Metadata: answered at once by both brokers
    runs = (
        ("fuzz, valid ApiVersions+Metadata (all versions)",
         {"valid_rate": 1.0, "frame_rate": 0.0, "minimize": False, "apis": fast}),
        ("fuzz, same, pipeline 16",
         {"valid_rate": 1.0, "frame_rate": 0.0, "minimize": False, "apis": fast, "pipeline": 16}),
        ("fuzz, mutated ApiVersions+Metadata", {"apis": fast}),
        ("fuzz, valid requests of every API", {"valid_rate": 1.0, "frame_rate": 0.0, "minimize": False}),
        ("fuzz, every API, default mix (80 % mutated)", {}),
    )
    for name, start in TARGETS.items():
        try:
            with start() as t:
                base = baseline(t.host, t.port, secs)
            rows.append((name, "kcodec client, MetadataRequest v4 (baseline)", base, 1.0, ""))
            for label, kw in runs:
                with start() as t:  # a fresh broker each time: fuzzing may crash it (the session stops)
                    rate, stop = session_rate(t.host, t.port, secs, **kw)
                rows.append((name, label, rate, rate / base, stop))
        except TargetUnavailable as e:
            print(f"{name}: unavailable ({e})")
    print(f"{'broker':16} {'what':48} {'req/s':>9} {'ratio':>6}  stopped by")
    for name, label, rate, ratio, stop in rows:
        print(f"{name:16} {label:48} {rate:9.0f} {ratio:6.2f}  {stop}")
    selffuzz = [sys.executable, str(ROOT / "tools" / "selffuzz.py"), "random", "--seconds", str(secs)]
    out = subprocess.run(selffuzz, capture_output=True, text=True)
    print("self-fuzz (no broker):", out.stdout.strip().splitlines()[-2] if out.stdout else out.stderr[-300:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
