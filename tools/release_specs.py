#!/usr/bin/env python3
"""Check that ``schemas/`` defines every released version of every message of Apache Kafka releases.

For each release (its ``kafka-clients`` jar, see ``tools/kafka_jars.py``) and each message spec in it,
every *released* version -- each of ``validVersions``, less the newest when ``latestVersionUnstable``
marks it as not yet released -- must be defined by the spec set that owns that version in
``schemas/`` (the newest set in ``sets.json`` defining it, as the code generator takes it), with the
same wire schema at that version: the same fields in the same order, each with the same type,
nullability, tag, default and flexibility, nested structs included. Documentation and Java-side
hints (``about``, ``mapKey``, ``entityType``, ``ignorable``, ``zeroCopy``, struct names) do not count.

A release whose version is missing or differs must be imported as a set too
(``tools/import_specs.py --set NAME=maven:org.apache.kafka:kafka-clients:VERSION``).

Usage::

    python tools/release_specs.py                    # every release in LAST_PATCH_RELEASES
    python tools/release_specs.py --release 4.1.2    # one release (repeatable)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from import_specs import normalise_message
from kafka_jars import LAST_PATCH_RELEASES, JarError, SpecJar, clients, fetch, read_jar
from kafka_spec_json import SpecError, load_kafka_json

REPO_ROOT = Path(__file__).resolve().parent.parent
MAX_VERSION = 0x7FFF

Spec = Mapping[str, Any]


def versions(text: object) -> range:
    """A spec's version string (``"3+"``, ``"0-7"``, ``"5"``, ``"none"``) as a range."""
    s = str(text).strip()
    if s == "none":
        return range(0)
    if s.endswith("+"):
        return range(int(s[:-1]), MAX_VERSION + 1)
    lo, _, hi = s.partition("-")
    return range(int(lo), int(hi or lo) + 1)


def released_versions(spec: Spec, unstable: bool | None = None) -> list[int]:
    """The versions a release ships as stable: ``validVersions`` less an unstable newest one.

    ``unstable`` overrides the spec's own ``latestVersionUnstable`` (a response spec does not carry
    it: its request's flag holds for both).
    """
    valid = list(versions(spec.get("validVersions", "none")))
    if valid and (spec.get("latestVersionUnstable") if unstable is None else unstable):
        valid.pop()
    return valid


def _structs(spec: Spec) -> dict[str, Sequence[Spec]]:
    found: dict[str, Sequence[Spec]] = {c["name"]: c.get("fields", []) for c in spec.get("commonStructs", [])}

    def walk(fields: Iterable[Spec]) -> None:
        for f in fields:
            if "fields" in f:
                found[str(f["type"]).removeprefix("[]")] = f["fields"]
                walk(f["fields"])

    walk(spec.get("fields", []))
    return found


def _field_view(
    f: Spec, v: int, flexible: bool, structs: Mapping[str, Sequence[Spec]], names: bool
) -> dict[str, Any]:
    type_name = str(f["type"])
    element = type_name.removeprefix("[]")
    view: dict[str, Any] = {
        "name": f["name"] if names else None,
        "nullable": v in versions(f.get("nullableVersions", "none")),
        "tag": f.get("tag") if v in versions(f.get("taggedVersions", "none")) else None,
        "default": f.get("default"),
    }
    if "flexibleVersions" in f:
        flexible = v in versions(f["flexibleVersions"])
    view["flexible"] = flexible
    if element in structs:
        view["type"] = "[]struct" if type_name.startswith("[]") else "struct"
        view["fields"] = _fields_view(structs[element], v, flexible, structs, names)
    else:
        view["type"] = type_name
    return view


def _fields_view(
    fields: Iterable[Spec], v: int, flexible: bool, structs: Mapping[str, Sequence[Spec]], names: bool
) -> list[dict[str, Any]]:
    return [_field_view(f, v, flexible, structs, names) for f in fields if v in versions(f["versions"])]


def wire_view(spec: Spec, v: int, *, names: bool = True) -> dict[str, Any]:
    """What decides the bytes of ``spec`` at version ``v`` (and the defaults a decoder fills in);
    with ``names`` also the field names (which name the values in JSON and in the generated classes)."""
    flexible = v in versions(spec.get("flexibleVersions", "none"))
    return {
        "type": spec.get("type"),
        "apiKey": spec.get("apiKey"),
        "flexible": flexible,
        "fields": _fields_view(spec.get("fields", []), v, flexible, _structs(spec), names),
    }


def merged_owners(schemas_dir: Path) -> dict[str, dict[int, tuple[str, Spec]]]:
    """Message name -> version -> (set, spec) as the generator owns them: the newest set defining it."""
    entries = json.loads((schemas_dir / "sets.json").read_text(encoding="utf-8"))
    owners: dict[str, dict[int, tuple[str, Spec]]] = {}
    for entry in entries:  # oldest first: a newer set overwrites
        folder = schemas_dir / str(entry.get("dir", entry["name"]))
        for path in sorted(folder.glob("*.json")):
            spec = json.loads(path.read_text(encoding="utf-8"))
            for v in versions(spec.get("validVersions", "none")):
                owners.setdefault(spec["name"], {})[v] = (str(entry["name"]), spec)
    return owners


def release_specs(jar: SpecJar) -> list[dict[str, Any]]:
    """The canonical form (as ``tools/import_specs.py`` writes it) of every spec in a release's jar."""
    out = []
    for file_name, data in sorted(jar.specs.items()):
        where = f"{jar.kafka_version or jar.path.name}/{file_name}"
        raw = load_kafka_json(data.decode("utf-8"), source=where, warn=lambda _msg: None)
        out.append(normalise_message(raw, source=where, warn=lambda _msg: None))
    return out


def renamed_fields(old: Spec, new: Spec, v: int) -> list[str]:
    """``"Old->New"`` for each field at version ``v`` whose name differs between two wire-equal specs."""
    out: list[str] = []

    def walk(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> None:
        for fa, fb in zip(a, b, strict=True):
            if fa["name"] != fb["name"]:
                out.append(f"{fa['name']}->{fb['name']}")
            walk(fa.get("fields", []), fb.get("fields", []))

    walk(wire_view(old, v)["fields"], wire_view(new, v)["fields"])
    return out


class Comparison:
    """What comparing one release with the merged sets found."""

    def __init__(self) -> None:
        self.checked = 0
        self.problems: list[str] = []  # versions missing, or different on the wire
        self.renames: list[str] = []  # wire-equal versions whose field names the owning set changed


def compare_release(
    release: str, specs: Iterable[Spec], owners: Mapping[str, Mapping[int, tuple[str, Spec]]]
) -> Comparison:
    """Compare one release's specs, version by version, with the sets owning those versions."""
    found = Comparison()
    listed = list(specs)
    unstable = {
        s.get("apiKey"): bool(s.get("latestVersionUnstable")) for s in listed if s["type"] == "request"
    }
    for spec in listed:
        name = str(spec["name"])
        flag = unstable.get(spec.get("apiKey")) if spec["type"] == "response" else None
        for v in released_versions(spec, flag):
            found.checked += 1
            owner = owners.get(name, {}).get(v)
            if owner is None:
                found.problems.append(f"{release}: {name} v{v} is not defined by any set")
            elif wire_view(owner[1], v, names=False) != wire_view(spec, v, names=False):
                found.problems.append(f"{release}: {name} v{v} differs on the wire from set {owner[0]}'s")
            elif wire_view(owner[1], v) != wire_view(spec, v):
                renames = ", ".join(renamed_fields(spec, owner[1], v))
                found.renames.append(f"{release}: {name} v{v} fields renamed by set {owner[0]}: {renames}")
    return found


def check_releases(
    releases: Sequence[str], schemas_dir: Path, *, download: bool = True
) -> dict[str, Comparison]:
    """Compare each release's kafka-clients jar with the merged sets of ``schemas_dir``."""
    owners = merged_owners(schemas_dir)
    results: dict[str, Comparison] = {}
    for release in releases:
        coords = clients(release)
        jar = read_jar(fetch(coords, download=download), coords)
        results[release] = compare_release(release, release_specs(jar), owners)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0] if __doc__ else None)
    parser.add_argument("--release", action="append", help="a Kafka release, e.g. 4.1.2 (repeatable)")
    parser.add_argument("--schemas", type=Path, default=REPO_ROOT / "schemas")
    args = parser.parse_args(argv)
    try:
        results = check_releases(args.release or LAST_PATCH_RELEASES, args.schemas)
    except (JarError, SpecError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for release, found in results.items():
        for line in [*found.problems, *found.renames]:
            print(line)
        print(f"{release}: {found.checked} released message versions checked, {len(found.problems)} "
              f"missing or different on the wire, {len(found.renames)} with renamed fields")
    return 1 if any(found.problems for found in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
