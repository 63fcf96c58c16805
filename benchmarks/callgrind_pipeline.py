"""Instructions of the pipeline's three stages against ``decode-capture --json`` on one capture file,
counted by callgrind: steady however loaded the machine is (benchmark, not a test; needs valgrind).

    python benchmarks/callgrind_pipeline.py [FILE] [--warm-mb 1]

FILE: a pcap file (default: the first file of ``bench_pipeline.py``'s 200 MB dataset,
``/tmp/kcodec-bench-pipeline/data-200mb-16-v64/capture.pcap``, 12.5 MB). Four runs under
``valgrind --tool=callgrind``, each in one process set up as Spark's Python daemon sets up its
workers (``pipeline_stages.py``: the allocators' settings, the libraries and the pipeline's modules
imported) and warmed on the file's first ``--warm-mb`` MB (the codecs made, as in a worker that has
run a task): the stages (:func:`~kcodec.pipeline.stash.stash_task`, then
:func:`~kcodec.pipeline.spill.decode_task`, then :func:`~kcodec.pipeline.write.write_task`, into a
scratch folder) on the warm-up part, then on the whole file; and decode-capture (``kcodec.cli``'s
``decode-capture --json -j 1``, output to /dev/null) the same. Each figure is the second run's
count less the first's: what the whole file costs beyond set-up and warm-up. An uncounted run of
each first fills the caches every counted run then reads (bytecode, the codecs' copies per
version: ``docs/codegen.md``), so that no counted run pays for writing them. Neither Spark nor its
JVM takes part (``bench_pipeline.py`` measures them in CPU time).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from callgrind_capture import instructions
from pipeline_stages import _as_a_worker, _stages

DEFAULT = Path("/tmp/kcodec-bench-pipeline/data-200mb-16-v64/capture.pcap")


def _decode_capture(path: Path) -> None:
    from kcodec.cli import main

    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), contextlib.suppress(SystemExit):
        main(["decode-capture", "--json", "-j", "1", str(path)], standalone_mode=False)


def _child(mode: str, warm: Path, whole: Path, scratch: Path) -> None:
    """One counted process: set up, warm up, then (``*-whole``) the whole file."""
    _as_a_worker()
    if mode.startswith("stages"):
        _stages(warm.parent, scratch / "warm", "")
        if mode == "stages-whole":
            _stages(whole.parent, scratch / "whole", "")
    else:
        _decode_capture(warm)
        if mode == "decode-capture-whole":
            _decode_capture(whole)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("file", type=Path, nargs="?", default=DEFAULT)
    parser.add_argument("--warm-mb", type=float, default=1.0)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, warm, whole, scratch = args.child
        _child(mode, Path(warm), Path(whole), Path(scratch))
        return 0
    if not args.file.is_file():
        print(f"callgrind_pipeline.py: no such file: {args.file} (bench_pipeline.py writes the default one)")
        return 2
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")}
    env["PYTHONHASHSEED"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        warm, whole = root / "warm" / "capture.pcap", root / "whole" / "capture.pcap"
        warm.parent.mkdir()
        whole.parent.mkdir()
        data = args.file.read_bytes()
        warm.write_bytes(data[: int(args.warm_mb * 1e6)])  # its last record cut: a diagnostic
        whole.symlink_to(args.file.resolve())

        def child(mode: str, label: str) -> list[str]:
            scratch = root / f"{label}-{mode}"
            scratch.mkdir()
            return [sys.executable, __file__, "--child", mode, str(warm), str(whole), str(scratch)]

        for mode in ("stages-whole", "decode-capture-whole"):  # fill the caches, uncounted
            subprocess.run(child(mode, "prime"), stdout=subprocess.DEVNULL, env=env, check=True)
        counts: dict[str, int] = {}
        for mode in ("stages", "stages-whole", "decode-capture", "decode-capture-whole"):
            counts[mode] = instructions(child(mode, "out"), root / f"{mode}.callgrind", env)
            print(f"{mode}: {counts[mode]:,} instructions", flush=True)
    stages = counts["stages-whole"] - counts["stages"]
    dc = counts["decode-capture-whole"] - counts["decode-capture"]
    mb = len(data) / 1e6
    print(f"{args.file} ({mb:.1f} MB), beyond set-up and warm-up:")
    print(f"  the stages          {stages / 1e9:.3f} G instructions")
    print(f"  decode-capture      {dc / 1e9:.3f} G instructions")
    print(f"  stages / decode-capture: {stages / dc:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
