"""The one table of primitive wire types drives every consumer.

A scratch type (``uint64``, which Kafka's specs do not use) is added to a copy of the generator's table
and to the runtime's table for the duration of this module, a tiny spec with uint64 fields is generated
into a temporary package, and every consumer is checked to handle the new type with no code of its own:
the generated codec, the table's own read/write/skip/size, ``read_partial``, the fuzzer's layout and
mutator, hypothesis strategies, JSON and construct conversion. The shipped specs and table are untouched.

The last tests check that the real table's numbers (string maximum length, integer bounds) are the
ones every consumer refuses at.
"""

from __future__ import annotations

import importlib
import json
import random
import struct
import sys
from collections.abc import Iterator
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings

import kcodec
from kcodec.fuzz.generate import Generator
from kcodec.fuzz.layout import layout
from kcodec.fuzz.mutate import BODY_MUTATIONS, Mutator
from kcodec.protocol import codec, construct_backend, jsonconv, strategies, wire_table
from kcodec.protocol.errors import DecodeError, EncodeError, JsonError
from kcodec.protocol.partial import read_partial
from kcodec.protocol.wirewalk import Span

NAME = "ScratchData"
U64_MAX = 2**64 - 1
SPEC = {
    "type": "data",
    "name": NAME,
    "validVersions": "0-1",
    "flexibleVersions": "1+",
    "fields": [
        {"name": "Count", "type": "uint64", "versions": "0+"},
        {"name": "Ids", "type": "[]uint64", "versions": "0+"},
        {"name": "Label", "type": "string", "versions": "0+"},
        {"name": "Big", "type": "uint64", "versions": "1+", "taggedVersions": "1+", "tag": 0, "default": "0"},
    ],
}


def _patch_generator(mp: pytest.MonkeyPatch) -> None:
    """Add uint64 to the generator's table (and to what the generator derives from it at import)."""
    from kcodec.codegen import constants, wire_types
    from kcodec.codegen.spec import types

    entry = wire_types.WireType("uint64", "fixed", "int", "int", "Int64ub", "Q", 8, (0, U64_MAX))
    mp.setitem(wire_types.WIRE_TYPES, "uint64", entry)
    mp.setitem(wire_types.INT_BOUNDS, "uint64", (0, U64_MAX))
    mp.setattr(types, "PRIMITIVES", frozenset(wire_types.WIRE_TYPES))
    mp.setitem(constants._CODE_NAMES, "Q", "uint64")


def _register(mp: pytest.MonkeyPatch, package: dict[str, ModuleType]) -> SimpleNamespace:
    """Make the generated scratch message known to the runtime, as the shipped ones are."""
    from kcodec import _generated

    rows = package["wire_types"]
    row = next(r for r in rows.ROWS if r[0] == "uint64")  # the generated copy carries the new type
    mp.setitem(wire_table.WIRE_TYPES, "uint64", wire_table.entry(row, rows.COLUMNS))
    mp.setitem(_generated.MESSAGES, NAME, package[""].MESSAGES[NAME])
    # (its JSON converter is built at run time from INFO and the table, as for every message outside
    # the hot and client-group sets)
    mp.setitem(sys.modules, "kcodec._generated.scratch_data", package["scratch_data"])
    for cache in ("_modules", "_decoders", "_encoders", "_lazy_decoders"):
        mp.setattr(codec, cache, {})
    mp.setattr(jsonconv, "_converters", {})
    mp.setattr(codec, "_companions", {})
    mp.setattr(construct_backend, "_schemas", {})
    return SimpleNamespace(cls=package["scratch_data"].ScratchData)


@pytest.fixture(scope="module")
def scratch_package(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ModuleType]]:
    """The scratch spec generated (once) by the generator with uint64 in its table."""
    from kcodec.codegen.generate import generate_package

    root = tmp_path_factory.mktemp("scratch")
    (root / "schemas" / "one").mkdir(parents=True)
    (root / "schemas" / "one" / f"{NAME}.json").write_text(json.dumps(SPEC))
    subs = ("", "wire_types", "scratch_data")
    with pytest.MonkeyPatch.context() as mp:  # the generator's table is patched only while generating
        _patch_generator(mp)
        generate_package(root / "schemas", root / "out" / "kcodec_scratch")
        mp.syspath_prepend(str(root / "out"))
        modules = {sub: importlib.import_module(f"kcodec_scratch.{sub}".rstrip(".")) for sub in subs}
    yield modules
    for name in [m for m in sys.modules if m.startswith("kcodec_scratch")]:
        del sys.modules[name]


@pytest.fixture
def scratch(scratch_package: dict[str, ModuleType], monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """The runtime with the scratch type in its table and the scratch message registered."""
    return _register(monkeypatch, scratch_package)


def _message(scratch: SimpleNamespace, version: int) -> Any:
    msg = scratch.cls(count=U64_MAX, ids=[0, 2**63, U64_MAX], label="é")
    if version >= 1:
        msg.big = 2**40
    return msg


# --- the scratch type through every consumer ---------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1])
def test_the_codec_round_trips_the_new_type(scratch: SimpleNamespace, version: int) -> None:
    msg = _message(scratch, version)
    data = kcodec.encode(msg, version)
    assert data[:8] == struct.pack(">Q", U64_MAX)  # big-endian unsigned, as the table's "Q" says
    assert kcodec.decode(NAME, version, data) == msg
    for bad in (-1, U64_MAX + 1):  # the table's bounds, refused by the generated encoder
        with pytest.raises(EncodeError, match="count"):
            kcodec.encode(scratch.cls(count=bad), version)


def test_the_tables_read_write_skip_and_size_agree_with_the_codec(scratch: SimpleNamespace) -> None:
    t = wire_table.wire_type("uint64")
    assert t is not None and t.fixed_width and t.bounds == (0, U64_MAX) and t.span_kind == "uint64"
    data = kcodec.encode(_message(scratch, 0), 0)
    assert t.read(data, 0) == (U64_MAX, 8) and t.skip(data, 0) == 8 and t.encoded_size(U64_MAX) == 8
    out = bytearray()
    t.write(out, U64_MAX)
    assert bytes(out) == data[:8]
    with pytest.raises(DecodeError, match="needs 8 bytes but only 3 remain"):
        t.read(data[:3], 0)


def test_read_partial_returns_the_new_fields(scratch: SimpleNamespace) -> None:
    data = kcodec.encode(_message(scratch, 1), 1)
    whole = read_partial(NAME, 1, data)
    assert whole.complete and whole.message == _message(scratch, 1)
    cut = read_partial(NAME, 1, data[: 8 + 1 + 8 + 4])  # count, ids' count and one and a half ids
    assert cut.to_json() == {"count": U64_MAX, "ids": [0]}
    assert cut.error is not None and cut.error.path == f"{NAME}.ids[1]"


def test_the_fuzzers_layout_finds_the_new_type(scratch: SimpleNamespace) -> None:
    data = kcodec.encode(_message(scratch, 1), 1)
    spans = layout(NAME, 1, data)
    assert [(s.kind, s.path, s.value) for s in spans if s.kind == "uint64"] == [
        ("uint64", "count", U64_MAX),
        ("uint64", "ids[0]", 0),
        ("uint64", "ids[1]", 2**63),
        ("uint64", "ids[2]", U64_MAX),
        ("uint64", "big", 2**40),
    ]
    assert sum(s.size for s in spans) == len(data)


def test_the_mutator_puts_the_new_type_at_its_bounds(scratch: SimpleNamespace) -> None:
    data = kcodec.encode(_message(scratch, 0), 0)
    spans = layout(NAME, 0, data)
    mutator = Mutator(random.Random(7))
    seen: set[int] = set()
    for _ in range(300):  # bounded by count: mutations of any kind, aimed by the layout
        m = mutator.mutate(data, spans)
        if m.name == "int_edge" and "count at byte 0" in m.detail:
            seen.add(struct.unpack_from(">Q", m.body)[0])
    assert seen and seen <= {0, 1, U64_MAX, U64_MAX - 1}  # in the table's bounds, at its edges
    assert {0, U64_MAX} & seen


def test_every_table_type_is_aimed_at_by_some_mutation(scratch: SimpleNamespace) -> None:
    for t in wire_table.WIRE_TYPES.values():  # uint32 and the scratch uint64 included
        kind = t.span_kind if t.fixed_width else t.length_kind  # a value, or the length before it
        span = Span(0, max(t.size, 1), kind, "x", 0)
        aimed = [name for name, _fn, wants in BODY_MUTATIONS if wants is not None and wants(span)]
        assert aimed, (t.name, kind)
        if t.bounds is not None:
            span = Span(0, t.size, t.span_kind, "x")
            assert "int_edge" in [n for n, _f, w in BODY_MUTATIONS if w is not None and w(span)]


def test_strategies_draw_the_new_type_within_its_bounds(scratch: SimpleNamespace) -> None:
    strategy = strategies.messages(NAME, 1)

    @settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def check(msg: Any) -> None:
        assert 0 <= msg.count <= U64_MAX and all(0 <= i <= U64_MAX for i in msg.ids)
        assert kcodec.decode(NAME, 1, kcodec.encode(msg, 1)) == msg

    check()
    top: Any = find(strategy, lambda m: getattr(m, "count", None) == U64_MAX,
                    settings=settings(database=None, max_examples=500))
    assert top.count == U64_MAX


def test_the_fuzz_generator_edges_the_new_type_within_its_bounds(scratch: SimpleNamespace) -> None:
    gen = Generator(random.Random(3), edge_rate=1.0)
    edged: list[Any] = [gen.edged(_message(scratch, 1), NAME, 1) for _ in range(40)]
    counts = {m.count for m in edged}
    assert counts <= {0, 1, U64_MAX, U64_MAX - 1} and U64_MAX in counts


@pytest.mark.parametrize("version", [0, 1])
def test_json_round_trips_the_new_type(scratch: SimpleNamespace, version: int) -> None:
    msg = _message(scratch, version)
    obj = kcodec.to_json(msg, version)
    assert obj["count"] == U64_MAX and obj["ids"] == [0, 2**63, U64_MAX]
    assert kcodec.from_json(NAME, version, obj) == msg
    obj["count"] = 255  # stays 255 (only a signed one-byte type takes 128..255 as bytes)
    back: Any = kcodec.from_json(NAME, version, obj)
    assert back.count == 255
    for bad in (-1, U64_MAX + 1):  # the table's bounds
        obj["count"] = bad
        with pytest.raises(JsonError, match="out of range for uint64"):
            kcodec.from_json(NAME, version, obj)


@pytest.mark.parametrize("version", [0, 1])
def test_construct_round_trips_the_new_type(scratch: SimpleNamespace, version: int) -> None:
    msg = _message(scratch, version)
    data = kcodec.encode(msg, version)
    schema = kcodec.construct_schema(NAME, version)
    container = schema.parse(data)
    assert container.count == U64_MAX and list(container.ids) == [0, 2**63, U64_MAX]
    assert construct_backend.from_container(NAME, version, container) == msg
    assert schema.build(construct_backend.to_container(msg, version)) == data


# --- the real table's numbers are the ones every consumer refuses at -----------------------------------


def _compact_string(n: int) -> bytes:
    out = bytearray()
    kcodec.protocol._wire.write_uvarint(out, n + 1)
    return bytes(out) + b"a" * n


def test_the_string_limit_is_the_tables_everywhere() -> None:
    t = wire_table.WIRE_TYPES["string"]
    limit = t.max_length
    assert limit == 32767 == strategies.MAX_STRING_BYTES
    cls = kcodec.message_class("MetadataRequest")
    req = codec.module("MetadataRequest")
    for version in (8, 9):  # an int16 length, then a compact one
        ok = cls(topics=[req.MetadataRequestTopic(name="a" * limit)], allow_auto_topic_creation=True)
        data = kcodec.encode(ok, version)
        assert kcodec.decode("MetadataRequest", version, data) == ok
        construct = kcodec.construct_schema("MetadataRequest", version)
        assert construct.build(construct_backend.to_container(ok, version)) == data
        over = cls(topics=[req.MetadataRequestTopic(name="a" * (limit + 1))])
        with pytest.raises(EncodeError, match=f"{limit + 1} bytes exceed the {limit}-byte limit"):
            kcodec.encode(over, version)
        with pytest.raises(Exception, match=f"{limit + 1} bytes exceed the {limit}-byte limit"):
            construct.build(construct_backend.to_container(over, version))
        out = bytearray()
        with pytest.raises(EncodeError, match=f"{limit + 1} bytes exceed the {limit}-byte limit"):
            t.write(out, "a" * (limit + 1), compact=version >= 9)
    # a compact length one over the limit: refused by the codec, the walk, read_partial, construct
    # and the table's own reader, with the same reason
    long_name = _compact_string(limit + 1)
    ok_name = _compact_string(limit)
    body = b"\x02" + long_name + b"\x00" + b"\x01\x00\x00" + b"\x00"  # one topic, then the flags
    with pytest.raises(DecodeError, match=f"invalid length {limit + 1}") as by_codec:
        kcodec.decode("MetadataRequest", 9, body)
    partial = read_partial("MetadataRequest", 9, body)
    assert partial.error is not None and partial.error.reason == by_codec.value.reason
    assert partial.error.offset == by_codec.value.offset
    with pytest.raises(DecodeError, match=f"invalid length {limit + 1}"):
        layout("MetadataRequest", 9, body)
    with pytest.raises(Exception, match=f"invalid length {limit + 1}"):
        kcodec.construct_schema("MetadataRequest", 9).parse(body)
    with pytest.raises(DecodeError, match=f"invalid length {limit + 1}"):
        t.read(long_name, 0, compact=True)
    assert t.read(ok_name, 0, compact=True) == ("a" * limit, len(ok_name))
    # strategies and the fuzz generator cut and choose strings to the same number
    assert len(strategies._fit_utf8("é" * limit, limit).encode()) <= limit
    assert max(len(s.encode()) for s in importlib.import_module("kcodec.fuzz.generate")._strings(t)) == limit


def test_integer_bounds_are_the_tables_everywhere() -> None:
    mutator = Mutator(random.Random(5))
    for t in wire_table.int_types():
        assert t.bounds is not None
        lo, hi = t.bounds
        assert strategies.INT_BOUNDS[t.name] == t.bounds == kcodec.protocol.schema.INT_BOUNDS[t.name]
        assert t.read(t.pack(hi), 0)[0] == hi and t.read(t.pack(lo), 0)[0] == lo
        with pytest.raises(struct.error):
            t.pack(hi + 1)
        assert jsonconv._int_from_json(t, hi, "x") == hi  # JSON: the same bounds
        with pytest.raises(JsonError, match=f"out of range for {t.name}"):
            jsonconv._int_from_json(t, 2 * hi + 2, "x")  # (int8 also takes 128..255 as bytes)
        assert _finds(strategies._integers(t), hi) == hi
        span = Span(0, t.size, t.span_kind, "x", 0)
        for _ in range(20):  # the mutator's integer edges stay inside the table's bounds
            result = mutator.int_edge(t.pack(0), [span], span)
            assert result is not None
            assert lo <= t.read(result[0], 0)[0] <= hi


def _finds(strategy: Any, value: Any) -> Any:
    return find(strategy, lambda v: bool(v == value), settings=settings(database=None))


def test_the_table_mirrors_the_generators() -> None:
    from kcodec.codegen.wire_types import WIRE_TYPES

    assert list(wire_table.WIRE_TYPES) == list(WIRE_TYPES)
    for name, t in WIRE_TYPES.items():
        r = wire_table.WIRE_TYPES[name]
        assert (r.fixed_width, r.size, r.bounds, r.max_length, r.json) == (
            t.fixed_width, t.size, t.bounds, t.max_length, t.json
        )
        assert r.compact_limit == t.compact_limit and r.length_limit(True) == t.length_limit(True)



_SAMPLES: dict[str, tuple[Any, ...]] = {
    "bool": (True, False),
    "float": (-0.0, 1.5e300),
    "uuid": (kcodec.Uuid(bytes(range(16))),),
    "string": ("", "é\U0001f600"),
    "base64": (b"", b"\x00\xff" * 70),  # 140 bytes: a two-byte compact length
}


@pytest.mark.parametrize("name", list(wire_table.WIRE_TYPES))
def test_each_types_read_write_skip_and_size_agree(name: str) -> None:
    t = wire_table.WIRE_TYPES[name]
    samples = t.bounds if t.bounds is not None else _SAMPLES[t.json]
    for compact in (False, True) if not t.fixed_width else (False,):
        for value in (*samples, *(() if t.fixed_width else (None,))):
            out = bytearray(b"\xee")
            t.write(out, value, compact)
            data = bytes(out) + b"\xee"
            assert t.encoded_size(value, compact) == len(data) - 2
            assert t.skip(data, 1, compact) == len(data) - 1
            got, end = t.read(data, 1, compact)
            assert end == len(data) - 1
            assert (bytes(got) if isinstance(got, memoryview) else got) == value, (name, compact, value)
            with pytest.raises(DecodeError):  # cut one byte short
                t.read(data[: len(data) - 2], 1, compact)
