"""Instructions per call of kcodec's bound decoders and encoders on ``benchmarks/workloads.py``,
counted by callgrind: steady however loaded the machine is (benchmark, not a test; needs valgrind).

    python benchmarks/callgrind_codecs.py [--python PY] [--workloads 0,1,2,3,4] [--calls 200] [--json]

Each workload's body is decoded (or its message encoded) ``N`` times and not at all, each under
``valgrind --tool=callgrind``, after one warm-up call in both runs; instructions per call are the
difference over ``N``: what one more call costs, with start-up, imports and a version's first use
left out. ``--calls`` is ``N`` for the workloads whose body is 4 KiB or more; smaller bodies run 20
times as many calls (a run's own noise, some 100K instructions, is then a few per call).
``--python``: the interpreter whose kcodec is counted (another build's venv, say); by default this one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from callgrind_capture import instructions  # noqa: E402

RUN = """
import sys
sys.path.insert(0, {here!r})
from workloads import WORKLOADS
import kcodec
w = WORKLOADS[{index}]
msg = w.build()
data = kcodec.encode(msg, w.version)
if {decode}:
    fn, arg = kcodec.decoder(w.message, w.version), data
else:
    fn, arg = kcodec.encoder(w.message, w.version), msg
fn(arg)
for _ in range({calls}):
    fn(arg)
"""


def count(python: str, index: int, decode: bool, calls: int, out: Path) -> int:
    """Instructions callgrind counts for one run of ``RUN``."""
    code = RUN.format(here=str(HERE), index=index, decode=decode, calls=calls)
    return instructions([python, "-c", code], out, {**os.environ, "PYTHONHASHSEED": "1"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter whose kcodec is counted")
    parser.add_argument("--workloads", default="0,1,2,3,4", help="indexes into benchmarks/workloads.py")
    parser.add_argument("--calls", type=int, default=200, help="calls per large workload (small ones: 20x)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args()
    from workloads import WORKLOADS

    import kcodec

    try:
        chosen = [int(i) for i in args.workloads.split(",")]
        names = [WORKLOADS[i].name for i in chosen]
    except (ValueError, IndexError):
        raise SystemExit(
            f"callgrind_codecs: --workloads: indexes 0-{len(WORKLOADS) - 1}, comma-separated"
        ) from None
    figures: dict[str, dict[str, int]] = {}
    out = Path(tempfile.mkdtemp()) / "cg.out"
    for i, name in zip(chosen, names, strict=True):
        w = WORKLOADS[i]
        calls = args.calls * (20 if len(kcodec.encode(w.build(), w.version)) < 4096 else 1)
        figures[name] = {}
        for op, decode in (("decode", True), ("encode", False)):
            base = count(args.python, i, decode, 0, out)
            figures[name][op] = (count(args.python, i, decode, calls, out) - base) // calls
        if not args.json:
            print(
                f"{name}: decode {figures[name]['decode']:,}  encode {figures[name]['encode']:,}", flush=True
            )
    if args.json:
        print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
