"""Option types that refuse hostile values at parse time, as one usage line (exit 2): a float that is
not a number or is infinite (``nan``, ``inf``, which pass ``click.FloatRange``'s comparisons or mean
"wait forever"), and an output folder that cannot be made or written to."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import click

__all__ = ["FiniteFloatRange", "OutputDirectory"]


class FiniteFloatRange(click.FloatRange):
    """``click.FloatRange`` for finite numbers only (``nan`` compares false with every bound, so
    ``FloatRange`` lets it through; ``inf`` passes an open-ended range)."""

    name = "float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


class OutputDirectory(click.Path):
    """A folder to write files into: made if missing (with its parents), and it must be writable."""

    def __init__(self) -> None:
        super().__init__(file_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        path = Path(os.fsdecode(super().convert(value, param, ctx)))
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            self.fail(f"cannot make folder {str(path)!r}: {e.strerror or e}", param, ctx)
        if not os.access(path, os.W_OK | os.X_OK):
            self.fail(f"cannot write to folder {str(path)!r}", param, ctx)
        return path
