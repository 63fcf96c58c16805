"""Memory bounds of decompression (issue 12, defect 2), measured with tracemalloc and, for what the
native codecs allocate, with the peak RSS of a subprocess. No timing assertions.

* Sizes that compressed data only declares (zstd frame content size, gzip ISIZE, snappy length
  preambles, the lz4 block-size code) cost at most ``unproven_budget(N)`` = 8·N + 1 MiB for N input
  bytes before the data has produced that output.
* A bomb is stopped with at most ``max_size`` bytes of output buffer held, and valid data peaks at
  its own size: the buffer decompressed into is returned, not copied once more.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from typing import Any

import cramjam
import pytest

from kcodec.protocol.errors import KcodecError
from kcodec.records import Compression, NewRecord, build_batch, iter_batches, lz4frame
from kcodec.records import compression as comp
from kcodec.records.errors import DecompressedSizeError, DecompressionError

MIB = 1 << 20
SLACK = 64 * 1024  # Python objects around the buffers (exceptions, memoryviews, small lists)


def _peak(fn: Callable[[], Any]) -> tuple[int, Any]:
    """tracemalloc's peak while ``fn`` runs (bytes above what was allocated before) and its result
    or the exception it raised."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        try:
            result: Any = fn()
        except Exception as e:
            result = e
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return peak, result


# --- inputs that declare far more than they hold ------------------------------------------------------


def _zstd_claiming(size: int) -> bytes:
    frame = bytes(cramjam.zstd.compress(b"x" * 100))
    assert frame[4] == 0x20  # single segment, 1-byte content size: rewrite as a 4-byte one
    return frame[:4] + b"\xa0" + struct.pack("<I", size) + frame[6:]


def _gzip_claiming(size: int) -> bytes:
    member = bytes(cramjam.gzip.compress(b"y" * 100))
    return member[:-4] + struct.pack("<I", size)


def _xerial_claiming(size: int) -> bytes:
    block = bytearray(cramjam.snappy.compress_raw(b"z" * 100))
    preamble = bytearray()
    v = size
    while v >= 0x80:
        preamble.append((v & 0x7F) | 0x80)
        v >>= 7
    preamble.append(v)
    body = bytes(preamble) + bytes(block[1:])  # the original preamble for 100 is one byte
    return comp.XERIAL_MAGIC + struct.pack(">ii", 1, 1) + struct.pack(">i", len(body)) + body


def _lz4_big_block_code() -> bytes:
    """A frame whose block maximum is 4 MiB holding one tiny compressed block."""
    descriptor = bytes((0x40 | 0x20, 7 << 4))
    out = bytearray(struct.pack("<I", lz4frame.MAGIC)) + descriptor
    out.append((lz4frame.xxh32(descriptor) >> 8) & 0xFF)
    block = bytes(cramjam.lz4.compress_block(b"w" * 200, store_size=False))
    out += struct.pack("<I", len(block)) + block + b"\x00\x00\x00\x00"
    return bytes(out)


CLAIMS: dict[str, tuple[Compression, Callable[[], bytes]]] = {
    "zstd content size 60 MiB": (Compression.ZSTD, lambda: _zstd_claiming(60 * MIB)),
    "gzip ISIZE 4 GiB": (Compression.GZIP, lambda: _gzip_claiming(0xFFFFFFF0)),
    "gzip ISIZE 60 MiB": (Compression.GZIP, lambda: _gzip_claiming(60 * MIB)),
    "xerial snappy block of 60 MiB": (Compression.SNAPPY, lambda: _xerial_claiming(60 * MIB)),
    "raw snappy of 60 MiB": (
        Compression.SNAPPY,
        lambda: bytes(_xerial_claiming(60 * MIB)[20:]),
    ),
    "lz4 block maximum 4 MiB": (Compression.LZ4, _lz4_big_block_code),
}


@pytest.mark.parametrize("case", sorted(CLAIMS))
def test_declared_sizes_cost_at_most_the_unproven_budget(case: str) -> None:
    codec, make = CLAIMS[case]
    data = make()
    peak, result = _peak(lambda: comp.decompress(codec, data))
    assert peak <= comp.unproven_budget(len(data)) + SLACK, (case, peak)
    if codec is not Compression.LZ4:  # the others are lies: refused as corrupt
        assert isinstance(result, comp.CodecError), result
    else:
        assert result == b"w" * 200


def test_the_73_byte_batch_of_the_issue() -> None:
    """A record batch whose zstd frame declares 60 MiB: refused as corrupt, at ~1 MiB, not 60."""
    good = build_batch([NewRecord(b"x" * 100)], compression="zstd")
    header = good[:61]
    frame = _zstd_claiming(60 * MIB)
    batch = bytearray(header + frame)
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    import crc32c

    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    (b,) = iter_batches(bytes(batch))
    peak, result = _peak(lambda: list(b.records()))
    assert isinstance(result, DecompressionError), result
    assert peak <= comp.unproven_budget(len(batch)) + SLACK


# --- bombs and valid data: the peak is the limit, or the data's own size ------------------------------

LIMIT = 8 * MIB


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.ZSTD, Compression.LZ4, Compression.SNAPPY])
def test_a_bomb_peaks_at_the_limit(codec: Compression) -> None:
    bomb = comp.compress(codec, bytes(40 * MIB))
    assert len(bomb) < 2 * MIB
    peak, result = _peak(lambda: comp.decompress(codec, bomb, LIMIT))
    assert isinstance(result, comp.SizeLimitError), result
    assert peak <= LIMIT + LIMIT // 8 + SLACK, peak  # the limit (lz4: + bytearray growth slack)


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.ZSTD, Compression.LZ4, Compression.SNAPPY])
def test_valid_data_peaks_at_its_size(codec: Compression) -> None:
    payload = bytes(range(256)) * (6 * MIB // 256)
    packed = comp.compress(codec, payload)
    peak, result = _peak(lambda: comp.decompress(codec, packed, LIMIT))
    assert result == payload
    # the output itself; lz4 (and snappy as compressible as this, > 8x) append block by block: a
    # bytearray's growth slack (1/8) plus one block buffer
    appends = codec in (Compression.LZ4, Compression.SNAPPY)
    extra = len(payload) // 8 + 2 * SLACK if appends else SLACK
    assert peak <= len(payload) + extra, (codec, peak - len(payload))


def test_limits_still_hold_at_the_edge() -> None:
    payload = b"abc" * 100_000
    for codec in (Compression.GZIP, Compression.ZSTD, Compression.LZ4, Compression.SNAPPY):
        packed = comp.compress(codec, payload)
        assert comp.decompress(codec, packed, len(payload)) == payload
        with pytest.raises(comp.SizeLimitError):
            comp.decompress(codec, packed, len(payload) - 1)


def test_snappy_refuses_a_preamble_beyond_its_expansion() -> None:
    zeros = bytes(1 << 16)
    raw = bytes(cramjam.snappy.compress_raw(zeros))
    assert len(zeros) <= comp.SNAPPY_MAX_RATIO * len(raw)  # the most compressible input still fits
    with pytest.raises(comp.CodecError, match="more than snappy can expand to"):
        comp.decompress(Compression.SNAPPY, _xerial_claiming(10 * MIB))


# --- what the native codecs allocate: peak RSS of a fresh process --------------------------------------

_RSS_PROBE = r"""
import json, resource, struct, sys
import cramjam
from kcodec.records import compression as comp
from kcodec.records.model import Compression
case = sys.argv[1]
if case == "zstd-claim":
    frame = bytes(cramjam.zstd.compress(b"x" * 100))
    data = frame[:4] + b"\xa0" + struct.pack("<I", 60 << 20) + frame[6:]
    codec, limit = Compression.ZSTD, 64 << 20
elif case == "gzip-claim":
    member = bytes(cramjam.gzip.compress(b"y" * 100))
    data, codec, limit = member[:-4] + struct.pack("<I", 60 << 20), Compression.GZIP, 64 << 20
else:
    codec = Compression.ZSTD if case == "zstd-bomb" else Compression.GZIP
    data, limit = comp.compress(codec, bytes(48 << 20)), 16 << 20
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    comp.decompress(codec, data, limit)
    outcome = "ok"
except comp.CodecError as e:
    outcome = type(e).__name__
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"outcome": outcome, "rss_kib": after - before, "n": len(data), "limit": limit}))
"""


@pytest.mark.parametrize("case", ["zstd-claim", "gzip-claim", "zstd-bomb", "gzip-bomb"])
def test_native_memory_of_claims_and_bombs(case: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _RSS_PROBE, case], capture_output=True, text=True, timeout=120, check=True
    )
    r = json.loads(proc.stdout)
    grown = r["rss_kib"] * 1024
    if case.endswith("claim"):
        assert r["outcome"] == "CodecError"
        assert grown <= comp.unproven_budget(r["n"]) + 2 * MIB, r
    else:
        assert r["outcome"] == "SizeLimitError"
        assert grown <= r["limit"] + 4 * MIB, r


def test_errors_stay_in_the_hierarchy() -> None:
    bomb = build_batch([NewRecord(bytes(4 * MIB))], compression="gzip")
    (b,) = iter_batches(bomb, max_decompressed_size=MIB)
    with pytest.raises(DecompressedSizeError) as exc:
        list(b.records())
    assert isinstance(exc.value, KcodecError)
