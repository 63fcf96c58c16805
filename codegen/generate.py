"""Generate the ``kcodec._generated`` package from a schemas folder (build hook and ``kcodec generate``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from codegen.merge import MergedMessage, merge_message
from codegen.registry import render_index
from codegen.render import environment, module_name, render_message
from codegen.render_construct import render_construct, render_construct_index
from codegen.render_typing import TYPING_MODULE, render_typing
from codegen.spec.loader import load_sets, load_specs
from codegen.spec.messages import MessageSpec

#: subpackage of the generated package holding the construct definitions (kcodec.construct_backend).
CONSTRUCT_PACKAGE = "construct_"


def merged_messages(schemas_dir: Path) -> tuple[list[MergedMessage], dict[str, str]]:
    """Load every set and merge each message across sets; also return each set's schema folder."""
    by_name: dict[str, list[MessageSpec]] = defaultdict(list)
    source_dirs: dict[str, str] = {}
    for spec_set in load_sets(schemas_dir):
        try:
            rel = spec_set.directory.relative_to(schemas_dir.parent)
        except ValueError:
            rel = spec_set.directory
        source_dirs[spec_set.name] = rel.as_posix()
        for spec in load_specs(spec_set):
            by_name[spec.name].append(spec)
    return [merge_message(by_name[name]) for name in sorted(by_name)], source_dirs


def generate_package(schemas_dir: Path, out_dir: Path) -> None:
    """Write the generated package to ``out_dir`` (deterministic: same input, same bytes)."""
    messages, source_dirs = merged_messages(Path(schemas_dir))
    env = environment()
    out_dir = Path(out_dir)
    wanted: dict[str, str] = {}
    constructs: dict[str, str] = {}  # the construct backend, in the construct_ subpackage
    for merged in messages:
        files = {s.source: f"{source_dirs[s.source]}/{merged.name}.json" for s in merged.specs}
        wanted[f"{module_name(merged.name)}.py"] = render_message(env, merged, files)
        constructs[f"{module_name(merged.name)}.py"] = render_construct(env, merged, files)
    wanted["__init__.py"] = render_index(env, messages, sorted(source_dirs.values()), _sets_json(schemas_dir))
    wanted[f"{TYPING_MODULE}.py"] = render_typing(env, messages, sorted(source_dirs.values()))
    constructs["__init__.py"] = render_construct_index(env, sorted(source_dirs.values()))
    _write(out_dir, wanted)
    _write(out_dir / CONSTRUCT_PACKAGE, constructs)


def _write(out_dir: Path, wanted: dict[str, str]) -> None:
    """Make ``out_dir``'s modules exactly ``wanted``: drop stale ones, rewrite only changed ones."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in out_dir.glob("*.py"):
        if path.name not in wanted:
            path.unlink()
    for name, text in wanted.items():
        path = out_dir / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def _sets_json(schemas_dir: Path) -> list[dict[str, object]]:
    index = Path(schemas_dir) / "sets.json"
    if not index.exists():
        return []
    data = json.loads(index.read_text(encoding="utf-8"))
    entries = data.get("sets", []) if isinstance(data, dict) else data
    return [{k: v for k, v in e.items() if k != "sha256"} for e in entries]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate kcodec codecs from Kafka JSON specs.")
    parser.add_argument(
        "--specs", type=Path, required=True, help="schemas folder (sets.json + one folder per set)"
    )
    parser.add_argument("--out", type=Path, required=True, help="output package folder")
    args = parser.parse_args(argv)
    generate_package(args.specs, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
