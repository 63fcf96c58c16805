#!/usr/bin/env python3
"""Write ``src/kcodec/data/release_api_versions.json``: each Apache Kafka release's API version ranges.

Facts come from ``../shared/kafka-specs/release-api-versions.json`` (every request API's
``validVersions`` for the last patch of each minor release 2.2 … 3.9) plus a ``4.x-clients`` entry
derived from the ``validVersions`` of the request specs in ``schemas/4.x-clients`` (client-facing APIs
only, so it is marked ``"partial": true``: a 4.x broker also advertises APIs missing from it).

Usage (paths relative to the repository root)::

    python tools/import_release_versions.py            # (re)write the data file
    python tools/import_release_versions.py --check    # exit 1 if it would change
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = "../shared/kafka-specs/release-api-versions.json"
DEFAULT_4X = "schemas/4.x-clients"
DEFAULT_OUT = "src/kcodec/data/release_api_versions.json"
LABEL_4X = "4.x-clients"


def _resolve(path: str) -> Path:
    p = Path(path)
    return p if p.is_absolute() else (REPO_ROOT / p).resolve()


def _range(valid: str) -> tuple[int, int]:
    lo, sep, hi = valid.partition("-")
    if not sep:
        return int(valid.rstrip("+")), int(valid.rstrip("+"))
    return int(lo), int(hi)


def _api_entry(name: str, lo: int, hi: int, listeners: Any, unstable: bool) -> dict[str, Any]:
    return {"name": name, "min": lo, "max": hi, "listeners": listeners, "latest_version_unstable": unstable}


def build(source: Path, specs_4x: Path) -> dict[str, Any]:
    raw = json.loads(source.read_text(encoding="utf-8"))
    releases: dict[str, Any] = {}
    for release, data in raw["releases"].items():
        apis = {
            str(int(key)): _api_entry(
                a["name"], int(a["min"]), int(a["max"]), a.get("listeners"),
                bool(a.get("latestVersionUnstable")),
            )
            for key, a in sorted(data["apis"].items(), key=lambda kv: int(kv[0]))
        }
        releases[release] = {"git_tag": data.get("git_tag", release), "partial": False, "apis": apis}
    apis_4x: dict[int, dict[str, Any]] = {}
    for spec in sorted(specs_4x.glob("*Request.json")):
        doc = json.loads(spec.read_text(encoding="utf-8"))
        if doc.get("type") != "request" or "apiKey" not in doc:
            continue
        lo, hi = _range(doc["validVersions"])
        name = doc["name"].removesuffix("Request")
        apis_4x[int(doc["apiKey"])] = _api_entry(
            name, lo, hi, doc.get("listeners"), bool(doc.get("latestVersionUnstable"))
        )
    releases[LABEL_4X] = {
        "git_tag": None,
        "partial": True,
        "apis": {str(k): v for k, v in sorted(apis_4x.items())},
    }
    return {
        "source": raw.get("source", ""),
        "note": (
            f"{LABEL_4X}: validVersions of the client-facing request specs in schemas/{LABEL_4X} "
            "(Apache Kafka 4.x as bundled by kafka-python 3.0.12); partial: other APIs a 4.x broker "
            "advertises are not listed"
        ),
        "releases": releases,
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", default=DEFAULT_SOURCE)
    ap.add_argument("--specs-4x", default=DEFAULT_4X)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="exit 1 if the output would change")
    args = ap.parse_args(argv)
    text = render(build(_resolve(args.source), _resolve(args.specs_4x)))
    out = _resolve(args.out)
    if args.check:
        current = out.read_text(encoding="utf-8") if out.exists() else ""
        if current != text:
            print(f"{out} is out of date: run tools/import_release_versions.py", file=sys.stderr)
            return 1
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out.relative_to(REPO_ROOT)} ({len(json.loads(text)['releases'])} releases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
