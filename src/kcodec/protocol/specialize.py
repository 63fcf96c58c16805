"""A versioned module's codecs at one version, made when a version is first used.

A versioned module (``kcodec.codegen.vmerge``) holds one decoder and one encoder per struct that branch
on the version: small generated code, but every call runs a few version tests per struct. For the
modules the planner marks ``SPECIALIZE`` (the frequent messages: the hot and client group APIs), the
first use of a version makes a copy of its root function, and of every struct function the root
reaches, for that version alone: each version test decided and only the branch the version takes kept,
so the copy runs the straight code of that version's layout. A decoder's ``lazy`` flag, bound with the
version, is decided the same way.

The copies are made from the module's own source lines, in the form its printer gives them (one test
per ``if``/``elif`` line, on ``v`` and ``lazy`` only: comparisons with integers, ``in`` a tuple of
integers, ``not``, ``and``, ``or``); a test on anything else stays a test. The line numbers are kept
(the branches not taken become blank lines), so tracebacks point at the generated module's lines. The
copies share the module's globals and call each other; a module whose source is not available (only
``.pyc`` files installed, say) keeps its versioned functions.
"""

from __future__ import annotations
import __future__

import dis
import importlib.util
import marshal
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FunctionType, ModuleType
from typing import Any

__all__ = ["copy_name", "specialized"]

#: the parameter that carries the version into every struct function of a versioned module
VERSION = "v"

_HEADER = re.compile(r"(?P<indent> *)(?P<kw>if|elif) (?P<test>.*?):(?P<rest> *(?:#.*)?)\n?")
_ELSE = re.compile(r"(?P<indent> *)else:(?P<rest> *(?:#.*)?)\n?")
#: a test on the bound parameters only: decided when the copy is made
_DECIDABLE = re.compile(r"(?:\s|\d+|\b(?:v|lazy|not|and|or|in)\b|<=|>=|==|!=|<|>|[(),])+")
_ANNOTATIONS = __future__.annotations.compiler_flag


def copy_name(function: str, version: int) -> str:
    """The name of ``function``'s copy at ``version``."""
    return f"{function}__v{version}"


@dataclass
class _Chain:
    """An ``if``/``elif``/``else`` chain being copied: where it is, and what its current branch does."""

    indent: int
    #: "inline" (the branch the version takes, in place of the chain), "drop" (a branch not taken),
    #: "keep" (a branch whose test stays a test)
    branch: str
    decided: bool  # a later branch can no longer run
    kept: bool  # a header of this chain was kept


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


class _Copier:
    """The lines of one function with its tests on the bound parameters decided."""

    def __init__(self, bound: dict[str, object]) -> None:
        self.bound = bound
        self.decisions: dict[str, bool] = {}

    def decide(self, test: str) -> bool | None:
        """The test's value at the bound parameters; None if it reads anything else."""
        if test not in self.decisions:
            names = set(re.findall(r"[A-Za-z_]\w*", test)) - {"not", "and", "or", "in"}
            if not names or not names <= set(self.bound) or not _DECIDABLE.fullmatch(test):
                return None
            self.decisions[test] = bool(eval(test, {"__builtins__": {}}, dict(self.bound)))
        return self.decisions[test]

    def copy(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        chains: list[_Chain] = []
        for line in lines:
            if not line.strip():
                out.append("\n")
                continue
            at = _indent(line)
            header, other = _HEADER.fullmatch(line), _ELSE.fullmatch(line)
            continues = other is not None or (header is not None and header["kw"] == "elif")
            while chains and (at < chains[-1].indent or (at == chains[-1].indent and not continues)):
                chains.pop()
            if any(c.branch == "drop" and at > c.indent for c in chains):
                out.append("\n")  # inside a branch not taken
                continue
            shift = 4 * sum(c.branch == "inline" and at > c.indent for c in chains)
            out.append(self._line(line, at, shift, header, other, chains))
        return out

    def _line(
        self,
        line: str,
        at: int,
        shift: int,
        header: re.Match[str] | None,
        other: re.Match[str] | None,
        chains: list[_Chain],
    ) -> str:
        match = header or other
        if match is None:
            return _dedent(line, shift)
        test = header["test"] if header is not None else None  # None: an ``else``
        continues = test is None or match["kw"] == "elif"
        chain = chains[-1] if continues and chains and chains[-1].indent == at else None
        if chain is None:
            if test is None:  # the ``else`` of a ``for``, ``while`` or ``try``
                return _dedent(line, shift)
            chain = _Chain(at, "keep", decided=False, kept=False)  # an ``if``: a new chain
            chains.append(chain)
        elif chain.decided:
            chain.branch = "drop"
            return "\n"
        value = True if test is None else self.decide(test)
        pad, rest = " " * (at - shift), match["rest"]
        if value is None:  # a test that stays: the chain's first kept header is its ``if``
            chain.branch = "keep"
            keyword = "elif" if chain.kept else "if"
            chain.kept = True
            return f"{pad}{keyword} {test}:{rest}\n"
        if not value:
            chain.branch = "drop"
            return "\n"
        chain.decided = True
        if chain.kept:  # taken where an earlier test stays a test: its ``else``
            chain.branch = "keep"
            return f"{pad}else:{rest}\n"
        chain.branch = "inline"
        return "\n"


def _dedent(line: str, shift: int) -> str:
    if line[:shift].strip():
        raise ValueError(f"cannot move a line {shift} columns left: {line!r}")
    return line[shift:]


_BLOCK = ("if ", "elif ", "else", "for ", "while ", "try", "except", "with ", "finally")


def _filled(lines: list[str]) -> list[str]:
    """A ``pass`` in each block the copy emptied (on one of its blank lines: the numbering stays)."""
    out = list(lines)
    for i, line in enumerate(out):
        code = line.split("#", 1)[0].rstrip()
        if not code.endswith(":") or not code.lstrip().startswith(_BLOCK):
            continue
        j = i + 1
        while j < len(out) and (not out[j].strip() or out[j].lstrip().startswith("#")):
            j += 1
        if j == len(out) or _indent(out[j]) <= _indent(line):
            blank = next((k for k in range(i + 1, j) if not out[k].strip()), None)
            if blank is None:
                raise ValueError(f"no line to put a pass in after {line!r}")
            out[blank] = " " * (_indent(line) + 4) + "pass\n"
    return out


def _codes(code: CodeType) -> Iterator[CodeType]:
    """A function's code and the code nested in it (comprehensions, inner functions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _codes(const)


def _last_line(code: CodeType) -> int:
    """The last source line of a function's code (its nested code objects' included)."""
    ends = (end for c in _codes(code) for _, end, _, _ in c.co_positions() if end is not None)
    return max(ends, default=code.co_firstlineno)


#: the copies' format, part of the cache's key: change it when the copies are made differently
_FORMAT = b"kcodec-copies-1\n"


class _Cache:
    """The copies' code objects on disk beside the module's bytecode (``__pycache__``), keyed as
    Python keys its bytecode: this format, the bytecode magic number, and the source file's
    modification time and size. Later processes define the copies without making them again (nor
    reading the source). A folder that cannot be written is no error (as for Python's own bytecode);
    ``PYTHONDONTWRITEBYTECODE`` writes nothing."""

    def __init__(self, module_file: str | None) -> None:
        self.key = b""
        self.path: Path | None = None
        if module_file and module_file.endswith(".py"):
            try:
                stat = os.stat(module_file)
                self.path = Path(importlib.util.cache_from_source(module_file)).with_suffix(".copies")
            except (OSError, NotImplementedError):  # no source file, or no bytecode cache here
                self.path = None
            else:
                stamp = f"{stat.st_mtime_ns}:{stat.st_size}\n".encode()
                self.key = _FORMAT + importlib.util.MAGIC_NUMBER + stamp
        self.codes = self._read()

    def _read(self) -> dict[str, CodeType]:
        try:
            data = self.path.read_bytes() if self.path is not None else b""
        except OSError:
            return {}
        if not data.startswith(self.key):
            return {}
        try:
            codes = marshal.loads(data[len(self.key) :])
        except (EOFError, ValueError, TypeError):
            return {}
        if not isinstance(codes, dict) or not all(isinstance(c, CodeType) for c in codes.values()):
            return {}
        return codes

    def write(self) -> None:
        if self.path is None or sys.dont_write_bytecode:
            return
        partial = self.path.with_name(f"{self.path.name}.{os.getpid()}")
        try:
            self.path.parent.mkdir(exist_ok=True)
            partial.write_bytes(self.key + marshal.dumps(self.codes))
            os.replace(partial, self.path)
        except OSError:
            partial.unlink(missing_ok=True)


_LOCAL_STORES = frozenset(dis.opmap[n] for n in ("STORE_FAST", "STORE_DEREF", "DELETE_FAST", "DELETE_DEREF"))


def _stores(code: CodeType, names: set[str]) -> bool:
    """Whether the code (or code nested in it) assigns or deletes one of ``names`` (a scan of the raw
    bytecode: an argument behind ``EXTENDED_ARG`` can only make it answer yes where the answer is no)."""
    for c in _codes(code):
        cells = [n for n in c.co_cellvars if n not in c.co_varnames]
        local = (*c.co_varnames, *cells, *c.co_freevars)  # what the opcodes' argument indexes
        wanted = {i for i, name in enumerate(local) if name in names}
        raw = c.co_code
        if wanted and any(raw[i] in _LOCAL_STORES and raw[i + 1] in wanted for i in range(0, len(raw), 2)):
            return True
    return False


class _Module:
    """One versioned module's source lines, its functions, and the copies made so far (in a namespace
    holding the module's globals and the copies)."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.filename = getattr(module, "__file__", None) or module.__name__
        self._lines: list[str] | None = None  # read on the first copy the cache does not hold
        self.namespace = dict(module.__dict__)
        self.code = {
            name: fn.__code__
            for name, fn in self.namespace.items()
            if isinstance(fn, FunctionType) and fn.__module__ == module.__name__
        }
        #: the struct functions: the version one of their own parameters (not bound as a default)
        self.versioned = {
            name for name, code in self.code.items() if code.co_varnames[: code.co_argcount][:1] == (VERSION,)
        }
        names = "|".join(sorted(self.versioned, key=len, reverse=True))  # the longest first
        self.calls = re.compile(rf"\b({names})\((v\b)")
        self.partials = re.compile(rf"\b_partial\(({names}), v\)")
        self.spans: dict[str, tuple[int, int]] = {}  # function -> its first and last source line
        self.cache = _Cache(getattr(module, "__file__", None))

    def copy(self, root: str, bound: dict[str, object], version: int, name: str) -> FunctionType:
        """The copy of ``root`` with the ``bound`` parameters decided, with the copies (at ``version``)
        of the struct functions it reaches: from the cache, else made (and cached)."""
        if name not in self.namespace:
            if name in self.cache.codes:
                self._define(name)
            else:
                self._make(root, bound, version, name)
                self.cache.write()
        result: FunctionType = self.namespace[name]
        return result

    def _make(self, root: str, bound: dict[str, object], version: int, name: str) -> None:
        """Make the copies of ``root`` and of the struct functions it reaches, all or none: each is
        compiled first, and defined (and cached) only when every one of them compiled."""
        pending = [(root, bound, name)]
        compiled: dict[str, CodeType] = {}
        cached: set[str] = set()
        seen = {name}
        while pending:
            function, consts, new_name = pending.pop()
            text, wanted = self._copy_text(function, consts, version, new_name)
            compiled[new_name] = compile(text, self.filename, "exec", flags=_ANNOTATIONS, dont_inherit=True)
            for callee in sorted(wanted):
                callee_copy = copy_name(callee, version)
                if callee_copy in seen or callee_copy in self.namespace:
                    continue
                seen.add(callee_copy)
                if callee_copy in self.cache.codes:
                    cached.add(callee_copy)
                else:
                    pending.append((callee, {VERSION: version}, callee_copy))
        for new_name, module_code in compiled.items():
            exec(module_code, self.namespace)  # the module's own lines, with the version decided
            self.cache.codes[new_name] = self.namespace[new_name].__code__
        for callee_copy in cached:
            if callee_copy not in self.namespace:
                self._define(callee_copy)

    def _define(self, name: str) -> None:
        """Define a cached copy, and the cached copies it calls."""
        code = self.cache.codes[name]
        self.namespace[name] = FunctionType(code, self.namespace, name)
        for called in {n for c in _codes(code) for n in c.co_names}:
            if called in self.cache.codes and called not in self.namespace:
                self._define(called)

    def lines(self) -> list[str]:
        """The module's source lines (ValueError if its source is not available)."""
        if self._lines is None:
            source = _source(self.module)
            self._lines = source.splitlines(keepends=True) if source else []
        if not self._lines:
            raise ValueError(f"{self.filename}: no source to copy from")
        return self._lines

    def _span(self, function: str) -> tuple[int, int]:
        """The function's first and last source line, once it is known to be copyable: it does not
        assign its version or lazy flag (a test on a value the function changes cannot be decided)."""
        if function not in self.spans:
            code = self.code[function]
            if _stores(code, {VERSION, "lazy"}):
                raise ValueError(
                    f"{self.filename}: {function} assigns its version or flag: it cannot be copied"
                )
            self.spans[function] = (code.co_firstlineno, _last_line(code))
        return self.spans[function]

    def _copy_text(
        self, function: str, bound: dict[str, object], version: int, name: str
    ) -> tuple[str, set[str]]:
        first, last = self._span(function)
        lines = _filled(_Copier(bound).copy(self.lines()[first - 1 : last]))
        definition = f"def {function}("
        if not lines[0].startswith(definition):
            raise ValueError(f"{self.filename}: line {first} does not start function {function}")
        lines[0] = f"def {name}(" + lines[0][len(definition) :]
        wanted: set[str] = set()

        def call(m: re.Match[str]) -> str:
            wanted.add(m[1])
            return f"{copy_name(m[1], version)}({m[2]}"

        def partial(m: re.Match[str]) -> str:
            wanted.add(m[1])
            return f"_partial({copy_name(m[1], version)}, v)"

        body = "".join(lines[1:])
        if self.versioned:
            body = self.partials.sub(partial, self.calls.sub(call, body))
        return "\n" * (first - 1) + lines[0] + body, wanted


_modules: dict[str, _Module] = {}


def _source(module: ModuleType) -> str | None:
    """The module's source text: from its loader, else its ``.py`` file; None if neither has it."""
    get_source = getattr(getattr(module, "__loader__", None), "get_source", None)
    if get_source is not None:
        try:
            text = get_source(module.__name__)
        except (ImportError, OSError):
            text = None
        if isinstance(text, str):
            return text
    path = getattr(module, "__file__", None)
    if isinstance(path, str) and path.endswith(".py"):
        try:
            return Path(path).read_text(encoding="utf-8")
        except OSError:
            return None
    return None


def _parsed(module: ModuleType) -> _Module:
    name = module.__name__
    if name not in _modules:
        _modules[name] = _Module(module)
    return _modules[name]


def specialized(module: ModuleType, fn: Any) -> Any:
    """``fn`` (a root function of ``module``'s tables, its version and flags bound as defaults by
    ``at_version``) as a copy with those parameters decided; ``fn`` itself where the module is not
    marked ``SPECIALIZE``, its source is not available, or a function cannot be copied (one that
    assigns its version, say: tests/test_specialize.py checks that every version of every marked module
    gets its copy)."""
    if not getattr(module, "SPECIALIZE", False) or not isinstance(fn, FunctionType) or not fn.__defaults__:
        return fn
    parsed = _parsed(module)
    if fn.__name__ not in parsed.code:
        return fn
    code = fn.__code__
    params = code.co_varnames[: code.co_argcount]
    bound = dict(zip(params[len(params) - len(fn.__defaults__) :], fn.__defaults__, strict=True))
    version = bound.get(VERSION)
    if not isinstance(version, int):
        return fn
    flags = "".join(f"_{k}" for k, value in bound.items() if k != VERSION and value)
    try:
        made = parsed.copy(fn.__name__, bound, version, f"{copy_name(fn.__name__, version)}{flags}")
    except (ValueError, SyntaxError):  # code the copier does not know how to copy: run it as it is
        return fn
    made.__defaults__ = fn.__defaults__
    return made
