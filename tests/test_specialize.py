"""kcodec.protocol.specialize: a versioned module's codecs copied per version with the version folded."""

from __future__ import annotations

import dis
import importlib
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import FunctionType, ModuleType

import pytest

from kcodec._generated import COMPILED, MESSAGES
from kcodec.protocol import specialize
from kcodec.protocol.codec import module

SCRATCH = """
from functools import partial as _partial

from kcodec.protocol._gen_runtime import at_version as _at

def d_Item(v: int, x: int) -> tuple[int, ...]:
    if v >= 3:
        return (x, 3)
    elif 1 <= v <= 2 and x >= 0:
        return (x, 1)
    elif v in (0,):
        if x < 0:
            raise ValueError("negative at " + str(v))
    return (x, v * 10 - 1)

def d_Root(items: list[int], v: int, lazy: bool) -> list[object]:
    if not lazy:
        return [d_Item(v, x) for x in items]
    if lazy and v > 100:
        pass
    return [_partial(d_Item, v), items]

TABLE = {v: _at(d_Root, v, False) for v in range(4)}
LAZY = {v: _at(d_Root, v, True) for v in range(4)}
SPECIALIZE = True
"""


@pytest.fixture()
def scratch(tmp_path: Path) -> Iterator[ModuleType]:
    (tmp_path / "kcodec_scratch_versioned.py").write_text(SCRATCH)
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module("kcodec_scratch_versioned")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("kcodec_scratch_versioned", None)
        specialize._modules.pop("kcodec_scratch_versioned", None)


def _version_tests(fn: FunctionType) -> list[int]:
    """The offsets of the tests in ``fn`` that read the version or the lazy flag: a comparison, or a
    jump on a value, within four instructions of loading one of them."""
    code = list(dis.get_instructions(fn))
    found = []
    for at, ins in enumerate(code):
        test = ins.opname in ("COMPARE_OP", "CONTAINS_OP") or ins.opname.startswith("POP_JUMP")
        if test and any(
            w.opname == "LOAD_FAST" and w.argval in ("v", "lazy") for w in code[max(0, at - 4) : at]
        ):
            found.append(ins.offset)
    return found


def test_a_copy_folds_the_version_and_flags_and_does_what_the_versioned_function_does(
    scratch: ModuleType,
) -> None:
    for v in range(4):
        for table in (scratch.TABLE, scratch.LAZY):
            fn = table[v]
            copy = specialize.specialized(scratch, fn)
            assert copy is not fn and copy.__name__.startswith(f"d_Root__v{v}")
            assert not _version_tests(copy)  # every test on the version decided
            for items in ([], [5, 0], [7]):
                got, want = copy(items), fn(items)
                if table is scratch.LAZY:  # the element decoder handed on is the copy at v
                    assert got[0].func.__name__ == f"d_Item__v{v}" and got[1:] == want[1:]
                    assert got[0](9) == want[0](9)
                else:
                    assert got == want
    for v in range(4):  # the element function's copy: a test reading x as well stays a test
        item = specialize.specialized(scratch, scratch.TABLE[v]).__globals__[f"d_Item__v{v}"]
        assert bool(_version_tests(item)) == (v < 3)
    assert not any(n.startswith("d_Item__") for n in vars(scratch))  # the module's namespace is untouched


def test_a_copy_raises_where_the_versioned_function_does_and_its_traceback_shows_the_module_line(
    scratch: ModuleType,
) -> None:
    copy = specialize.specialized(scratch, scratch.TABLE[0])
    with pytest.raises(ValueError, match="negative at 0") as info:
        copy([-1])
    frame = traceback.extract_tb(info.tb)[-1]
    assert frame.filename == scratch.__file__ and frame.line == 'raise ValueError("negative at " + str(v))'


def test_modules_not_marked_or_without_source_keep_their_versioned_functions(scratch: ModuleType) -> None:
    fn = scratch.TABLE[2]
    setattr(scratch, "SPECIALIZE", False)  # noqa: B010 - a module attribute the type checker cannot see
    assert specialize.specialized(scratch, fn) is fn
    setattr(scratch, "SPECIALIZE", True)  # noqa: B010
    scratch.__loader__ = None  # e.g. only bytecode installed
    scratch.__file__ = f"{scratch.__file__}c"
    assert specialize.specialized(scratch, fn) is fn


def _marked() -> list[tuple[str, ModuleType]]:
    return [(name, module(name)) for name in MESSAGES if getattr(module(name), "SPECIALIZE", False)]


def test_every_version_of_the_marked_messages_gets_a_copy_free_of_version_tests() -> None:
    marked = dict(_marked())
    assert not set(marked) & set(COMPILED)  # compiled modules keep a copy per layout, compiled
    frequent = {"FetchRequest", "MetadataResponse", "JoinGroupRequest", "OffsetCommitRequest"} - set(COMPILED)
    assert frequent <= set(marked)
    for mod in marked.values():
        namespace: dict[str, object] = {}
        for table in ("DECODERS", "DECODERS_LAZY", "ENCODERS"):
            for fn in getattr(mod, table).values():
                copy = specialize.specialized(mod, fn)
                assert copy is not fn and copy.__defaults__ == fn.__defaults__
                namespace = copy.__globals__
        copies = [f for f in namespace.values() if isinstance(f, FunctionType) and "__v" in f.__name__]
        assert copies and all(not _version_tests(f) for f in copies)


def test_kcodec_decodes_and_encodes_through_the_copies() -> None:
    from kcodec.protocol.codec import _decoder_fn, _encoder_fn

    # a marked message with a lazy decoder of its own (FetchRequest in the pure build; in the compiled
    # build, whose hot messages are compiled, a consumer group one)
    name = next(n for n, m in _marked() if len(m.DECODERS_LAZY[0].__defaults__) == 2)
    assert _decoder_fn(name, 0).__name__ == f"d_{name}__v0"
    assert _decoder_fn(name, 0, lazy=True).__name__ == f"d_{name}__v0_lazy"
    assert _encoder_fn(name, 0).__name__ == f"e_{name}__v0"


def test_copies_are_cached_beside_the_bytecode_and_a_later_process_defines_them_from_there(
    scratch: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    made = specialize.specialized(scratch, scratch.LAZY[1])
    path = specialize._modules[scratch.__name__].cache.path
    assert path is not None and path.parent.name == "__pycache__" and path.exists()
    specialize._modules.pop(scratch.__name__)  # as a new process would start

    def refuse(*args: object) -> list[str]:
        raise AssertionError("a cached copy was made again")

    monkeypatch.setattr(specialize._Copier, "copy", refuse)
    again = specialize.specialized(scratch, scratch.LAZY[1])
    assert again is not made and again.__code__.co_code == made.__code__.co_code
    got, want = again([4]), scratch.LAZY[1]([4])
    assert got[0].func.__name__ == "d_Item__v1" and got[0](9) == want[0](9) and got[1:] == want[1:]
    assert specialize._Cache(scratch.__file__).codes
    # a source file changed since (an upgrade, an edit: another size or time): the cache is not used
    Path(str(scratch.__file__)).write_text(SCRATCH + "\n")
    assert specialize._Cache(scratch.__file__).codes == {}


def _refuse_mkdir(*args: object, **kwargs: object) -> None:
    raise PermissionError("read-only")


def test_a_cache_that_cannot_be_written_or_is_not_wanted_is_no_error(
    scratch: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "m.py").write_text(SCRATCH)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(Path, "mkdir", _refuse_mkdir)
    cache = specialize._Cache(str(tmp_path / "m.py"))  # its __pycache__ cannot be made
    cache.codes["f"] = scratch.d_Item.__code__
    cache.write()
    assert not (tmp_path / "__pycache__").exists()
    monkeypatch.undo()  # mkdir works again
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    cache = specialize._Cache(str(tmp_path / "m.py"))
    cache.codes["f"] = scratch.d_Item.__code__
    cache.write()
    assert not (tmp_path / "__pycache__").exists()


def test_a_function_that_assigns_its_version_is_not_copied(tmp_path: Path) -> None:
    (tmp_path / "kcodec_scratch_assigns.py").write_text(
        SCRATCH.replace(
            "    if v >= 3:\n        return (x, 3)", "    if v >= 3:\n        v = 0\n        return (x, v)"
        )
    )
    sys.path.insert(0, str(tmp_path))
    try:
        mod = importlib.import_module("kcodec_scratch_assigns")
        for v in range(4):
            for _ in range(2):  # nothing of a failed copy is kept: asked again, the same answer
                fn = mod.TABLE[v]
                assert specialize.specialized(mod, fn) is fn  # run as it is
                assert fn([1]) == [(1, 0 if v >= 3 else 1 if v else -1)]
        assert not any("__v" in n for n in specialize._modules["kcodec_scratch_assigns"].namespace)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("kcodec_scratch_assigns", None)
        specialize._modules.pop("kcodec_scratch_assigns", None)
