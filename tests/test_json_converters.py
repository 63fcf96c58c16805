"""``kcodec.to_json`` runs the converters the generator wrote (``kcodec._generated.json_``, one module
per hot or client group message, through ``jsonconv.json_converter``) or, for the other messages,
converters built from their description (``kcodec.protocol.json_build``); their output must be
exactly what the schema-walking definition of Kafka JSON gives. The reference walker below is that
definition, written as directly as possible (it is what ``kcodec.protocol.jsonconv`` itself ran
before the converters were generated), and the converters are compared with it on every API and
version."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path
from typing import Any

import golden_data as g
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import kcodec
from kcodec.protocol import strategies
from kcodec.protocol.codec import message_info
from kcodec.protocol.errors import InvalidArgumentError, UnknownMessageError, UnsupportedVersionError
from kcodec.protocol.jsonconv import is_default, json_converter
from kcodec.protocol.model import Uuid
from kcodec.protocol.schema import FieldInfo, MessageInfo
from kcodec.records.jsonview import records_to_json


def reference(message: Any, version: int, records: str = "raw") -> dict[str, Any]:
    info = message_info(type(message).MESSAGE_NAME)
    return _struct(info, info.name, message, version, records)


def _struct(info: MessageInfo, struct: str, obj: Any, version: int, records: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in info.fields_at(struct, version):
        value = getattr(obj, f.attr)
        if f.is_tagged(version) and is_default(info, f, value):
            continue
        out[f.json_name] = _value(info, f, f.element_type, f.is_array, value, version, records)
    return out


def _value(
    info: MessageInfo, f: FieldInfo, t: str, array: bool, value: Any, version: int, records: str
) -> Any:
    if value is None:
        return None
    if array:
        return [_value(info, f, t, False, v, version, records) for v in value]
    if t[:1].isupper():
        return _struct(info, t, value, version, records)
    if t == "records" and records != "raw":
        return records_to_json(value, values=records)  # type: ignore[arg-type]
    if t in ("bytes", "records"):
        return base64.b64encode(value).decode("ascii")
    if t == "uuid":
        return str(value) if isinstance(value, Uuid) else str(Uuid(value))
    return value


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types and dict key order (JSON text would be identical)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and (a == b or (a != a and b != b))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.message_and_version(max_array_size=3), st.sampled_from(["raw", "raw", "text"]))
def test_converters_match_the_reference_walk(pair: tuple[Any, int], records: str) -> None:
    message, version = pair
    assert _same(kcodec.to_json(message, version, records=records), reference(message, version, records))  # type: ignore[arg-type]


def test_every_message_and_version_has_a_converter() -> None:
    for name, version in strategies.pairs():
        json_converter(name, version)
    assert json_converter("FetchRequest", 12) is json_converter("FetchRequest", 12)  # looked up once


GOLDEN = g.message_cases()


def test_every_golden_case_converts_as_the_reference_walk() -> None:
    for case in GOLDEN:
        name, version = case["message"], case["version"]
        msg = kcodec.decode(name, version, bytes.fromhex(case["hex"]))
        for records in ("raw", "text"):
            assert _same(kcodec.to_json(msg, version, records=records), reference(msg, version, records)), (  # type: ignore[arg-type]
                name, version, records
            )


def test_every_message_and_version_converts_as_the_reference_walk() -> None:
    # one drawn message (non-default values, tagged fields set or not) for each pair the golden cases
    # do not cover, so that every API and version is compared
    covered = {(c["message"], c["version"]) for c in GOLDEN}
    missing = [p for p in strategies.pairs() if p not in covered]
    assert len(missing) < len(covered) // 4
    for name, version in missing:
        _check_one_drawn_message(name, version)


def _check_one_drawn_message(name: str, version: int) -> None:
    @settings(max_examples=1, deadline=None, database=None, derandomize=True,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(strategies.messages(name, version, max_array_size=2))
    def check(message: Any) -> None:
        assert _same(kcodec.to_json(message, version), reference(message, version)), (name, version)

    check()


def test_the_converters_are_generated_modules() -> None:
    convert = json_converter("FetchResponse", 12)
    assert convert.__module__ == "kcodec._generated.json_.fetch_response"
    assert convert.__name__ == "j_FetchResponse_v12"
    module = Path(sys.modules[convert.__module__].__file__ or "")
    # (in the compiled build the module is an extension; its source ships next to it)
    source = module.with_name(module.name.split(".")[0] + ".py").read_text()
    assert source.startswith("# Generated by kcodec's codegen from ")
    assert source.splitlines()[0].endswith("; do not edit.")
    # records expanded: the same converter, given the expansion (responses without records: as they are)
    assert json_converter("FetchResponse", 12, records="text").func is convert  # type: ignore[attr-defined]
    assert json_converter("MetadataResponse", 12, records="text") is json_converter("MetadataResponse", 12)


def test_a_message_first_conversion_imports_only_its_json_module() -> None:
    code = (
        "import sys, kcodec\n"
        "msg = kcodec.decode('FetchRequest', 4, bytes(4 * 3 + 4 + 1 + 4))\n"
        "loaded = [m for m in sys.modules if m.startswith('kcodec._generated.json_')]\n"
        "assert not loaded, 'JSON modules imported before to_json'\n"
        "assert kcodec.to_json(msg, 4)['replicaId'] == 0\n"
        "print(sorted(m for m in sys.modules if m.startswith('kcodec._generated.json_')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['kcodec._generated.json_', 'kcodec._generated.json_.fetch_request']"


def test_converter_lookup_errors() -> None:
    with pytest.raises(UnknownMessageError):
        json_converter("NoSuchRequest", 0)
    with pytest.raises(UnsupportedVersionError, match="FetchRequest has no version 99"):
        json_converter("FetchRequest", 99)
    with pytest.raises(InvalidArgumentError, match="records must be one of"):
        json_converter("FetchRequest", 12, records="hex")  # type: ignore[arg-type]


def test_tagged_defaults_and_nulls() -> None:
    fetch: Any = kcodec.message_class("FetchRequest")
    req = fetch(cluster_id=None, replica_state=fetch.ReplicaState(replica_id=5), topics=[])
    assert _same(kcodec.to_json(req, 15), reference(req, 15))
    assert "replicaState" in kcodec.to_json(req, 15) and "clusterId" not in kcodec.to_json(req, 15)


def test_inline_struct_default_checks_compare_every_field() -> None:
    """Tagged struct fields are compared with their default inline (``type(x) is not S or x.a != D.a
    or ... or x._unknown_tagged_fields``): every such check names exactly the class's fields, and
    behaves as ``x != S()`` on the default, each field changed, unknown tags and a subclass."""
    import importlib
    import re

    from kcodec.protocol.model import Struct

    root = Path(kcodec.__file__).parent / "_generated" / "json_"
    pattern = re.compile(r"if type\((\w+)\) is not (\w+) or (.*?) or \1\._unknown_tagged_fields:")
    checked = 0
    for path in sorted(root.glob("*.py")):
        text = path.read_text()
        found = pattern.findall(text)
        if not found:
            continue
        mod = importlib.import_module(f"kcodec._generated.json_.{path.stem}")
        for local, cls_name, middle in found:
            cls = getattr(mod, cls_name)
            attrs = re.findall(rf"{local}\.(\w+) != _DEFAULT_{cls_name}\.(\w+)", middle)
            assert all(a == b for a, b in attrs)
            assert sorted(a for a, _ in attrs) == sorted(cls._fields_), (path.name, cls_name)
            assert issubclass(cls, Struct)
            checked += 1
    assert checked > 0


def test_inline_struct_default_check_behaves_as_equality() -> None:
    from kcodec._generated.fetch_response import (
        EpochEndOffset,
        FetchableTopicResponse,
        FetchResponse,
        PartitionData,
    )

    variants: list[Any] = [EpochEndOffset(), EpochEndOffset(epoch=3), EpochEndOffset(end_offset=0), None]
    if not kcodec.compiled:  # mypyc's compiled classes take no subclasses written in Python

        class Sub(EpochEndOffset):
            __slots__ = ()

        variants.append(Sub())
    unknown = EpochEndOffset()
    unknown.unknown_tagged_fields.append((9, b"x"))
    variants.append(unknown)
    empty_unknown = EpochEndOffset()
    empty_unknown.unknown_tagged_fields  # noqa: B018 (an empty list: still at the default)
    variants.append(empty_unknown)
    for value in variants:
        p = PartitionData(records=b"", diverging_epoch=value)
        msg = FetchResponse(responses=[FetchableTopicResponse(topic="t", partitions=[p])])
        for version in (12, 13, 16):
            assert kcodec.to_json(msg, version) == reference(msg, version), (value, version)


def test_b64_is_standard_base64_at_every_size_and_buffer_type(monkeypatch: pytest.MonkeyPatch) -> None:
    # records and bytes fields of 64 bytes and more are encoded by pybase64's SIMD encoder (a dependency),
    # smaller ones (and all when pybase64 is missing) by binascii: the text is base64.b64encode's
    from kcodec.protocol import json_values

    assert json_values._simd is not None
    data = bytes(range(256)) * 5
    for simd in (json_values._simd, None):
        monkeypatch.setattr(json_values, "_simd", simd)
        for n in (0, 1, 2, 3, 63, 64, 65, 127, 128, 1000, 1279):
            for value in (data[:n], bytearray(data[:n]), memoryview(data)[:n], memoryview(data)[1 : 1 + n]):
                got = json_values.b64(value)
                assert type(got) is str and got == base64.b64encode(bytes(value)).decode("ascii"), (simd, n)


def test_uuid_texts_are_kafkas_whatever_the_cache_holds() -> None:
    from kcodec.protocol import json_values

    def kafka_text(raw: bytes) -> str:  # (Uuid.toString(): URL-safe base64 without padding)
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    raws = [bytes([i % 256, i // 256]) + bytes(14) for i in range(json_values._TEXTS_MAX + 10)]
    for raw in raws + raws[:20]:  # past the bound (the cache is emptied) and back to the first ones
        assert json_values.uuid_text(Uuid(raw)) == kafka_text(raw)
        assert len(json_values._texts) <= json_values._TEXTS_MAX
    # not a Uuid: the same text, and nothing cached for it (a bytearray could change after)
    held = len(json_values._texts)
    assert json_values.uuid_text(bytearray(raws[5])) == kafka_text(raws[5])
    assert json_values.uuid_text(raws[6]) == kafka_text(raws[6])
    assert len(json_values._texts) == held
