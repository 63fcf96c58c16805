"""A binary file that counts the bytes read from it: what a progress bar shows, and where a parallel
decode's worker is in its file (the marks' positions)."""

from __future__ import annotations

from typing import IO

__all__ = ["CountingReader"]


class CountingReader:
    """Reads, seeks and tells through to ``f``; ``count`` is the position reached by reading."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f = f
        self.count = 0
        self.name: str = getattr(f, "name", "-")  # (what the file's issues name)

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.count += len(data)
        return data

    def seek(self, pos: int) -> int:
        self.count = pos
        return self.f.seek(pos)

    def seekable(self) -> bool:
        return self.f.seekable()

    def tell(self) -> int:
        return self.f.tell()
