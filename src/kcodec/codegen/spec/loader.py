"""Load the project's spec sets (``schemas/sets.json`` and one folder per set) into ``MessageSpec``s."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kcodec.codegen.spec.errors import SpecError
from kcodec.codegen.spec.messages import MessageSpec


@dataclass(frozen=True, slots=True)
class SpecSet:
    """One imported set of specs, e.g. ``3.9.0``; ``order`` 0 is the oldest (lowest priority)."""

    name: str
    directory: Path
    source: str
    order: int


def load_sets(schemas_dir: Path) -> list[SpecSet]:
    """The sets listed in ``sets.json``, oldest first; or every sub-folder, by name, if it is absent."""
    index = schemas_dir / "sets.json"
    if index.exists():
        entries = json.loads(index.read_text(encoding="utf-8"))
        if isinstance(entries, dict):
            entries = entries.get("sets", [])
        return [
            SpecSet(e["name"], schemas_dir / e.get("dir", e["name"]), e.get("source", ""), i)
            for i, e in enumerate(entries)
        ]
    dirs = sorted(p for p in schemas_dir.iterdir() if p.is_dir())
    if not dirs and any(schemas_dir.glob("*.json")):
        return [SpecSet(schemas_dir.name, schemas_dir, str(schemas_dir), 0)]
    return [SpecSet(p.name, p, str(p), i) for i, p in enumerate(dirs)]


def load_specs(spec_set: SpecSet) -> list[MessageSpec]:
    """Every ``*.json`` spec of one set, validated; sorted by file name."""
    specs = []
    for path in sorted(spec_set.directory.glob("*.json")):
        where = f"{spec_set.name}/{path.name}"
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise SpecError(where, f"not valid JSON: {e}") from None
        spec = MessageSpec.from_json(obj, where)
        if spec.name != path.stem:
            raise SpecError(where, f"the spec's name {spec.name!r} differs from its file name")
        spec.source = spec_set.name
        specs.append(spec)
    return specs
