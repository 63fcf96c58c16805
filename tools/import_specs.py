#!/usr/bin/env python3
"""Import upstream Apache Kafka message specs into kcodec's canonical ``schemas/``.

The upstream ``*.json`` message specs are "JSON with quirks": they carry ``//``
line comments (including the Apache license header), may carry ``/* */`` block
comments, have occasionally shipped trailing tokens after the root object, write
some tags as strings (``"tag": "0"``) and omit ``versions`` on some tagged
fields.  This script parses them with a small tokenizer-level comment stripper
(string literals such as URLs containing ``//`` survive), normalises those
quirks and writes one canonical, deterministic JSON file per spec that contains
the protocol facts and Kafka's own descriptions of them:

* ``<out>/<set>/<Name>.json`` -- one per input spec, comments and unknown keys
  removed, each ``about`` text (of the message, a common struct or a field) kept
  exactly as Kafka writes it, keys in a fixed canonical order, field order
  (= wire order) exactly as upstream;
* ``<out>/sets.json`` -- provenance of every set (oldest / lowest priority
  first; later sets take precedence when they define the same version).

Proposal sets (``sets.json`` entries with a ``"proposal"`` key, e.g. kcodec's
own KIP-359 Produce version) are not imported from anywhere: they are kept as
they are, after the imported sets, and their folders are never touched.

Values are copied verbatim: hex defaults (``"0x7fffffff"``), base64 uuid
defaults and ``"flexibleVersions": "none"`` stay the strings they are; the code
generator interprets them.

A set's source is a folder of ``*.json`` specs, a jar holding them as ``common/message/*.json``
resources (Apache Kafka's ``kafka-clients`` jar does), or the Maven coordinates of such a jar
(``maven:org.apache.kafka:kafka-clients:4.4.0``, read from the local Maven repository and fetched
with Maven when missing, see ``tools/kafka_jars.py``). For a jar, ``sets.json`` records the release
it came from: its coordinates, the jar's sha256 and the Kafka version and commit the jar names.

Usage (all relative paths are resolved against the repository root, so the
script works from any working directory)::

    python tools/import_specs.py           # the default sets (DEFAULT_SETS), into schemas/
    python tools/import_specs.py \\
        --set 3.9.0=maven:org.apache.kafka:kafka-clients:3.9.0 \\
        --set 4.4.0=maven:org.apache.kafka:kafka-clients:4.4.0 \\
        --out schemas
    python tools/import_specs.py --check   # CI: exit 1 if schemas/ would change
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kafka_jars import CLIENTS, MAVEN_PREFIX, JarError, is_jar_source, open_source
from kafka_spec_json import SpecError, Warn, load_kafka_json, print_warning, strip_comments

__all__ = ["SpecError", "Warn", "load_kafka_json", "strip_comments"]

REPO_ROOT = Path(os.path.abspath(__file__)).parent.parent
"""The repository root; relative CLI paths are resolved against it."""

DEFAULT_OUT = "schemas"
DEFAULT_SETS: tuple[tuple[str, str], ...] = (
    ("3.9.0", f"{MAVEN_PREFIX}{CLIENTS}:3.9.0"),
    ("4.4.0", f"{MAVEN_PREFIX}{CLIENTS}:4.4.0"),
)
"""Default ``--set`` arguments, oldest (lowest priority) first: Apache Kafka 3.9.0 (the last release
with the versions 4.0 removed) and the newest release; see ``tests/test_release_specs.py`` for the
check that every released version of every 3.9.x and 4.x release is defined by them."""

KNOWN_SOURCES: dict[str, str] = {}
"""Provenance text for well-known sets (override with ``--source``); a set read from Apache Kafka's
kafka-clients jar by its coordinates gets :func:`release_source`'s text."""


def release_source(location: str) -> str | None:
    """The provenance text of a ``maven:org.apache.kafka:kafka-clients:VERSION`` source, else None."""
    prefix = f"{MAVEN_PREFIX}{CLIENTS}:"
    if not location.startswith(prefix):
        return None
    return f"Apache Kafka {location[len(prefix):]}: the message specs of its kafka-clients jar"

SETS_FILE = "sets.json"

MESSAGE_KEYS: tuple[str, ...] = (
    "apiKey",
    "type",
    "name",
    "validVersions",
    "deprecatedVersions",
    "flexibleVersions",
    "listeners",
    "latestVersionUnstable",
    "about",
    "fields",
    "commonStructs",
)
"""Message-level keys kept in the output, in canonical output order."""

FIELD_KEYS: tuple[str, ...] = (
    "name",
    "type",
    "versions",
    "nullableVersions",
    "tag",
    "taggedVersions",
    "default",
    "ignorable",
    "mapKey",
    "entityType",
    "flexibleVersions",
    "zeroCopy",
    "about",
    "fields",
)
"""Field-level (and common-struct) keys kept in the output, in canonical order."""

DOC_KEYS: frozenset[str] = frozenset({"about"})
"""Documentation keys: kept verbatim (they are in :data:`MESSAGE_KEYS` and :data:`FIELD_KEYS`);
their value must be a string."""

_SET_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_TAG_RE = re.compile(r"[0-9]+")

# --------------------------------------------------------------------------
# Normalisation to the canonical form
# --------------------------------------------------------------------------


def _normalise_tag(value: Any, where: str) -> int:
    """Return a field tag as a non-negative int (upstream sometimes uses ``"0"``)."""
    if isinstance(value, bool):
        raise SpecError(f"{where}: tag must be an integer, got {value!r}")
    if isinstance(value, int):
        tag = value
    elif isinstance(value, str) and _TAG_RE.fullmatch(value.strip()):
        tag = int(value.strip())
    else:
        raise SpecError(f"{where}: tag must be an integer, got {value!r}")
    if tag < 0:
        raise SpecError(f"{where}: tag must be non-negative, got {tag}")
    return tag


def _check_docs(raw: Mapping[str, Any], where: str) -> None:
    """Raise :class:`SpecError` if a documentation key of ``raw`` is not a string."""
    for key in sorted(DOC_KEYS & set(raw)):
        if not isinstance(raw[key], str):
            raise SpecError(f"{where}: {key} must be a string, got {type(raw[key]).__name__}")


def _normalise_fields(value: Any, where: str, source: str, warn: Warn) -> list[dict[str, Any]]:
    """Normalise a ``fields`` / ``commonStructs`` list, preserving its order."""
    if not isinstance(value, list):
        raise SpecError(f"{where}: expected a list, got {type(value).__name__}")
    return [
        normalise_field(item, where=f"{where}[{index}]", source=source, warn=warn)
        for index, item in enumerate(value)
    ]


def normalise_field(raw: Any, *, where: str, source: str, warn: Warn | None = None) -> dict[str, Any]:
    """Return the canonically ordered form of one field or common struct.

    * ``about`` is kept verbatim, unknown keys are dropped with a warning;
    * a string tag becomes an int;
    * a tagged field without ``versions`` gets ``versions`` = ``taggedVersions``;
    * nested ``fields`` are normalised recursively, order preserved.

    Raises:
        SpecError: if the field is not an object, has no string ``name``,
            has an invalid tag, or has no ``versions`` at all.
    """
    report = warn if warn is not None else print_warning
    if not isinstance(raw, dict):
        raise SpecError(f"{source}: {where}: expected an object, got {type(raw).__name__}")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError(f"{source}: {where}: field without a name")
    label = f"{where} ({name})"
    for key in raw:
        if key not in FIELD_KEYS:
            report(f"{source}: unknown key {key!r} in {label} (dropped)")
    _check_docs(raw, f"{source}: {label}")

    facts: dict[str, Any] = {key: raw[key] for key in FIELD_KEYS if key in raw}
    if "tag" in facts:
        facts["tag"] = _normalise_tag(facts["tag"], f"{source}: {label}")
        if "taggedVersions" not in facts:
            raise SpecError(f"{source}: {label}: tagged field without taggedVersions")
    elif "taggedVersions" in facts:
        raise SpecError(f"{source}: {label}: taggedVersions without a tag")
    if "versions" not in facts:
        if "taggedVersions" not in facts:
            raise SpecError(f"{source}: {label}: field without versions")
        facts["versions"] = facts["taggedVersions"]
    if "fields" in facts:
        facts["fields"] = _normalise_fields(facts["fields"], f"{label}.fields", source, report)
    return {key: facts[key] for key in FIELD_KEYS if key in facts}


def normalise_message(
    raw: Mapping[str, Any], *, source: str = "<string>", warn: Warn | None = None
) -> dict[str, Any]:
    """Return the canonically ordered form of one message spec.

    Message-level keys are kept in :data:`MESSAGE_KEYS` order (``about``
    verbatim); unknown keys are dropped with a warning.  ``fields`` and
    ``commonStructs`` are normalised with :func:`normalise_field`.

    Raises:
        SpecError: on structural problems (see :func:`normalise_field`).
    """
    report = warn if warn is not None else print_warning
    for key in raw:
        if key not in MESSAGE_KEYS:
            report(f"{source}: unknown message key {key!r} (dropped)")
    _check_docs(raw, source)
    if not isinstance(raw.get("name"), str):
        raise SpecError(f"{source}: message without a name")
    facts: dict[str, Any] = {key: raw[key] for key in MESSAGE_KEYS if key in raw}
    for key in ("fields", "commonStructs"):
        if key in facts:
            facts[key] = _normalise_fields(facts[key], key, source, report)
    return facts


def render_json(obj: Any) -> bytes:
    """Serialise ``obj`` exactly as all files under ``schemas/`` are written."""
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


# --------------------------------------------------------------------------
# Planning the output tree
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SpecSet:
    """One input set: its name (= output directory), where it comes from and its provenance text.

    ``location`` is the folder of ``*.json`` specs, or ``None`` when ``jar`` (a ``maven:G:A:V``
    source or a jar path, see ``tools/kafka_jars.py``) names the jar holding them.
    """

    name: str
    directory: Path | None
    source: str
    jar: str | None = None


def _display_path(path: Path, root: Path) -> str:
    """Return ``path`` relative to ``root`` (POSIX separators) for provenance."""
    return Path(os.path.relpath(path, root)).as_posix()


def _read_inputs(spec_set: SpecSet, root: Path) -> tuple[dict[str, bytes], dict[str, Any]]:
    """The set's raw spec files (file name -> bytes) and the provenance of where they came from."""
    if spec_set.jar is not None:
        try:
            jar = open_source(spec_set.jar, root)
        except JarError as exc:
            raise SpecError(f"set {spec_set.name}: {exc}") from None
        origin: dict[str, Any] = {}
        if jar.coordinates is not None:
            origin["release"] = str(jar.coordinates)
            origin["imported_from"] = f"{MAVEN_PREFIX}{jar.coordinates}"
        else:
            origin["imported_from"] = _display_path(jar.path, root)
        origin.update(jar_sha256=jar.sha256, kafka_version=jar.kafka_version, commit=jar.commit)
        return jar.specs, origin
    directory = spec_set.directory
    if directory is None or not directory.is_dir():
        raise SpecError(f"set {spec_set.name}: {directory} is not a directory")
    inputs = sorted(p for p in directory.glob("*.json") if p.is_file())
    if not inputs:
        raise SpecError(f"set {spec_set.name}: no *.json files in {directory}")
    return {p.name: p.read_bytes() for p in inputs}, {"imported_from": _display_path(directory, root)}


def plan_set(spec_set: SpecSet, root: Path, warn: Warn) -> tuple[dict[str, bytes], dict[str, Any]]:
    """Import one set.

    Returns:
        ``(files, provenance)`` where ``files`` maps output file names inside
        the set directory to their bytes and ``provenance`` is the set's
        ``sets.json`` entry.

    Raises:
        SpecError: if the source is missing/empty or a spec is invalid.
    """
    inputs, origin = _read_inputs(spec_set, root)
    files: dict[str, bytes] = {}
    digests: dict[str, str] = {}
    for file_name, data in sorted(inputs.items()):
        source = f"{spec_set.name}/{file_name}"
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SpecError(f"{source}: not UTF-8: {exc}") from None
        message = normalise_message(load_kafka_json(text, source=source, warn=warn), source=source, warn=warn)
        if message["name"] != Path(file_name).stem:
            warn(f"{source}: message name {message['name']!r} differs from the file name")
        files[file_name] = render_json(message)
        digests[file_name] = hashlib.sha256(data).hexdigest()
    provenance: dict[str, Any] = {
        "name": spec_set.name,
        "dir": spec_set.name,
        "source": spec_set.source,
        **{k: v for k, v in origin.items() if k in ("release", "imported_from")},
        **{k: v for k, v in origin.items() if k not in ("release", "imported_from") and v is not None},
        "files": len(files),
        "sha256": digests,
    }
    return files, provenance


def plan(
    sets: Sequence[SpecSet], root: Path, warn: Warn, proposals: Sequence[Mapping[str, Any]] = ()
) -> dict[str, bytes]:
    """Return the complete output tree as ``{relative POSIX path: bytes}``; ``proposals`` (see
    :func:`proposal_entries`) are listed in ``sets.json`` after the imported sets, unchanged."""
    names = {s.name for s in sets}
    clash = sorted(names & {str(p.get("name")) for p in proposals})
    if clash:
        raise SpecError(f"set {clash[0]!r} is a proposal set in sets.json; it cannot be imported")
    tree: dict[str, bytes] = {}
    provenance: list[dict[str, Any]] = []
    for spec_set in sets:
        files, entry = plan_set(spec_set, root, warn)
        tree.update({f"{spec_set.name}/{name}": data for name, data in files.items()})
        provenance.append(entry)
    provenance.extend(dict(p) for p in proposals)
    tree[SETS_FILE] = render_json(provenance)
    return tree


def proposal_entries(out: Path) -> list[dict[str, Any]]:
    """The proposal sets of ``out/sets.json`` (entries with a ``"proposal"`` key), in their order."""
    index = out / SETS_FILE
    if not index.is_file():
        return []
    try:
        entries = json.loads(index.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SpecError(f"{index}: cannot read: {exc}") from None
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, dict) and "proposal" in e]


def _existing_files(
    out: Path, sets: Sequence[SpecSet], warn: Warn, keep: frozenset[str] = frozenset()
) -> dict[str, Path]:
    """Return the files currently owned by the importer under ``out``.

    Those are ``sets.json`` and every regular file directly inside a set
    directory.  Subdirectories inside a set directory, and directories in
    ``out`` that belong to no current set, are reported but never touched;
    the folders named in ``keep`` (proposal sets) are neither listed nor reported.
    """
    found: dict[str, Path] = {}
    if (out / SETS_FILE).is_file():
        found[SETS_FILE] = out / SETS_FILE
    for spec_set in sets:
        set_dir = out / spec_set.name
        if not set_dir.is_dir():
            continue
        for entry in sorted(set_dir.iterdir()):
            if entry.is_file() or entry.is_symlink():
                found[f"{spec_set.name}/{entry.name}"] = entry
            else:
                warn(f"unexpected directory {entry} left untouched")
    if out.is_dir():
        names = {s.name for s in sets}
        for entry in sorted(out.iterdir()):
            if entry.is_dir() and entry.name not in names and entry.name not in keep:
                warn(f"{entry} belongs to no current set (left untouched)")
    return found


def diff_tree(tree: Mapping[str, bytes], existing: Mapping[str, Path]) -> list[str]:
    """Return human-readable differences between the plan and the disk."""
    changes: list[str] = []
    for rel, data in sorted(tree.items()):
        path = existing.get(rel)
        if path is None:
            changes.append(f"new: {rel}")
        elif path.is_symlink() or path.read_bytes() != data:
            changes.append(f"changed: {rel}")
    changes.extend(f"stale: {rel}" for rel in sorted(set(existing) - set(tree)))
    return changes


def write_tree(out: Path, tree: Mapping[str, bytes], existing: Mapping[str, Path]) -> int:
    """Write ``tree`` under ``out`` and delete stale files; return #files changed."""
    changed = 0
    for rel, data in sorted(tree.items()):
        target = out / rel
        if rel in existing and not target.is_symlink() and target.read_bytes() == data:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)
        changed += 1
    for rel in sorted(set(existing) - set(tree)):
        existing[rel].unlink()
        changed += 1
    return changed


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def _resolve(path: str, root: Path) -> Path:
    """Resolve a CLI path against ``root`` (absolute paths are kept).

    Symlinks are not followed, so provenance stays ``../shared/...`` when ``shared`` is a link.
    """
    return Path(os.path.normpath(root / path))


def _split_assignment(value: str, option: str) -> tuple[str, str]:
    """Split ``NAME=VALUE`` for ``--set`` / ``--source``."""
    name, sep, rest = value.partition("=")
    if not sep or not name or not rest:
        raise SpecError(f"{option} expects NAME=VALUE, got {value!r}")
    return name, rest


def parse_sets(
    set_args: Sequence[str] | None, source_args: Sequence[str] | None, root: Path, warn: Warn
) -> list[SpecSet]:
    """Build the ordered :class:`SpecSet` list from ``--set`` / ``--source`` values."""
    pairs = [_split_assignment(v, "--set") for v in set_args] if set_args else list(DEFAULT_SETS)
    sources = dict(KNOWN_SOURCES)
    for value in source_args or ():
        name, text = _split_assignment(value, "--source")
        sources[name] = text
    result: list[SpecSet] = []
    seen: set[str] = set()
    for name, directory in pairs:  # a folder, a jar path or maven:GROUP:ARTIFACT:VERSION
        if not _SET_NAME_RE.fullmatch(name) or name in (".", ".."):
            raise SpecError(f"invalid set name {name!r}")
        if name == Path(SETS_FILE).stem or name in seen:
            raise SpecError(f"set name {name!r} is reserved or given twice")
        seen.add(name)
        source = sources.get(name) or release_source(directory)
        if source is None:
            source = f"unspecified (imported from {directory})"
            warn(f"no --source given for set {name!r}; recording {source!r}")
        if is_jar_source(directory):
            result.append(SpecSet(name=name, directory=None, source=source, jar=directory))
        else:
            result.append(SpecSet(name=name, directory=_resolve(directory, root), source=source))
    return result


def build_parser() -> argparse.ArgumentParser:
    """Return the CLI argument parser."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
        epilog=f"Relative paths are resolved against the repository root ({REPO_ROOT}).",
    )
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        metavar="NAME=SOURCE",
        help="an input set (a folder, a .jar or maven:GROUP:ARTIFACT:VERSION), repeatable, "
        "oldest (lowest priority) first; default: "
        + " ".join(f"{n}={d}" for n, d in DEFAULT_SETS),
    )
    parser.add_argument(
        "--source",
        action="append",
        metavar="NAME=TEXT",
        help="provenance text recorded in sets.json for set NAME",
    )
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"output directory (default: {DEFAULT_OUT})")
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the output directory would change",
    )
    return parser


def main(argv: Sequence[str] | None = None, *, root: Path = REPO_ROOT) -> int:
    """Run the importer; return the process exit status.

    Exit status: 0 on success (or no drift with ``--check``), 1 if ``--check``
    found drift, 2 on invalid input.
    """
    args = build_parser().parse_args(argv)
    warn = print_warning
    try:
        sets = parse_sets(args.sets, args.source, root, warn)
        out = _resolve(args.out, root)
        proposals = proposal_entries(out)
        tree = plan(sets, root, warn, proposals)
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    keep = frozenset(str(p.get("dir", p.get("name"))) for p in proposals)
    existing = _existing_files(out, sets, warn, keep)
    if args.check:
        changes = diff_tree(tree, existing)
        for change in changes:
            print(change)
        if changes:
            print(
                f"{len(changes)} file(s) out of date under {out}; run tools/import_specs.py to regenerate",
                file=sys.stderr,
            )
            return 1
        print(f"{out} is up to date ({len(tree)} files)")
        return 0
    changed = write_tree(out, tree, existing)
    print(f"wrote {out}: {len(tree)} files, {changed} changed or removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
