"""`kcodec fuzz` against Apache Kafka itself (a soak run, not a test).

    python benchmarks/fuzz_apache_kafka.py [--version 4.4] [--seconds 300] [--seed 1] [--out DIR]

Starts one Apache Kafka broker (combined KRaft controller+broker, from Maven Central's jars: see
tools/apache_kafka.py) on 127.0.0.1, runs a fuzzing session against it for ``--seconds`` (the default
mix: valid generated requests of every advertised API and version, mutated ones, frame-level lies),
then prints requests/s, the outcomes, and each finding. Every finding is then replayed alone against
a *fresh* broker of the same release: the ones that reproduce there are candidates for
tests/fuzz_corpus/ (and for a report to Apache Kafka, if they are defects of the broker: a broker
error on a valid request, a response that does not decode, a disconnect on a valid request, a
crash). Everything it starts is stopped by pid.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from apache_kafka_broker import KafkaCluster  # noqa: E402

from kcodec.fuzz.findings import load_finding  # noqa: E402
from kcodec.fuzz.replay import replay  # noqa: E402
from kcodec.fuzz.session import FuzzConfig, Session  # noqa: E402


def fuzz(version: str, seconds: float, seed: int, out: Path) -> tuple[float, Counter[str], int]:
    with KafkaCluster(version) as kafka:
        host, port = kafka.address
        where = f"{kafka.bootstrap} (pid {kafka.pids[0]})"
        print(f"Apache Kafka {kafka.version} on {where}; fuzzing {seconds:.0f} s")
        config = FuzzConfig(
            host, port, seed=seed, duration=seconds, iterations=10**9, rate=100_000, timeout=2.0, out=out
        )
        stats = Session(config).run()
        alive = all(n.running for n in kafka.nodes.values())
        print(f"  broker still running afterwards: {'yes' if alive else 'NO'}")
        return stats.rate, stats.outcomes, stats.sent


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", default="4.4")
    p.add_argument("--seconds", type=float, default=300.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=None, help="folder for the findings (default: a temporary)")
    args = p.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="kcodec-fuzz-apache-"))
    out.mkdir(parents=True, exist_ok=True)
    rate, outcomes, sent = fuzz(args.version, args.seconds, args.seed, out)
    print(f"  {sent} requests, {rate:.0f} requests/s")
    print("  outcomes: " + ", ".join(f"{k} {v}" for k, v in outcomes.most_common()))
    files = sorted(out.glob("*.json"))
    print(f"  findings: {len(files)} (in {out})")
    if not files:
        return 0
    with KafkaCluster(args.version) as fresh:
        host, port = fresh.address
        for path in files:
            finding = load_finding(path)
            result = replay(finding, host, port)
            tag = "REPRODUCES on a fresh broker" if result.reproduced else "does not reproduce alone"
            print(f"  - {finding.kind} ({finding.severity}) {finding.api_name} v{finding.api_version}: {tag}")
            print(f"      {finding.summary}")
            if finding.mutation:
                print(f"      mutation: {finding.mutation} {finding.detail}")
    print(json.dumps({"rate": rate, "sent": sent, "findings": len(files)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
