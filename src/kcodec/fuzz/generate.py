"""Requests generated from the specs: any message at any version, with edge values.

A message is drawn from ``kcodec.protocol.strategies.messages`` (hypothesis) with bytes from the session's
seeded random source (hypothesis's ``fuzz_one_input``), so a seed gives the same messages again.
``Generator.edged`` then pushes some fields to the edges hypothesis reaches rarely: integer bounds
and protocol sentinels (-1/-2 epochs, -1..-5 timestamps), empty strings and strings of the maximum
length, unicode, null where nullable, empty and very large arrays, large bytes, unknown tagged fields
with large tags, and real record batches (every compression codec) in ``records`` fields. What a
field's type allows (bounds, maximum length, JSON kind) comes from the runtime's wire-type table
(``kcodec.protocol.wire_table``).

Fields that make a broker wait (``max_wait_ms``, ``*timeout_ms``) are kept short unless edged, so
that a request that is answered late is the broker's doing.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from functools import cache
from typing import Any

from hypothesis import HealthCheck, given, settings

from kcodec.protocol import sentinels
from kcodec.protocol.codec import encode, message_class, message_info
from kcodec.protocol.errors import KcodecError
from kcodec.protocol.model import Message
from kcodec.protocol.schema import FieldInfo, MessageInfo
from kcodec.protocol.strategies import MAX_TAG, messages
from kcodec.protocol.wire_table import WireType, wire_type
from kcodec.records import NewRecord, build_batch

__all__ = ["EDGE_INTS", "Generator", "is_wait_field"]

#: protocol sentinels every integer field may get (epochs, producer ids, timestamps, offsets)
EDGE_INTS: tuple[int, ...] = tuple(
    sorted(
        {
            sentinels.NO_LEADER_EPOCH,
            sentinels.LEADER_EPOCH_DURING_DELETE,
            sentinels.EARLIEST_TIMESTAMP,
            sentinels.MAX_TIMESTAMP,
            sentinels.EARLIEST_LOCAL_TIMESTAMP,
            sentinels.LATEST_TIERED_TIMESTAMP,
            0,
            1,
        }
    )
)
_WAIT_MAX_MS = 5
_BATCH_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def is_wait_field(f: FieldInfo) -> bool:
    """A field that makes a broker hold the request (Fetch max_wait_ms, Produce timeout_ms, ...)."""
    name = f.attr
    t = wire_type(f.type)
    wide = t is not None and t.bounds is not None and t.size >= 4  # int32, int64
    return wide and (name.endswith("timeout_ms") or name.endswith("wait_ms"))


class Generator:
    """Seeded requests of any message and version (see the module docstring)."""

    def __init__(self, rng: random.Random, *, max_array_size: int = 4, edge_rate: float = 0.15) -> None:
        self.rng = rng
        self.max_array_size = max_array_size
        self.edge_rate = edge_rate
        self._drawers: dict[tuple[str, int], Callable[[bytes], Message | None]] = {}

    # -- drawing -----------------------------------------------------------------------------------

    def _drawer(self, name: str, version: int) -> Callable[[bytes], Message | None]:
        drawer = self._drawers.get((name, version))
        if drawer is None:
            box: list[Message] = []
            strategy = messages(name, version, max_array_size=self.max_array_size)

            @settings(database=None, deadline=None, suppress_health_check=list(HealthCheck))
            @given(strategy)
            def take(value: Message) -> None:
                box.append(value)

            def draw(buf: bytes) -> Message | None:
                box.clear()
                take.hypothesis.fuzz_one_input(buf)  # type: ignore[attr-defined]
                return box[0] if box else None

            drawer = self._drawers[(name, version)] = draw
        return drawer

    def message(self, name: str, version: int) -> Message:
        """A valid ``name`` at ``version`` (wait fields kept short)."""
        msg = None
        for _ in range(4):
            msg = self._drawer(name, version)(self.rng.randbytes(4096))
            if msg is not None:
                break
        if msg is None:
            msg = message_class(name)()
        self._shorten_waits(message_info(name), name, msg, version)
        return msg

    def _shorten_waits(self, info: MessageInfo, struct: str, obj: Any, version: int) -> None:
        for f in info.fields_at(struct, version):
            value = getattr(obj, f.attr)
            if is_wait_field(f) and isinstance(value, int):
                setattr(obj, f.attr, self.rng.randint(0, _WAIT_MAX_MS))
            elif f.struct_name is not None and value is not None:
                for item in value if f.is_array else [value]:
                    self._shorten_waits(info, f.struct_name, item, version)

    # -- edges -------------------------------------------------------------------------------------

    def edged(self, msg: Message, name: str, version: int, *, max_bytes: int = 1 << 20) -> Message:
        """A copy of ``msg`` with some fields at edge values, still encodable at ``version`` and at
        most ``max_bytes`` long (``msg`` itself if no edged copy fits)."""
        info = message_info(name)
        for _ in range(3):
            out = copy.deepcopy(msg)
            self._edge_struct(info, name, out, version)
            try:
                if len(encode(out, version)) <= max_bytes:
                    return out
            except (KcodecError, TypeError, ValueError, OverflowError):
                continue
        return msg

    def _edge_struct(self, info: MessageInfo, struct: str, obj: Any, version: int) -> None:
        rng = self.rng
        for f in info.fields_at(struct, version):
            value = getattr(obj, f.attr)
            if rng.random() < self.edge_rate:
                setattr(obj, f.attr, self._edge_value(info, f, value, version))
            elif f.struct_name is not None and value is not None:
                for item in value if f.is_array else [value]:
                    self._edge_struct(info, f.struct_name, item, version)
            elif _is_records(f) and value is not None and rng.random() < 0.5:
                setattr(obj, f.attr, self.record_batch())
        if info.is_flexible(version) and rng.random() < self.edge_rate:
            known = {f.tag for f in info.fields_at(struct, version) if f.tag is not None}
            tag = rng.choice([MAX_TAG, 0xFFFFFFFF, 10_000, 99])
            if tag not in known:
                obj._unknown_tagged_fields = [(tag, rng.randbytes(rng.choice([0, 1, 300])))]

    def _edge_value(self, info: MessageInfo, f: FieldInfo, value: Any, version: int) -> Any:
        rng = self.rng
        if f.is_nullable(version) and rng.random() < 0.3:
            return None
        if f.is_array:
            items = list(value or [])
            if not items or rng.random() < 0.4:
                return []
            return items * rng.choice([50, 300, 1000])  # the same element many times: a large count
        t = wire_type(f.type)
        if t is None:
            return value
        if t.bounds is not None:
            lo, hi = t.bounds
            choices = [lo, hi, lo + 1, hi - 1, *(v for v in EDGE_INTS if lo <= v <= hi)]
            return rng.choice(choices)
        if _is_records(f):
            return self.record_batch()
        if t.json == "string":
            return rng.choice(_strings(t))
        if t.json == "base64":
            return rng.choice([b"", rng.randbytes(1), bytes(min(65536, t.max_length))])
        return value

    def record_batch(self) -> bytes:
        """A valid magic 2 record batch: a few records, any codec, sometimes large and compressible."""
        rng = self.rng
        big = rng.random() < 0.1
        records = [
            NewRecord(
                bytes(rng.choice([0, 10, 1000])) if not big else bytes(256 * 1024),
                key=rng.choice([None, b"", b"k"]),
                headers=[("h", b"v")] if rng.random() < 0.3 else [],
            )
            for _ in range(rng.randint(1, 3))
        ]
        return build_batch(records, compression=rng.choice(_BATCH_CODECS))


def _is_records(f: FieldInfo) -> bool:
    """A field of the wire-type table's ``records`` family (record batches)."""
    t = wire_type(f.type)
    return t is not None and t.snippet == "records"


@cache
def _strings(t: WireType) -> tuple[str, ...]:
    """Edge strings, one of the type's maximum length (Kafka's 32767 bytes)."""
    return ("", "\x00", "é" * 40, "\U0001f600" * 20, "a" * t.max_length, "..", "/")
