"""Version ranges as Kafka's specs write them: ``"3+"``, ``"0-7"``, ``"5"`` or ``"none"``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

MAX_VERSION = 0x7FFF  # Kafka's Short.MAX_VALUE: the open end of "N+"


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive range ``lowest..highest``; the empty range is ``Versions.NONE``."""

    lowest: int
    highest: int

    NONE: ClassVar[Versions]
    ALL: ClassVar[Versions]

    @staticmethod
    def parse(text: object, *, what: str = "versions") -> Versions:
        """Parse a spec's version string; raise ``ValueError`` with an explanation."""
        if not isinstance(text, str):
            raise ValueError(f"{what} must be a string like '0+', '1-3' or 'none', not {text!r}")
        s = text.strip()
        if s == "none":
            return Versions.NONE
        try:
            if s.endswith("+"):
                return Versions._checked(int(s[:-1]), MAX_VERSION, what, text)
            if "-" in s:
                lo, hi = s.split("-", 1)
                return Versions._checked(int(lo), int(hi), what, text)
            v = int(s)
        except ValueError:
            raise ValueError(f"{what} {text!r} is not a version range ('0+', '1-3', '5' or 'none')") from None
        return Versions._checked(v, v, what, text)

    @staticmethod
    def _checked(lo: int, hi: int, what: str, text: str) -> Versions:
        if lo < 0 or hi > MAX_VERSION:
            raise ValueError(f"{what} {text!r} is outside 0..{MAX_VERSION}")
        if hi < lo:
            raise ValueError(f"{what} {text!r} has its highest version below its lowest")
        return Versions(lo, hi)

    @property
    def empty(self) -> bool:
        return self.highest < self.lowest

    @property
    def open_ended(self) -> bool:
        return not self.empty and self.highest == MAX_VERSION

    def __contains__(self, item: object) -> bool:
        if isinstance(item, int):
            return self.lowest <= item <= self.highest
        if isinstance(item, Versions):
            return item.empty or (self.lowest <= item.lowest and item.highest <= self.highest)
        return False

    def intersect(self, other: Versions) -> Versions:
        lo, hi = max(self.lowest, other.lowest), min(self.highest, other.highest)
        return Versions(lo, hi) if lo <= hi else Versions.NONE

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.lowest, self.highest + 1))

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.highest == MAX_VERSION:
            return f"{self.lowest}+"
        if self.lowest == self.highest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"


Versions.NONE = Versions(1, 0)
Versions.ALL = Versions(0, MAX_VERSION)


def version_ranges(versions: list[int]) -> str:
    """A sorted list of versions as ranges: ``[1, 2, 3, 5]`` -> ``"1-3, 5"``."""
    out: list[str] = []
    start = prev = versions[0]
    for v in [*versions[1:], -1]:
        if v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = v
    return ", ".join(out)
