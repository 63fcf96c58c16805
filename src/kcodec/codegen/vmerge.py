"""One function per struct that branches on the version, for ``versioned`` modules.

A module is first printed as usual: per struct, one function per layout (``d_<Struct>_v<first
version>``, ``dl_``, ``e_``: versioned modules have no skip functions, the runtime's skipper serves
their lazy decoding, ``kcodec.protocol.skipping``), each serving some versions. Here the functions of
each struct are merged into one (``d_<Struct>``, ...) taking the version as its first argument: the
statements the layouts share are printed once, the others under a version conditional
(``if v >= 3:``), in an order that keeps every layout's own statements in its order. Each version so
runs exactly the statements of its layout, the same values, checks and errors. Calls of a struct's
function pass the version on; the tables (``DECODERS``, ``DECODERS_LAZY``, ``ENCODERS``) hold copies of
the root functions whose last parameters, the version and the lazy flag, default to the table's
(``kcodec.protocol._gen_runtime.at_version``); lazy arrays bind their element decoder's version with
``functools.partial``.

Statements are compared as printed text; compound statements with the same clause headers (an ``if``,
a ``for``, the ``try`` around a body) have their bodies merged the same way.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: a generated per-layout function: prefix (d, dl, s, e; j), struct class, first version
_NAME = re.compile(r"^(d|dl|s|e|j|f|c)_(\w+)_v(\d+)$")
_TABLES = ("DECODERS", "DECODERS_LAZY", "ENCODERS", "TO_JSON", "FACTS", "CODES")
_PARTIAL_IMPORT = "from functools import partial as _partial"
_AT_VERSION_IMPORT = "from kcodec.protocol._gen_runtime import at_version as _at_version"
#: a merged root's signature: the version (and the lazy flag) first, then the parameters of a layout's
_ROOT_SIGNATURE = re.compile(r"^def (\w+)\((v: int, (?:lazy: bool, )?)(.*)\)( -> .*:)$")
#: a function's header comment: what, the versions it serves, the rest
_COMMENT = re.compile(r"^(\s*# .*? at versions )(\d[\d-]*(?:, \d[\d-]*)*)(.*)$")
#: a statement giving ``v`` (the version the merged functions take) another value
_SETS_V = re.compile(r"(?<![\w.])v\b\s*(?::=|=(?!=))|\bfor v\b|\bv\s*,\s*\w+\s*=")
#: an annotated local at the start of a statement line: ``name: type = value``
_ANNOTATED = re.compile(r"^(\s*)([A-Za-z_]\w*): [^=]+ = ")


@dataclass(frozen=True)
class _Compound:
    """A compound statement (``if``/``elif``/``else``, ``for``, ``while``, ``try``/``except``): its
    clauses, each a header (with the comment lines before it) and the statements of its body."""

    clauses: tuple[tuple[str, tuple[Unit, ...]], ...]


#: a statement: its text (dedented, with the comment lines before it), or a compound statement
Unit = str | _Compound


@dataclass
class _Item:
    """A statement of a merged body and the versions that run it (a compound: its clauses merged)."""

    versions: frozenset[int]
    text: str | None
    clauses: list[tuple[str, list[_Item]]] | None = None

    def key(self, loops: bool = False) -> object:
        """What two statements share to be merged: the text, or a compound's clause headers (with
        ``loops``, a loop's whole text: loops with different bodies stay apart)."""
        if self.clauses is None:
            return self.text
        if loops and _loop(self.clauses[0][0]):
            return self.whole()
        return tuple(h for h, _ in self.clauses)

    def whole(self) -> object:
        """The whole statement: its text, or a compound's clauses with their bodies."""
        if self.clauses is None:
            return self.text
        return tuple((h, tuple(i.whole() for i in body)) for h, body in self.clauses)


@dataclass
class _Layout:
    """One per-layout function, taken apart: its body as statements."""

    prefix: str
    cls: str
    name: str
    served: tuple[int, ...]
    signature: str
    comment: str
    body: list[Unit]


def _dedent(lines: Sequence[str], indent: int) -> str:
    return "\n".join(line[indent:] if line.strip() else "" for line in lines)


def _header(line: str) -> bool:
    """A clause header on one line (``if x:``, ``else:  # note``): its body starts on the next line."""
    return line.split("#", 1)[0].rstrip().endswith(":")


def _clauses(lines: list[str], stmt: ast.stmt, indent: int) -> list[tuple[str, tuple[Unit, ...]]] | None:
    """The clauses of a compound statement printed one header a line (else None: a plain statement)."""

    def clause(header_line: int, body: list[ast.stmt]) -> tuple[str, tuple[Unit, ...]] | None:
        text = lines[header_line - 1]
        if not _header(text):
            return None
        return text[indent:], tuple(_units(lines, body, header_line + 1, indent + 4))

    def after(body: list[ast.stmt], word: str) -> int:  # the line of the ``else:`` after a body
        end = body[-1].end_lineno
        assert end is not None
        return next(i for i in range(end + 1, len(lines) + 1) if lines[i - 1].strip().startswith(word))

    out: list[tuple[str, tuple[Unit, ...]] | None] = []
    if isinstance(stmt, ast.If):
        out.append(clause(stmt.lineno, stmt.body))
        orelse = stmt.orelse
        elif_ = len(orelse) == 1 and isinstance(orelse[0], ast.If)
        if elif_ and lines[orelse[0].lineno - 1].lstrip().startswith("elif"):
            rest = _clauses(lines, orelse[0], indent)
            if rest is None:
                return None
            out += rest
        elif orelse:
            out.append(clause(after(stmt.body, "else"), orelse))
    elif isinstance(stmt, ast.For | ast.While) and not stmt.orelse:
        out.append(clause(stmt.lineno, stmt.body))
    elif isinstance(stmt, ast.Try) and not (stmt.orelse or stmt.finalbody):
        out.append(clause(stmt.lineno, stmt.body))
        out += [clause(h.lineno, h.body) for h in stmt.handlers]
    else:
        return None
    return None if any(c is None for c in out) else [c for c in out if c is not None]


def _units(lines: list[str], stmts: Sequence[ast.stmt], first: int, indent: int) -> list[Unit]:
    """Each statement with the comment lines before it (from line ``first``, 1-based)."""
    out: list[Unit] = []
    start = first
    for stmt in stmts:
        assert stmt.end_lineno is not None
        clauses = _clauses(lines, stmt, indent)
        if clauses is None:
            out.append(_dedent(lines[start - 1 : stmt.end_lineno], indent))
        else:
            lead = _dedent(lines[start - 1 : stmt.lineno - 1], indent)
            header, body = clauses[0]
            clauses[0] = (f"{lead}\n{header}" if lead else header, body)
            out.append(_Compound(tuple(clauses)))
        start = stmt.end_lineno + 1
    return out


#: the statement setting the length widths a function names: ``_W2``, ``_W4`` (the width of int16 and
#: int32 length prefixes; 0: compact, in flexible versions) and ``_M4`` (an int32 prefix's limit)
_WIDTHS = "_W2, _W4, _M4 = _LENGTHS[v]"
_WIDTH_NAMES = re.compile(r"\b_(?:W2|W4|M4)\b")


def _lengths(flexible: dict[int, bool]) -> str:
    """``_LENGTHS``: the widths and limit of ``_WIDTHS`` by version (its index)."""
    versions = sorted(flexible)
    first = next((v for v in versions if flexible[v]), versions[-1] + 1)
    assert all(flexible[v] == (v >= first) for v in versions), "flexible versions are not a range"
    return (
        "#: length prefix widths (int16, int32; 0: compact) and the int32 prefix's limit, by version\n"
        "_LENGTHS: tuple[tuple[int, int, int | None], ...] = "
        f"((2, 4, 2147483647),) * {first} + ((0, 0, None),) * {versions[-1] + 1 - first}"
    )


def _layout(lines: list[str], fn: ast.FunctionDef, served: tuple[int, ...]) -> _Layout:
    m = _NAME.match(fn.name)
    assert m is not None and fn.end_lineno is not None
    comment = lines[fn.lineno]  # each generated function's header comment
    assert comment.lstrip().startswith("# "), fn.name
    body = _units(lines, fn.body, fn.lineno + 2, 4)
    if _WIDTH_NAMES.search("\n".join(lines[fn.lineno : fn.end_lineno])):
        body.insert(0, _WIDTHS)
    return _Layout(m[1], m[2], fn.name, served, lines[fn.lineno - 1], comment, body)


def _item(versions: frozenset[int], unit: Unit) -> _Item:
    if isinstance(unit, str):
        return _Item(versions, unit)
    return _Item(versions, None, [(h, [_item(versions, u) for u in body]) for h, body in unit.clauses])


def _loop(header: str) -> bool:
    """A ``for`` or ``while`` clause header (after the comment lines before it)."""
    return header.rsplit("\n", 1)[-1].startswith(("for ", "while "))


def _key(unit: Unit, loops: bool = False) -> object:
    if isinstance(unit, str):
        return unit
    if loops and _loop(unit.clauses[0][0]):
        return _whole(unit)
    return tuple(h for h, _ in unit.clauses)


def _whole(unit: Unit) -> object:
    if isinstance(unit, str):
        return unit
    return tuple((h, tuple(_whole(u) for u in body)) for h, body in unit.clauses)


def _merge_into(
    merged: list[_Item], seq: Sequence[Unit], versions: frozenset[int], loops: bool = False
) -> list[_Item]:
    """``merged`` with the statements of ``seq`` (run by ``versions``) added: the same statement once
    (compound statements with the same clause headers: their bodies merged; with ``loops``, loops only
    if they are the same whole), every sequence's statements in its order."""
    matcher = difflib.SequenceMatcher(
        None, [m.key(loops) for m in merged], [_key(u, loops) for u in seq], autojunk=False
    )
    out: list[_Item] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            out += merged[i1:i2]
            out += [_item(versions, u) for u in seq[j1:j2]]
            continue
        for item, unit in zip(merged[i1:i2], seq[j1:j2], strict=True):
            if isinstance(unit, str) or item.clauses is None:
                out.append(_Item(item.versions | versions, item.text))
            else:
                clauses = [(h, _merge_into(body, ubody, versions, loops))
                           for (h, body), (_, ubody) in zip(item.clauses, unit.clauses, strict=True)]
                out.append(_Item(item.versions | versions, None, clauses))
    return out


def _merge(seqs: Sequence[tuple[frozenset[int], Sequence[Unit]]], loops: bool = False) -> list[_Item]:
    """One sequence holding every input's statements in its order, each with the versions running it
    (``loops``: a loop is shared only by the versions running the same whole loop)."""
    merged = [_item(seqs[0][0], u) for u in seqs[0][1]]
    for versions, seq in seqs[1:]:
        merged = _merge_into(merged, seq, versions, loops)
    return merged


def condition(versions: frozenset[int], every: Sequence[int], var: str = "v") -> str:
    """The test that is true for ``versions`` among the versions ``every`` a function serves (``var``:
    the name of the version)."""
    inside = sorted(versions)
    lo, hi = inside[0], inside[-1]
    span = [v for v in every if lo <= v <= hi]
    if len(inside) == 1:
        return f"{var} == {lo}"
    if span == inside:
        if hi == every[-1]:
            return f"{var} >= {lo}"
        if lo == every[0]:
            return f"{var} <= {hi}"
        return f"{lo} <= {var} <= {hi}"
    return f"{var} in ({', '.join(map(str, inside))})"


def _indent(text: str, n: int) -> list[str]:
    pad = " " * n
    return [pad + line if line else "" for line in text.split("\n")]


#: the test that is true for some versions among those reaching a statement
Test = Callable[[frozenset[int], Sequence[int]], str]


def _print_item(item: _Item, indent: int, test: Test, whole: bool = False) -> list[str]:
    if item.clauses is None:
        assert item.text is not None
        return _indent(item.text, indent)
    out: list[str] = []
    every = sorted(item.versions)  # the versions that reach its clauses
    for header, body in item.clauses:
        out += _indent(header, indent)
        out += _print(body, every, indent + 4, test, whole)
    return out


def _restricted(item: _Item, versions: frozenset[int]) -> _Item:
    """The statement as the ``versions`` among those running it run it (a clause left with nothing
    to run: ``pass``)."""
    inside = item.versions & versions
    if item.clauses is None:
        return _Item(inside, item.text)
    clauses = []
    for header, body in item.clauses:
        kept = [_restricted(i, inside) for i in body if i.versions & inside]
        clauses.append((header, kept or [_Item(inside, "pass")]))
    return _Item(inside, None, clauses)


def _switch(run: list[_Item], every: Sequence[int], indent: int, test: Test) -> list[str]:
    """Statements not every version runs (``run``) as one ``if``/``elif``/``else`` chain with a
    branch per sequence of them some versions run, the newest versions' first: each version tests
    the version once or a few times, not once per statement (its statements may so be printed in
    several branches)."""
    branches: dict[tuple[int, ...], list[int]] = {}
    for v in sorted(every, reverse=True):
        runs = tuple(k for k, item in enumerate(run) if v in item.versions)
        if runs:
            branches.setdefault(runs, []).append(v)
    left = sorted(every)  # the versions reaching the next test
    out: list[str] = []
    for n, (runs, versions) in enumerate(branches.items()):
        chosen = frozenset(versions)
        if n == 0:
            out.append(" " * indent + f"if {test(chosen, left)}:")
        elif chosen == frozenset(left):
            out.append(" " * indent + "else:")
        else:
            out.append(" " * indent + f"elif {test(chosen, left)}:")
        for k in runs:
            out += _print_item(_restricted(run[k], chosen), indent + 4, test, True)
        left = [v for v in left if v not in chosen]
    return out


def _print_whole(items: list[_Item], every: Sequence[int], indent: int, test: Test) -> list[str]:
    """The merged statements, each run of statements not every version runs as one ``_switch``."""
    full = frozenset(every)
    out: list[str] = []
    i = 0
    while i < len(items):
        if items[i].versions == full:
            out += _print_item(items[i], indent, test, True)
            i += 1
            continue
        j = i
        while j < len(items) and items[j].versions != full:
            j += 1
        out += _switch(items[i:j], every, indent, test)
        i = j
    return out


def _print(
    items: list[_Item], every: Sequence[int], indent: int, test: Test, whole: bool = False
) -> list[str]:
    """The merged statements (``every``: the versions reaching them): shared ones as they are, the
    others grouped under version conditionals (disjoint neighbours as one ``if``/``elif``/``else`` chain;
    ``whole``: each run of them as one ``_switch``)."""
    if whole:
        return _print_whole(items, every, indent, test)
    full = frozenset(every)
    out: list[str] = []
    chain: set[int] = set()  # versions the current if/elif chain covers
    i = 0
    while i < len(items):
        versions = items[i].versions
        j = i
        while j < len(items) and items[j].versions == versions:
            j += 1
        if versions == full:
            chain = set()
            for item in items[i:j]:
                out += _print_item(item, indent, test)
            i = j
            continue
        if chain and not (chain & versions):
            chain |= versions
            keyword = "else:" if chain == full else f"elif {test(versions, every)}:"
        else:
            chain = set(versions)
            keyword = f"if {test(versions, every)}:"
        if keyword == "else:":
            chain = set()
        out.append(" " * indent + keyword)
        for item in items[i:j]:
            out += _print_item(item, indent + 4, test)
        i = j
    return out


def renamer(names: dict[str, str], var: str = "v") -> Callable[[str], str]:
    """Calls of per-layout functions become calls of the merged ones with the version passed on;
    references (a lazy array's element decoder) become the merged function with the version bound."""
    pattern = "|".join(sorted(names, key=len, reverse=True))
    calls = re.compile(rf"\b({pattern})\(")
    refs = re.compile(rf"\b({pattern})\b(?!\()")

    def rename(text: str) -> str:
        text = calls.sub(lambda m: f"{names[m[1]]}({var}, ", text)
        return refs.sub(lambda m: f"_partial({names[m[1]]}, {var})", text)

    return rename


def _one_annotation(lines: list[str]) -> list[str]:
    """A local annotated where it is first assigned only (type checkers refuse a second annotation)."""
    seen: set[str] = set()
    out = []
    for line in lines:
        m = _ANNOTATED.match(line)
        if m and m[2] in seen:
            line = f"{m[1]}{m[2]} = {line[m.end():]}"
        elif m:
            seen.add(m[2])
        out.append(line)
    return out


def _comment(group: list[_Layout], every: Sequence[int]) -> str:
    """The header comment: the struct, all its versions, and what each layout's comment says after them."""
    parts = [_COMMENT.match(g.comment) for g in group]
    assert all(parts), group[0].comment
    rests = list(dict.fromkeys(m[3] for m in parts if m))
    rest = rests[0]
    if len(rests) > 1:  # layouts written with different strategies: every note
        notes = [r.split(" (", 1)[1].rstrip(")") for r in rests if " (" in r]
        rest = rests[0].split(" (", 1)[0] + f" ({' / '.join(notes)})"
    first = parts[0]
    assert first is not None
    return f"{first[1]}{_ranges(every)}{rest}"


def _function(
    group: list[_Layout], names: dict[str, str], rename: Callable[[str], str], var: str, loops: bool = False
) -> list[str]:
    """The merged function of one struct's per-layout functions (one prefix)."""
    first = max(group, key=lambda g: ", rec: " in g.signature)  # (JSON: a layout taking ``rec`` if any)
    shapes = {g.signature.replace(g.name, "") for g in group}
    assert len(shapes) == 1 or first.prefix == "j", f"{first.name}: layouts with different signatures"
    every = sorted({v for g in group for v in g.served})
    signature = first.signature.replace(f"def {first.name}(", f"def {names[first.name]}({var}: int, ", 1)
    bodies = [(frozenset(g.served), [_renamed(u, rename) for u in g.body]) for g in group]
    sets_var = re.compile(_SETS_V.pattern.replace("v", re.escape(var)))
    sets = any(sets_var.search(line) for g in group for line in _texts(g.body))
    assert not sets, f"{first.name} gives {var} another value"

    def test(versions: frozenset[int], every: Sequence[int]) -> str:
        return condition(versions, every, var)

    body = _print(_merge(bodies, loops), every, 4, test, whole=loops)
    return _one_annotation([signature, _comment(group, every), *body])


def _lazy_test(versions: frozenset[int], every: Sequence[int]) -> str:
    return "lazy" if versions == {1} else "not lazy"


def _eager_or_lazy(eager: list[str], lazy: list[str], root: str, loops: bool = False) -> list[str]:
    """The root's merged eager and lazy decoders as one, ``lazy`` telling them apart."""
    bodies = []
    for n, text in enumerate((eager, lazy)):
        fn = ast.parse("\n".join(text)).body[0]
        assert isinstance(fn, ast.FunctionDef)
        bodies.append((frozenset({n}), _units(text, fn.body, 3, 4)))
    signature = eager[0].replace("(v: int, ", "(v: int, lazy: bool, ", 1)
    comment = eager[1].replace(" at versions ", " (lazy: its arrays of structs left unbuilt) at versions ", 1)
    return _one_annotation([signature, comment, *_print(_merge(bodies, loops), [0, 1], 4, _lazy_test)])


def _texts(units: Sequence[Unit]) -> list[str]:
    """Every line of the statements."""
    out: list[str] = []
    for unit in units:
        if isinstance(unit, str):
            out += unit.split("\n")
        else:
            for header, body in unit.clauses:
                out += header.split("\n")
                out += _texts(body)
    return out


def _renamed(unit: Unit, rename: Callable[[str], str]) -> Unit:
    if isinstance(unit, str):
        return rename(unit)
    return _Compound(tuple((rename(h), tuple(_renamed(u, rename) for u in body)) for h, body in unit.clauses))


def _ranges(versions: Sequence[int]) -> str:
    parts: list[str] = []
    start = prev = versions[0]
    for v in [*versions[1:], None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ", ".join(parts)


def _version_last(signature: str) -> str:
    """A merged root's signature with the version (and the lazy flag) after the layout's parameters:
    the tables hold copies of it with those as defaults (``kcodec.protocol._gen_runtime.at_version``),
    called as a layout's function is."""
    m = _ROOT_SIGNATURE.match(signature)
    assert m is not None, signature
    return f"def {m[1]}({m[3]}, {m[2].rstrip(', ')}){m[4]}"


def _tables(versions: Sequence[int], sources: dict[str, str]) -> list[str]:
    """``DECODERS``, ``DECODERS_LAZY`` and ``ENCODERS``: for every version, the source of ``sources``."""
    assert list(versions) == list(range(versions[0], versions[-1] + 1)), versions
    span = f"range({versions[0]}, {versions[-1] + 1})"
    return [f"{table} = {{v: {sources[prefix]} for v in {span}}}"
            for table, prefix in zip(_TABLES[:3], ("d", "dl", "e"), strict=True)]


def _codec_node(node: ast.stmt) -> bool:
    """A per-layout function or one of the tables of the root functions."""
    if isinstance(node, ast.FunctionDef):
        return _NAME.match(node.name) is not None
    names: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        names = node.targets
    elif isinstance(node, ast.AnnAssign):
        names = [node.target]
    return any(isinstance(t, ast.Name) and t.id in _TABLES for t in names)


@dataclass
class _Merged:
    """A module taken apart: the text before and after its per-layout functions and tables, and the
    merged function of each (prefix, struct)."""

    head: str
    functions: dict[tuple[str, str], list[str]]
    tail: str


def _merged(
    source: str, served: dict[str, tuple[int, ...]], var: str = "v", loops: bool = False
) -> _Merged:
    """``served``: the versions of each layout, by its id (``<Struct>_v<n>``) or, where two families
    of functions share ids, by its function's name."""
    lines = source.split("\n")
    layouts: list[_Layout] = []
    body = ast.parse(source).body
    codec = [i for i, node in enumerate(body) if _codec_node(node)]
    assert codec == list(range(codec[0], codec[-1] + 1)), "other statements among the codec functions"
    for node in body[codec[0] : codec[-1] + 1]:
        if isinstance(node, ast.FunctionDef):
            versions = served.get(node.name) or served[node.name.split("_", 1)[1]]
            layouts.append(_layout(lines, node, versions))
    end = body[codec[-1]].end_lineno
    assert end is not None
    groups: dict[tuple[str, str], list[_Layout]] = {}
    for lay in layouts:
        groups.setdefault((lay.prefix, lay.cls), []).append(lay)
    names = {lay.name: f"{lay.prefix}_{lay.cls}" for lay in layouts}
    rename = renamer(names, var)
    functions = {key: _function(group, names, rename, var, loops) for key, group in groups.items()}
    head = "\n".join(lines[: body[codec[0]].lineno - 1]).rstrip("\n")
    return _Merged(head, functions, "\n".join(lines[end:]))


def _with_partial(head: str, after: str) -> str:
    """The module's head with ``functools.partial`` imported after the line ``after``."""
    head, count = re.subn(rf"^{re.escape(after)}$", lambda m: m[0] + "\n" + _PARTIAL_IMPORT, head, count=1,
                          flags=re.M)
    assert count == 1, f"no line {after!r} to import functools.partial after"
    return head


def merge_module(
    source: str, served: dict[str, tuple[int, ...]], roots: Sequence[tuple[int, str]],
    flexible: dict[str, bool], whole: bool = False,
) -> str:
    """``source`` (a module printed with per-layout functions) with one function per struct and prefix.

    ``served``: each layout's id (``<Struct>_v<n>``) -> the versions it serves; ``roots``: (version,
    root layout id) of every version of the message; ``flexible``: whether each layout is of flexible
    versions (compact lengths: the widths its text names, ``_W2``/``_W4``/``_M4``, are those of
    ``_LENGTHS``); ``whole`` (modules reading and writing array elements in place): a loop is shared
    only by the layouts whose whole loop is the same, so that no version is tested per element, and
    each run of statements the layouts do not share is one ``if``/``elif`` chain with a branch per
    sequence of them (``_switch``), so that a version is tested a few times per struct, not once per
    statement.
    """
    merged = _merged(source, served, loops=whole)
    functions = merged.functions
    root = roots[0][1].rsplit("_v", 1)[0]
    eager, lazy = functions[("d", root)], functions.pop(("dl", root))
    if eager[2:] == lazy[2:]:  # no array of structs to leave unbuilt: one decoder
        tables = {"d": f"_at_version(d_{root}, v)", "dl": f"_at_version(d_{root}, v)"}
    else:
        functions[("d", root)] = _eager_or_lazy(eager, lazy, root, whole)
        tables = {"d": f"_at_version(d_{root}, v, False)", "dl": f"_at_version(d_{root}, v, True)"}
    tables["e"] = f"_at_version(e_{root}, v)"
    for prefix in ("d", "e"):  # the tables' copies bind the root's version (and lazy flag) last
        text = functions[(prefix, root)]
        text[0] = _version_last(text[0])
    printed: list[str] = []
    if any(_WIDTHS in line for text in functions.values() for line in text):
        by_version = {v: flexible[fid] for fid, vs in served.items() for v in vs}
        printed += ["", "", _lengths(by_version)]
    for text in functions.values():
        printed += ["", "", *text]
    printed += ["", "", *_tables([v for v, _ in roots], tables)]
    head = _with_partial(merged.head, "import struct as _struct")
    if _AT_VERSION_IMPORT not in head:  # (the module template imports it; a module printed otherwise)
        head = head.replace(_PARTIAL_IMPORT, f"{_PARTIAL_IMPORT}\n{_AT_VERSION_IMPORT}", 1)
    return head + "\n" + "\n".join(printed) + "\n" + merged.tail


__all__ = ["condition", "merge_module", "renamer"]
