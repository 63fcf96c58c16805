"""Diff two builds of kcodec for behaviour, not bytes: the same inputs through each, the outcomes compared.

    python tools/behaviour_diff.py dump OUT.json [--per-version 3] [--seed 1]   # in each tree / build
    python tools/behaviour_diff.py compare A.json B.json

``dump`` walks every message and version of the kcodec it imports. For each, it builds random valid
messages from the runtime field descriptions (deterministic: seeded by message, version and index),
encodes them (by message and through the bound ``kcodec.encoder``, native in compiled modules,
also given an object of another type), decodes the bytes eagerly (by name and through the bound
``kcodec.decoder``, which is a native function of its own in compiled modules) and lazily, decodes
damaged copies (truncated, bytes flipped, a byte appended or inserted) and encodes mutated messages
(a field set to None, a string, an out-of-range integer, bytes, or unknown tagged fields out of
order). Every outcome is
recorded: a digest of the bytes or of the decoded message's structure, or the error's type, text,
offset and field path. ``compare`` prints the differences; identical builds give none. It only uses
APIs that every kcodec build has (``kcodec.encode``/``decode``/``decoder``, ``MessageInfo``), so a
build of an older commit can be dumped with the same script.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from typing import Any

MUTATIONS: tuple[Any, ...] = (None, "x", 2**70, b"\x00\x01\x02", -1, [None], [(5, b"a"), (2, b"b")])


def canon(value: Any) -> Any:
    """A JSON-able structure of a decoded value (classes by name, buffers as hex)."""
    from kcodec.protocol.model import LazyArray, Struct

    if isinstance(value, LazyArray):
        value = value.materialize()
    if isinstance(value, Struct):
        fields = [[name, canon(getattr(value, name))] for name in value._fields_]
        unknown = value._unknown_tagged_fields
        return [type(value).__name__, fields, [[t, bytes(d).hex()] for t, d in unknown or ()]]
    if isinstance(value, list):
        return [canon(v) for v in value]
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, float) and value != value:
        return "nan"
    return value


def outcome(fn: Any, *args: Any, **kwargs: Any) -> list[Any]:
    from kcodec.protocol.errors import KcodecError

    try:
        text = json.dumps(canon(fn(*args, **kwargs)), sort_keys=True)  # lazy arrays are built here
    except KcodecError as e:
        return ["error", type(e).__name__, str(e), getattr(e, "offset", None), getattr(e, "path", None)]
    except Exception as e:
        return ["raised", type(e).__name__, str(e)]
    return ["ok", hashlib.sha256(text.encode()).hexdigest()[:16]]


def random_value(info: Any, f: Any, version: int, rng: random.Random, depth: int) -> Any:
    from kcodec.protocol.model import Uuid
    from kcodec.protocol.schema import INT_BOUNDS

    def one(t: str) -> Any:
        if t[:1].isupper():
            return random_struct(info, t, version, rng, depth + 1)
        if t in INT_BOUNDS:
            lo, hi = INT_BOUNDS[t]
            return rng.choice([lo, hi, 0, -1 if lo < 0 else 1, rng.randint(lo, hi)])
        if t == "bool":
            return rng.random() < 0.5
        if t == "float64":
            return rng.choice([0.0, -0.0, 1.5, rng.uniform(-1e9, 1e9)])
        if t == "string":
            return rng.choice(["", "a", "topic-ü", "x" * rng.randint(0, 200)])
        if t == "uuid":
            return Uuid(bytes(rng.getrandbits(8) for _ in range(16)))
        return bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 7, 300])))

    if f.is_nullable(version) and rng.random() < 0.2:
        return None
    if f.is_array:
        count = 0 if depth > 3 else rng.choice([0, 1, 2, 5, 40])
        return [one(f.element_type) for _ in range(count)]
    return one(f.type)


def random_struct(info: Any, struct: str, version: int, rng: random.Random, depth: int = 0) -> Any:
    obj = info.structs[struct].cls()
    for f in info.fields_at(struct, version):
        if f.is_tagged(version) and rng.random() < 0.5:
            continue
        setattr(obj, f.attr, random_value(info, f, version, rng, depth))
    if info.is_flexible(version) and rng.random() < 0.2:
        obj._unknown_tagged_fields = [(1000 + rng.randint(0, 5), b"\x01")]
    return obj


def struct_targets(obj: Any, out: list[tuple[Any, str]]) -> None:
    from kcodec.protocol.model import Struct

    for name in obj._fields_:
        out.append((obj, name))
        value = getattr(obj, name)
        if isinstance(value, Struct):
            struct_targets(value, out)
        elif isinstance(value, list):
            for v in value[:2]:
                if isinstance(v, Struct):
                    struct_targets(v, out)
    out.append((obj, "_unknown_tagged_fields"))


def damaged(data: bytes, rng: random.Random) -> list[bytes]:
    if not data:
        return [b"\x00", b"\xff"]
    out = [data[: rng.randrange(len(data))] for _ in range(3)]
    for _ in range(4):
        b = bytearray(data)
        i = rng.randrange(len(b))
        b[i] ^= rng.choice([0x01, 0x80, 0xFF, rng.randrange(1, 256)])
        out.append(bytes(b))
    out.append(data + bytes([rng.randrange(256)]))
    i = rng.randrange(len(data))
    out.append(data[:i] + b"\xff" + data[i:])
    return out


def dump(per_version: int, seed: int) -> dict[str, list[Any]]:
    import kcodec
    from kcodec._generated import MESSAGES
    from kcodec.protocol.codec import message_info

    results: dict[str, list[Any]] = {}
    for name in sorted(MESSAGES):
        info = message_info(name)
        for version in sorted(info.owners):
            for k in range(per_version):
                rng = random.Random(f"{name}/{version}/{k}/{seed}")
                key = f"{name} v{version} #{k}"
                msg = random_struct(info, name, version, rng)
                results[f"{key} encode"] = outcome(kcodec.encode, msg, version)
                encode_bound = kcodec.encoder(name, version)  # compiled modules: native, of its own
                results[f"{key} encode bound"] = outcome(encode_bound, msg)
                results[f"{key} encode bound wrong type"] = outcome(encode_bound, info)
                try:
                    data = kcodec.encode(msg, version)
                except Exception:
                    continue
                bound = kcodec.decoder(name, version)  # compiled modules: a native function of its own
                results[f"{key} decode"] = outcome(kcodec.decode, name, version, data)
                results[f"{key} bound"] = outcome(bound, data)
                results[f"{key} lazy"] = outcome(kcodec.decode, name, version, data, lazy=True)
                view = memoryview(bytearray(data))
                results[f"{key} view"] = outcome(kcodec.decode, name, version, view)
                results[f"{key} view bound"] = outcome(bound, view)
                for i, bad in enumerate(damaged(data, rng)):
                    results[f"{key} damaged {i}"] = outcome(kcodec.decode, name, version, bad)
                    results[f"{key} damaged {i} bound"] = outcome(bound, bad)
                    results[f"{key} damaged {i} lazy"] = outcome(kcodec.decode, name, version, bad, lazy=True)
                targets: list[tuple[Any, str]] = []
                struct_targets(msg, targets)
                for i in range(4):
                    obj, attr = rng.choice(targets)
                    before = getattr(obj, attr)
                    setattr(obj, attr, rng.choice(MUTATIONS))
                    results[f"{key} mutated {i} {attr}"] = outcome(kcodec.encode, msg, version)
                    results[f"{key} mutated {i} {attr} bound"] = outcome(encode_bound, msg)
                    setattr(obj, attr, before)
    return results


def _stable(result: Any) -> str:
    """An outcome without memory addresses (reprs of bound methods in some error texts carry them)."""
    return re.sub(r"0x[0-9a-f]+", "0x?", json.dumps(result))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out")
    d.add_argument("--per-version", type=int, default=3)
    d.add_argument("--seed", type=int, default=1)
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    args = parser.parse_args(argv)
    if args.cmd == "dump":
        results = dump(args.per_version, args.seed)
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(results, f, sort_keys=True)
        kinds: dict[str, int] = {}
        for r in results.values():
            kinds[r[0]] = kinds.get(r[0], 0) + 1
        print(f"{len(results)} outcomes: {kinds}")
        return 0
    with open(args.a, encoding="utf-8") as f:
        a = json.load(f)
    with open(args.b, encoding="utf-8") as f:
        b = json.load(f)
    keys = sorted(set(a) | set(b))
    diffs = [k for k in keys if _stable(a.get(k)) != _stable(b.get(k))]
    for k in diffs[:50]:
        print(f"{k}:\n  {a.get(k)}\n  {b.get(k)}")
    print(f"{len(keys)} outcomes compared, {len(diffs)} differ")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
