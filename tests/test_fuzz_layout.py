"""The fuzzer's map of an encoded body (kcodec.fuzz.layout) agrees with the codec: on every golden
case and on generated messages of every (message, version), the spans tile the body and each length,
count, null marker and integer holds what the decoder reads for that field."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from golden_data import message_cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kcodec
from kcodec.codegen.generate import merged_messages
from kcodec.codegen.planner import specs_by_set
from kcodec.fuzz.layout import LENGTH_KINDS, Span, layout
from kcodec.protocol import strategies
from kcodec.protocol.codec import message_info
from kcodec.protocol.errors import DecodeError

ROOT = Path(__file__).resolve().parents[1]
_STEP = re.compile(r"([a-z0-9_]+)(?:\[(\d+)\])?")


def _resolve(msg: Any, path: str) -> Any:
    obj = msg
    for part in path.split("."):
        m = _STEP.fullmatch(part)
        assert m, path
        obj = getattr(obj, m.group(1))
        if m.group(2) is not None:
            obj = obj[int(m.group(2))]
    return obj


def check_layout(name: str, version: int, data: bytes) -> list[Span]:
    spans = layout(name, version, data)
    pos = 0
    for s in spans:  # tiling: every byte in exactly one span, in order
        assert s.offset == pos and s.size > 0, (name, version, s)
        pos = s.end
    assert pos == len(data)
    msg = kcodec.decode(name, version, data)
    for s in spans:
        if "tag" in s.kind or s.kind.endswith("_data") or s.kind in ("uuid", "float64"):
            continue
        value = _resolve(msg, s.path)
        if s.kind in LENGTH_KINDS:
            if value is None:
                assert s.value == -1, s
            elif s.kind == "string_length":
                assert s.value == len(value.encode()), s
            else:
                assert s.value == len(value), s
        elif s.kind == "struct_marker":
            assert (s.value == -1) == (value is None), s
        else:
            assert s.value == int(value), (s, value)
    return spans


GOLDEN = [c for c in message_cases()]


def test_layout_matches_every_golden_case() -> None:
    kinds: set[str] = set()
    for case in GOLDEN:
        spans = check_layout(case["message"], case["version"], bytes.fromhex(case["hex"]))
        kinds.update(s.kind for s in spans)
    # the golden set exercises every kind of wire item the mutator aims at
    wanted = {"array_count", "string_length", "bytes_length", "tag_count", "known_tag", "tag_size", "int32"}
    assert wanted <= kinds


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_layout_matches_generated_messages(data: st.DataObject) -> None:
    name, version = data.draw(st.sampled_from(strategies.pairs()))
    msg = data.draw(strategies.messages(name, version))
    check_layout(name, version, kcodec.encode(msg, version))


def test_layout_refuses_bytes_that_do_not_fit() -> None:
    body = kcodec.encode(kcodec.message_class("MetadataRequest")(topics=None), 12)
    with pytest.raises(DecodeError):
        layout("MetadataRequest", 12, body + b"\x00")
    with pytest.raises(DecodeError):
        layout("MetadataRequest", 12, body[:-1])


def test_tagged_fields_are_located() -> None:
    # HeartbeatResponse v4 with an unknown tagged field 5: count, tag, size, then its two bytes
    data = bytes.fromhex("0000000000000105020aff")
    spans = layout("HeartbeatResponse", 4, data)
    assert [(s.kind, s.offset, s.size, s.value) for s in spans] == [
        ("int32", 0, 4, 0), ("int16", 4, 2, 0),
        ("tag_count", 6, 1, 1), ("tag", 7, 1, 5), ("tag_size", 8, 1, 2), ("tag_data", 9, 2, None),
    ]


def test_field_level_flexible_versions_come_from_the_runtime_schema() -> None:
    # RequestHeader.ClientId: "flexibleVersions": "none", so an int16 length even in header v2
    info = message_info("RequestHeader")
    client_id = next(f for f in info.fields_at("RequestHeader", 2) if f.name == "ClientId")
    assert client_id.flexible == (1, 0) and not client_id.compact(2, info.is_flexible(2))
    api_key = next(f for f in info.fields_at("RequestHeader", 2) if f.name == "RequestApiKey")
    assert api_key.flexible is None and api_key.compact(2, True)  # follows the message
    header = kcodec.message_class("RequestHeader")(request_api_key=1, request_api_version=12,
                                                   correlation_id=7, client_id="kcodec")
    data = kcodec.encode(header, 2)
    spans = check_layout("RequestHeader", 2, data)
    assert [(s.kind, s.offset, s.size, s.value, s.compact) for s in spans[3:5]] == [
        ("string_length", 8, 2, 6, False), ("string_data", 10, 6, None, False),
    ]
    assert spans[-1].kind == "tag_count" and spans[-1].compact


def test_every_field_level_flexible_range_is_in_the_runtime_schema() -> None:
    # every field whose spec has its own flexibleVersions, as the generator reads the specs
    wanted = set()
    for merged in merged_messages(ROOT / "schemas")[0]:
        for cls, by_set in specs_by_set(merged).items():
            for set_name, fields in by_set.items():
                for f in fields:
                    if f.flexible_versions is not None:
                        fv = f.flexible_versions
                        wanted.add((merged.name, cls, set_name, f.name, (fv.lowest, fv.highest)))
    assert ("RequestHeader", "RequestHeader", "3.9.0", "ClientId", (1, 0)) in wanted
    for message, cls, set_name, field, versions in wanted:
        info = message_info(message)
        f = next(f for f in info.structs[cls].by_set[set_name] if f.name == field)
        assert f.flexible == versions, (message, field)
