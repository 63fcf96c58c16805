"""Print a package plan: per message a Python codec module (and for the hot and client group messages
a module converting it to Kafka JSON and its facts extractors); the package index and the runtime's
copy of the wire-type table. Printing decides nothing.

A codec module's functions are printed from their ops by the printers (``kcodec.codegen.print_read``,
``kcodec.codegen.print_write``); jinja2 templates print the modules around them (imports, constants,
classes, tables) and the other files."""

from __future__ import annotations

from pathlib import Path

import jinja2

from kcodec.codegen.constants import VALUES_TABLE_SIZE
from kcodec.codegen.print_read import decoder, skipper
from kcodec.codegen.print_write import encoder
from kcodec.codegen.program import FunctionPlan, ModulePlan, PackagePlan, Target
from kcodec.codegen.prune import drop_unused
from kcodec.codegen.vmerge import merge_module
from kcodec.codegen.wire_types import runtime_copy

TEMPLATES = Path(__file__).parent / "templates" / "python"

#: subpackage of the generated package holding each message's conversion to Kafka JSON
#: (kcodec.protocol.jsonconv)
JSON_PACKAGE = "json_"
#: subpackage of the generated package holding each message's facts extractors (kcodec.capture.facts)
FACTS_PACKAGE = "facts_"
#: module of the generated package with the typed overloads of the by-name API (kcodec.protocol.messages)
TYPING_MODULE = "typing_api"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["py"] = repr
    env.filters["wrapped_items"] = wrapped_items
    env.globals["zip"] = zip
    env.globals["values_table_size"] = VALUES_TABLE_SIZE
    return env


def wrapped_items(values: list[str], width: int = 110, indent: int = 4) -> list[str]:
    """The lines of a list display's items (each ``repr(value),``), as many to a line as ``width`` holds."""
    lines: list[str] = []
    for item in (f"{value!r}," for value in values):
        if lines and indent + len(lines[-1]) + 1 + len(item) <= width:
            lines[-1] += f" {item}"
        else:
            lines.append(item)
    return lines


def tidy(source: str) -> str:
    """Strip trailing blanks and collapse runs of blank lines left by template whitespace."""
    out: list[str] = []
    blanks = 0
    for line in (line.rstrip() for line in source.splitlines()):
        blanks = blanks + 1 if not line else 0
        if blanks <= 2:
            out.append(line)
    return "\n".join(out).strip("\n") + "\n"


def function_code(fn: FunctionPlan, target: Target) -> str:
    """The code of one struct layout: its decoder, then the root's lazy decoder or a child's skipper
    (none in versioned modules), then its encoder, two blank lines apart."""
    parts = [decoder(fn, target)]
    if fn.is_root:
        parts.append(decoder(fn, target, lazy=True))
    elif not target.versioned:
        parts.append(skipper(fn, target))
    parts.append(encoder(fn, target))
    return "\n\n\n".join("\n".join(lines) for lines in parts)


def render_module(env: jinja2.Environment, module: ModulePlan) -> str:
    """The Python codec module of one message (a ``versioned`` one: a function per struct, ``vmerge``)."""
    functions = [function_code(fn, module.target) for fn in module.functions]
    source = tidy(env.get_template("module.py.j2").render(module=module, functions=functions))
    if module.target.compiled:
        return source
    if module.target.versioned:
        served = {fn.id: fn.served for fn in module.functions}
        flexible = {fn.id: fn.flexible for fn in module.functions}
        source = merge_module(source, served, module.roots, flexible, whole=module.target.switches)
    return tidy(drop_unused(source))


def render_json(env: jinja2.Environment, module: ModulePlan) -> str:
    """The module converting one message to Kafka JSON (the hot and client group messages; the others'
    converters are built at run time, ``kcodec.protocol.json_build``)."""
    assert module.json is not None
    return tidy(env.get_template("json.py.j2").render(json=module.json))


def render_facts(env: jinja2.Environment, module: ModulePlan) -> str:
    """The module extracting the facts of one message (the hot and client group messages; the others'
    extractors are built at run time, ``kcodec.protocol.facts_build``)."""
    assert module.facts is not None
    return tidy(env.get_template("facts.py.j2").render(facts=module.facts))


def render_package(plan: PackagePlan) -> dict[str, dict[str, str]]:
    """Every file of the generated package: ``{subfolder: {file name: source}}`` ("" is the package)."""
    env = environment()
    package: dict[str, str] = {}
    jsons: dict[str, str] = {}
    facts: dict[str, str] = {}
    for module in plan.modules:
        package[f"{module.module}.py"] = render_module(env, module)
        if module.json is not None:
            jsons[f"{module.module}.py"] = render_json(env, module)
        if module.facts is not None:
            facts[f"{module.module}.py"] = render_facts(env, module)
    for stub in plan.stubs:  # compiled modules: the interpreted module, for type checkers
        package[f"{stub.module}.pyi"] = render_module(env, stub)
    package["__init__.py"] = tidy(env.get_template("index.py.j2").render(**plan.index))
    package["wire_types.py"] = runtime_copy()
    typing_rows = sorted(plan.index["messages"], key=lambda m: m["name"])  # type: ignore[call-overload]
    package[f"{TYPING_MODULE}.py"] = tidy(
        env.get_template("typing_api.py.j2").render(messages=typing_rows, sources=plan.index["sources"])
    )
    jsons["__init__.py"] = tidy(env.get_template("json_index.py.j2").render(sources=plan.index["sources"]))
    facts["__init__.py"] = tidy(env.get_template("facts_index.py.j2").render(sources=plan.index["sources"]))
    return {"": package, JSON_PACKAGE: jsons, FACTS_PACKAGE: facts}
