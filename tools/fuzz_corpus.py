"""The regression corpus of everything the fuzzers found (tests/fuzz_corpus/*.json, replayed by
tests/test_fuzz_corpus.py through kcodec.fuzz.selfcheck).

    python tools/fuzz_corpus.py add-findings tests/fuzz_corpus/broker_findings.json findings/mock/*.json
    python tools/fuzz_corpus.py add-crash tests/fuzz_corpus/atheris.json crash-1234abcd
    python tools/fuzz_corpus.py check

A corpus file is ``{"about": ..., "cases": [{"check", "hex", "expect", "why", ...}]}``. ``expect`` is
what kcodec does with the bytes when the case is added (refused, round-trip, ...); the test keeps it so.
Broker findings are added as request frames (what kcodec itself makes of the bytes that hurt a broker).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MAX_CASE_BYTES = 8192  # larger findings stay in their finding files
sys.path.insert(0, str(ROOT / "tools"))

from kcodec.fuzz.findings import load_finding  # noqa: E402
from kcodec.fuzz.selfcheck import run_case  # noqa: E402


def _load(path: Path, about: str) -> dict[str, Any]:
    if path.exists():
        data: dict[str, Any] = json.loads(path.read_text())
        return data
    return {"about": about, "cases": []}


def _save(path: Path, corpus: dict[str, Any]) -> None:
    path.write_text(json.dumps(corpus, indent=1, ensure_ascii=False) + "\n")


def add(path: Path, cases: list[dict[str, Any]], about: str) -> int:
    corpus = _load(path, about)
    known = {(c["check"], c["hex"]) for c in corpus["cases"]}
    added = 0
    for case in cases:
        if (case["check"], case["hex"]) in known:
            continue
        case["expect"] = run_case(case)
        corpus["cases"].append(case)
        known.add((case["check"], case["hex"]))
        added += 1
    _save(path, corpus)
    return added


def _why(f: Any) -> str:
    """The finding in one line; for a crash, the process's fate and its last log line."""
    why = f"{f.kind} on {f.api_name} v{f.api_version}: {f.summary}"
    if f.target_status:
        lines = [line for line in f.target_log.splitlines() if line.strip() and "backtrace" not in line]
        last = next((line for line in reversed(lines) if "Assertion" in line or "allocation" in line), "")
        why += f" [{f.target_status}{': ' + last.strip() if last else ''}]"
    return why[:500]


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("add-findings", "add-crash", "check"):
        print(__doc__)
        return 2
    if argv[0] == "check":
        bad = 0
        for path in sorted((ROOT / "tests" / "fuzz_corpus").glob("*.json")):
            for case in json.loads(path.read_text())["cases"]:
                got = run_case(case)
                if got != case["expect"]:
                    print(f"{path.name}: {case['why']}: expected {case['expect']}, got {got}")
                    bad += 1
        return 1 if bad else 0
    target = Path(argv[1])
    if argv[0] == "add-findings":
        cases = []
        for name in argv[2:]:
            f = load_finding(name)
            if len(f.request_hex) > 2 * MAX_CASE_BYTES:
                continue
            cases.append({
                "check": "request_frame",
                "hex": f.request_hex,
                "why": _why(f),
            })
        about = (
            "Request frames (at most 8 KiB) that hurt a broker under fuzzing: kcodec must refuse them or "
            "round-trip them"
        )
        print(f"{add(target, cases, about)} cases added to {target}")
        return 0
    from fuzz_atheris import CHECKS, PAIRS  # the input layout of the atheris harness

    cases = []
    for name in argv[2:]:
        data = Path(name).read_bytes()
        check = CHECKS[data[0] % len(CHECKS)]
        message, version = PAIRS[int.from_bytes(data[1:3], "big") % len(PAIRS)]
        why = f"atheris input {Path(name).name}"
        case: dict[str, Any] = {"check": check, "hex": data[3:].hex(), "why": why}
        if check == "body":
            case.update(message=message, version=version)
        print(f"{add(target, [case], 'Inputs found by the atheris harness')} case added from {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
