"""A few generated modules, checked in under ``tests/generated_snapshots`` so that a change to the
generator shows in review as a diff of the code it prints (the rest is generated at build time).

The test prints each snapshot again from the project's specs and compares it byte for byte. After an
intended generator change, rewrite the snapshots and review their diff:

    python tests/test_generated_snapshots.py --update
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import pytest

from kcodec.codegen.generate import merged_messages
from kcodec.codegen.merge import MergedMessage
from kcodec.codegen.planner import plan_module
from kcodec.codegen.program import ModulePlan
from kcodec.codegen.render import environment, render_facts, render_json, render_module

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = ROOT / "tests" / "generated_snapshots"

#: (message, compiled): messages outside the hot set (one function per struct branching on the version,
#: runtime helpers for strings and bytes; the second with nested arrays of structs), a client group
#: message (runtime helpers, each run of unshared statements one if/elif chain), a hot one (everything
#: inline, each loop whole per element layout), a header, and the first again as the compiled build
#: prints it (a function per layout)
CODECS = (
    ("AddOffsetsToTxnRequest", False),
    ("DescribeConfigsResponse", False),
    ("HeartbeatResponse", False),
    ("ListOffsetsRequest", False),
    ("RequestHeader", False),
    ("AddOffsetsToTxnRequest", True),
)
#: messages whose JSON and facts modules are kept too (a client group message: the messages outside the
#: hot and client group sets have none, their converters and extractors are built at run time)
COMPANIONS = ("HeartbeatResponse",)


@cache
def _merged() -> dict[str, MergedMessage]:
    messages, source_dirs = merged_messages(ROOT / "schemas")
    _SOURCE_DIRS.update(source_dirs)
    return {m.name: m for m in messages}


_SOURCE_DIRS: dict[str, str] = {}


def _plan(name: str, compiled: bool) -> ModulePlan:
    merged = _merged()[name]
    files = {s.source: f"{_SOURCE_DIRS[s.source]}/{merged.name}.json" for s in merged.specs}
    return plan_module(merged, files, compiled)


@cache
def printed() -> dict[str, str]:
    """Every snapshot's file name and the text the generator prints for it now."""
    env = environment()
    out: dict[str, str] = {}
    for name, compiled in CODECS:
        plan = _plan(name, compiled)
        out[f"{plan.module}{'.compiled' if compiled else ''}.py.txt"] = render_module(env, plan)
    for name in COMPANIONS:
        plan = _plan(name, False)
        out[f"json_{plan.module}.py.txt"] = render_json(env, plan)
        out[f"facts_{plan.module}.py.txt"] = render_facts(env, plan)
    return out


def test_the_snapshot_set_is_what_the_test_prints() -> None:
    kept = sorted(p.name for p in SNAPSHOTS.glob("*.py.txt"))
    assert kept == sorted(printed()), "rewrite them: python tests/test_generated_snapshots.py --update"


@pytest.mark.parametrize("file_name", sorted(printed()))
def test_generated_code_matches_its_snapshot(file_name: str) -> None:
    path = SNAPSHOTS / file_name
    assert path.exists(), f"{file_name}: no snapshot; python tests/test_generated_snapshots.py --update"
    want = path.read_text(encoding="utf-8")
    got = printed()[file_name]
    assert got == want, (
        f"the generator now prints {file_name} differently: review the diff of "
        "python tests/test_generated_snapshots.py --update"
    )


def update() -> None:
    SNAPSHOTS.mkdir(exist_ok=True)
    texts = printed()
    for path in SNAPSHOTS.glob("*.py.txt"):
        if path.name not in texts:
            path.unlink()
    for file_name, text in texts.items():
        (SNAPSHOTS / file_name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_generated_snapshots.py --update")
    update()
