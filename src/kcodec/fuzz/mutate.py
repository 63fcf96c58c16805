"""Structure-aware mutation of encoded request bodies, aimed by ``kcodec.fuzz.layout`` spans.

Each mutation changes one wire item on purpose (a length off by one, negative or huge; an array
count far beyond the bytes; an overlong or unterminated varint; a flipped null marker; a compact
length of 0 where null is not allowed; a tagged-field size that lies, duplicated or unordered tags;
an integer at its bounds; a bool, float or uuid at an edge; invalid UTF-8), or damages the records
inside (bad CRC, another compression codec, corrupt compressed bytes behind a correct CRC, a
decompression bomb), or is blind (truncation, bit flips, inserted bytes). ``Mutation.detail`` says
what was changed and where.

Which spans hold what (an integer and its bounds, a length, UTF-8 text, record batches) comes from
the runtime's wire-type table (``kcodec.protocol.wire_table``), so every type in it is aimed at.
"""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Callable
from dataclasses import dataclass

import crc32c

from kcodec.fuzz.layout import Span
from kcodec.protocol.wire_table import WIRE_TYPES, WireType, length_kinds
from kcodec.records.compression import compress
from kcodec.records.model import Compression

__all__ = ["BODY_MUTATIONS", "FrameMutation", "Mutation", "Mutator", "mutate_frame", "uvarint"]


@dataclass(frozen=True, slots=True)
class Mutation:
    """A mutated body: which mutation (``name``), the bytes, and what was changed."""

    name: str
    body: bytes
    detail: str


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _int_bytes(span: Span, value: int) -> bytes:
    """``value`` written as ``span`` is written (varint, or fixed width, wrapped to it)."""
    if span.compact:
        if span.kind in length_kinds():
            value += 1  # compact lengths hold length + 1
        return uvarint(value & 0xFFFFFFFF if value < 0 else value)
    width = span.size
    return (value % (1 << (8 * width))).to_bytes(width, "big")


def _replace(body: bytes, span: Span, new: bytes) -> bytes:
    return body[: span.offset] + new + body[span.end :]


_BATCH_HEADER = 61
_CRC_AT = 17
_ATTR_AT = 21


def _fix_crc(batch: bytearray) -> None:
    struct.pack_into(">I", batch, _CRC_AT, crc32c.crc32c(bytes(batch[_ATTR_AT:])))


class Mutator:
    """Seeded mutations of bodies whose spans are known."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def mutate(self, body: bytes, spans: list[Span]) -> Mutation:
        """One mutation of ``body``: aimed at a span of a fitting kind when there is one."""
        rng = self.rng
        for _ in range(8):
            name, fn, wants = rng.choice(BODY_MUTATIONS)
            targets = [s for s in spans if wants(s)] if wants is not None else spans
            if wants is not None and not targets:
                continue
            span = rng.choice(targets) if targets else None
            result = fn(self, body, spans, span)
            if result is not None and result[0] != body:
                return Mutation(name, result[0], result[1])
        data = bytearray(body or b"\x00")
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
        return Mutation("bit_flip", bytes(data), f"bit flipped in byte {i}")

    # -- lengths and counts --------------------------------------------------------------------------

    def length_off_by_one(self, body: bytes, spans: list[Span], s: Span | None) -> tuple[bytes, str] | None:
        assert s is not None and s.value is not None
        new = s.value + self.rng.choice([-1, 1])
        return _replace(body, s, _int_bytes(s, new)), f"{_where(s)}: {s.kind} {s.value} -> {new}"

    def length_negative(self, body: bytes, spans: list[Span], s: Span | None) -> tuple[bytes, str] | None:
        assert s is not None
        new = self.rng.choice([-1, -2, -(2**15), -(2**31)])
        if s.compact:
            new = -1  # compact: 0 on the wire, "null"
        return _replace(body, s, _int_bytes(s, new)), f"{_where(s)}: {s.kind} {s.value} -> {new}"

    def length_huge(self, body: bytes, spans: list[Span], s: Span | None) -> tuple[bytes, str] | None:
        assert s is not None
        limit = (1 << (8 * s.size - 1)) - 1 if not s.compact else 0xFFFFFFFE
        new = self.rng.choice([limit, limit - 1, 1 << 20, 0x7FFF, 10_000_000])
        new = min(new, limit)
        return _replace(body, s, _int_bytes(s, new)), f"{_where(s)}: {s.kind} {s.value} -> {new}"

    # -- varints -----------------------------------------------------------------------------------

    def varint_overlong(self, body: bytes, spans: list[Span], s: Span | None) -> tuple[bytes, str] | None:
        assert s is not None
        raw = body[s.offset : s.end]
        choice = self.rng.randrange(3)
        if choice == 0:  # non-minimal: the same value with a redundant continuation byte
            new = bytes([raw[0] | 0x80]) + raw[1:] + b"\x00" if len(raw) == 1 else raw[:-1] + bytes(
                [raw[-1] | 0x80, 0]
            )
            what = "non-minimal varint"
        elif choice == 1:  # beyond 32 bits (5th byte > 0x0f) or longer than 5 bytes
            new = b"\xff\xff\xff\xff\x7f" if self.rng.random() < 0.5 else b"\x80" * 6 + b"\x01"
            what = "varint beyond 32 bits"
        else:  # never terminated before the end of the body
            new = b"\xff" * (len(body) - s.offset)
            return body[: s.offset] + new, f"{_where(s)}: unterminated varint to the end"
        return _replace(body, s, new), f"{_where(s)}: {what} ({raw.hex()} -> {new.hex()})"

    # -- null markers and compact nulls -----------------------------------------------------------

    def null_flip(self, body: bytes, spans: list[Span], s: Span | None) -> tuple[bytes, str] | None:
        assert s is not None
        if s.kind == "struct_marker":
            new = self.rng.choice([-1, 0, 2, -128]) if s.value == 1 else 1
            return _replace(body, s, _int_bytes(s, new)), f"{_where(s)}: struct marker {s.value} -> {new}"
        if s.value == -1:
            return None
        return _replace(body, s, _int_bytes(s, -1)), f"{_where(s)}: {s.kind} {s.value} -> null (-1)"

    # -- tagged fields ------------------------------------------------------------------------------

    def tag_size_lie(self, body: bytes, spans: list[Span], s: Span | None) -> tuple[bytes, str] | None:
        assert s is not None and s.value is not None
        new = self.rng.choice([s.value + 1, max(s.value - 1, 0), 0xFFFFFFF, s.value + 1000])
        return _replace(body, s, uvarint(new)), f"{_where(s)}: tag size {s.value} -> {new}"

    def tag_count_lie(self, body: bytes, spans: list[Span], s: Span | None) -> tuple[bytes, str] | None:
        assert s is not None and s.value is not None
        new = self.rng.choice([s.value + 1, s.value + 2, 0x7FFFFFFF])
        return _replace(body, s, uvarint(new)), f"{_where(s)}: tag count {s.value} -> {new}"

    def tags_duplicated(self, body: bytes, spans: list[Span], s: Span | None) -> tuple[bytes, str] | None:
        """Append to a tagged section a second copy of its last field (or two unordered new ones)."""
        assert s is not None and s.value is not None
        i = spans.index(s)
        fields = _tag_fields(spans, i)
        if fields:
            start, end = fields[-1]
            extra = body[start:end]
            what = f"tag field repeated ({extra.hex()})"
        else:
            extra = b"\x05\x00" + b"\x02\x00"  # tags 5 then 2: descending
            what = "tags 5 and 2 added in descending order"
        new_count = s.value + (1 if fields else 2)
        end = fields[-1][1] if fields else s.end
        mutated = body[: s.offset] + uvarint(new_count) + body[s.end : end] + extra + body[end:]
        return mutated, f"{_where(s)}: {what}"

    # -- values ------------------------------------------------------------------------------------

    def int_edge(self, body: bytes, spans: list[Span], s: Span | None) -> tuple[bytes, str] | None:
        """An integer at its type's bounds (or -1, -2, 0, one inside a bound) as the table has them."""
        assert s is not None
        t = _span_type(s)
        assert t is not None and t.bounds is not None
        lo, hi = t.bounds
        new = self.rng.choice([v for v in (lo, hi, -1, -2, 0, hi - 1, lo + 1) if lo <= v <= hi])
        return _replace(body, s, t.pack(new)), f"{_where(s)}: {s.kind} {s.value} -> {new}"

    def value_edge(self, body: bytes, spans: list[Span], s: Span | None) -> tuple[bytes, str] | None:
        """A fixed-width value that is not an integer at an edge: a bool byte other than 0 and 1, a
        NaN, infinite, negative zero or extreme float, an all-zero or all-one uuid."""
        assert s is not None
        t = _span_type(s)
        assert t is not None
        new = self.rng.choice(_value_edges(t))
        return _replace(body, s, new), f"{_where(s)}: {s.kind} -> {new.hex()}"

    def bad_utf8(self, body: bytes, spans: list[Span], s: Span | None) -> tuple[bytes, str] | None:
        assert s is not None
        i = s.offset + self.rng.randrange(s.size)
        bad = self.rng.choice([b"\xff", b"\xc0", b"\xed"])
        return body[:i] + bad + body[i + 1 :], f"{_where(s)}: invalid UTF-8 byte {bad.hex()} at {i}"

    # -- records ----------------------------------------------------------------------------------

    def records_damage(self, body: bytes, spans: list[Span], s: Span | None) -> tuple[bytes, str] | None:
        assert s is not None
        batch = bytearray(body[s.offset : s.end])
        if len(batch) < _BATCH_HEADER or batch[16] != 2:
            return None
        rng = self.rng
        choice = rng.randrange(5)
        if choice == 0:
            batch[_CRC_AT] ^= 0xFF
            what = "batch CRC wrong"
        elif choice == 1:
            codec = rng.choice([1, 2, 3, 4, 5, 7])
            attrs = (struct.unpack_from(">h", batch, _ATTR_AT)[0] & ~7) | codec
            struct.pack_into(">h", batch, _ATTR_AT, attrs)
            _fix_crc(batch)
            what = f"compression attribute set to {codec}, CRC fixed"
        elif choice == 2:
            if len(batch) <= _BATCH_HEADER + 4:
                return None
            i = rng.randrange(_BATCH_HEADER, len(batch))
            batch[i] ^= 0xFF
            _fix_crc(batch)
            what = f"records byte {i} corrupted behind a correct CRC"
        elif choice == 3:
            struct.pack_into(">i", batch, 57, rng.choice([0x7FFFFFFF, -1, 1_000_000]))
            _fix_crc(batch)
            what = "record count lies, CRC fixed"
        else:
            return self._bomb(body, spans, s, batch)
        return _replace(body, s, bytes(batch)), f"{_where(s)}: {what}"

    def _bomb(self, body: bytes, spans: list[Span], s: Span, batch: bytearray) -> tuple[bytes, str] | None:
        """The batch's records replaced by a small compressed payload that expands to 64 MiB."""
        codec = self.rng.choice([Compression.GZIP, Compression.ZSTD, Compression.LZ4, Compression.SNAPPY])
        payload = _bomb_payload(codec)
        new = bytearray(batch[:_BATCH_HEADER]) + payload
        struct.pack_into(">i", new, 8, len(new) - 12)
        attrs = (struct.unpack_from(">h", new, _ATTR_AT)[0] & ~7) | {
            Compression.GZIP: 1, Compression.SNAPPY: 2, Compression.LZ4: 3, Compression.ZSTD: 4
        }[codec]
        struct.pack_into(">h", new, _ATTR_AT, attrs)
        _fix_crc(new)
        i = spans.index(s)
        length = spans[i - 1]
        if length.kind != "records_length":
            return None
        mutated = body[: length.offset] + _int_bytes(length, len(new)) + bytes(new) + body[s.end :]
        return mutated, f"{_where(s)}: {codec.value} bomb ({len(payload)} bytes expanding to 64 MiB)"

    # -- blind -------------------------------------------------------------------------------------

    def truncate(self, body: bytes, spans: list[Span], s: Span | None) -> tuple[bytes, str] | None:
        if not body:
            return None
        cut = s.offset + (s.size // 2 if s is not None else 0) if s is not None else len(body) // 2
        return body[:cut], f"body cut at byte {cut} of {len(body)}"

    def bit_flips(self, body: bytes, spans: list[Span], s: Span | None) -> tuple[bytes, str] | None:
        if not body:
            return None
        data = bytearray(body)
        where = []
        for _ in range(self.rng.randint(1, 4)):
            i = self.rng.randrange(len(data))
            data[i] ^= 1 << self.rng.randrange(8)
            where.append(i)
        return bytes(data), f"bits flipped in bytes {sorted(where)}"

    def insert_bytes(self, body: bytes, spans: list[Span], s: Span | None) -> tuple[bytes, str] | None:
        i = self.rng.randrange(len(body) + 1)
        extra = self.rng.choice([b"\x00", b"\xff", self.rng.randbytes(self.rng.randint(1, 16))])
        return body[:i] + extra + body[i:], f"{len(extra)} bytes inserted at {i}"


def _tag_fields(spans: list[Span], count_index: int) -> list[tuple[int, int]]:
    """(start, end) of each field of the tagged section whose count span is ``spans[count_index]``."""
    out: list[tuple[int, int]] = []
    count = spans[count_index].value or 0
    j = count_index + 1
    for _ in range(count):
        if j + 1 >= len(spans) or spans[j].kind not in ("tag", "known_tag"):
            break
        start = spans[j].offset
        size = spans[j + 1].value or 0
        end = spans[j + 1].end + size
        out.append((start, end))
        j += 2
        while j < len(spans) and spans[j].offset < end:
            j += 1
    return out


_BOMBS: dict[Compression, bytes] = {}


def _bomb_payload(codec: Compression) -> bytes:
    payload = _BOMBS.get(codec)
    if payload is None:
        payload = _BOMBS[codec] = compress(codec, bytes(64 << 20))
    return payload


def _span_type(s: Span) -> WireType | None:
    """The wire type whose value bytes ``s`` holds (None for lengths, counts, markers and tags)."""
    return next((t for t in WIRE_TYPES.values() if t.span_kind == s.kind), None)


def _value_edges(t: WireType) -> list[bytes]:
    if t.json == "bool":
        return [b"\x02", b"\xff"]  # Kafka reads any byte but 0 as true; kcodec writes 1
    if t.json == "float":
        return [t.pack(x) for x in (math.nan, math.inf, -math.inf, -0.0, 5e-324, 1.7976931348623157e308)]
    return [bytes(t.size), b"\xff" * t.size]


def _is_int(s: Span) -> bool:
    t = _span_type(s)
    return t is not None and t.bounds is not None


def _is_other_fixed(s: Span) -> bool:
    t = _span_type(s)
    return t is not None and t.fixed_width and t.bounds is None


def _is_length(s: Span) -> bool:
    return s.kind in length_kinds()


def _is_family(*json_kinds: str, snippet: str = "") -> Callable[[Span], bool]:
    """Spans of value bytes of a type of one of ``json_kinds`` (or of the ``snippet`` family)."""

    def wants(s: Span) -> bool:
        t = _span_type(s)
        return t is not None and not t.fixed_width and (t.json in json_kinds or t.snippet == snippet)

    return wants


def _where(s: Span) -> str:
    return f"{s.path or '(message)'} at byte {s.offset}"


def _is(*kinds: str) -> Callable[[Span], bool]:
    wanted = frozenset(kinds)
    return lambda s: s.kind in wanted


_Fn = Callable[[Mutator, bytes, list[Span], Span | None], tuple[bytes, str] | None]

#: (name, function, which spans it aims at (None: any or none)); chosen uniformly
BODY_MUTATIONS: list[tuple[str, _Fn, Callable[[Span], bool] | None]] = [
    ("length_off_by_one", Mutator.length_off_by_one, _is_length),
    ("length_negative", Mutator.length_negative, _is_length),
    ("length_huge", Mutator.length_huge, _is_length),
    ("count_huge", Mutator.length_huge, _is("array_count")),
    ("varint_overlong", Mutator.varint_overlong, lambda s: s.compact),
    ("null_flip", Mutator.null_flip, lambda s: s.kind == "struct_marker" or _is_length(s)),
    ("tag_size_lie", Mutator.tag_size_lie, _is("tag_size")),
    ("tag_count_lie", Mutator.tag_count_lie, _is("tag_count")),
    ("tags_duplicated", Mutator.tags_duplicated, _is("tag_count")),
    ("int_edge", Mutator.int_edge, _is_int),
    ("value_edge", Mutator.value_edge, _is_other_fixed),
    ("bad_utf8", Mutator.bad_utf8, _is_family("string")),
    ("records_damage", Mutator.records_damage, _is_family(snippet="records")),
    ("truncate", Mutator.truncate, None),
    ("bit_flips", Mutator.bit_flips, None),
    ("insert_bytes", Mutator.insert_bytes, None),
]


# --- frame-level mutations: the size prefix and the header lie -----------------------------------


@dataclass(frozen=True, slots=True)
class FrameMutation:
    """A whole frame that lies about itself (``frames``: sent back to back on one connection)."""

    name: str
    frames: tuple[bytes, ...]
    detail: str


def mutate_frame(
    rng: random.Random, api_key: int, version: int, cid: int, body: bytes, max_version: int
) -> FrameMutation:
    """One frame-level mutation of a request for ``api_key`` at ``version`` with ``body``."""
    from kcodec.fuzz.wire import frame, header_bytes, request_frame
    from kcodec.protocol.registry import api

    hv = api(api_key).request_header_version(version)
    good = request_frame(api_key, version, cid, body)
    choice = rng.randrange(8)
    if choice == 0:
        other = 1 if hv == 2 else 2
        f = frame(header_bytes(api_key, version, cid, other), body)
        return FrameMutation("header_version_mismatch", (f,), f"header v{other} instead of v{hv}")
    if choice == 1:
        key = rng.choice([-1, 1000, 32767, 99])
        f = frame(header_bytes(key, version, cid, 1), body)
        return FrameMutation("unknown_api_key", (f,), f"api key {key}")
    if choice == 2:
        v = rng.choice([max_version + 1, 32767, -1])
        f = frame(header_bytes(api_key, v, cid, hv), body)
        what = f"api version {v} (the broker offers up to {max_version})"
        return FrameMutation("unknown_api_version", (f,), what)
    if choice == 3:
        size = rng.choice([0x7FFFFFFF, 200 << 20, 100 << 20])
        return FrameMutation("oversized_frame", (frame(good[4:], b"", size),), f"size prefix {size}")
    if choice == 4:
        size = rng.choice([-1, -(2**31), 0, 1, 3])
        return FrameMutation("bad_frame_size", (frame(good[4:], b"", size),), f"size prefix {size}")
    if choice == 5:
        cut = rng.randrange(4, len(good)) if len(good) > 4 else 4
        return FrameMutation("truncated_frame", (good[:cut],), f"{cut} of {len(good)} bytes sent")
    if choice == 6:
        delta = rng.choice([-3, -1, 1, 2, 100])
        f = frame(good[4:], b"", len(good) - 4 + delta)
        return FrameMutation("size_mismatch", (f,), f"size prefix {delta:+d} from the true size")
    return FrameMutation("correlation_reuse", (good, good), f"two requests with correlation id {cid}")
