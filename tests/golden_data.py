"""Loaders for the compact golden fixtures in ``tests/golden/`` (see tests/golden/README.md).

Plain helper module (tests are not a package): ``import golden_data`` from any test; pytest puts
``tests/`` on ``sys.path`` (``pythonpath`` in pyproject.toml).  Every loader parses its file once
(``functools.cache``) and returns the same list on later calls: treat the cases as read-only, and
``copy.deepcopy`` one before mutating it.  ``json.loads`` keeps int64/uint32 values exact (Python
ints are unbounded).
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"

Case = dict[str, Any]


def _read_text(name: str) -> str:
    return gzip.decompress((GOLDEN_DIR / name).read_bytes()).decode("utf-8")


def _load_jsonl(name: str) -> list[Case]:
    cases: list[Case] = []
    for line in _read_text(name).splitlines():
        if line:
            cases.append(json.loads(line))
    return cases


@cache
def message_cases() -> list[Case]:
    """All ``<MessageName>.jsonl`` cases: ``{message, api_key, kind, version, value, hex}``."""
    return _load_jsonl("messages.jsonl.gz")


@cache
def error_cases() -> list[Case]:
    """Inputs Kafka refuses to serialise (``errors.jsonl``): ``{..., json, exception, error}``."""
    return _load_jsonl("errors.jsonl.gz")


@cache
def ignored_cases() -> list[Case]:
    """Non-default values for absent ``ignorable`` fields (``ignored_fields.jsonl``): ``{..., json, hex}``."""
    return _load_jsonl("ignored_fields.jsonl.gz")


@cache
def framed_cases() -> list[Case]:
    """One request and one response per API version as on a socket (``_framed.jsonl``)."""
    return _load_jsonl("framed.jsonl.gz")


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
