"""The output buffer of ``kcodec.encode``, kept apart from ``kcodec.protocol._wire`` (which the compiled build
compiles) because it subclasses ``bytearray``, which native classes cannot. What it holds besides its
bytes is written and read by ``kcodec.protocol.blobs``."""

from __future__ import annotations

from typing import Any

Buffer = bytes | bytearray | memoryview

# bytes/records values at least this long are not copied into a ChunkedOut (see below).
CHUNK_BYTES = 8192


class ChunkedOut(bytearray):
    """The output buffer of ``kcodec.encode``: generated encoders append small values to it as to any
    bytearray, but keep a large bytes/records value (e.g. 100 KiB of record batches) aside, uncopied
    (``kcodec.protocol.blobs.blob``), so the final bytes are assembled with a single copy
    (``blobs.joined``)."""

    # No __init__ and no __slots__: creating one costs what a bytearray costs, and the instance dict
    # holding ``chunks`` only comes into being when a large value is appended. Then ``chunks`` is
    # [offset, value, offset, value, ...]: each large value, after the offset in this buffer's own
    # bytes at which it goes (the bytes written before it).
    chunks: list[Any] | None = None
