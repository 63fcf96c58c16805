"""Long self-fuzzing runs of kcodec's decoders (the short runs are in the test suite).

    python tools/selffuzz.py random --seconds 600 --seed 1      # mutation loop, counts executions
    python tools/selffuzz.py hypothesis --examples 20000        # tests/test_selffuzz.py, many examples
    (coverage-guided: python tools/fuzz_atheris.py -max_total_time=600 CORPUS)

``random``: every golden body (tests/golden) and a record batch of every codec, mutated over and over
with kcodec.fuzz.mutate (aimed at lengths, counts, varints, tags, records) and blind byte damage, as
bodies, request frames and record batches; every input goes through kcodec.fuzz.selfcheck. Prints
executions per check and per second; the first failing input is written to selffuzz-failure.json and
the run exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from golden_data import message_cases  # noqa: E402

import kcodec  # noqa: E402
from kcodec.fuzz import selfcheck  # noqa: E402
from kcodec.fuzz.layout import layout  # noqa: E402
from kcodec.fuzz.mutate import Mutator, mutate_frame  # noqa: E402
from kcodec.records import NewRecord, build_batch  # noqa: E402


def random_run(seconds: float, seed: int) -> int:
    rng = random.Random(seed)
    mutator = Mutator(rng)
    bodies = []
    for case in message_cases():
        data = bytes.fromhex(case["hex"])
        name, version = case["message"], case["version"]
        bodies.append((name, version, data, layout(name, version, data)))
    requests = [b for b in bodies if b[0].endswith("Request")]
    batches = [
        build_batch([NewRecord(rng.randbytes(rng.randint(0, 300)), key=b"k")], compression=c, magic=m)
        for c in ("none", "gzip", "snappy", "lz4", "zstd") for m in (0, 1, 2) if not (c == "zstd" and m < 2)
    ]
    counts: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    start = time.monotonic()
    end = start + seconds
    last = start
    while time.monotonic() < end:
        for _ in range(200):
            kind = rng.random()
            try:
                if kind < 0.6:
                    name, version, data, spans = rng.choice(bodies)
                    case = {"check": "body", "message": name, "version": version,
                            "hex": mutator.mutate(data, spans).body.hex()}
                elif kind < 0.85:
                    name, version, data, spans = rng.choice(requests)
                    key = kcodec.api(name[: -len("Request")]).key
                    if rng.random() < 0.7:
                        msg = kcodec.decode(name, version, data)
                        frame = kcodec.encode_request(msg, version, correlation_id=1)
                        frame = frame[: len(frame) - len(data)] + mutator.mutate(data, spans).body
                        frame = len(frame[4:]).to_bytes(4, "big") + frame[4:]
                    else:
                        frame = rng.choice(mutate_frame(rng, key, version, 1, data, version).frames)
                    case = {"check": "request_frame", "hex": frame.hex()}
                else:
                    buf = bytearray(rng.choice(batches))
                    for _ in range(rng.randint(1, 4)):
                        buf[rng.randrange(len(buf))] = rng.randrange(256)
                    case = {"check": "records", "hex": bytes(buf).hex()}
                outcomes[selfcheck.run_case(case).split(" ")[0]] += 1
                counts[case["check"]] += 1
            except Exception as e:
                Path("selffuzz-failure.json").write_text(json.dumps({**case, "error": repr(e)}, indent=1))
                print(f"FAILURE after {sum(counts.values())} executions: {e!r} (selffuzz-failure.json)")
                return 1
        now = time.monotonic()
        if now - last >= 10:
            last = now
            n = sum(counts.values())
            print(f"{n} executions in {now - start:.0f} s ({n / (now - start):.0f}/s)", flush=True)
    n = sum(counts.values())
    elapsed = time.monotonic() - start
    print(f"{n} executions in {elapsed:.0f} s ({n / elapsed:.0f}/s): {dict(counts)}")
    print(f"outcomes: {dict(outcomes)}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["random", "hypothesis"])
    p.add_argument("--seconds", type=float, default=600)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--examples", type=int, default=20000)
    args = p.parse_args()
    if args.mode == "random":
        return random_run(args.seconds, args.seed)
    env = {**os.environ, "KCODEC_SELFFUZZ_EXAMPLES": str(args.examples)}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hypothesis-show-statistics",
           str(ROOT / "tests" / "test_selffuzz.py")]
    return subprocess.call(cmd, env=env, cwd=ROOT)


if __name__ == "__main__":
    raise SystemExit(main())
