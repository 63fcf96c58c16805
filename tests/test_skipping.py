"""The runtime's struct skipper (``kcodec.protocol.skipping``), which ``decode(..., lazy=True)`` uses for
the messages whose generated modules print no skip functions (every message of the pure build),
against the skip functions the generator prints per layout (the compiled build's), for the hot and
client group messages: on random valid bodies and on their truncations and damaged copies, from every
struct's first byte, both end at the same position or fail with the same error."""

from __future__ import annotations

import random
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kcodec
from kcodec._generated import COMPILED
from kcodec.codegen.generate import merged_messages
from kcodec.codegen.planner import CLIENT_GROUP_MESSAGES, HOT_MESSAGES, plan_module
from kcodec.codegen.render import environment, render_module
from kcodec.protocol import strategies
from kcodec.protocol.codec import message_info, message_names, module
from kcodec.protocol.errors import DecodeError
from kcodec.protocol.model import LazyArray
from kcodec.protocol.skipping import skip_structs, skipper
from kcodec.protocol.wirewalk import Enter, struct_error, walk_info

ROOT = Path(__file__).resolve().parents[1]
KEEP = sorted(HOT_MESSAGES | CLIENT_GROUP_MESSAGES)
#: bytes after a struct's first byte at which its copies are cut or damaged (all of them up to this)
SPOTS = 48


@cache
def generated_skippers(name: str) -> dict[tuple[str, int], Any]:
    """(struct, version) -> the generated ``s_<Struct>_v<n>`` serving it: the module's own (compiled
    modules keep a function per layout), else the module printed with a function per layout
    (``plan_module(..., layouts_only=True)``, the pure build's printers) and run here."""
    merged = next(m for m in merged_messages(ROOT / "schemas")[0] if m.name == name)
    plan = plan_module(merged, {s.source: f"{s.source}/{name}.json" for s in merged.specs}, layouts_only=True)
    if name in COMPILED:
        functions = vars(module(name))
    else:
        functions = {"__name__": f"per_layout_{plan.module}"}
        exec(compile(render_module(environment(), plan), f"<{plan.module} per layout>", "exec"), functions)
    return {
        (fn.cls, v): functions[f"s_{fn.id}"] for fn in plan.functions if not fn.is_root for v in fn.served
    }


def outcome(fn: Any, buf: bytes, pos: int) -> tuple[Any, ...]:
    """Where a skip ends, or what it raised."""
    try:
        return ("ok", fn(buf, pos, len(buf)))
    except DecodeError as e:
        return ("DecodeError", e.reason, e.offset, e.path)
    except Exception as e:
        return (type(e).__name__, str(e))


def same(runtime: tuple[Any, ...], generated: tuple[Any, ...]) -> bool:
    """The same end, or both failed: with the same ``DecodeError`` when both raised one. (The hot
    modules read lengths in place, where a missing byte is an ``IndexError``; the runtime's helpers
    raise "unexpected end of buffer" for it. Either way the codec reads the body again with the wire
    walk for the error it reports, so only where the skip fails matters.)"""
    if "ok" in (runtime[0], generated[0]) or runtime[0] == generated[0] == "DecodeError":
        return runtime == generated
    return True


def struct_starts(name: str, version: int, data: bytes) -> list[tuple[str, int, int]]:
    """(struct, where it starts, where its enclosing value ends) of every struct below the message."""
    events = list(walk_info(message_info(name), version, data))
    return [(e.struct, e.offset, len(data)) for e in events if isinstance(e, Enter) and e.struct and e.field]


def copies(data: bytes, start: int) -> list[bytes]:
    """``data`` cut after each of the next ``SPOTS`` bytes from ``start``, and with each of them
    flipped (all its bits; its lowest bit)."""
    end = min(len(data), start + SPOTS)
    out = [data[:cut] for cut in range(start, end)]
    for at in range(start, end):
        for flip in (0xFF, 0x01):
            damaged = bytearray(data)
            damaged[at] ^= flip
            out.append(bytes(damaged))
    return [data, *out]


@pytest.mark.parametrize("name", KEEP)
def test_the_runtime_skipper_equals_the_generated_one(name: str) -> None:
    info = message_info(name)
    versions = sorted(info.owners)
    checked: set[tuple[str, int]] = set()

    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.data(), version=st.sampled_from(versions))
    def check(data: st.DataObject, version: int) -> None:
        msg = data.draw(strategies.messages(name, version, max_array_size=4))
        body = kcodec.encode(msg, version)
        for struct, start, _ in struct_starts(name, version, body):
            generated = generated_skippers(name)[(struct, version)]
            runtime = skipper(info, struct, version)
            for buf in copies(body, start):
                want, got = outcome(generated, buf, start), outcome(runtime, buf, start)
                assert same(got, want), (struct, version, start, buf.hex(), got, want)
            checked.add((struct, version))

    check()
    has_structs = any(f.struct_name for v in versions for s in info.structs for f in info.fields_at(s, v))
    assert checked or not has_structs


def reachable(name: str, version: int) -> set[str]:
    """The structs a body of the message at ``version`` can hold."""
    info = message_info(name)
    found: set[str] = set()

    def visit(struct: str) -> None:
        for f in info.fields_at(struct, version):
            if f.struct_name is not None and f.struct_name not in found:
                found.add(f.struct_name)
                visit(f.struct_name)

    visit(name)
    return found


def test_every_struct_of_a_kept_message_has_a_generated_skipper_to_compare_with() -> None:
    """The comparison above covers every (struct, version) the hot and client group messages have."""
    pairs = 0
    for name in KEEP:
        for v in message_info(name).owners:
            for struct in reachable(name, v):
                assert (struct, v) in generated_skippers(name), (name, struct, v)
                pairs += 1
    assert pairs > 300


#: bytes the random buffers are made of: small lengths and counts, nulls (-1, -2 ...), varint bytes
BYTES = (0, 0, 1, 1, 2, 3, 4, 0x7F, 0x80, 0xFE, 0xFF, 0xFF)


@pytest.mark.parametrize("name", KEEP)
def test_the_runtime_skipper_equals_the_generated_one_on_random_bytes(name: str) -> None:
    """Every (struct, version) of the message, from the first byte of random buffers of 0-100 bytes."""
    info = message_info(name)
    rng = random.Random(name)
    compared = 0
    for (struct, v), generated in sorted(generated_skippers(name).items(), key=lambda kv: kv[0]):
        if struct not in reachable(name, v):
            continue
        runtime = skipper(info, struct, v)
        for _ in range(60):
            buf = bytes(rng.choice(BYTES) for _ in range(rng.randrange(101)))
            want, got = outcome(generated, buf, 0), outcome(runtime, buf, 0)
            assert same(got, want), (struct, v, buf.hex(), got, want)
            compared += 1
    assert compared or not any(reachable(name, v) for v in info.owners)


#: versioned messages whose lazy arrays hold nested arrays, nullable structs, records, known tagged
#: fields, uuids or arrays of fixed-width values
VERSIONED = [
    ("StreamsGroupDescribeResponse", 0),
    ("ShareFetchResponse", 1),
    ("DescribeConfigsResponse", 4),
    ("DescribeConfigsResponse", 0),
    ("LeaderAndIsrRequest", 7),
    ("UpdateMetadataRequest", 8),
    ("ShareFetchRequest", 1),
    ("DescribeTopicPartitionsResponse", 0),
]


def lazy_outcome(name: str, version: int, data: bytes) -> tuple[str, int, str] | None:
    try:
        kcodec.decode(name, version, data, lazy=True, strict=False)
    except DecodeError as e:
        return (e.reason, e.offset, e.path)
    return None


def walk_outcome(name: str, version: int, data: bytes) -> tuple[str, int, str] | None:
    """What the wire walk finds reading the body as lazy decoding checks it (an independent reader)."""
    found = struct_error(message_info(name), version, name, data, 0, lazy=True)
    if found is None:
        return None
    return (found.reason, found.offset, f"{name}.{found.path}" if found.path else name)


@pytest.mark.parametrize(("name", "version"), VERSIONED)
def test_lazy_decoding_of_a_versioned_message_fails_where_the_lazy_walk_does(name: str, version: int) -> None:
    """The runtime skipper accepts what the wire walk accepts, and fails where it fails (the walk then
    names the error): on random bodies, cut and damaged (every byte flipped to its complement, and
    its lowest bit flipped: a null length -1 becomes -2)."""

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(msg=strategies.messages(name, version, max_array_size=3))
    def check(msg: Any) -> None:
        body = kcodec.encode(msg, version)
        assert lazy_outcome(name, version, body) is None
        for buf in copies(body, 0):
            assert lazy_outcome(name, version, buf) == walk_outcome(name, version, buf), buf.hex()

    check()


def test_pure_modules_print_no_skip_functions() -> None:
    """Every message of the pure build is versioned (``planner.versioned_module``); compiled modules
    keep their skip functions (every message is compiled with KCODEC_COMPILE=all)."""
    pure = [name for name in message_names() if name not in COMPILED]
    for name in pure:
        assert not [attr for attr in vars(module(name)) if attr.startswith("s_")], name


def test_a_lazy_array_of_a_versioned_message_is_skipped_by_the_runtime() -> None:
    cls = kcodec.message_class("DescribeConfigsResponse")
    result, entry = cls.DescribeConfigsResult, cls.DescribeConfigsResourceResult
    msg = cls(results=[result(resource_name="t", configs=[entry(name="a", value=None)]) for _ in range(3)])
    data = kcodec.encode(msg, 4)
    lazy = kcodec.decode("DescribeConfigsResponse", 4, data, lazy=True)
    assert isinstance(lazy.results, LazyArray) and not lazy.results.is_built
    assert lazy == msg
    info = message_info("DescribeConfigsResponse")
    assert skip_structs(info, "DescribeConfigsResult", 4, data, 5, len(data), 3) == len(data) - 1
    with pytest.raises(DecodeError) as e:
        kcodec.decode("DescribeConfigsResponse", 4, data[:-3], lazy=True)
    assert e.value.path == "DescribeConfigsResponse.results[2].configs[0]._tagged_fields"
    assert (e.value.reason, e.value.offset) == ("unexpected end of buffer", len(data) - 3)
