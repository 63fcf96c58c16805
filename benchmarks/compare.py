"""kcodec against the other Python Kafka codecs, in one process: kio 0.6.5 (Rust decoder, Python
encoder) and kafka-python 3.0.12, both of its stacks (the new ``kafka.protocol`` classes generated from
the JSON specs, and the old hand-written ``kafka.protocol.old`` structs where they reach the version).

Run:  python benchmarks/compare.py [--rounds N] [--json FILE] [--pure PYTHON]

``--pure PYTHON`` adds a second kcodec build to the same rounds: a worker process running that
interpreter's kcodec (e.g. the pure-Python build's venv while this one runs the compiled build) times
its bound decoder/encoder on the same bytes when its turn in the rotation comes; its samples are shown
as "kcodec pure" beside this process's "kcodec" (``kcodec.compiled`` says which build that is).

For every workload (``benchmarks/workloads.py``, message bodies only) the bytes kcodec writes are
decoded by every library and re-encoded, and all of them must be byte-identical before anything is
timed. Timing is interleaved: each round times every library once per operation, in a rotating order,
with the garbage collector enabled (as in real use: timeit would switch it off) and the objects
the setup made frozen out of its way (gc.freeze). The table shows the
median µs per call over the rounds and, per peer, the median of the per-round ratios kcodec / peer
with their range. glibc's malloc thresholds are pinned first (mallopt), because with the default
dynamic mmap threshold the 100 KiB workloads swing by 10x between runs.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import importlib
import io
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workloads import WORKLOADS, Workload

import kcodec
from kcodec.protocol.model import LazyArray

# --- environment ----------------------------------------------------------------------------------

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
PINNED_BYTES = 256 << 20


def pin_malloc() -> str:
    """Pin glibc's mmap and trim thresholds so large buffers come from a reused heap, not fresh mmaps."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return "malloc thresholds not pinned (no libc found)"
    libc = ctypes.CDLL(libc_name)
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return "malloc thresholds not pinned (not glibc)"
    ok = mallopt(M_MMAP_THRESHOLD, PINNED_BYTES) and mallopt(M_TRIM_THRESHOLD, PINNED_BYTES)
    state = "ok" if ok else "FAILED"
    return f"glibc mallopt: M_MMAP_THRESHOLD = M_TRIM_THRESHOLD = {PINNED_BYTES >> 20} MiB ({state})"


# --- the libraries ----------------------------------------------------------------------------------


@dataclass
class Codec:
    """One library's decode and encode of one workload's bytes (closures with everything bound)."""

    lib: str
    decode: Callable[[], Any]
    encode: Callable[[], Any]  # bytes, or a list of buffers (kcodec chunks)


_KIO_MODULES = {
    "MetadataResponse": "metadata",
    "FetchRequest": "fetch",
    "ProduceRequest": "produce",
    "ApiVersionsResponse": "api_versions",
    "ListOffsetsRequest": "list_offsets",
}


def kcodec_codec(w: Workload, data: bytes) -> Codec:
    """kcodec's bound per-version functions (``kcodec.decoder``/``kcodec.encoder``), the counterpart
    of kio's ``entity_reader``/``entity_writer``; ``kcodec.decode(name, version, data)`` adds one
    dict lookup (see the by-name rows)."""
    msg = kcodec.decode(w.message, w.version, data)
    dec, enc = kcodec.decoder(w.message, w.version), kcodec.encoder(w.message, w.version)
    return Codec("kcodec", lambda: dec(data), lambda: enc(msg))


def kcodec_by_name_codec(w: Workload, data: bytes) -> Codec:
    """``kcodec.decode(name, version, data)`` / ``kcodec.encode(msg, version)``: the by-name calls."""
    msg = kcodec.decode(w.message, w.version, data)
    dec, enc, name, version = kcodec.decode, kcodec.encode, w.message, w.version
    return Codec("kcodec by name", lambda: dec(name, version, data), lambda: enc(msg, version))


def kcodec_chunks_codec(w: Workload, data: bytes) -> Codec:
    """``kcodec.encode_chunks``: large values stay uncopied (for sendmsg/writelines); decode as bound."""
    msg = kcodec.decode(w.message, w.version, data)
    dec, chunks, version = kcodec.decoder(w.message, w.version), kcodec.encode_chunks, w.version
    return Codec("kcodec chunks", lambda: dec(data), lambda: chunks(msg, version))


def copy_floor_codec(w: Workload, data: bytes) -> Codec:
    """The floor of any encoder returning one ``bytes``: a bare copy of the encoded bytes into one new
    ``bytes`` object (``bytes(memoryview)``: one allocation, one memcpy of the same source memory the
    decoded message's records point into). Not a codec; decode is kcodec's bound decoder, untimed."""
    dec, view = kcodec.decoder(w.message, w.version), memoryview(data)
    return Codec(FLOOR, lambda: dec(data), lambda: bytes(view))


def kcodec_lazy_codec(w: Workload, data: bytes) -> Codec:
    """``decoder(..., lazy=True)``: the body checked, its arrays of structs built on first access."""
    msg = kcodec.decode(w.message, w.version, data)
    dec, enc = kcodec.decoder(w.message, w.version, lazy=True), kcodec.encoder(w.message, w.version)
    return Codec("kcodec lazy", lambda: dec(data), lambda: enc(msg))


def kcodec_lazy_built_codec(w: Workload, data: bytes) -> Codec:
    """``lazy=True`` and then every lazy array built: what a reader that touches everything pays."""
    msg = kcodec.decode(w.message, w.version, data)
    dec, enc = kcodec.decoder(w.message, w.version, lazy=True), kcodec.encoder(w.message, w.version)
    fields = kcodec.message_class(w.message)._fields_

    def decode_all() -> Any:
        out = dec(data)
        for name in fields:
            value = getattr(out, name)
            if isinstance(value, LazyArray):
                value.materialize()
        return out

    return Codec("kcodec lazy+built", decode_all, lambda: enc(msg))


def kio_codec(w: Workload, data: bytes) -> Codec | None:
    try:
        from kio.serial import entity_reader, entity_writer
    except ImportError:
        return None
    kind = "response" if w.message.endswith("Response") else "request"
    module = importlib.import_module(f"kio.schema.{_KIO_MODULES[w.message]}.v{w.version}.{kind}")
    cls = getattr(module, w.message)
    read, write = entity_reader(cls), entity_writer(cls)
    entity, _ = read(data, 0)

    def encode() -> bytes:
        buf = io.BytesIO()
        write(buf, entity)
        return buf.getvalue()

    return Codec("kio", lambda: read(data, 0), encode)


def kafka_python_new_codec(w: Workload, data: bytes) -> Codec | None:
    try:
        import kafka.protocol.consumer as consumer
        import kafka.protocol.metadata as metadata
        import kafka.protocol.producer as producer
    except ImportError:
        return None
    cls = next(getattr(m, w.message) for m in (metadata, consumer, producer) if hasattr(m, w.message))
    version = w.version
    obj = cls.decode(data, version=version)
    obj._header = None  # decoded objects lack the header attribute encode() reads
    return Codec(
        "kafka-python new", lambda: cls.decode(data, version=version), lambda: obj.encode(version=version)
    )


_OLD_MODULES = {
    "MetadataResponse": "metadata",
    "FetchRequest": "fetch",
    "ProduceRequest": "produce",
    "ApiVersionsResponse": "api_versions",
    "ListOffsetsRequest": "list_offsets",
}


def kafka_python_old_codec(w: Workload, data: bytes) -> Codec | None:
    try:
        module = importlib.import_module(f"kafka.protocol.old.{_OLD_MODULES[w.message]}")
    except ImportError:
        return None
    versions = getattr(module, w.message)
    if w.version >= len(versions):
        return None  # the old stack stops below this version
    cls = versions[w.version]
    obj = cls.decode(io.BytesIO(data))
    return Codec("kafka-python old", lambda: cls.decode(io.BytesIO(data)), obj.encode)


LIBS = ("kcodec", "kio", "kafka-python new", "kafka-python old")
PEERS = LIBS[1:]
FACTORIES = (kcodec_codec, kio_codec, kafka_python_new_codec, kafka_python_old_codec)
# which operations of a variant differ from kcodec's bound functions (only those are timed)
FLOOR = "copy floor"
VARIANT_OPS = {
    "kcodec by name": ("decode", "encode"),
    "kcodec chunks": ("encode",),
    FLOOR: ("encode",),
    "kcodec lazy": ("decode",),
    "kcodec lazy+built": ("decode",),
}
# kcodec's other entry points, timed in the same rounds and shown in a second table
VARIANTS = {
    "kcodec by name": kcodec_by_name_codec,
    "kcodec chunks": kcodec_chunks_codec,
    FLOOR: copy_floor_codec,
    "kcodec lazy": kcodec_lazy_codec,
    "kcodec lazy+built": kcodec_lazy_built_codec,
}


# --- a second kcodec build in a worker process ------------------------------------------------------

PURE = "kcodec pure"


class Remote:
    """Another interpreter's kcodec, timed in its own process (``compare.py --worker``) per request."""

    def __init__(self, python: str) -> None:
        self.proc = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_ENV,
        )
        self.compiled = bool(self.call({"cmd": "hello"})["compiled"])

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        reply: dict[str, Any] = json.loads(self.proc.stdout.readline())
        if "error" in reply:
            raise RuntimeError(f"{PURE} worker: {reply['error']}")
        return reply

    def setup(self, w: Workload, data: bytes) -> None:
        import hashlib

        self.call({"cmd": "setup", "workload": w.name, "sha256": hashlib.sha256(data).hexdigest()})

    def calibrate(self, op: str, target_s: float) -> int:
        return int(self.call({"cmd": "calibrate", "op": op, "target": target_s})["n"])

    def sample(self, op: str, n: int) -> float:
        return float(self.call({"cmd": "sample", "op": op, "n": n})["us"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def worker() -> None:
    """Serve timing requests for this interpreter's kcodec (bound decoder/encoder of one workload)."""
    import hashlib

    fns: dict[str, Callable[[], Any]] = {}
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req["cmd"] == "hello":
                reply: dict[str, Any] = {"compiled": bool(kcodec.compiled)}
            elif req["cmd"] == "setup":
                w = next(w for w in WORKLOADS if w.name == req["workload"])
                data = kcodec.encode(w.build(), w.version)
                if hashlib.sha256(data).hexdigest() != req["sha256"]:
                    raise ValueError(f"{w.name}: this build encodes the workload differently")
                c = kcodec_codec(w, data)
                fns = {"decode": c.decode, "encode": c.encode}
                gc.collect()
                gc.freeze()
                reply = {}
            elif req["cmd"] == "calibrate":
                reply = {"n": calibrate(fns[req["op"]], req["target"])}
            else:
                reply = {"us": sample(fns[req["op"]], req["n"])}
        except Exception as e:
            reply = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(reply), flush=True)


# --- timing -----------------------------------------------------------------------------------------


def calibrate(fn: Callable[[], Any], target_s: float) -> int:
    """Calls per sample so that one sample takes about ``target_s``."""
    n = 1
    while True:
        t = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t
        if dt >= target_s / 4 or n >= 1 << 20:
            return max(1, int(n * target_s / max(dt, 1e-9)))
        n *= 4


def sample(fn: Callable[[], Any], n: int) -> float:
    """µs per call over ``n`` calls, garbage collector enabled."""
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


@dataclass
class Result:
    workload: str
    op: str
    size: int
    samples: dict[str, list[float]] = field(default_factory=dict)

    def median(self, lib: str) -> float | None:
        s = self.samples.get(lib)
        return statistics.median(s) if s else None

    def ratios(self, peer: str) -> list[float]:
        return [k / p for k, p in zip(self.samples["kcodec"], self.samples.get(peer, []), strict=False)]

    def best_peer(self) -> str | None:
        peers = [p for p in PEERS if self.samples.get(p)]
        return min(peers, key=lambda p: self.median(p) or 0.0) if peers else None


def run_workload(w: Workload, rounds: int, target_s: float, remote: Remote | None = None) -> list[Result]:
    data = kcodec.encode(w.build(), w.version)
    if remote is not None:
        remote.setup(w, data)
    codecs = [c for c in (f(w, data) for f in (*FACTORIES, *VARIANTS.values())) if c is not None]
    # Everything set up so far (three libraries' modules, the workload objects) goes to the collector's
    # permanent generation: a full collection triggered by a decoder then costs what the decoder
    # allocated, not the size of this benchmark's heap.
    gc.collect()
    gc.freeze()
    for c in codecs:  # identical bytes, asserted before timing
        decoded = c.decode()
        assert decoded is not None, c.lib
        out = c.encode()
        out = b"".join(out) if isinstance(out, list) else bytes(out)
        assert out == data, f"{c.lib} re-encodes {w.message} v{w.version} differently"
    results = []
    for op in ("decode", "encode"):
        res = Result(w.name, op, len(data))
        fns = {c.lib: getattr(c, op) for c in codecs if op in VARIANT_OPS.get(c.lib, ("decode", "encode"))}
        counts = {lib: calibrate(fn, target_s) for lib, fn in fns.items()}
        order = list(fns)
        if remote is not None:
            counts[PURE] = remote.calibrate(op, target_s)
            order.insert(1, PURE)
        for r in range(rounds):
            rot = order[r % len(order) :] + order[: r % len(order)]
            for lib in rot:
                if lib == PURE and remote is not None:
                    us = remote.sample(op, counts[lib])
                else:
                    us = sample(fns[lib], counts[lib])
                res.samples.setdefault(lib, []).append(us)
        results.append(res)
    return results


# --- import time --------------------------------------------------------------------------------------

_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def fresh_ms(code: str, runs: int = 7) -> float:
    def once() -> float:
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=_ENV
        )
        return float(out.stdout)

    once()  # writes bytecode caches, as an installed wheel has them
    return statistics.median(once() for _ in range(runs))


def import_times() -> dict[str, float]:
    timed = "import time; t = time.perf_counter(); {}; print((time.perf_counter() - t) * 1000)"
    return {
        "import kcodec": fresh_ms(timed.format("import kcodec")),
        "kcodec first use of MetadataResponse": fresh_ms(
            "import time, kcodec; t = time.perf_counter(); kcodec.message_class('MetadataResponse'); "
            "print((time.perf_counter() - t) * 1000)"
        ),
        "import kio (serial + metadata v12)": fresh_ms(
            timed.format("import kio.serial, kio.schema.metadata.v12.response")
        ),
        "import kafka.protocol (new stack)": fresh_ms(timed.format("import kafka.protocol.metadata")),
    }


# --- report ---------------------------------------------------------------------------------------------

TARGETS = {"decode": 1.0, "encode": 0.25}
PRODUCE_DECODE_TARGET = 0.2


def target_for(res: Result) -> tuple[str, float]:
    """(whom the target compares with, the ratio to stay under)."""
    if res.op == "decode":
        limit = PRODUCE_DECODE_TARGET if res.workload.startswith("ProduceRequest") else TARGETS["decode"]
        return "kio", limit
    return res.best_peer() or "kio", TARGETS["encode"]


def fmt(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.0f}" if x >= 100 else f"{x:.2f}" if x < 10 else f"{x:.1f}"


def report(results: list[Result]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    head = (
        f"{'workload':<52} {'op':<6} {'kcodec':>8} {'kio':>8} {'kp new':>8} {'kp old':>8}"
        f" {'/kio':>6} {'/kp new':>7} {'/kp old':>7}  {'target':<22} met"
    )
    print(head)
    print("-" * len(head))
    for res in results:
        versus, limit = target_for(res)
        ratio_cells = []
        ratio_info: dict[str, Any] = {}
        for peer in PEERS:
            rs = res.ratios(peer)
            if rs:
                ratio_cells.append(f"{statistics.median(rs):.2f}")
                ratio_info[peer] = {"median": statistics.median(rs), "min": min(rs), "max": max(rs)}
            else:
                ratio_cells.append("n/a")
        achieved = ratio_info.get(versus, {}).get("median")
        met = achieved is not None and achieved <= limit
        print(
            f"{res.workload[:52]:<52} {res.op:<6} "
            + " ".join(f"{fmt(res.median(lib)):>8}" for lib in LIBS)
            + f" {ratio_cells[0]:>6} {ratio_cells[1]:>7} {ratio_cells[2]:>7}  "
            + f"{'<= ' + format(limit, '.2f') + 'x ' + versus:<22} {'yes' if met else 'NO'}"
        )
        rows.append(
            {
                "workload": res.workload,
                "op": res.op,
                "bytes": res.size,
                "median_us": {lib: res.median(lib) for lib in (*LIBS, PURE) if res.samples.get(lib)},
                "ratios": ratio_info,
                "target": {"versus": versus, "max_ratio": limit, "met": met},
            }
        )
    print()
    print("kcodec's other entry points, same rounds (median µs; ratio to kio and to the best peer):")
    for res in results:
        cells = []
        for variant in (PURE, *VARIANTS):
            v = res.samples.get(variant)
            if not v:
                continue
            kio = res.samples.get("kio", [])
            best = res.best_peer()
            r_kio = statistics.median(a / b for a, b in zip(v, kio, strict=False)) if kio else None
            r_best = (
                statistics.median(a / b for a, b in zip(v, res.samples[best], strict=False)) if best else None
            )
            cells.append(
                f"{variant} {fmt(statistics.median(v))} µs ({fmt(r_kio)}x kio, {fmt(r_best)}x {best})"
            )
        print(f"  {res.workload[:52]:<52} {res.op:<6} " + "; ".join(cells))
    print()
    floor_lines(results, rows)
    print()
    print("Ratio ranges over the rounds (kcodec / peer, min..max):")
    for res in results:
        spans = []
        for peer in PEERS:
            rs = res.ratios(peer)
            if rs:
                spans.append(f"{peer} {min(rs):.2f}..{max(rs):.2f}")
        print(f"  {res.workload[:52]:<52} {res.op:<6} " + "; ".join(spans))
    return rows


def per_round(a: list[float], b: list[float]) -> float:
    """The median of the per-round ratios a / b."""
    return statistics.median(x / y for x, y in zip(a, b, strict=False))


def floor_lines(results: list[Result], rows: list[dict[str, Any]]) -> None:
    """Each encode beside the copy floor (a bare copy of the same bytes into one new ``bytes``), both
    as ratios to the best peer in the same rounds: no encoder returning one ``bytes`` can go below
    the floor, so where the floor alone is above the target, the target is out of reach."""
    print("Encode against the copy floor, same rounds (median of per-round ratios to the best peer):")
    for res, row in zip(results, rows, strict=True):
        floor, best = res.samples.get(FLOOR), res.best_peer()
        if res.op != "encode" or not floor or best is None:
            continue
        peer = res.samples[best]
        kcodec_ratio, floor_ratio = per_round(res.samples["kcodec"], peer), per_round(floor, peer)
        chunks = res.samples.get("kcodec chunks")
        chunks_cell = f"; kcodec chunks {per_round(chunks, peer):.2f}x (zero-copy)" if chunks else ""
        above = (res.median("kcodec") or 0.0) - statistics.median(floor)
        print(
            f"  {res.workload[:52]:<52} kcodec {kcodec_ratio:.2f}x {best}, copy floor {floor_ratio:.2f}x"
            f" ({fmt(statistics.median(floor))} µs; kcodec {fmt(above)} µs above it){chunks_cell}"
        )
        row["copy_floor"] = {"median_us": statistics.median(floor), "ratio_to_best_peer": floor_ratio,
                             "kcodec_ratio_to_best_peer": kcodec_ratio}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rounds", type=int, default=15, help="interleaved rounds per operation (default 15)"
    )
    parser.add_argument(
        "--sample-ms", type=float, default=40.0, help="target time of one sample (default 40)"
    )
    parser.add_argument("--only", help="run only workloads whose name contains this text")
    parser.add_argument("--no-import", action="store_true", help="skip the import-time measurements")
    parser.add_argument("--json", type=Path, help="also write the results as JSON to this file")
    parser.add_argument("--pure", help="a Python whose kcodec (e.g. the pure build) joins the same rounds")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker()
        return

    print(pin_malloc())
    python = sys.version.split()[0]
    print(f"CPython {python}, {os.cpu_count()} CPUs; gc enabled (setup frozen); {args.rounds} rounds")
    remote = Remote(args.pure) if args.pure else None
    build = "compiled (mypyc)" if kcodec.compiled else "pure Python"
    print(f"kcodec: this process's build, {build}", end="")
    print(f"; {PURE}: {args.pure}, {'compiled' if remote.compiled else 'pure Python'}\n" if remote else "\n")
    imports = {} if args.no_import else import_times()
    for what, ms in imports.items():
        print(f"{what:<45} {ms:8.1f} ms  (median of 7 fresh interpreters)")
    if imports:
        verdict = "met" if imports["import kcodec"] <= 50 else "NOT met"
        print(f"{'target: import kcodec <= 50 ms':<45} {verdict}\n")

    gc.enable()
    results: list[Result] = []
    for w in WORKLOADS:
        if args.only and args.only not in w.name:
            continue
        results += run_workload(w, args.rounds, args.sample_ms / 1000, remote)
    if remote is not None:
        remote.close()
    rows = report(results)
    if args.json:
        args.json.write_text(json.dumps({"imports_ms": imports, "results": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
