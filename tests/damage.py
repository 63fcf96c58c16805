"""Damaged bodies for the partial reader's tests: real encodings with one wire item broken (a length or
count, a string's UTF-8, a tagged-field size), located by the fuzz layout, and the intact body's
map of where every field ends, to restrict a full decode's JSON to what precedes a spot."""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from typing import Any

from kcodec.protocol.codec import message_info
from kcodec.protocol.wirewalk import Enter, Span, walk_info

_SPLIT = re.compile(r"[.\[]")


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _int(span: Span, value: int) -> bytes:
    if span.compact:
        return uvarint(value + 1 if span.kind != "tag_size" and span.kind != "tag_count" else value)
    return struct.pack(">h" if span.size == 2 else ">i", value)


def damaged(name: str, version: int, data: bytes) -> Iterator[tuple[str, int, bytes]]:
    """(what, spot, body) for every way of breaking one item of ``data``: ``spot`` is the broken
    item's offset (nothing before it changed)."""
    info = message_info(name)
    spans = [e for e in walk_info(info, version, data) if isinstance(e, Span)]
    for s in spans:
        head, tail = data[: s.offset], data[s.end :]
        if s.kind in ("string_length", "bytes_length", "records_length", "array_count"):
            assert s.value is not None
            limit = 0x7FFF if s.kind == "string_length" and not s.compact else 0x7FFFFFF
            for value in (-1, -2, s.value + 1, limit):
                if s.compact and value < -1:
                    continue
                yield f"{s.kind} {s.value}->{value} at {s.path}", s.offset, head + _int(s, value) + tail
        elif s.kind == "string_data":
            yield f"invalid UTF-8 at {s.path}", s.offset, head + b"\xff" + data[s.offset + 1 :]
        elif s.kind == "tag_size":
            yield f"tag size too big at {s.path}", s.offset, head + uvarint(0x0FFFFFFF) + tail
        elif s.kind == "tag_count" and s.value == 0:
            # an unknown tag (tag 90) whose size overruns the body
            bad = uvarint(1) + uvarint(90) + uvarint(0x0FFFFFFF)
            yield f"unknown tag with a bad size at {s.path}", s.offset, head + bad + tail


def field_map(name: str, version: int, data: bytes) -> tuple[dict[str, int], dict[str, int]]:
    """(where each path ends, where each struct starts) in the intact body ``data``."""
    ends: dict[str, int] = {}
    starts: dict[str, int] = {}
    for e in walk_info(message_info(name), version, data):
        if isinstance(e, Span):
            if e.kind == "array_count":
                ends[e.path + "#count"] = e.end
            path = e.path
            while path:
                ends[path] = max(ends.get(path, 0), e.end)
                cut = max(path.rfind("."), path.rfind("["))
                path = path[:cut] if cut > 0 else ""
        elif isinstance(e, Enter) and e.struct is not None:
            starts[e.path] = e.offset
    return ends, starts


_MISSING = object()


def restrict(name: str, version: int, obj: dict[str, Any], ends: dict[str, int], starts: dict[str, int],
             k: int) -> dict[str, Any]:
    """``obj`` (a body's Kafka JSON) restricted to what precedes byte ``k`` of the intact body mapped
    by ``ends``/``starts``: fields whose bytes all lie before ``k``, and the struct or array the spot
    is in, cut there (a struct once any of its bytes lie before ``k``); tagged fields whole or not."""
    info = message_info(name)

    def struct_(o: dict[str, Any], sname: str, path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in info.fields_at(sname, version):
            if f.json_name not in o:
                continue
            p = f"{path}.{f.attr}" if path else f.attr
            val = o[f.json_name]
            if f.is_tagged(version):
                if p in ends and ends[p] <= k:
                    out[f.json_name] = val
                continue
            r = value(f, val, p)
            if r is not _MISSING:
                out[f.json_name] = r
        return out

    def value(f: Any, val: Any, p: str) -> Any:
        if p not in ends:
            return _MISSING
        if f.is_array:
            count_end = ends.get(p + "#count", None)
            if count_end is None or count_end > k:
                return _MISSING
            if val is None:
                return None
            items = []
            for i, item in enumerate(val):
                pi = f"{p}[{i}]"
                if f.struct_name is not None:
                    if pi not in starts or starts[pi] >= k:
                        break
                    items.append(struct_(item, f.struct_name, pi))
                else:
                    if pi not in ends or ends[pi] > k:
                        break
                    items.append(item)
            return items
        if f.struct_name is not None and val is not None:
            if p not in starts or starts[p] >= k:
                return _MISSING
            return struct_(val, f.struct_name, p)
        return val if ends[p] <= k else _MISSING

    return struct_(obj, name, "")
