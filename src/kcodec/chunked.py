"""The output buffer of ``kcodec.encode``, kept apart from ``kcodec._wire`` (which the compiled build
compiles) because it subclasses ``bytearray``, which native classes cannot."""

from __future__ import annotations

Buffer = bytes | bytearray | memoryview

# bytes/records values at least this long are not copied into a ChunkedOut (see below).
CHUNK_BYTES = 8192


class ChunkedOut(bytearray):
    """The output buffer of ``kcodec.encode``: generated encoders append small values to it as to any
    bytearray, but keep a large bytes/records value (e.g. 100 KiB of record batches) as a chunk of its
    own instead of copying it in, so the final bytes are assembled with a single copy."""

    # No __init__ and no __slots__: creating one costs what a bytearray costs, and the instance dict
    # holding ``chunks`` only comes into being when a large value is appended.
    chunks: list[Buffer] | None = None

    def blob(self, value: Buffer) -> None:
        """Append ``value`` without copying it now."""
        if self.chunks is None:
            self.chunks = []
        self.chunks.append(bytes(self))
        self.chunks.append(value)
        del self[:]

    def parts(self) -> list[Buffer]:
        """The chunks and what follows them, in order (empty parts left out)."""
        if self.chunks is None:
            return [self] if self else []
        return [*self.chunks, self] if self else list(self.chunks)

    def getvalue(self) -> bytes:
        if self.chunks is None:
            return bytes(self)
        return b"".join([*self.chunks, self])
