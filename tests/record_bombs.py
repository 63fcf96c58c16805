"""Hand-built record batches for the record-count bomb tests (tests/test_record_bombs.py) and the
regression corpus (tests/fuzz_corpus/record_bombs.json): batches whose header, offsets or counts no
Kafka writer would produce, built byte by byte (kcodec's builder refuses them)."""

from __future__ import annotations

import struct
import zlib

import crc32c

from kcodec.records import Compression
from kcodec.records.compression import compress
from kcodec.records.varint import write_varint

_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes .. record count
_LEGACY_V1 = struct.Struct(">bbq")  # magic, attributes, timestamp


def v2_record(delta: int, value: bytes = b"x") -> bytes:
    """One magic 2 record: no key, ``value``, offset delta ``delta`` (8 bytes for delta 0, 1 byte)."""
    body = bytearray(b"\x00\x00")  # attributes, timestamp delta
    write_varint(body, delta)
    write_varint(body, -1)  # null key
    write_varint(body, len(value))
    body += value
    write_varint(body, 0)  # no headers
    out = bytearray()
    write_varint(out, len(body))
    return bytes(out + body)


def v2_batch(records: bytes, count: int, last_delta: int, codec: Compression = Compression.NONE) -> bytes:
    """A magic 2 batch at base offset 0 holding ``records`` (compressed with ``codec``), its header
    declaring ``count`` records and ``last_delta``; the CRC is valid."""
    body = records if codec is Compression.NONE else compress(codec, records)
    after_crc = _AFTER_CRC.pack(codec.id, last_delta, 0, 0, -1, -1, -1, count) + body
    length = 4 + 1 + 4 + len(after_crc)  # leader epoch, magic, crc, then the rest
    return struct.pack(">qiibI", 0, length, -1, 2, crc32c.crc32c(after_crc)) + after_crc


def delta_zero_bomb(count: int, codec: Compression = Compression.ZSTD) -> bytes:
    """``count`` identical 8-byte records, every offset delta 0, the header consistent with them."""
    return v2_batch(v2_record(0) * count, count, count - 1, codec)


def legacy_message(offset: int, value: bytes, attributes: int = 0) -> bytes:
    """One magic 1 message (CRC32 valid), null key."""
    rest = _LEGACY_V1.pack(1, attributes, 0) + struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    crc = zlib.crc32(rest)
    return struct.pack(">qiI", offset, 4 + len(rest), crc) + rest


def legacy_wrapper(offsets: list[int], wrapper_offset: int = 0) -> bytes:
    """A gzip magic 1 wrapper holding one 1-byte message per inner offset in ``offsets``."""
    inner = b"".join(legacy_message(o, b"x") for o in offsets)
    return legacy_message(wrapper_offset, compress(Compression.GZIP, inner, magic=1), attributes=1)
