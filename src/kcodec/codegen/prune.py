"""A printed module without what nothing in it uses: the module template imports every runtime helper
and declares every constant a module may need; each module keeps only those it names."""

from __future__ import annotations

import ast
import re
from collections import Counter

#: a module-level import, and a module-level constant of one line
_IMPORT = re.compile(r"^from ([\w.]+) import ([\w ,]+)$")
_CONSTANT = re.compile(r"^(_\w+)(?:: [^=]+)? = ")


def drop_unused(source: str) -> str:
    """``source`` without the module-level imports and one-line ``_private`` constants nothing else in
    it names (the template imports every runtime helper any module may call), and without a comment
    left heading nothing: a paragraph whose every statement went goes whole."""
    while True:
        smaller = _drop_unused_once(source)
        if smaller == source:
            return source
        source = smaller


def _drop_unused_once(source: str) -> str:
    counts = Counter(re.findall(r"\w+", source))
    out: list[str] = []
    for paragraph in source.split("\n\n"):
        kept: list[str] = []
        dropped = False
        for line in paragraph.split("\n"):
            new = _used_only(line, counts)
            dropped |= new != line
            if new or new == line:
                kept.append(new)
        if dropped and all(line.startswith("#") for line in kept):
            continue
        out.append("\n".join(kept))
    return "\n\n".join(out)


def _used_only(line: str, counts: Counter[str]) -> str:
    """An import line with only the names used elsewhere ("" if none); "" for an unused constant."""
    m = _IMPORT.match(line)
    if m:
        names = [n.strip() for n in m[2].split(",") if n.strip()]
        used = [n for n in names if counts[n.split(" as ")[-1]] > 1]
        return f"from {m[1]} import {', '.join(used)}" if used else ""
    m = _CONSTANT.match(line)
    if m and counts[m[1]] == 1 and _complete(line):
        return ""
    return line


def _complete(line: str) -> bool:
    try:
        ast.parse(line)
    except SyntaxError:
        return False
    return True


__all__ = ["drop_unused"]
