"""Hatchling build hook: generate the Kafka codecs, and compile the hot paths with mypyc, at build time.

Runs for the wheel target: ``pip install .`` (a standard wheel) and ``pip install -e .`` (an editable
wheel). The generator is ``kcodec.codegen`` (in ``src/``); the runtime never imports it.

- Editable installs generate into ``src/kcodec/_generated`` (the source tree is what gets imported).
- Standard wheels generate into a staging copy of the package (``build/kcodec-wheel/kcodec``), so the
  source tree's own generated code (e.g. of an editable install) is never touched or shipped; the
  staged ``_generated`` folder is force-included into the wheel.

``KCODEC_COMPILE`` (see ``kcodec.codegen.compile``) chooses what mypyc compiles. Unset, a standard
wheel compiles the capture path (what ``kcodec decode-capture`` runs per packet, segment and frame,
with the request and response headers' codecs) and an editable install stays pure Python; ``0`` asks for pure Python; ``1`` (or API names) also
generates the chosen messages for mypyc and compiles them with the runtime pieces they call. A
compiled wheel carries the extension modules beside their sources and a platform tag. A compile that
fails (no C compiler, say) falls back to the pure build with a warning.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ENV = "KCODEC_COMPILE"


def _on_path(root: Path) -> None:
    """Put the source tree's ``src`` first on ``sys.path``: the hook imports the generator from it."""
    src = str(root / "src")
    if src not in sys.path:
        sys.path.insert(0, src)


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def dependencies(self) -> list[str]:
        """mypy (which ships mypyc) and setuptools (to build the extensions), unless the build is pure.
        (This hook cannot tell an editable install, pure by default, from a wheel: an editable install
        gets mypy in its build environment without using it.)"""
        _on_path(Path(self.root).resolve())
        from kcodec.codegen.compile import PURE, build_kind

        compiles = build_kind(os.environ.get(ENV), editable=False) != PURE
        return ["mypy>=1.16", "setuptools>=68"] if compiles else []

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root).resolve()
        _on_path(root)
        from kcodec.codegen.compile import (
            CAPTURE,
            CAPTURE_MESSAGES,
            CODECS,
            PURE,
            build_kind,
            compile_modules,
            log,
            modules_to_compile,
            remove_extensions,
            selection,
        )
        from kcodec.codegen.generate import generate_package, package_plan

        editable = version == "editable"
        stage = root / "src" if editable else root / "build" / "kcodec-wheel"
        if not editable:
            shutil.rmtree(stage, ignore_errors=True)
            shutil.copytree(
                root / "src" / "kcodec",
                stage / "kcodec",
                ignore=shutil.ignore_patterns("_generated", "__pycache__", "*.so", "*.pyd"),
            )
        remove_extensions(stage)
        out_dir = stage / "kcodec" / "_generated"
        # Start from an empty folder so code for removed specs cannot linger in a wheel.
        shutil.rmtree(out_dir, ignore_errors=True)

        schemas = root / "schemas"
        value = os.environ.get(ENV)
        kind = build_kind(value, editable)
        compiled: set[str] = set()
        if kind == CODECS:
            index = package_plan(schemas).index
            apis = {str(a["name"]): (str(a["request"]), str(a["response"])) for a in index["apis"]}  # type: ignore[attr-defined]
            compiled = selection(value, apis, (str(m["name"]) for m in index["messages"]))  # type: ignore[attr-defined]
        elif kind == CAPTURE:
            compiled = set(CAPTURE_MESSAGES)
        plan = generate_package(schemas_dir=schemas, out_dir=out_dir, compiled=compiled)
        if not (out_dir / "__init__.py").is_file():
            raise RuntimeError(f"kcodec.codegen.generate.generate_package wrote no package to {out_dir}")

        extensions: list[Path] = []
        if kind != PURE:
            modules = modules_to_compile(out_dir, [m.module for m in plan.modules if m.target.compiled])
            what = f"{ENV}={value!r}" if value else f"the capture path: 1-4 minutes on 2 cores; {ENV}=0: pure"
            log(f"compiling {len(modules)} modules with mypyc ({what}) ...")
            try:
                result = compile_modules(stage, modules, root / "build" / "kcodec-mypyc")
            except (Exception, SystemExit) as e:  # mypyc exits on errors: fall back to the pure build
                log(f"compiling failed ({type(e).__name__}: {e}); installing the pure-Python build")
                remove_extensions(stage)
                shutil.rmtree(out_dir, ignore_errors=True)
                generate_package(schemas_dir=schemas, out_dir=out_dir)
            else:
                log(f"compiled {len(result.modules)} modules in {result.seconds:.0f} s")
                extensions = list(result.files)
                build_data["pure_python"] = False
                build_data["infer_tag"] = True

        if not editable:
            build_data["force_include"][str(out_dir)] = "kcodec/_generated"
            for rel in extensions:
                if rel.parts[:2] != ("kcodec", "_generated"):
                    build_data["force_include"][str(stage / rel)] = rel.as_posix()
