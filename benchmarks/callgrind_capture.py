"""Instructions per frame of ``kcodec decode-capture -j 1`` (the table, ``--json``, ``--summary``) and
of ``tshark -T json``, counted by callgrind: steady however loaded the machine is (benchmark, not a
test; needs valgrind).

    python benchmarks/callgrind_capture.py [--workload small|large] [--mb 1] [--capture FILE]
                                           [--modes table,--json,--summary] [--no-tshark] [--json]

Each command runs under ``valgrind --tool=callgrind`` on two captures of the workload, one three
times the other's size; instructions per frame are the difference in instructions over the
difference in Kafka frames: what one more frame costs, as it does in a capture of many megabytes,
with every fixed cost left out (the start-up of Python and its imports, tshark's dissector tables,
and the codecs a capture's first frame of each API imports). The captures are small ones of the
workload (callgrind runs a program some 50 times slower): the small-frame workload's first ``--mb``
and ``3 * --mb`` MB, or two and six whole connections of the large-frame workload (a connection is
what the workload's frames average over). ``--capture FILE`` counts one capture against an empty one
(a pcap header) instead. kcodec is the build installed in the Python that runs this script. Each
kcodec command first runs once on the larger capture, uncounted: both counted runs then find the same
caches (Python's bytecode, the codecs' copies per version) and pay the same fixed costs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import capture_workload  # noqa: E402
from capture_small_workload import write_small_capture  # noqa: E402
from pcap_build import Conversation, pcap_header, pcap_record  # noqa: E402

MODES = {"table": [], "--json": ["--json"], "--summary": ["--summary"]}


def _large(path: Path, connections: int = 2) -> int:
    """Whole connections of the large-frame workload; the frames written."""
    rng = random.Random(9092)
    convs = []
    frames = 0
    for i in range(connections):
        conv = Conversation((f"10.20.0.{1 + i}", 40000 + i), ("10.20.1.1", 9092), step=0.00002).open()
        for req, resp in capture_workload._session(rng, 40):
            conv.request(req)
            conv.response(resp)
            frames += 2
        conv.close()
        convs.append(conv)
    packets = sorted((p for c in convs for p in c.packets), key=lambda p: p[0])
    path.write_bytes(pcap_header() + b"".join(pcap_record(ts, data) for ts, data in packets))
    return frames


def _frames(path: Path) -> int:
    cmd = [sys.executable, "-m", "kcodec.cli", "decode-capture", str(path), "--summary", "--json", "-j", "1"]
    out = subprocess.run(cmd, capture_output=True, check=True).stdout
    return int(out.split(b'"frames":')[1].split(b",")[0])


def instructions(cmd: list[str], out: Path, env: dict[str, str]) -> int:
    """The instructions callgrind counts for one run of ``cmd`` (its output to /dev/null)."""
    grind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *cmd]
    subprocess.run(grind, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
    found = re.search(rb"^(?:summary|totals): (\d+)", out.read_bytes(), re.MULTILINE)
    if found is None:
        raise SystemExit(f"no totals in {out}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--workload", choices=("small", "large"), default="small")
    parser.add_argument("--mb", type=float, default=1.0, help="size of the small-frame capture (MB)")
    parser.add_argument("--capture", type=Path, help="count on this capture instead")
    parser.add_argument("--modes", default="table,--json,--summary")
    parser.add_argument("--no-tshark", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")}
    env["PYTHONHASHSEED"] = "1"  # (the same dict and set layouts in every run)
    kcodec = [sys.executable, "-m", "kcodec.cli", "decode-capture"]
    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        small, big = Path(tmp) / "small.pcap", Path(tmp) / "big.pcap"
        if args.capture is not None:  # one capture against an empty one
            small.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
            big = args.capture
        elif args.workload == "large":
            _large(small, 2)
            _large(big, 6)
        else:
            write_small_capture(small, args.mb)
            write_small_capture(big, 3 * args.mb)
        counts = (0 if args.capture is not None else _frames(small), _frames(big))
        frames = counts[1] - counts[0]
        commands = {f"kcodec {m} -j 1": [*kcodec, "{}", *MODES[m], "-j", "1"] for m in args.modes.split(",")}
        if not args.no_tshark:
            commands["tshark -T json"] = ["tshark", "-r", "{}", "-d", "tcp.port==9092,kafka", "-T", "json"]
        for name, cmd in commands.items():
            if name.startswith("kcodec"):  # the .pyc files and the codecs' copies cached before counting
                subprocess.run([c.replace("{}", str(big)) for c in cmd], env=env, capture_output=True)
            runs = [
                instructions([c.replace("{}", str(p)) for c in cmd], Path(tmp) / "cg.out", env)
                for p in (small, big)
            ]
            figures[name] = {
                "small": runs[0],
                "big": runs[1],
                "per_frame": round((runs[1] - runs[0]) / frames),
            }
    if args.json:
        print(json.dumps({"frames": list(counts), "commands": figures}, indent=1))
        return 0
    print(f"{counts[0]} and {counts[1]} Kafka frames; instructions counted by callgrind")
    print(f"{'command':<24} {'per frame':>12} {'smaller capture':>16} {'larger capture':>16}")
    for name, f in figures.items():
        print(f"{name:<24} {f['per_frame']:>12,} {f['small']:>16,} {f['big']:>16,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
