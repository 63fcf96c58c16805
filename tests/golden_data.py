"""Loaders for the compact golden fixtures in ``tests/golden/`` (see tests/golden/README.md).

Plain helper module (tests are not a package): ``import golden_data`` from any test; pytest puts
``tests/`` on ``sys.path`` (``pythonpath`` in pyproject.toml).  Every loader parses its file once
(``functools.cache``) and returns the same list on later calls: treat the cases as read-only, and
``copy.deepcopy`` one before mutating it.  ``json.loads`` keeps int64/uint32 values exact (Python
ints are unbounded).

The fixtures name fields as Kafka 3.9.0 did. kcodec takes each version from the newest spec set that
defines it (``schemas/sets.json``), and a newer release renamed some fields of versions 3.9.0 also
defines, with the same bytes on the wire (VoteRequest's CandidateEpoch is ReplicaEpoch since 4.0,
TxnOffsetCommitRequest's GenerationId is GenerationIdOrMemberEpoch since 4.4). The loaders give each
case with the JSON names of the set owning its version (see :func:`renames`), derived from the
schemas themselves. A version 3.9.0 shipped as unstable (not released) and a later release
redefined differently on the wire has no golden case: :func:`redefined_cases` lists those.
"""

from __future__ import annotations

import gzip
import json
import math
from functools import cache
from pathlib import Path
from typing import Any

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
SCHEMAS_DIR = Path(__file__).resolve().parent.parent / "schemas"
GOLDEN_SET = "3.9.0"  # the spec set of the release whose serializer made the fixtures

Case = dict[str, Any]


def same(a: Any, b: Any) -> bool:
    """JSON equality that also tells 1 from 1.0 from True and -0.0 from 0.0 (the golden files' and the
    live oracle's comparison)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


def _read_text(name: str) -> str:
    return gzip.decompress((GOLDEN_DIR / name).read_bytes()).decode("utf-8")


def _load_jsonl(name: str) -> list[Case]:
    cases: list[Case] = []
    for line in _read_text(name).splitlines():
        if line:
            cases.append(json.loads(line))
    return cases


@cache
def _all_message_cases() -> list[Case]:
    return [_renamed(c, c["message"], c["version"], "value") for c in _load_jsonl("messages.jsonl.gz")]


@cache
def message_cases() -> list[Case]:
    """All ``<MessageName>.jsonl`` cases: ``{message, api_key, kind, version, value, hex}``."""
    return [c for c in _all_message_cases() if not _redefined(c["message"], c["version"])]


@cache
def redefined_cases() -> list[Case]:
    """The cases left out of :func:`message_cases`: versions a newer set redefined on the wire."""
    return [c for c in _all_message_cases() if _redefined(c["message"], c["version"])]


@cache
def error_cases() -> list[Case]:
    """Inputs Kafka refuses to serialise (``errors.jsonl``): ``{..., json, exception, error}``."""
    return [
        _renamed_field(_renamed(c, c["message"], c["version"], "json"))
        for c in _load_jsonl("errors.jsonl.gz") if not _redefined(c["message"], c["version"])
    ]


@cache
def ignored_cases() -> list[Case]:
    """Non-default values for absent ``ignorable`` fields (``ignored_fields.jsonl``): ``{..., json, hex}``."""
    return [
        _renamed(c, c["message"], c["version"], "json")
        for c in _load_jsonl("ignored_fields.jsonl.gz") if not _redefined(c["message"], c["version"])
    ]


@cache
def framed_cases() -> list[Case]:
    """One request and one response per API version as on a socket (``_framed.jsonl``)."""
    return [
        _renamed(c, c["body_message"], c["version"], "body_value")
        for c in _load_jsonl("framed.jsonl.gz") if not _redefined(c["body_message"], c["version"])
    ]


# ---------------------------------------------------------------------------------------------
# Field renames of newer spec sets (facts read from schemas/)
# ---------------------------------------------------------------------------------------------

Renames = dict[str, tuple[str, "Renames"]]
"""JSON key in the fixture -> (kcodec's key, renames inside that key's struct value)."""


def _versions(text: object) -> range:
    s = str(text)
    if s == "none":
        return range(0)
    if s.endswith("+"):
        return range(int(s[:-1]), 0x8000)
    lo, _, hi = s.partition("-")
    return range(int(lo), int(hi or lo) + 1)


@cache
def _sets() -> list[tuple[str, dict[str, Any]]]:
    """``(set name, {message name: spec})`` for every set of schemas/, oldest first."""
    entries = json.loads((SCHEMAS_DIR / "sets.json").read_text(encoding="utf-8"))
    return [
        (e["name"], {p.stem: json.loads(p.read_text(encoding="utf-8"))
                     for p in (SCHEMAS_DIR / e.get("dir", e["name"])).glob("*.json")})
        for e in entries
    ]


def owner(message: str, version: int) -> tuple[str, dict[str, Any]]:
    """The set owning ``message`` at ``version`` (the newest defining it) and its spec there."""
    for name, specs in reversed(_sets()):
        spec = specs.get(message)
        if spec is not None and version in _versions(spec.get("validVersions", "none")):
            return name, spec
    raise KeyError(f"no set defines {message} v{version}")


def _json_key(field_name: str) -> str:
    return field_name[:1].lower() + field_name[1:]  # as Kafka's JsonConverter names a field


def _struct_fields(spec: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found = {c["name"]: c.get("fields", []) for c in spec.get("commonStructs", [])}

    def walk(fields: list[dict[str, Any]]) -> None:
        for f in fields:
            if "fields" in f:
                found[f["type"].removeprefix("[]")] = f["fields"]
                walk(f["fields"])

    walk(spec.get("fields", []))
    return found


Side = tuple[list[Any], dict[str, Any]]  # a field list and the struct definitions it refers to


def _walk(old: Side, new: Side, v: int) -> Renames | None:
    """Renames between two field lists at version ``v``; ``None`` if they differ on the wire."""
    (old_fields, old_structs), (new_fields, new_structs) = old, new
    a = [f for f in old_fields if v in _versions(f["versions"])]
    b = [f for f in new_fields if v in _versions(f["versions"])]
    if len(a) != len(b):
        return None
    out: Renames = {}
    for fa, fb in zip(a, b, strict=True):
        ta, tb = fa["type"].removeprefix("[]"), fb["type"].removeprefix("[]")
        structs = ta in old_structs, tb in new_structs
        if structs[0] != structs[1] or (not structs[0] and fa["type"] != fb["type"]):
            return None
        nullable = (v in _versions(f.get("nullableVersions", "none")) for f in (fa, fb))
        if fa.get("tag") != fb.get("tag") or len(set(nullable)) != 1:
            return None
        inner: Renames = {}
        if structs[0]:
            found = _walk((old_structs[ta], old_structs), (new_structs[tb], new_structs), v)
            if found is None:
                return None
            inner = found
        if fa["name"] != fb["name"] or inner:
            out[_json_key(fa["name"])] = (_json_key(fb["name"]), inner)
    return out


@cache
def _renames_at(message: str, version: int) -> Renames | None:
    golden = dict(_sets()).get(GOLDEN_SET, {}).get(message)
    set_name, spec = owner(message, version)
    if set_name == GOLDEN_SET or golden is None:
        return {}
    return _walk(
        (golden.get("fields", []), _struct_fields(golden)),
        (spec.get("fields", []), _struct_fields(spec)),
        version,
    )


def _redefined(message: str, version: int) -> bool:
    return _renames_at(message, version) is None


def _merge(into: Renames, more: Renames) -> None:
    for key, (new_key, inner) in more.items():
        if key in into:
            assert into[key][0] == new_key, f"{key} renamed to both {into[key][0]} and {new_key}"
            _merge(into[key][1], inner)
        else:
            into[key] = (new_key, dict(inner))


@cache
def renames(message: str, version: int) -> Renames:
    """How the fixture's JSON keys of ``message`` at ``version`` are named by kcodec: the renames of
    every version the owning set shares with 3.9.0 (an ignorable case may hold a field of another
    version)."""
    set_name, spec = owner(message, version)
    out: Renames = {}
    for v in _versions(spec.get("validVersions", "none")):
        if v <= 0x7FFF and owner(message, v)[0] == set_name:
            found = _renames_at(message, v) if v in _golden_versions(message) else {}
            _merge(out, found or {})
    return out


def _golden_versions(message: str) -> range:
    golden = dict(_sets()).get(GOLDEN_SET, {}).get(message)
    return _versions(golden.get("validVersions", "none")) if golden else range(0)


def _apply(value: Any, table: Renames) -> Any:
    if isinstance(value, list):
        return [_apply(x, table) for x in value]
    if not isinstance(value, dict) or not table:
        return value
    out = {}
    for key, item in value.items():
        new_key, inner = table.get(key, (key, {}))
        out[new_key] = _apply(item, inner)
    return out


def _renamed_field(case: Case) -> Case:
    """An error case naming a renamed field (``field`` path and Kafka's message) with its new name."""
    table, path, old_leaf, new_leaf = renames(case["message"], case["version"]), [], "", ""
    for part in case["field"].split("."):
        key, bracket, index = part.partition("[")
        new_key, table = table.get(key, (key, {}))
        path.append(new_key + bracket + index)
        old_leaf, new_leaf = key, new_key
    if old_leaf == new_leaf:
        return case
    error = case["error"].replace(f" {old_leaf} ", f" {new_leaf} ")
    return {**case, "field": ".".join(path), "error": error}


def _renamed(case: Case, message: str, version: int, key: str) -> Case:
    table = renames(message, version)
    if not table or key not in case:
        return case
    return {**case, key: _apply(case[key], table)}


@cache
def record_batch_cases() -> list[Case]:
    """Record batches built by Kafka's MemoryRecordsBuilder (``_record_batches.jsonl``)."""
    return _load_jsonl("record_batches.jsonl.gz")


@cache
def api_table() -> list[Case]:
    """Kafka's ApiMessageType table (``_api_table.json``): one dict per API."""
    table = json.loads(_read_text("api_table.json.gz"))
    assert isinstance(table, list)
    return table


@cache
def _ordinals() -> dict[int, int]:
    """id(case) -> its index among the cases of the same kind/name/version (stable, 0-based)."""
    ordinals: dict[int, int] = {}
    for loader in (message_cases, error_cases, ignored_cases, framed_cases, record_batch_cases):
        seen: dict[str, int] = {}
        for case in loader():
            base = _base_id(case)
            ordinals[id(case)] = seen.get(base, 0)
            seen[base] = ordinals[id(case)] + 1
    return ordinals


def _base_id(case: Case) -> str:
    if "builder_input" in case:  # record batch
        bi = case["builder_input"]
        return f"magic{bi.get('magic')}-{bi.get('compression')}"
    if "body_message" in case:  # framed
        return f"framed-{case['body_message']}-v{case['version']}"
    name = case.get("message", "?")
    base = f"{name}-v{case.get('version')}"
    if "field" in case:  # error / ignored-field case
        base += f"-{case['field']}"
    return base


def case_id(case: Case) -> str:
    """Readable pytest id, e.g. ``FetchRequest-v12-3`` (the 4th FetchRequest v12 case).

    Error / ignored cases add the field (``ProduceRequest-v2-transactionalId-0``), framed cases are
    ``framed-FetchRequest-v12-0`` and record batches ``magic2-zstd-0``.  The trailing number is the
    case's position among the cases with the same prefix, so ids are unique and stable as long as the
    fixture files are unchanged.  Cases not coming from the loaders get no number.
    """
    base = _base_id(case)
    ordinal = _ordinals().get(id(case))
    return base if ordinal is None else f"{base}-{ordinal}"
