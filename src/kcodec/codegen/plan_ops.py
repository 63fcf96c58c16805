"""Turn one struct layout into the read, write and skip operations its generated functions print.

``OpBuilder`` is made once per generated function (its local names are that function's) and shares
the module's ``ConstantPool`` and function ids. Every decision lands in the returned ``program`` nodes:
which strategy an array uses (``kcodec.codegen.strategy``), which constant a value reads, what each
local is called and which checks a value needs.
"""

from __future__ import annotations

from dataclasses import replace

from kcodec.codegen.constants import ConstantPool
from kcodec.codegen.layout import FieldPlan, RunPlan, StructPlan, ValuePlan
from kcodec.codegen.program import (
    INTERPRETED,
    AbsentCheck,
    BuildObject,
    KnownTag,
    Length,
    ReadArray,
    ReadRun,
    ReadTagged,
    ReadValue,
    SameWidth,
    ShapeRead,
    ShapeWrite,
    SkipStructArray,
    SkipValue,
    Target,
    WriteArray,
    WriteRun,
    WriteTagged,
    WriteValue,
)
from kcodec.codegen.strategy import ITER_UNPACK_MIN, read_strategy, same_width, shape, write_strategy
from kcodec.codegen.wire_types import INT32_MAX

#: names a generated function already uses (or must not shadow): locals never take them
RESERVED = frozenset({
    "buf", "pos", "blen", "obj", "out", "mvb", "_field", "_index", "_e", "_", "tagged", "len", "list",
    "range", "type", "bytes", "str", "memoryview", "enumerate", "bytearray", "Any",
})

READ = ReadRun | ReadValue
WRITE = WriteRun | WriteValue


def nondefault(expr: str, default: str) -> str:
    """A condition that is true when ``expr`` differs from the default (Kafka's write rule)."""
    return f"{expr} is not None" if default == "None" else f"{expr} != {default}"


def json_name(name: str) -> str:
    """Kafka's camelCase field name (``FieldSpec.camelCaseName()``)."""
    return name[0].lower() + name[1:]


class Locals:
    """Unique local names within one generated function, each saying what it holds."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        #: put before every name: in versioned encoders, the array whose elements are written in place
        #: (the layouts of one merged function name a local alike only if it holds the same kind of value)
        self.scope = ""

    def new(self, base: str) -> str:
        base = self.scope + base
        name, n = base, 2
        while name in self.used or name in RESERVED:
            name = f"{base}_{n}"
            n += 1
        self.used.add(name)
        return name


#: integer arithmetic reading one value of a struct format code at ``buf[pos + offset]`` (a bytes buffer
#: in compiled code); ``{k}`` is the byte ``k`` of the value, read as mypyc's native ``i64`` (see
#: ``_byte``), so that the shifts, ors and sign fixes are C operations on machine integers, not a
#: checked tagged-integer call each. Codes without an entry are read with struct.
_ARITH = {
    "b": "({0} ^ 0x80) - 0x80",
    "?": "buf[{0}] != 0",
    "h": "(({0} << 8 | {1}) ^ 0x8000) - 0x8000",
    "H": "{0} << 8 | {1}",
    "i": "(({0} << 24 | {1} << 16 | {2} << 8 | {3}) ^ 0x80000000) - 0x80000000",
    "I": "{0} << 24 | {1} << 16 | {2} << 8 | {3}",
    # the signed high half shifted, then the unsigned low half (two's complement throughout: mypyc
    # prints the shift as C's << on int64_t, which gcc defines for negative values)
    "q": "((({0} << 24 | {1} << 16 | {2} << 8 | {3}) ^ 0x80000000) - 0x80000000) << 32"
    " | ({4} << 24 | {5} << 16 | {6} << 8 | {7})",
}
#: arithmetic reading a non-compact length or count prefix (int16 for strings, int32 otherwise)
LENGTH_CODES = {2: "h", 4: "i"}


def _byte(offset: int) -> str:
    """Byte ``offset`` after ``pos`` as a native ``i64`` (one addition per index: ``pos + 9``)."""
    return f"i64(buf[pos + {offset}])" if offset else "i64(buf[pos])"


def arith(code: str, offset: int) -> str:
    """The expression reading one ``code`` value ``offset`` bytes after ``pos`` ("" if struct must).

    Its type is mypyc's ``i64``: assigned to an ``Any`` local or passed to a constructor it becomes
    a Python ``int`` once, where the value is stored. A byte index past the buffer raises
    ``IndexError`` as ``bytes`` indexing always does (the decoders turn it into their error)."""
    template = _ARITH.get(code)
    if template is None:
        return ""
    if code == "?":
        return template.format(f"pos + {offset}" if offset else "pos")
    return template.format(*(_byte(offset + k) for k in range(8)))


class OpBuilder:
    def __init__(
        self,
        pool: ConstantPool,
        fn_ids: dict[StructPlan, str],
        message: str,
        bytes_buffer: bool = False,
        locals_first: bool = False,
        native_elements: bool = False,
        calls_only: bool = False,
        version: str = "",
        target: Target = INTERPRETED,
    ) -> None:
        self.pool = pool
        #: the build the ops are printed for: each op carries the form it asks for (runtime helpers,
        #: versioned helper arguments, compiled error tracking and constructors, ``bytes`` input)
        self.target = target
        self.version = version  # lazy arrays: a version they are read at (``ReadArray.version``)
        #: arrays of structs read by a call of the element's decoder per element, never in place
        #: (``Target.helpers``: small code for the messages outside the hot set); encoders
        #: (``Target.versioned``) call the element's encoder where they would write it inline (the
        #: same errors: the inline code runs the element's encoder on any error)
        self.calls_only = calls_only
        self.fn_ids = fn_ids
        self.message = message
        self.bytes_buffer = bytes_buffer  # compiled and bytes-only: fixed-width values by arithmetic
        #: compiled: read fields into locals and build each object in one constructor call (``build``)
        self.locals_first = locals_first
        #: compiled encoders: struct elements written in place are read through a local of their native
        #: class (attribute reads in C, not by name), when they are of exactly that class
        self.native_elements = native_elements
        self.names = Locals()
        self.read_into: dict[str, dict[str, str]] = {}  # object -> attribute -> the local it was read into
        self.declared: list[str] = []  # the locals of read_into, and the unknown tagged fields' locals

    def _declare(self, base: str) -> str:
        local = self.names.new(base)
        self.declared.append(local)
        return local

    def _target(self, obj: str, attr: str) -> str:
        """Where a field of ``obj`` is read to: its attribute, or (locals first) a local of its own."""
        if not self.locals_first:
            return f"{obj}.{attr}"
        local = self._declare(f"{attr}_value")
        self.read_into.setdefault(obj, {})[attr] = local
        return local

    def build(self, plan: StructPlan, obj: str, tagged: ReadTagged | None) -> BuildObject | None:
        """Locals first: the constructor call making ``obj`` once its fields have been read."""
        if not self.locals_first:
            return None
        read = self.read_into.get(obj, {})
        args = [*read.items(), *((a.attr, a.default) for a in plan.absent)]
        return BuildObject(obj, plan.class_name, _keywords(args, tagged.store if tagged else "None"))

    def fn(self, plan: StructPlan | None) -> str:
        assert plan is not None
        return self.fn_ids[plan]

    def _length(self, v: ValuePlan, var: str) -> Length:
        wire = v.wire
        string = wire is not None and wire.length_fmt == "h"
        # the most a written length may be (the table's maximum length; compact bytes: the varint's)
        limit = wire.length_limit(v.compact) if wire is not None else (None if v.compact else INT32_MAX)
        width = 2 if string else 4
        three_byte = v.compact and v.kind in ("bytes", "records")
        versioned = self.target.versioned
        return Length(
            var=self.names.new(var),
            compact=v.compact,
            width=width,
            three_byte=three_byte,
            limit=limit,
            arith=arith(LENGTH_CODES[width], 0) if self.bytes_buffer and not v.compact else "",
            width_arg=f"_W{width}" if versioned else str(0 if v.compact else width),
            limit_arg="_M4" if versioned and width == 4 else str(limit),
            helper=self.target.helpers and not three_byte,
        )

    # --- reading ---------------------------------------------------------------------------------

    def read_steps(
        self, plan: StructPlan, obj: str, *, lazy: bool = False, track: bool = True
    ) -> tuple[READ, ...]:
        ops: list[READ] = []
        for step in plan.steps:
            if isinstance(step, RunPlan):
                targets = tuple(self._target(obj, f.attr) for f in step.fields)
                uuids = tuple(t for f, t in zip(step.fields, targets, strict=True) if f.value.is_uuid)
                run = self.pool.run(step) if track else None
                exprs: tuple[str, ...] = ()
                if self.bytes_buffer:
                    offsets = [sum(f.value.size for f in step.fields[:i]) for i in range(len(step.fields))]
                    exprs = tuple(arith(f.value.fmt, o) for f, o in zip(step.fields, offsets, strict=True))
                    exprs = exprs if all(exprs) else ()
                ops.append(ReadRun(run, targets, self.pool.fmt(step.fmt), step.size, uuids, exprs))
            else:
                target = self._target(obj, step.attr)
                ops.append(self.read_value(step.value, target, step.attr, track=track, lazy=lazy))
        return tuple(ops)

    def read_value(
        self, v: ValuePlan, target: str, seg: str, *, track: bool, lazy: bool = False
    ) -> ReadValue:
        if v.kind == "fixed":
            fmt = self.pool.fmt(">" + v.fmt)
            expr = arith(v.fmt, 0) if self.bytes_buffer else ""
            kind = "uuid" if v.is_uuid else "fixed"
            return ReadValue(kind, target, seg, track, fmt=fmt, size=v.size, arith=expr)
        if v.kind in ("string", "bytes", "records"):
            return ReadValue(
                v.kind, target, seg, track, nullable=v.nullable, length=self._length(v, f"{seg}_len"),
                end=self.names.new(f"{seg}_end"), max_length=_compact_limit(v),
                helper=self.target.helpers and v.kind != "records", bytes_input=self.target.bytes_buffer,
            )
        if v.kind == "struct":
            return ReadValue("struct", target, seg, track, nullable=v.nullable, fn=self.fn(v.struct),
                             bytes_input=self.target.bytes_buffer)
        assert v.kind == "array" and v.element is not None
        length = self._length(v, f"{seg}_count")
        return ReadValue("array", target, seg, track, nullable=v.nullable, length=length,
                         array=self._read_array(v.element, seg, length.var, lazy), helper=self.target.helpers)

    def _read_array(self, el: ValuePlan, seg: str, count: str, lazy: bool) -> ReadArray:
        elseg = f"{seg}[]"
        items, item = self.names.new(f"{seg}_list"), self.names.new(f"{seg}_item")
        compiled = self.target.compiled
        if el.kind == "fixed":
            if el.is_uuid:
                return ReadArray("uuids", elseg, items, item, elem_size=el.size, min_size=el.size,
                                 compiled=compiled)
            return ReadArray("values", elseg, items, item, elem_size=el.size, min_size=el.size,
                             table=self.pool.values_table(el.fmt), value_fmt=el.fmt, compiled=compiled)
        if el.kind != "struct":
            element = self.read_value(el, item, seg, track=False)
            return ReadArray("generic", elseg, items, item, min_size=el.min_size, element=element,
                             compiled=compiled)
        sp = el.struct
        assert sp is not None
        base = ReadArray("call", elseg, items, item, min_size=el.min_size, cls=sp.class_name, fn=self.fn(sp),
                         compiled=compiled)
        if lazy:
            return replace(base, strategy="lazy", start=self.names.new(f"{seg}_start"),
                           skip=self.skip_structs(sp, count), message=self.message, version=self.version)
        strategy = "call" if self.calls_only else read_strategy(sp, self.locals_first and self.bytes_buffer)
        if strategy == "call":
            return base
        start = self.names.new(f"{seg}_start")
        body = self.read_steps(sp, item, track=False)
        defaults = () if self.locals_first else tuple((f"{item}.{a.attr}", a.default) for a in sp.absent)
        tagged = self.read_tagged(sp, item, track=False) if sp.flexible else None
        out = replace(base, strategy=strategy, start=start, body=body, defaults=defaults, tagged=tagged,
                      build=self.build(sp, item, tagged))
        if strategy == "same_width":
            sw = same_width(sp)
            assert sw is not None
            values = tuple(self.names.new(f"{a}_value") for a in sw.attrs)
            unpacked = values + ((self.names.new("tagged_count"),) if sw.flexible else ())
            stores = tuple((f"{item}.{a}", v) for a, v in zip(sw.attrs, values, strict=True))
            stores += tuple((f"{item}.{a}", d) for a, d in sw.defaults)
            ctor = _keywords([*zip(sw.attrs, values, strict=True), *sw.defaults])
            return replace(out, same_width=SameWidth(self.pool.fmt(sw.fmt), sw.size, unpacked, stores,
                                                      self.names.new(f"{seg}_append"), ctor, ITER_UNPACK_MIN))
        if strategy == "shaped":
            return replace(out, shape=self._shape_read(sp, item))
        return out

    def _shape_read(self, sp: StructPlan, item: str) -> ShapeRead:
        layout = shape(sp)
        assert layout is not None
        readers, _ = self.pool.shape(layout.pattern, sp.class_name)
        values = self.names.new("shape_values")
        starts: list[str] = ["0"]
        for step in layout.steps[1:]:
            starts.append(self.names.new(f"{step if isinstance(step, str) else step[0]}_at"))
        counts = [self.names.new(f"{step}_count_byte") for step in layout.steps if isinstance(step, str)]
        checks: list[str] = []
        stores: list[tuple[str, str]] = []
        args: list[tuple[str, str]] = []  # per attribute, for a constructor call
        arrays = iter(counts)
        for i, step in enumerate(layout.steps):
            j = starts[i]
            if isinstance(step, str):
                checks.append(f"{values}[{j}] == {next(arrays)}")
                end = "-1" if i == len(layout.steps) - 1 else starts[i + 1]
                stores.append((f"{item}.{step}", f"[*{values}[{j} + 1:{end}]]"))
                args.append((step, f"[*{values}[{j} + 1:{end}]]"))
                continue
            if len(step) == 1:
                stores.append((f"{item}.{step[0]}", f"{values}[{j}]"))
            else:
                span = f":{len(step)}" if i == 0 else f"{j}:{j} + {len(step)}"
                stores.append((", ".join(f"{item}.{a}" for a in step), f"{values}[{span}]"))
            args.extend(
                (a, f"{values}[{k}]" if j == "0" else f"{values}[{j} + {k}]") for k, a in enumerate(step)
            )
        lengths = [f"len({item}.{step})" for step in layout.steps if isinstance(step, str)]
        return ShapeRead(
            readers=readers, pattern=layout.pattern, widths=_tuple_source(str(w) for w in layout.widths),
            shape=self.names.new("shape"), unpack=self.names.new("shape_unpack"),
            size=self.names.new("shape_size"), starts=tuple(starts[1:]), counts=tuple(counts), values=values,
            checks=" and ".join(checks) + f" and not {values}[-1]", stores=tuple(stores),
            lengths=_tuple_source(lengths),
            ctor=_keywords([*args, *((a.attr, a.default) for a in sp.absent)]),
        )

    def read_tagged(self, plan: StructPlan, obj: str, *, track: bool = True) -> ReadTagged:
        prefix = "" if obj == "obj" else f"{obj}_"
        new = self.names.new
        targets = [self._target(obj, t.attr) for t in plan.tagged]
        known = tuple(
            KnownTag(t.tag or 0, t.attr, t.name, self.read_value(t.value, target, t.attr, track=True))
            for t, target in zip(plan.tagged, targets, strict=True)
        )
        store = f"{obj}._unknown_tagged_fields"
        if self.locals_first:
            store = self._declare(f"{prefix}unknown_tagged")
        return ReadTagged(
            obj=obj, track=track, store=store, count=new(f"{prefix}tagged_count"), tag=new(f"{prefix}tag"),
            size=new(f"{prefix}tag_size"), end=new(f"{prefix}tag_end"), start=new(f"{prefix}tag_start"),
            prev=new(f"{prefix}prev_tag"), unknown=new(f"{prefix}unknown_tags"),
            defaults=tuple((target, t.default) for t, target in zip(plan.tagged, targets, strict=True)),
            known=known,
        )

    # --- skipping ----------------------------------------------------------------------------------

    def skip_structs(self, sp: StructPlan, count: str) -> SkipStructArray:
        if self.target.versioned:  # no skip functions: the runtime skips the struct from INFO
            return SkipStructArray(count, "", runtime=sp.class_name, version=self.version)
        sw = same_width(sp)
        if sw is None:
            return SkipStructArray(count, self.fn(sp))
        return SkipStructArray(count, self.fn(sp), sw.size, sw.flexible)

    def skip_steps(self, plan: StructPlan) -> tuple[SkipValue, ...]:
        ops: list[SkipValue] = []
        for step in plan.steps:
            if isinstance(step, RunPlan):
                ops.append(SkipValue("run", step.fields[0].attr, track=self.pool.run(step), size=step.size))
            else:
                ops.append(self.skip_value(step.value, step.attr, track=True))
        return tuple(ops)

    def skip_value(self, v: ValuePlan, seg: str, *, track: bool) -> SkipValue:
        where = repr(seg) if track else None
        if v.kind == "fixed":
            return SkipValue("fixed", seg, where, size=v.size)
        if v.kind in ("string", "bytes", "records"):
            return SkipValue(v.kind, seg, where, nullable=v.nullable, length=self._length(v, f"{seg}_len"),
                             end=self.names.new(f"{seg}_end"), max_length=_compact_limit(v),
                             helper=self.target.helpers and v.kind != "records")
        if v.kind == "struct":
            return SkipValue("struct", seg, where, nullable=v.nullable, fn=self.fn(v.struct),
                             bytes_input=self.target.bytes_buffer)
        el = v.element
        assert el is not None
        length = self._length(v, f"{seg}_count")
        op = SkipValue("array", seg, where, nullable=v.nullable, length=length, min_size=el.min_size,
                       helper=self.target.helpers)
        if el.kind == "fixed":
            return replace(op, elem_size=el.size)
        if el.kind == "struct":
            assert el.struct is not None
            return replace(op, structs=self.skip_structs(el.struct, length.var))
        return replace(op, element=self.skip_value(el, seg, track=False))

    # --- writing -----------------------------------------------------------------------------------

    def absent_checks(self, plan: StructPlan, obj: str, *, track: bool = True) -> tuple[AbsentCheck, ...]:
        return tuple(
            AbsentCheck(a.attr, nondefault(f"{obj}.{a.attr}", a.default), json_name(a.name),
                        self._mark(repr(a.attr), track))
            for a in plan.absent
            if not a.ignorable
        )

    def _mark(self, source: str | None, track: bool) -> str:
        """What a compiled encoder records in ``_field`` before a tracked step ("": nothing)."""
        return source or "" if track and self.target.compiled else ""

    def write_steps(
        self, plan: StructPlan, obj: str, out: str = "out", *, track: bool = True
    ) -> tuple[WRITE, ...]:
        ops: list[WRITE] = []
        for step in plan.steps:
            if isinstance(step, RunPlan):
                sources = tuple(f"{obj}.{f.attr}" for f in step.fields)
                uuids = tuple(f"{obj}.{f.attr}" for f in step.fields if f.value.is_uuid)
                run = self.pool.run(step) if track else None
                mark = self._mark(run, track)
                ops.append(WriteRun(run, sources, self.pool.fmt(step.fmt), uuids, out, mark=mark))
            else:
                ops.append(self.write_value(step.value, f"{obj}.{step.attr}", step.attr, out, track=track))
        return tuple(ops)

    def write_value(self, v: ValuePlan, source: str, seg: str, out: str, *, track: bool) -> WriteValue:
        new = self.names.new
        mark = self._mark(repr(seg), track)
        if v.kind == "fixed":
            kind = "uuid" if v.is_uuid else "fixed"
            return WriteValue(kind, source, seg, track, out, fmt=self.pool.fmt(">" + v.fmt), mark=mark)
        if v.kind in ("string", "bytes", "records"):
            return WriteValue(v.kind, source, seg, track, out, nullable=v.nullable,
                              value=new(f"{seg}_value"), data=new(f"{seg}_bytes"),
                              length=self._length(v, f"{seg}_len"), mark=mark,
                              helper=self.target.helpers and v.kind != "records")
        if v.kind == "struct":
            return WriteValue("struct", source, seg, track, out, nullable=v.nullable,
                              value=new(f"{seg}_value"), fn=self.fn(v.struct), mark=mark)
        el = v.element
        assert v.kind == "array" and el is not None
        value = new(f"{seg}_value")
        length = self._length(v, f"{seg}_count")
        op = WriteValue("array", source, seg, track, out, nullable=v.nullable, value=value, length=length,
                        mark=mark)
        return replace(op, array=self._write_array(el, seg, value, length, out))

    def _write_array(self, el: ValuePlan, seg: str, value: str, length: Length, out: str) -> WriteArray:
        elseg = f"{seg}[]"
        item = self.names.new(f"{seg}_item")
        tracked = self.target.compiled
        if el.kind == "fixed" and not el.is_uuid:
            count_code = "B" if length.compact else "i"
            return WriteArray(
                "values", elseg, item, table=self.pool.values_table(el.fmt, count_code), value_fmt=el.fmt,
                packed=self.names.new(f"{seg}_packed"),
                count_source=f"{length.var} + 1" if length.compact else length.var, tracked=tracked,
            )
        if el.kind != "struct":
            element = self.write_value(el, item, seg, out, track=False)
            return WriteArray("generic", elseg, item, element=element, tracked=tracked)
        sp = el.struct
        assert sp is not None
        strategy = write_strategy(sp)
        if strategy == "inline" and self.calls_only:  # its encoder, with the errors written in place gives
            return WriteArray("call", elseg, item, fn=self.fn(sp), holder=item, rerun=True, tracked=tracked)
        base = WriteArray(strategy, elseg, item, fn=self.fn(sp), holder=item, tracked=tracked)
        if strategy == "call":
            return base
        if self.native_elements:  # the element's fields are read through its native-typed local
            native = self.names.new(f"{seg}_element")
            base = replace(base, native=native, cls=sp.class_name, holder=native)
            item = native
        if strategy == "same_width":
            sw = same_width(sp)
            assert sw is not None
            values = tuple(f"{item}.{a}" for a in sw.attrs) + (("0",) if sw.flexible else ())
            return replace(base, same_width_fmt=self.pool.fmt(sw.fmt), same_width_values=values)
        index = self.names.new(f"{seg}_index")
        absent = self.absent_checks(sp, item, track=False)
        if strategy == "shaped":
            return replace(base, index=index, absent=absent, shape=self._shape_write(sp, item))
        scope = self.names.scope
        if self.target.versioned:  # the element's locals named after its array
            self.names.scope = f"{scope}{seg}_"
        body = self.write_steps(sp, item, out, track=False)
        self.names.scope = scope
        return replace(base, index=index, absent=absent, body=body, flexible=sp.flexible)

    def _shape_write(self, sp: StructPlan, item: str) -> ShapeWrite:
        layout = shape(sp)
        assert layout is not None
        _, writers = self.pool.shape(layout.pattern, sp.class_name)
        key = self.names.new("shape_key")
        arrays: list[tuple[str, str]] = []
        values: list[str] = []
        for step in layout.steps:
            if isinstance(step, str):
                local = self.names.new(f"{step}_values")
                values.append(f"{key}[{len(arrays)}] + 1")
                values.append(f"*{local}")
                arrays.append((local, f"{item}.{step}"))
            else:
                values.extend(f"{item}.{a}" for a in step)
        return ShapeWrite(
            writers=writers, pattern=layout.pattern, key=key, packer=self.names.new("shape_struct"),
            arrays=tuple(arrays), key_source=_tuple_source(f"len({local})" for local, _ in arrays),
            values=", ".join(values),
        )

    def write_tagged(self, plan: StructPlan) -> WriteTagged:
        known = tuple(
            (t.tag or 0, t.attr, nondefault(f"obj.{t.attr}", t.default),
             self.write_value(t.value, f"obj.{t.attr}", t.attr, self.names.new(f"{t.attr}_tagged_bytes"),
                              track=False))
            for t in plan.tagged
        )
        return WriteTagged(known, _tuple_source(str(t.tag) for t in plan.tagged), self.target.compiled)


def _keywords(args: list[tuple[str, str]], unknown: str = "None") -> str:
    """Keyword arguments building a whole object in one constructor call (``unknown``: the source of
    its unknown tagged fields)."""
    return ", ".join([*(f"{attr}={source}" for attr, source in args), f"unknown_tagged_fields={unknown}"])


def _tuple_source(items: object) -> str:
    """Python source of a tuple of the given item sources (``(a, )`` for one, ``()`` for none)."""
    parts = list(items)  # type: ignore[call-overload]
    return "(" + "".join(f"{p}, " for p in parts) + ")"



__all__ = ["READ", "WRITE", "FieldPlan", "Locals", "OpBuilder", "json_name", "nondefault"]


def _compact_limit(v: ValuePlan) -> int | None:
    """The most a compact length may say before a reader refuses it (strings: their maximum length)."""
    return v.wire.compact_limit if v.compact and v.wire is not None else None
