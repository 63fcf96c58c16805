"""Versions released Apache Kafka ships that kcodec has no codec for (``kcodec apis`` shows them).

Computed from ``kcodec/data/release_api_versions.json`` (each release's request API ranges, read from
its ``kafka-clients`` jar by ``tools/import_release_versions.py``) and kcodec's registry: a version is
missing when a listed release ships it as stable (a ``latestVersionUnstable`` API's newest version is
not released) and no spec set of kcodec defines it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["VersionGap", "find_gaps", "gaps_reason", "released_versions", "version_gaps"]

DATA_FILE = "release_api_versions.json"


@dataclass(frozen=True, slots=True)
class VersionGap:
    """An API whose ``missing`` versions (of ``kafka_versions``, the released range) kcodec cannot encode."""

    api_key: int
    api_name: str
    kafka_versions: tuple[int, int]
    missing: tuple[int, ...]


@cache
def _releases() -> dict[str, dict[str, object]]:
    text = resources.files("kcodec").joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    data: dict[str, dict[str, dict[str, object]]] = json.loads(text)
    return data["releases"]


@cache
def released_versions() -> dict[int, tuple[str, frozenset[int]]]:
    """By API key: its newest name and every version a listed release ships as stable."""
    found: dict[int, tuple[str, set[int]]] = {}
    for release in _releases().values():
        apis = release["apis"]
        assert isinstance(apis, dict)
        for key_text, a in apis.items():
            hi = int(a["max"]) - (1 if a.get("latest_version_unstable") else 0)
            versions = found.setdefault(int(key_text), (str(a["name"]), set()))[1]
            found[int(key_text)] = (str(a["name"]), versions)  # the newest release names it
            versions.update(range(int(a["min"]), hi + 1))
    return {k: (name, frozenset(vs)) for k, (name, vs) in sorted(found.items()) if vs}


def find_gaps(
    released: Mapping[int, tuple[str, Iterable[int]]], have: Mapping[int, Iterable[int]]
) -> dict[int, VersionGap]:
    """By API key: the ``released`` versions missing from ``have`` (kcodec's versions per API key)."""
    gaps: dict[int, VersionGap] = {}
    for key, (name, versions) in released.items():
        shipped = sorted(versions)
        known = set(have.get(key, ()))
        missing = tuple(v for v in shipped if v not in known)
        if missing:
            gaps[key] = VersionGap(key, name, (shipped[0], shipped[-1]), missing)
    return gaps


@cache
def version_gaps() -> dict[int, VersionGap]:
    """By API key: the released versions kcodec lacks (empty when it has them all)."""
    from kcodec.protocol.registry import apis

    return find_gaps(released_versions(), {a.key: a.sources for a in apis()})


def release_span() -> str:
    """The releases the facts cover, e.g. ``"2.2.2 … 4.4.0"``."""
    names = list(_releases())
    return f"{names[0]} … {names[-1]}"


def gaps_reason() -> str:
    """What "missing" means and where the facts come from."""
    return (
        f"versions an Apache Kafka release ({release_span()}, the last patch of each minor release) "
        "ships as stable that no spec set of kcodec defines (facts from each release's kafka-clients jar)"
    )
