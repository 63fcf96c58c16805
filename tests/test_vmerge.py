"""The version-conditional merge of per-layout functions (``kcodec.codegen.vmerge``): every version of a
merged function runs exactly the statements of its own layout, in order."""

from __future__ import annotations

import ast
import random
from typing import Any

import pytest

from kcodec.codegen.prune import drop_unused
from kcodec.codegen.vmerge import condition, merge_module


def test_condition_names_the_versions_simply() -> None:
    every = [0, 1, 2, 3, 4, 5]
    assert condition(frozenset({3, 4, 5}), every) == "v >= 3"
    assert condition(frozenset({0, 1}), every) == "v <= 1"
    assert condition(frozenset({2, 3}), every) == "2 <= v <= 3"
    assert condition(frozenset({4}), every) == "v == 4"
    assert condition(frozenset({0, 2, 5}), every) == "v in (0, 2, 5)"
    # among the versions a statement is reached at, not all the message's
    assert condition(frozenset({3, 5}), [1, 3, 5]) == "v >= 3"


_LEAVES = [f"trace.append({n!r})" for n in "abcdef"] + ["trace.append(str(_W2))", "trace.append(str(_M4))"]
_HEADERS = [
    ("if len(trace) % 2:", "else:"),
    ("if len(trace) % 3 == 1:", "elif len(trace) % 3 == 2:"),
    ("for _i in range(2):", None),
    ("try:", "except ZeroDivisionError:"),
]


def _statements(rng: random.Random, depth: int, indent: int, child: str | None = None) -> list[str]:
    out: list[str] = []
    pad = " " * indent
    for _ in range(rng.randint(1, 5)):
        roll = rng.random()
        if roll < 0.25 and depth < 2:
            first, second = rng.choice(_HEADERS)
            out.append(pad + first)
            out += _statements(rng, depth + 1, indent + 4, child)
            if first == "try:":
                out.append(pad + "    trace.append(str(1 // (len(trace) % 2)))")
            if second is not None:
                out.append(pad + second)
                out += _statements(rng, depth + 1, indent + 4, child)
        elif roll < 0.35 and child:
            out.append(f"{pad}d_{child}(trace)")
        elif roll < 0.45:
            out.append(pad + "# a comment")
            out.append(pad + rng.choice(_LEAVES))
        else:
            out.append(pad + rng.choice(_LEAVES))
    return out


Module = tuple[str, str, dict[str, tuple[int, ...]], list[tuple[int, str]], dict[str, bool]]


def _module(rng: random.Random) -> Module:
    """A module of per-layout functions as the generator prints them: a root (eager, lazy, encoder)
    with two to four layouts over versions 0-5, and a child with layouts at 0-1 and 2-5 (which the
    root's layouts call as the generator's would: the child's layout of the same versions). Versions
    from 0, 2 or none on are flexible. Also the same module as it would run unmerged: the length
    widths its functions name written as the numbers they are at their versions."""
    cuts = sorted({2, *rng.sample(range(1, 6), rng.randint(0, 2))})
    spans = [range(a, b) for a, b in zip([0, *cuts], [*cuts, 6], strict=True)]
    first_flexible = rng.choice([0, 2, 6])
    served = {f"Root_v{s[0]}": tuple(s) for s in spans} | {"Child_v0": (0, 1), "Child_v2": (2, 3, 4, 5)}
    flexible = {fid: versions[0] >= first_flexible for fid, versions in served.items()}
    lines = ["import struct as _struct", "", ""]
    plain = list(lines)
    functions: list[tuple[str, str, str | None]] = [("d", "Child_v0", None), ("d", "Child_v2", None)]
    functions += [(prefix, f"Root_v{s[0]}", "Child_v0" if s[0] < 2 else "Child_v2")
                  for prefix in ("d", "dl", "e") for s in spans]
    for prefix, fid, child in functions:
        versions = served[fid]
        text = [f"def {prefix}_{fid}(trace: list[str]) -> None:",
                f"    # decode {fid.split('_')[0]} at versions {versions[0]}-{versions[-1]} (in arrays)",
                *_statements(rng, 0, 4, child), "", ""]
        lines += text
        width, limit = ("0", "None") if flexible[fid] else ("2", "2147483647")
        plain += [t.replace("_W2", width).replace("_M4", limit) for t in text]
    for table in ("DECODERS", "DECODERS_LAZY", "ENCODERS"):
        lines.append(f"{table} = {{}}")
        plain.append(f"{table} = {{}}")
    roots = [(v, f"Root_v{s[0]}") for s in spans for v in s]
    return "\n".join(lines) + "\n", "\n".join(plain) + "\n", served, roots, flexible


def _traces(source: str, merged: bool) -> dict[tuple[str, int], list[str]]:
    namespace: dict[str, Any] = {}
    exec(compile(source, "generated", "exec"), namespace)
    out = {}
    for table, prefix in (("DECODERS", "d"), ("DECODERS_LAZY", "dl"), ("ENCODERS", "e")):
        for v in range(6):
            if merged:
                fn = namespace[table][v]
            else:
                fn = namespace[f"{prefix}_Root_v{_first(namespace, prefix, v)}"]
            trace: list[str] = []
            fn(trace)
            out[(table, v)] = trace
    return out


def _first(namespace: dict[str, Any], prefix: str, v: int) -> int:
    """The first version of the layout serving ``v`` (the original module's tables are empty)."""
    return max(int(k.rsplit("_v", 1)[1]) for k in namespace if k.startswith(f"{prefix}_Root_v")
               and int(k.rsplit("_v", 1)[1]) <= v)


def _tests_in_loops(source: str) -> int:
    """How many tests of the version ``v`` sit inside a loop."""
    found = 0
    for loop in ast.walk(ast.parse(source)):
        if isinstance(loop, ast.For | ast.While):
            tests = [node for stmt in loop.body for node in ast.walk(stmt) if isinstance(node, ast.Compare)]
            found += sum(any(isinstance(n, ast.Name) and n.id == "v" for n in ast.walk(t)) for t in tests)
    return found


@pytest.mark.parametrize("whole", [False, True])
@pytest.mark.parametrize("seed", range(150))
def test_each_version_runs_its_own_layout(seed: int, whole: bool) -> None:
    rng = random.Random(seed)
    source, plain, served, roots, flexible = _module(rng)
    merged = merge_module(source, served, roots, flexible, whole=whole)
    assert _traces(merged, merged=True) == _traces(plain, merged=False)
    assert merged.count("def d_Root(") == 1 and "def d_Root_v" not in merged and "def dl_" not in merged
    if whole:  # loops whole per layout: no version test inside one
        assert _tests_in_loops(merged) == 0, merged


def test_whole_merges_test_no_version_inside_a_loop() -> None:
    """Over the random modules, the plain merge tests the version inside loops, the ``whole`` one never."""
    plain_loops = whole_loops = 0
    for seed in range(150):
        source, _, served, roots, flexible = _module(random.Random(seed))
        plain_loops += _tests_in_loops(merge_module(source, served, roots, flexible))
        whole_loops += _tests_in_loops(merge_module(source, served, roots, flexible, whole=True))
    assert whole_loops == 0 < plain_loops


def test_unused_imports_and_constants_go_with_their_comment() -> None:
    source = (
        "import struct as _struct\n"
        "from typing import Any, TypeAlias\n"
        "from kcodec.protocol._wire import short as _short\n\n"
        "# formats\n_S_a = _struct.Struct('>i')\n_S_b = _struct.Struct('>h')\n\n"
        "# unused ones\n_S_c = _struct.Struct('>q')\n\n"
        "x: Any = _S_a.unpack\n"
    )
    out = drop_unused(source)
    assert "from typing import Any\n" in out and "_short" not in out and "_S_b" not in out
    assert "# formats\n_S_a" in out and "unused ones" not in out and "_S_c" not in out
