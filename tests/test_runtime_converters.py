"""The converters to Kafka JSON and the facts extractors built at run time from a message's
description (``kcodec.protocol.json_build``, ``kcodec.protocol.facts_build``: what ``kcodec.to_json``
and ``kcodec.capture.facts`` run for the messages outside the hot and client group sets) give exactly
what the generated ones give (``kcodec._generated.json_`` / ``facts_``), value for value and key
order for key order. The generator still writes them for the hot and client group messages, so the
builders are compared with those on drawn bodies and on every golden case; the other messages are
compared with the reference walkers of ``test_json_converters`` and ``test_facts_extractors``."""

from __future__ import annotations

import importlib
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import golden_data as g
import pytest
from hypothesis import HealthCheck, given, settings

import kcodec
from kcodec.capture.facts import codes_extractor, extractor
from kcodec.codegen.planner import CLIENT_GROUP_MESSAGES, HOT_MESSAGES, module_name
from kcodec.protocol import strategies
from kcodec.protocol.codec import message_names
from kcodec.protocol.errors import UnsupportedVersionError
from kcodec.protocol.facts_build import build_extractor
from kcodec.protocol.facts_model import Facts
from kcodec.protocol.json_build import build_converter, holds_records
from kcodec.protocol.jsonconv import json_converter
from kcodec.records.jsonview import records_to_json

#: the messages the generator writes converters and extractors for
GENERATED = sorted(n for n in message_names() if n in HOT_MESSAGES | CLIENT_GROUP_MESSAGES)


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types and dict key order (JSON text would be identical)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and (a == b or (a != a and b != b))


def _generated(package: str, name: str) -> Any:
    return importlib.import_module(f"kcodec._generated.{package}.{module_name(name)}")


def _expand(value: Any) -> Any:
    return records_to_json(value, values="text")


def _facts(extract: Any, message: Any) -> Any:
    facts = Facts()
    extract(message, facts)
    return asdict(facts)


def _check(message: Any, version: int) -> None:
    name = type(message).MESSAGE_NAME
    where = (name, version)
    table = _generated("json_", name)
    assert _same(build_converter(name, version)(message), table.TO_JSON[version](message)), where
    assert holds_records(name, version) == (version in table.RECORDS_VERSIONS), where
    if version in table.RECORDS_VERSIONS:
        got = build_converter(name, version, rec=_expand)(message)
        assert _same(got, table.TO_JSON[version](message, rec=_expand)), where
    facts = _generated("facts_", name)
    for codes, generated in ((False, facts.FACTS[version]), (True, facts.CODES[version])):
        got, want = _facts(build_extractor(name, version, codes), message), _facts(generated, message)
        assert _same(got, want), (where, codes)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.message_and_version(GENERATED, max_array_size=3))
def test_built_converters_and_extractors_match_the_generated_ones(pair: tuple[Any, int]) -> None:
    _check(*pair)


def test_built_converters_and_extractors_match_the_generated_ones_on_every_golden_case() -> None:
    checked = 0
    for case in g.message_cases():
        name, version = case["message"], case["version"]
        if name in GENERATED:
            _check(kcodec.decode(name, version, bytes.fromhex(case["hex"])), version)
            checked += 1
    assert checked > 500


def test_only_the_hot_and_client_group_messages_have_generated_modules() -> None:
    root = Path(kcodec.__file__).parent / "_generated"
    for package in ("json_", "facts_"):
        files = (root / package).iterdir()
        found = {p.name.split(".")[0] for p in files if p.name.endswith((".py", ".so", ".pyd"))}
        assert found - {"__init__"} == {module_name(n) for n in GENERATED}, package
    assert len(GENERATED) < len(message_names()) // 4


def test_the_other_messages_run_built_converters_and_extractors() -> None:
    convert = json_converter("CreateTopicsRequest", 7)
    assert convert.__module__ == "kcodec.protocol.json_build"
    assert json_converter("CreateTopicsRequest", 7) is convert  # built once
    assert json_converter("CreateTopicsRequest", 7, records="text") is convert  # (no records in it)
    assert extractor("CreateTopicsRequest", 7).__module__ == "kcodec.protocol.facts_build"
    assert extractor("CreateTopicsRequest", 7) is extractor("CreateTopicsRequest", 7)
    assert codes_extractor("CreateTopicsRequest", 7) is not extractor("CreateTopicsRequest", 7)
    # a message holding records (ShareFetch is outside the hot set): expanded on request
    assert holds_records("ShareFetchResponse", 0)
    text = json_converter("ShareFetchResponse", 0, records="text")
    assert text is not json_converter("ShareFetchResponse", 0)
    for version in (-1, 8, 99):
        with pytest.raises(UnsupportedVersionError, match="CreateTopicsRequest has no version"):
            json_converter("CreateTopicsRequest", version)
        with pytest.raises(UnsupportedVersionError, match="CreateTopicsRequest has no version"):
            extractor("CreateTopicsRequest", version)
    body = kcodec.from_json("CreateTopicsRequest", 7, {
        "topics": [{"name": "orders", "numPartitions": 3, "replicationFactor": 1, "assignments": [],
                    "configs": [{"name": "cleanup.policy", "value": "compact"}]}],
        "timeoutMs": 100, "validateOnly": False,
    })
    assert list(kcodec.to_json(body, 7)) == ["topics", "timeoutMs", "validateOnly"]
    assert kcodec.to_json(body, 0) == {"topics": kcodec.to_json(body, 7)["topics"], "timeoutMs": 100}
    facts = _facts(extractor("CreateTopicsRequest", 7), body)
    assert facts["topics"] == [("orders", None)] and facts["counts"] == {"configs": 1}


def test_a_built_conversion_imports_no_generated_json_or_facts_module() -> None:
    code = (
        "import sys, kcodec\n"
        "from kcodec.capture.facts import frame_facts\n"
        "msg = kcodec.decode('DescribeGroupsRequest', 0, bytes.fromhex('000000010001' + '67'))\n"
        "assert kcodec.to_json(msg, 0) == {'groups': ['g']}\n"
        "assert frame_facts(msg, 0).values == {}\n"
        "loaded = ('kcodec._generated.json_.', 'kcodec._generated.facts_.')\n"
        "print(sorted(m for m in sys.modules if m.startswith(loaded)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_rules_the_generator_reads_import_nothing_of_kcodec() -> None:
    """``kcodec.codegen.plan_facts`` reads ``kcodec.protocol.entity_roles`` (the one copy of the facts'
    rules): it must import nothing of the runtime, which the generator runs before."""
    import ast

    from kcodec.protocol import entity_roles

    tree = ast.parse(Path(entity_roles.__file__).read_text(encoding="utf-8"))
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert imported and not [m for m in imported if m.split(".")[0] == "kcodec"], imported
