"""Versions Kafka defines that kcodec has no codec for, and why (``kcodec apis`` shows them).

The facts live in ``kcodec/data/version_gaps.json``, written by ``tools/import_version_gaps.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["VersionGap", "gaps_reason", "version_gaps"]

DATA_FILE = "version_gaps.json"


@dataclass(frozen=True, slots=True)
class VersionGap:
    """An API whose ``missing`` versions (of ``kafka_versions``, Kafka's range) kcodec cannot encode."""

    api_key: int
    api_name: str
    kafka_versions: tuple[int, int]
    missing: tuple[int, ...]


@cache
def _data() -> dict[str, object]:
    text = resources.files("kcodec").joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    data: dict[str, object] = json.loads(text)
    return data


@cache
def version_gaps() -> dict[int, VersionGap]:
    """By API key: the versions kcodec lacks."""
    rows = _data()["apis"]
    assert isinstance(rows, list)
    return {
        r["api_key"]: VersionGap(r["api_key"], r["api_name"], tuple(r["kafka_versions"]), tuple(r["missing"]))
        for r in rows
    }


def gaps_reason() -> str:
    """Why the versions are missing, with where the version facts come from."""
    return f"{_data()['why']} (versions: {_data()['provenance']})"
