"""Generate the ``kcodec._generated`` package from a schemas folder (build hook and ``kcodec generate``).

specs -> merge (``merge``) -> plan (``planner``) -> print (``render``: Python), in one pass.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Collection
from pathlib import Path

from kcodec.codegen.merge import MergedMessage, merge_message
from kcodec.codegen.planner import plan_package
from kcodec.codegen.program import PackagePlan
from kcodec.codegen.render import render_package
from kcodec.codegen.spec.loader import load_sets, load_specs
from kcodec.codegen.spec.messages import MessageSpec


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
            if not spec.removed:  # a removed message takes its versions from the older sets
                by_name[spec.name].append(spec)
    return [merge_message(by_name[name]) for name in sorted(by_name)], source_dirs


def package_plan(schemas_dir: Path, compiled: Collection[str] = ()) -> PackagePlan:
    """Specs -> merge -> plan: everything the back ends print (``compiled``: messages planned for mypyc)."""
    messages, source_dirs = merged_messages(Path(schemas_dir))
    return plan_package(messages, source_dirs, _sets_json(Path(schemas_dir)), compiled)


def generate_package(schemas_dir: Path, out_dir: Path, compiled: Collection[str] = ()) -> PackagePlan:
    """Write the generated package to ``out_dir`` (deterministic: same input, same bytes); return its plan."""
    plan = package_plan(schemas_dir, compiled)
    for sub, files in render_package(plan).items():
        _write(Path(out_dir) / sub if sub else Path(out_dir), files)
    return plan


def _write(out_dir: Path, wanted: dict[str, str]) -> None:
    """Make ``out_dir``'s modules exactly ``wanted``: drop stale ones, rewrite only changed ones."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in [*out_dir.glob("*.py"), *out_dir.glob("*.pyi")]:
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
