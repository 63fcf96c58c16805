"""Which Apache Kafka releases are consistent with an ApiVersions response.

The facts (``kcodec/data/release_api_versions.json``, written by ``tools/import_release_versions.py``
from each release's ``kafka-clients`` jar) are each release's ``validVersions`` per request API: the
last patch of every minor release 2.2 … 4.4 (and 3.9.0 beside 3.9.2).

A release is consistent with a broker when

* every API both know has exactly the release's range (a ``latestVersionUnstable`` API may also stop
  one version lower: brokers hide unstable versions by default; Produce may start at v0, see
  :data:`ADVERTISED_MIN`);
* the broker advertises no API the release does not know;
* the broker does not omit a core API: one every listed release has and the newest release serves on
  its broker listener (brokers legitimately omit controller-only, ZooKeeper/KRaft-mode-specific and
  feature-gated APIs, so only the core set is required).

Anything else is reported per release as mismatched / extra / missing keys; a broker consistent with no
release is another implementation, a patched or unusually configured broker, or a newer release.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["ReleaseMatch", "core_apis", "fingerprint", "known_releases", "release_ranges"]

DATA_FILE = "release_api_versions.json"

#: API key -> the lowest version a broker advertises even where its specs start higher: Apache Kafka 4.0
#: removed Produce v0-2 (KIP-896) yet advertises Produce from v0 (``ApiKeys.
#: PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION``) so that old clients still connect and get a clear error
ADVERTISED_MIN: dict[int, int] = {0: 0}


@cache
def _data() -> dict[str, Any]:
    text = resources.files("kcodec").joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def known_releases() -> list[str]:
    """Release labels, oldest first (``"2.2.2"`` … ``"3.9.0"``, ``"3.9.2"``, ``"4.0.2"`` … ``"4.4.0"``)."""
    return list(_data()["releases"])


def release_ranges(release: str) -> dict[int, tuple[int, int]]:
    """``{api_key: (min, max)}`` of one release."""
    apis = _data()["releases"][release]["apis"]
    return {int(k): (int(a["min"]), int(a["max"])) for k, a in apis.items()}


@cache
def core_apis() -> frozenset[int]:
    """The API keys a broker of any listed release must advertise: those every release has and the
    newest release serves on its broker listener."""
    releases = list(_data()["releases"].values())
    common = set.intersection(*(set(r["apis"]) for r in releases))
    newest = releases[-1]["apis"]
    return frozenset(int(k) for k in common if "broker" in (newest[k].get("listeners") or ["broker"]))


@dataclass(frozen=True, slots=True)
class ReleaseMatch:
    """How one release compares with the broker's ranges."""

    release: str
    mismatched: tuple[tuple[int, tuple[int, int], tuple[int, int]], ...]  # (key, broker, release)
    extra: tuple[int, ...]  # advertised by the broker, unknown to the release
    missing: tuple[int, ...]  # client-facing APIs of the release the broker does not advertise

    @property
    def consistent(self) -> bool:
        return not self.mismatched and not self.missing and not self.extra

    @property
    def differences(self) -> int:
        return len(self.mismatched) + len(self.missing) + len(self.extra)

    def to_dict(self) -> dict[str, Any]:
        return {
            "release": self.release,
            "consistent": self.consistent,
            "mismatched": [
                {"api_key": k, "broker": list(b), "release": list(r)} for k, b, r in self.mismatched
            ],
            "extra": list(self.extra),
            "missing": list(self.missing),
        }


def _match(release: str, broker: Mapping[int, tuple[int, int]]) -> ReleaseMatch:
    entry = _data()["releases"][release]
    mismatched: list[tuple[int, tuple[int, int], tuple[int, int]]] = []
    known: dict[int, tuple[int, int]] = {}
    for key_text, a in entry["apis"].items():
        key, lo, hi = int(key_text), int(a["min"]), int(a["max"])
        known[key] = (lo, hi)
        got = broker.get(key)
        if got is None:
            continue
        lows = (lo, min(lo, ADVERTISED_MIN.get(key, lo)))
        highs = (hi, hi - 1) if a.get("latest_version_unstable") else (hi,)
        ok = got[0] in lows and got[1] in highs
        if not ok:
            mismatched.append((key, (int(got[0]), int(got[1])), (lo, hi)))
    extra = tuple(sorted(k for k in broker if k not in known))
    missing = tuple(sorted(k for k in known.keys() & core_apis() if k not in broker))
    return ReleaseMatch(release, tuple(mismatched), extra, missing)


def fingerprint(broker_ranges: Mapping[int, tuple[int, int]]) -> dict[str, Any]:
    """Releases consistent with ``broker_ranges`` (``{api_key: (min, max)}``, e.g.
    ``HandshakeResult.broker_ranges``), the closest ones and a one-line verdict.

    ``{"consistent": [...], "verdict": str, "closest": [ReleaseMatch.to_dict(), ...]}``
    """
    matches = [_match(r, broker_ranges) for r in known_releases()]
    consistent = [m.release for m in matches if m.consistent]
    order = {r: i for i, r in enumerate(known_releases())}
    ranked = sorted(matches, key=lambda m: (m.differences, -order[m.release]))
    if not broker_ranges:
        verdict = "no API ranges to compare"
    elif consistent:
        verdict = "consistent with Apache Kafka " + ", ".join(consistent)
    else:
        best = ranked[0]
        verdict = (
            "matches no known Apache Kafka release (another implementation, a patched or unusually "
            f"configured broker, or a newer release); closest: {best.release} "
            f"({best.differences} differences)"
        )
    return {
        "consistent": consistent,
        "verdict": verdict,
        "closest": [m.to_dict() for m in ranked[:3]],
    }
