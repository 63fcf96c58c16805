"""Hatchling build hook: generate the Kafka codecs into ``src/kcodec/_generated`` at build time.

Runs for the wheel target, i.e. for ``pip install .`` (standard wheel) and ``pip install -e .``
(editable wheel; the generated files then live in the source tree, which the editable install
puts on ``sys.path``).  The generator (``codegen/``, next to ``src/``) runs here at build time; the
wheel also ships it so that ``kcodec generate`` can run it in a subprocess (``kcodec`` never imports it).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root).resolve()
        schemas_dir = root / "schemas"
        out_dir = root / "src" / "kcodec" / "_generated"

        src = str(root / "src")
        if src not in sys.path:
            sys.path.insert(0, src)
        from kcodec.codegen.generate import generate_package

        # Start from an empty folder so code for removed specs cannot linger in a wheel.
        if out_dir.exists():
            shutil.rmtree(out_dir)
        generate_package(schemas_dir=schemas_dir, out_dir=out_dir)

        if not (out_dir / "__init__.py").is_file():
            raise RuntimeError(f"kcodec.codegen.generate.generate_package wrote no package to {out_dir}")
