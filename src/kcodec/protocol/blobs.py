"""Large bytes/records values in a ``ChunkedOut``: setting one aside uncopied (``blob``) and assembling
the encoding from the buffer and them (``parts`` for ``encode_chunks``, ``joined`` for ``encode``).

Plain functions rather than ``ChunkedOut`` methods so that the compiled build compiles them (a native
module cannot hold a ``bytearray`` subclass): generated encoders call ``blob`` once per large value,
and in the compiled build that call runs no interpreted frame. Setting a value aside records where it
goes instead of moving the bytes written so far out of the buffer, so ``blob`` copies nothing."""

from __future__ import annotations

from kcodec.protocol.chunked import Buffer, ChunkedOut


def blob(out: ChunkedOut, value: Buffer) -> None:
    """Append ``value`` to ``out`` without copying it."""
    chunks = out.chunks
    if chunks is None:
        chunks = out.chunks = []
    chunks.append(len(out))
    chunks.append(value)


def parts(out: ChunkedOut) -> list[Buffer]:
    """The buffers whose concatenation is what was written to ``out``, in order (no empty ones)."""
    chunks = out.chunks
    if chunks is None:
        return [out] if out else []
    result: list[Buffer] = []
    start = 0
    for i in range(0, len(chunks), 2):
        end: int = chunks[i]
        if end > start:
            result.append(out[start:end])
        result.append(chunks[i + 1])
        start = end
    if len(out) > start:
        result.append(out[start:])
    return result


def joined(out: ChunkedOut) -> bytes:
    """What was written to ``out``, as one ``bytes`` (the large values copied once, here)."""
    if out.chunks is None:
        return bytes(out)
    return b"".join(parts(out))
