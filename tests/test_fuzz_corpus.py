"""The regression corpus (tests/fuzz_corpus/*.json: what the fuzzers found, and the issue's cases):
each input still gets what kcodec gave it when it was added (refused, round-trip, read, ...), through
kcodec.fuzz.selfcheck, so a round trip that stops being byte-exact fails here too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kcodec.fuzz.selfcheck import run_case

CORPUS = Path(__file__).resolve().parent / "fuzz_corpus"


def _cases() -> list[Any]:
    out = []
    for path in sorted(CORPUS.glob("*.json")):
        for i, case in enumerate(json.loads(path.read_text())["cases"]):
            out.append(pytest.param(case, id=f"{path.stem}-{i}"))
    return out


@pytest.mark.parametrize("case", _cases())
def test_corpus_case(case: dict[str, Any]) -> None:
    assert run_case(case) == case["expect"], case["why"]


def test_the_corpus_holds_the_issue_cases() -> None:
    whys = " ".join(c["why"] for f in CORPUS.glob("*.json") for c in json.loads(f.read_text())["cases"])
    assert whys.count("defect 1") == 3 and whys.count("defect 2") == 3
