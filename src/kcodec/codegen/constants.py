"""The module constants a generated codec uses, each with a name that says what it holds.

- ``_S_int16_int32`` = ``struct.Struct(">hi")``: named by the types it reads, in order;
- ``_VALUES_int32[n]`` = the struct of ``n`` int32 values (``_COMPACT_COUNT_VALUES_int32`` /
  ``_COUNT_VALUES_int32``: after their compact or int32 count), for arrays of 0..31 values;
- ``_FIELDS_error_code_to_leader_epoch`` = the run description error paths read (attr, size, format);
- ``_SHAPE_READERS_MetadataResponsePartition`` / ``_SHAPE_WRITERS_...``: the per-shape struct caches.

Names are given in the order constants are first asked for, so the output is deterministic.
"""

from __future__ import annotations

from kcodec.codegen.layout import RunPlan
from kcodec.codegen.wire_types import WIRE_TYPES

#: arrays of fewer fixed-width values than this are read and written with a struct constant of a table
#: (``ConstantPool.values_table``); longer ones with a format made for their count
VALUES_TABLE_SIZE = 32
#: struct format code -> type name (the table's fixed-width types, plus the count byte)
_CODE_NAMES = {t.fmt: t.name for t in WIRE_TYPES.values() if t.fixed_width} | {"B": "uint8"}


def _tokens(fmt: str) -> list[str]:
    """``">16s?hi"`` -> ``["16s", "?", "h", "i"]`` (the byte-order mark dropped)."""
    out: list[str] = []
    digits = ""
    for ch in fmt.lstrip("><!=@"):
        if ch.isdigit():
            digits += ch
            continue
        out.append(digits + ch)
        digits = ""
    return out


def format_name(fmt: str) -> str:
    """A readable name for a struct format: ``">hiq"`` -> ``"int16_int32_int64"``."""
    return "_".join(_CODE_NAMES[t] for t in _tokens(fmt)) or "empty"


class ConstantPool:
    """Collects one module's constants while the planner walks its functions."""

    def __init__(self) -> None:
        self.formats: dict[str, str] = {}  # format -> name
        self.tables: dict[str, str] = {}  # pattern -> name
        self.runs: dict[str, str] = {}  # run description source -> name
        self.shapes: dict[str, tuple[str, str]] = {}  # pattern -> (readers, writers)
        self._names: set[str] = set()

    def _unique(self, name: str) -> str:
        candidate, n = name, 2
        while candidate in self._names:
            candidate = f"{name}_{n}"
            n += 1
        self._names.add(candidate)
        return candidate

    def fmt(self, fmt: str) -> str:
        """A ``struct.Struct`` constant for ``fmt``."""
        if fmt not in self.formats:
            self.formats[fmt] = self._unique(f"_S_{format_name(fmt)}")
        return self.formats[fmt]

    def values_table(self, code: str, count: str = "") -> str:
        """Struct constants for 0..31 values of ``code``, after a count (``"B"`` compact, ``"i"``)."""
        pattern = f">{count}%d{code}"
        if pattern not in self.tables:
            prefix = {"": "", "B": "COMPACT_COUNT_", "i": "COUNT_"}[count]
            self.tables[pattern] = self._unique(f"_{prefix}VALUES_{_CODE_NAMES[code]}")
        return self.tables[pattern]

    def run(self, run: RunPlan) -> str:
        """The description of a run of fixed-width fields that error paths read."""
        text = "(" + "".join(f"({f.attr!r}, {f.value.size}, {f.value.fmt!r}), " for f in run.fields) + ")"
        if text not in self.runs:
            first, last = run.fields[0].attr, run.fields[-1].attr
            name = f"_FIELDS_{first}" if first == last else f"_FIELDS_{first}_to_{last}"
            self.runs[text] = self._unique(name)
        return self.runs[text]

    def shape(self, pattern: str, struct: str) -> tuple[str, str]:
        """The (readers, writers) cache dicts of one element shape pattern."""
        if pattern not in self.shapes:
            self.shapes[pattern] = (
                self._unique(f"_SHAPE_READERS_{struct}"),
                self._unique(f"_SHAPE_WRITERS_{struct}"),
            )
        return self.shapes[pattern]
