#!/usr/bin/env python3
"""Write ``src/kcodec/data/release_api_versions.json``: each Apache Kafka release's API version ranges.

For the last patch of every minor release since the specs became JSON (2.2), the facts come from the
release's ``kafka-clients`` jar (its ``common/message/*Request.json`` resources, see
``tools/kafka_jars.py``): per request API its ``validVersions``, ``listeners`` and
``latestVersionUnstable``. A release whose facts equal those of the release before it in
:data:`RELEASES` (a patch release that changed no API) is left out: a broker could not tell them apart.

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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kafka_jars import JarError, SpecJar, clients, fetch, read_jar
from kafka_spec_json import SpecError, load_kafka_json

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = "src/kcodec/data/release_api_versions.json"

#: the last patch release of each minor release 2.2 … 4.4 (3.9.0 and 3.9.2 both: kcodec's 3.x spec
#: set is 3.9.0's), oldest first
RELEASES: tuple[str, ...] = (
    "2.2.2", "2.3.1", "2.4.1", "2.5.1", "2.6.3", "2.7.2", "2.8.2",
    "3.0.2", "3.1.2", "3.2.3", "3.3.2", "3.4.1", "3.5.2", "3.6.2", "3.7.1", "3.8.0", "3.9.0", "3.9.2",
    "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0",
)


def _range(valid: str) -> tuple[int, int] | None:
    text = valid.strip()
    if text == "none":
        return None
    lo, sep, hi = text.partition("-")
    if not sep:
        return int(text.rstrip("+")), int(text.rstrip("+"))
    return int(lo), int(hi)


def release_apis(jar: SpecJar) -> dict[str, dict[str, Any]]:
    """``{api_key: {name, min, max, listeners, latest_version_unstable}}`` of a release's request specs
    (an API the release removed, ``validVersions: none``, is not listed)."""
    apis: dict[int, dict[str, Any]] = {}
    for file_name, data in sorted(jar.specs.items()):
        if not file_name.endswith("Request.json"):
            continue
        doc = load_kafka_json(data.decode("utf-8"), source=file_name, warn=lambda _msg: None)
        if doc.get("type") != "request" or "apiKey" not in doc:
            continue
        span = _range(str(doc.get("validVersions", "none")))
        if span is None:
            continue
        apis[int(doc["apiKey"])] = {
            "name": str(doc["name"]).removesuffix("Request"),
            "min": span[0],
            "max": span[1],
            "listeners": doc.get("listeners"),
            "latest_version_unstable": bool(doc.get("latestVersionUnstable")),
        }
    return {str(k): v for k, v in sorted(apis.items())}


def build(releases: tuple[str, ...] = RELEASES) -> dict[str, Any]:
    out: dict[str, Any] = {}
    previous: dict[str, Any] | None = None
    for release in releases:
        coords = clients(release)
        jar = read_jar(fetch(coords), coords)
        apis = release_apis(jar)
        if apis == previous:
            continue
        previous = apis
        out[release] = {"jar": str(coords), "jar_sha256": jar.sha256, "apis": apis}
    return {
        "source": (
            "each release's kafka-clients jar (common/message/*Request.json): validVersions, listeners "
            "and latestVersionUnstable of every request API; the last patch of each minor release since "
            "2.2 (before 2.2 the specs were not JSON); a patch release with the same facts as the release "
            "listed before it is left out"
        ),
        "releases": out,
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="exit 1 if the output would change")
    args = ap.parse_args(argv)
    try:
        text = render(build())
    except (JarError, SpecError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out) if Path(args.out).is_absolute() else REPO_ROOT / args.out
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
