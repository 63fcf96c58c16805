"""The compiled build: which modules mypyc compiles, and the compile itself (build time only).

``KCODEC_COMPILE`` chooses, at install time (:func:`build_kind`):

- unset: the capture path (``CAPTURE_MODULES`` and ``CAPTURE_CLI_MODULES``) for a standard wheel
  (``pip install .``, the default), the pure-Python build for an editable install (``pip install -e .``,
  whose compiled modules would sit in the source tree and hide edits to their sources);
- ``0``, ``false``, ``no``, ``off``, ``pure``: the pure-Python build;
- ``capture``: the capture path only, for either kind of install;
- ``1``, ``true``, ``yes``, ``hot``: the hot APIs (``HOT_APIS``) and the request/response headers;
- ``all``: every message (slow: about 220k generated lines);
- a comma-separated list of API names (``Fetch,Metadata``) or message names (``FetchRequest``): those,
  with the headers.

With messages chosen, these are compiled along with them: ``RUNTIME_MODULES`` (the model base
classes, and the encoders' large-value helpers), ``CAPTURE_MODULES`` (the capture stages),
``CAPTURE_CLI_MODULES`` (what ``kcodec decode-capture`` runs per frame on top of them) and each chosen
message's JSON and facts modules (``COMPANION_PACKAGES``). Every compiled module keeps its source next
to it, and the pure build is the fallback: a failed compile (no C compiler, say) leaves a working pure
package.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ENV = "KCODEC_COMPILE"
#: the APIs the benchmarks measure and clients use most
HOT_APIS = ("Metadata", "Fetch", "Produce", "ApiVersions", "ListOffsets")
HEADERS = ("RequestHeader", "ResponseHeader")
#: the messages a standard wheel (``CAPTURE``) compiles with the capture path: the headers, which every
#: frame has (compiled, with the base classes of ``RUNTIME_MODULES``, a small frame's table row and
#: JSON line cost decode-capture about 2.5k instructions less, counted by callgrind)
CAPTURE_MESSAGES = HEADERS
#: runtime modules compiled with the codecs: the base classes (the native classes extend them) and
#: kcodec.protocol.blobs (called once per large bytes/records value an encoder writes). Not
#: kcodec.protocol.codec: mypyc checks typed arguments at the call (a str given as a message would raise a
#: builtin TypeError before kcodec's own WrongTypeError, True would pass as version 1). Not
#: kcodec.protocol._wire: mypyc's own texts for failed tuple unpacking would change the error messages of
#: malformed unknown tagged fields. Both stay interpreted and behave the same in both builds; neither
#: is on the hot paths (the generated code inlines them).
RUNTIME_MODULES = ("kcodec.protocol.model", "kcodec.protocol.blobs")
#: the capture stages, compiled with the codecs: what ``kcodec decode-capture``, the proxy and the
#: pipeline's decoding run for every packet, segment and frame (the pcap/pcapng reader, segments,
#: reassembly, framing, connections, the router, the frame decoder, facts and topic names), and
#: what a parallel decode's workers and parent run on top for every segment and batch (a shard's
#: owners and keys, the merge, the workers' loop: ``kcodec.capture.parallel.engine``); and the
#: consumer groups' tracking (``groups``: every group frame) and the totals of ``--summary`` (``stats``,
#: ``group_stats``: every frame; compiled, with the summary's plain-text tables, ``--summary`` of a
#: capture of small frames went from 303k to 199k instructions a frame, counted by callgrind).
#: Not ``kcodec.protocol.frames``, for the reason ``kcodec.protocol.codec`` is not: its public
#: functions would raise mypyc's TypeError for an argument of the wrong type instead of kcodec's
#: WrongTypeError. And the records the stages hand on (``kcodec.capture.events``' frames and issues,
#: ``kcodec.protocol.facts_model``' facts): the code that reads them per frame (the table, the JSON
#: lines, the summary) is compiled too, so it reads their fields directly; compiled, they took a JSON
#: line of a small frame from 172k to 157k instructions (callgrind, one more frame's cost).
CAPTURE_MODULES = (
    "kcodec.capture.events",
    "kcodec.protocol.facts_model",
    "kcodec.capture.counting",
    "kcodec.capture.packets",
    "kcodec.capture.segments",
    "kcodec.capture.packed",
    "kcodec.capture.reassembly",
    "kcodec.capture.framing",
    "kcodec.capture.connection",
    "kcodec.capture.stream",
    "kcodec.capture.decoding",
    "kcodec.capture.facts",
    "kcodec.capture.topics",
    "kcodec.capture.shard",
    "kcodec.capture.parallel.engine",
    "kcodec.capture.groups",
    "kcodec.capture.stats",
    "kcodec.capture.group_stats",
)
#: the decode-capture command's work per frame, compiled with the capture stages: the filters, the
#: JSON lines and table rows (``capture_output``, ``capture_view``, ``capture_table``), the loop of one
#: process (``capture_run``), and what a parallel run's workers make of each frame and its parent
#: shows (``parallel_items``, ``parallel_sink``). Kept apart from ``CAPTURE_MODULES``: they are the CLI's
#: presentation, not capture stages (the pipeline does not run them; ``kcodec proxy`` shows its live
#: frames with the filters and the output). Not the click commands (``decode_capture``): click
#: calls them once. Interleaved against the build without them
#: (64 MB capture): ``--json`` 4-5 % and the table 6-7 % less time, with one process and with two.
CAPTURE_CLI_MODULES = (
    "kcodec.cli.capture_filters",
    "kcodec.cli.capture_view",
    "kcodec.cli.capture_table",
    "kcodec.cli.capture_output",
    "kcodec.cli.capture_run",
    "kcodec.cli.parallel_items",
    "kcodec.cli.parallel_sink",
)
#: the pipeline's per-frame work on the executors, compiled with the capture stages: stage 2's rows
#: and flattened facts of every frame (``decode``, ``flatten``), its partial aggregates of every batch
#: (``partials``) and the payloads read back per segment (``payloads``). The rest of the pipeline runs
#: once per task or on the driver.
PIPELINE_MODULES = (
    "kcodec.pipeline.decode",
    "kcodec.pipeline.flatten",
    "kcodec.pipeline.partials",
    "kcodec.pipeline.payloads",
)
#: the generated subpackages compiled along with each chosen message's codec module: its JSON
#: converters and its facts extractors (what decode-capture runs for every frame it shows)
COMPANION_PACKAGES = ("json_", "facts_")
_OFF = ("", "0", "false", "no", "off", "pure")
#: mypy settings for the compile (the project's own config points at the source tree)
MYPY_CONFIG = """[mypy]
strict = True
python_version = 3.11
follow_imports = silent
ignore_missing_imports = True
[mypy-kcodec._generated.*]
warn_unreachable = False
"""
_HOT = ("1", "true", "yes", "on", "hot")


#: the three kinds of build (:func:`build_kind`)
PURE, CAPTURE, CODECS = "pure", "capture", "codecs"


def build_kind(value: str | None, editable: bool) -> str:
    """The kind of build a ``KCODEC_COMPILE`` value asks for: ``PURE``; ``CAPTURE`` (the capture path
    only: :func:`capture_modules`); or ``CODECS`` (the messages :func:`selection` chooses, with the
    capture path and ``RUNTIME_MODULES``: :func:`modules_to_compile`). Unset or empty, a standard wheel
    compiles the capture path and an editable install stays pure."""
    text = (value or "").strip().lower()
    if not text:
        return PURE if editable else CAPTURE
    if text in _OFF:
        return PURE
    return CAPTURE if text == CAPTURE else CODECS


def capture_modules() -> list[str]:
    """The dotted names a ``CAPTURE`` build compiles: the capture stages and the CLI's per-frame
    modules. Not ``RUNTIME_MODULES``: the base classes only need compiling under compiled messages."""
    return [*CAPTURE_MODULES, *CAPTURE_CLI_MODULES, *PIPELINE_MODULES]


class SelectionError(ValueError):
    """``KCODEC_COMPILE`` names something that is neither an API nor a message."""


def selection(value: str | None, apis: dict[str, tuple[str, str]], messages: Iterable[str]) -> set[str]:
    """The message names to compile for a ``KCODEC_COMPILE`` value (empty: the pure build).

    ``apis`` maps API names (``Fetch``) to their (request, response) message names.
    """
    text = (value or "").strip()
    if text.lower() in _OFF:
        return set()
    known = set(messages)
    if text.lower() == "all":
        return known
    names = HOT_APIS if text.lower() in _HOT else tuple(n.strip() for n in text.split(",") if n.strip())
    out = {h for h in HEADERS if h in known}
    unknown = []
    for name in names:
        if name in apis:
            out.update(apis[name])
        elif name in known:
            out.add(name)
        else:
            unknown.append(name)
    if unknown:
        raise SelectionError(
            f"{ENV}={value!r}: {', '.join(unknown)} is not an API or message name "
            f"(use 1 for the hot APIs {', '.join(HOT_APIS)}, 'all', or names such as Fetch,Metadata)"
        )
    return out


def modules_to_compile(generated: Path, chosen: Iterable[str]) -> list[str]:
    """The dotted names mypyc compiles for a build: ``RUNTIME_MODULES``, ``CAPTURE_MODULES``,
    ``CAPTURE_CLI_MODULES``, and for each chosen generated module (``fetch_response``) that module
    and its companions in ``generated`` (the ``kcodec._generated`` folder written for this build)."""
    out = [*RUNTIME_MODULES, *capture_modules()]
    for module in chosen:
        out.append(f"kcodec._generated.{module}")
        out += [
            f"kcodec._generated.{package}.{module}"
            for package in COMPANION_PACKAGES
            if (generated / package / f"{module}.py").is_file()
        ]
    return out


@dataclass(frozen=True, slots=True)
class CompileResult:
    modules: tuple[str, ...]  # dotted names compiled
    files: tuple[Path, ...]  # the extension files written, relative to the package root's parent
    seconds: float


def compile_modules(root: Path, modules: list[str], build_dir: Path, jobs: int = 2) -> CompileResult:
    """Compile ``modules`` (dotted names under ``root``, the folder holding the ``kcodec`` package) with
    mypyc in place: each extension lands next to its source. Raises on any compile error."""
    from mypyc.build import mypycify  # build-time dependencies, imported only for a compiled build
    from setuptools import Distribution

    start = time.monotonic()
    paths = [str(Path(*m.split(".")).with_suffix(".py")) for m in modules]
    config = build_dir / "mypyc.ini"
    build_dir.mkdir(parents=True, exist_ok=True)
    config.write_text(MYPY_CONFIG, encoding="utf-8")
    cwd = Path.cwd()
    os.chdir(root)
    try:
        extensions = mypycify(
            ["--config-file", str(config), *paths],
            opt_level="3",
            debug_level="0",
            multi_file=True,
            target_dir=str(build_dir / "c"),
            group_name="kcodec",
        )
        dist = Distribution({"ext_modules": extensions, "script_name": "setup.py"})
        cmd = dist.get_command_obj("build_ext")
        cmd.inplace = True
        cmd.build_temp = str(build_dir / "temp")
        cmd.parallel = jobs
        _parallel_objects(jobs)
        cmd.ensure_finalized()
        cmd.run()
        files = tuple(Path(cmd.get_ext_fullpath(ext.name)).resolve().relative_to(root) for ext in extensions)
    finally:
        os.chdir(cwd)
    return CompileResult(tuple(modules), files, time.monotonic() - start)


def _parallel_objects(jobs: int) -> None:
    """Compile the C files of one extension on ``jobs`` cores (distutils compiles them one by one)."""
    from concurrent.futures import ThreadPoolExecutor

    from setuptools._distutils import ccompiler

    base = ccompiler.CCompiler
    if getattr(base, "_kcodec_parallel", False):
        return
    original = base.compile

    def compile(self, sources, output_dir=None, macros=None, include_dirs=None, debug=0,  # type: ignore[no-untyped-def]
                extra_preargs=None, extra_postargs=None, depends=None):
        if len(sources) < 2:
            return original(self, sources, output_dir, macros, include_dirs, debug, extra_preargs,
                            extra_postargs, depends)
        with ThreadPoolExecutor(jobs) as pool:
            parts = pool.map(
                lambda src: original(self, [src], output_dir, macros, include_dirs, debug, extra_preargs,
                                     extra_postargs, depends),
                sources,
            )
            return [obj for objs in parts for obj in objs]

    base.compile = compile
    base._kcodec_parallel = True


def remove_extensions(root: Path) -> None:
    """Drop compiled extensions from a package tree (so a pure build there stays pure)."""
    for pattern in ("kcodec/**/*.so", "kcodec/**/*.pyd", "*__mypyc*.so", "*__mypyc*.pyd"):
        for path in root.glob(pattern):
            path.unlink()
    shutil.rmtree(root / "build" / "kcodec-mypyc", ignore_errors=True)


def log(message: str) -> None:
    print(f"kcodec build: {message}", file=sys.stderr, flush=True)
