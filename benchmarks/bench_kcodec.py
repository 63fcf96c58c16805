"""kcodec's own numbers: ``import kcodec`` time and decode/encode µs on large messages.

Run: ``python benchmarks/bench_kcodec.py`` (prints a table; no assertions, nothing is timed in tests).
Comparisons with kio and kafka-python live in ``benchmarks/compare.py``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


# Fresh interpreters, with bytecode caching allowed (an installed wheel has its .pyc files; a
# PYTHONDONTWRITEBYTECODE environment would otherwise measure compilation instead of import).
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _fresh(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=_ENV)
    return float(out.stdout)


def import_time_ms(runs: int = 7) -> float:
    code = "import time; t = time.perf_counter(); import kcodec; print((time.perf_counter() - t) * 1000)"
    _fresh(code)  # warm-up: writes the bytecode caches
    return statistics.median(_fresh(code) for _ in range(runs))


def first_use_ms(message: str, runs: int = 5) -> float:
    code = (
        f"import time, kcodec; t = time.perf_counter(); kcodec.message_class({message!r}); "
        "print((time.perf_counter() - t) * 1000)"
    )
    _fresh(code)
    return statistics.median(_fresh(code) for _ in range(runs))


def per_call_us(fn: object) -> float:
    timer = timeit.Timer(fn)  # type: ignore[arg-type]
    number, _ = timer.autorange()
    best = min(timer.repeat(repeat=5, number=number))
    return best / number * 1e6


def main() -> None:
    from workloads import WORKLOADS

    import kcodec

    print(f"import kcodec: {import_time_ms():.1f} ms (median of 7 fresh interpreters)")
    print(f"first use of FetchRequest (loads one module): {first_use_ms('FetchRequest'):.1f} ms")
    print()
    print(f"{'workload':<62} {'bytes':>9} {'decode µs':>11} {'encode µs':>11}")
    for w in WORKLOADS:
        msg = w.build()
        data = kcodec.encode(msg, w.version)
        assert kcodec.decode(w.message, w.version, data) == msg
        dec = per_call_us(lambda: kcodec.decode(w.message, w.version, data))  # noqa: B023
        enc = per_call_us(lambda: kcodec.encode(msg, w.version))  # noqa: B023
        print(f"{w.name:<62} {len(data):>9} {dec:>11.1f} {enc:>11.1f}")


if __name__ == "__main__":
    main()
