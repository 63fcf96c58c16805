"""The emitter-ready plan: what the back ends print, with every decision already taken.

``kcodec.codegen.planner`` builds it from the merged specs and their per-version layouts; the
printers (``kcodec.codegen.print_read``, ``kcodec.codegen.print_write``) and the Python templates only
print it. Nothing here is computed at print time: function ids, the strategy of every array and
struct, constant names, local variable names and the checks a value needs are all fields.

Operations come in three families, one per generated function kind: ``Read*`` (decoders), ``Write*``
(encoders) and ``Skip*`` (the walkers of lazy decoding). Each value occurrence is one op whose ``kind``
the printers (``kcodec.codegen.print_read``, ``kcodec.codegen.print_write``) dispatch on. An op
carries everything its printer prints: its locals, constants, limits and the form the build target
asks for (runtime helpers, native constructors, error tracking), so a printer decides nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kcodec.codegen.layout import StructPlan
from kcodec.protocol.entity_roles import FactsStep


@dataclass(frozen=True, slots=True)
class Target:
    """What the generated module is for: the interpreter, or compilation with mypyc.

    ``compiled`` modules declare native classes (no ``__slots__``, attributes typed ``Any`` so that
    assigning any value behaves as in the pure build), build each object in one constructor call
    from the locals its fields were read into (``builds_from_locals``), use native ``i64`` byte
    offsets, keep module constants ``Final``, bind their eager decoders natively, and read lengths
    and counts with integer arithmetic on a ``bytes`` buffer when ``bytes_buffer`` (messages without
    records fields: records are zero-copy slices of the caller's own buffer).
    """

    compiled: bool = False
    bytes_buffer: bool = False
    #: strings and bytes read, skipped and written by calls to ``kcodec.protocol._gen_runtime`` instead of
    #: inline code: the messages outside the hot set in the pure build (a call per value, not a dozen lines)
    helpers: bool = False
    #: one decoder and encoder per struct that branch on the version (``kcodec.codegen.vmerge``) instead
    #: of a copy per layout, and no skip functions (lazy decoding skips structs by the runtime's skipper
    #: built from ``INFO``): the pure build's messages (``kcodec.codegen.planner.versioned_module``)
    versioned: bool = False
    #: versioned modules of the frequent messages (the hot and client group ones): each loop kept whole
    #: per element layout (no version test per element) and each run of statements the layouts do not
    #: share one ``if``/``elif`` chain, so a version is tested a few times per struct, not once per
    #: statement (``kcodec.codegen.vmerge.merge_module``'s ``whole``); the module is marked
    #: ``SPECIALIZE``: copies per version with the tests decided, made at first use
    #: (``kcodec.protocol.specialize``)
    switches: bool = False

    @property
    def offset_type(self) -> str:
        """The type of the decoders' byte offsets (``pos``, ``blen``): ``i64`` in compiled modules,
        machine integers with C arithmetic (``int`` is tagged: every ``pos + k`` a checked call)."""
        return "i64" if self.compiled else "int"

    @property
    def builds_from_locals(self) -> bool:
        """Decoders read each struct's fields into locals and make the object in one constructor call
        at the end (native classes: no ``__init__`` run first that stores every default)."""
        return self.compiled

    @property
    def name(self) -> str:
        return "compiled" if self.compiled else "interpreted"


INTERPRETED = Target()


# --- lengths ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Length:
    """A length or count prefix: compact (unsigned varint of n + 1) or int16/int32."""

    var: str  # the local holding it
    compact: bool
    width: int  # 2 or 4 for a non-compact prefix
    three_byte: bool = False  # compact lengths up to 2 MiB read/written in place (bytes/records)
    limit: int | None = None  # the most a written length may be (None: no check)
    arith: str = ""  # non-compact, bytes-only compiled reads: the prefix by integer arithmetic
    #: the width and limit arguments of the runtime helpers (``kcodec.protocol._gen_runtime``): the
    #: width (0: compact) and the limit, or in versioned modules the names each function sets
    #: (``_W4``, ``_M4``: ``kcodec.codegen.vmerge``)
    width_arg: str = ""
    limit_arg: str = ""
    helper: bool = False  # encoders: written by the runtime's ``_write_length``


# --- reading ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BuildObject:
    """Compiled target: the object made in one constructor call from the locals its fields (and its
    tagged section) were read into, after the last of them."""

    target: str  # the local receiving the object
    cls: str
    args: str  # keyword arguments: every field, its default where the version lacks it, unknown tags


@dataclass(frozen=True, slots=True)
class ReadRun:
    """Adjacent fixed-width fields read with one struct call."""

    track: str | None  # run-description constant recorded in _field for error paths (None: untracked)
    targets: tuple[str, ...]
    fmt: str  # struct constant
    size: int
    uuid_targets: tuple[str, ...]  # targets holding uuids (raw 16 bytes turned into Uuid)
    arith: tuple[str, ...] = ()  # bytes-only compiled reads: each field by integer arithmetic instead
    kind: str = "run"


@dataclass(frozen=True, slots=True)
class ReadValue:
    """One value read into ``target``: a field, a tagged field or an array element."""

    kind: str  # fixed | uuid | string | bytes | records | struct | array
    target: str
    seg: str  # the error-path segment of the field
    track: bool  # record the field in _field before reading (False inside elements read in place)
    nullable: bool = False
    fmt: str = ""  # fixed/uuid: struct constant
    size: int = 0
    arith: str = ""  # fixed, bytes-only compiled reads: the value by integer arithmetic instead
    length: Length | None = None
    end: str = ""  # string/bytes/records: local holding the end offset
    max_length: int | None = None  # compact strings: refuse lengths above it (the type's maximum)
    fn: str = ""  # struct: decoder function
    array: ReadArray | None = None
    helper: bool = False  # strings, bytes: read by a runtime helper; arrays: their count
    bytes_input: bool = False  # the buffer is ``bytes`` (strings decoded in place, null structs by byte)


@dataclass(frozen=True, slots=True)
class ReadArray:
    """How an array's elements are read (its length already read into ``length.var``)."""

    strategy: str  # values | uuids | lazy | shaped | same_width | inline | call | generic
    seg: str  # "attr[]": the error-path segment of an element
    items: str  # local: the list being built
    item: str  # local: the element being built
    elem_size: int = 0  # fixed-width values, same-width structs
    min_size: int = 0  # the fewest bytes an element takes
    table: str = ""  # values: struct constants for 0..31 values
    value_fmt: str = ""  # values: the struct format code of one value
    cls: str = ""  # struct elements: class name
    fn: str = ""  # struct elements: decoder (call, and the exact-error fallback of in-place reads)
    start: str = ""  # local: where the element read in place starts
    body: tuple[ReadRun | ReadValue, ...] = ()  # inline/shaped: the element's fields read in place
    defaults: tuple[tuple[str, str], ...] = ()  # (target, default source) set on elements read in place
    tagged: ReadTagged | None = None  # inline/shaped: the element's tagged section
    same_width: SameWidth | None = None
    shape: ShapeRead | None = None
    skip: SkipStructArray | None = None  # lazy: how the elements are walked
    element: ReadValue | None = None  # generic: one element read into ``item``
    message: str = ""  # lazy: the message name (LazyArray error paths)
    #: lazy: a version the array is read at (a literal, or ``v`` in a versioned module's function), from
    #: which a LazyArray whose element fails to build has the runtime read the element again
    version: str = ""
    build: BuildObject | None = None  # inline/shaped, compiled: the element made from its locals
    #: compiled: elements made by one constructor call (``SameWidth.ctor``, ``ShapeRead.ctor``), the
    #: shape's locals typed, a LazyArray stored without a type-checker comment
    compiled: bool = False


@dataclass(frozen=True, slots=True)
class SameWidth:
    """Elements of one width (fixed-width fields, empty tagged section): one iter_unpack for all."""

    fmt: str  # struct constant of one element (with the tagged-field count byte if flexible)
    size: int
    values: tuple[str, ...]  # locals unpacked per element
    stores: tuple[tuple[str, str], ...]  # (target, source) per field and default
    append: str  # local: the list's bound append
    ctor: str = ""  # compiled target: keyword arguments building the element in one constructor call
    min_count: int = 0  # the fewest elements read with one iter_unpack (``strategy.ITER_UNPACK_MIN``)


@dataclass(frozen=True, slots=True)
class ShapeRead:
    """Elements read with one unpack_from by the struct of the previous element's shape."""

    readers: str  # module dict: shape -> reader tuple
    pattern: str  # struct format with one %d per array
    widths: str  # source of the step widths tuple
    shape: str  # local: the cached reader tuple
    unpack: str  # local: its unpack_from
    size: str  # local: its size
    starts: tuple[str, ...]  # locals: where each step after the first starts in the tuple
    counts: tuple[str, ...]  # locals: the count byte each array must have
    values: str  # local: the unpacked tuple
    checks: str  # condition: every count byte and the tagged-field byte match
    stores: tuple[tuple[str, str], ...]  # (target, source expression) per field
    lengths: str  # source of the key tuple: the arrays' lengths of the element just read
    ctor: str = ""  # compiled target: keyword arguments building the element in one constructor call


@dataclass(frozen=True, slots=True)
class KnownTag:
    """A tagged field the struct defines at the version: read into ``attr``, exactly ``size`` bytes
    (a value ending before its declared size is refused, naming ``name`` and ``tag``)."""

    tag: int
    attr: str
    name: str  # the spec name, for errors (e.g. CurrentLeader)
    value: ReadValue


@dataclass(frozen=True, slots=True)
class ReadTagged:
    """A tagged-field section read into ``obj`` (known tags into attributes, others kept raw)."""

    obj: str
    track: bool
    store: str  # where the unknown tagged fields go: the attribute, or a local of the constructor call
    count: str  # locals: number of fields, tag, size, end, start, previous tag, unknown list
    tag: str
    size: str
    end: str
    start: str
    prev: str
    unknown: str
    defaults: tuple[tuple[str, str], ...]  # (target, default) of the known tagged fields
    known: tuple[KnownTag, ...]


# --- skipping ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SkipStructArray:
    """Walk ``count`` struct elements: one bounds check when they all have one width, else per element
    (or, ``runtime``, by the runtime's skipper of the struct)."""

    count: str
    fn: str  # the element's skip function ("" in versioned modules: ``runtime``)
    same_width: int = 0  # element size when every element has one width (0: walk each)
    flexible: bool = False  # same width: check every element's tagged-field byte is 0
    #: versioned modules, which print no skip functions: the struct whose elements the runtime skips
    #: from the module's ``INFO`` (``kcodec.protocol.skipping.skip_structs``) at ``version``
    runtime: str = ""
    version: str = ""


@dataclass(frozen=True, slots=True)
class SkipValue:
    kind: str  # run | fixed | string | bytes | records | struct | array
    seg: str
    track: str | None = None  # for runs: the run constant; for fields: the segment source
    size: int = 0
    nullable: bool = False
    length: Length | None = None
    end: str = ""
    max_length: int | None = None  # compact strings: refuse lengths above it
    fn: str = ""  # struct: skip function
    elem_size: int = 0  # array of fixed-width values
    min_size: int = 0
    structs: SkipStructArray | None = None
    element: SkipValue | None = None  # array of variable-length values
    helper: bool = False  # strings, bytes: skipped by a runtime helper; arrays: their count read by one
    bytes_input: bool = False  # the buffer is ``bytes``: a null struct's marker tested as a byte


# --- writing ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WriteRun:
    track: str | None
    sources: tuple[str, ...]
    fmt: str
    uuid_sources: tuple[str, ...]
    out: str = "out"
    kind: str = "run"
    mark: str = ""  # compiled encoders: what ``_field`` records before the run (its description)


@dataclass(frozen=True, slots=True)
class WriteValue:
    kind: str  # fixed | uuid | string | bytes | records | struct | array
    source: str  # the expression holding the value
    seg: str
    track: bool
    out: str  # the output buffer local
    nullable: bool = False
    fmt: str = ""
    value: str = ""  # local holding the value
    data: str = ""  # string/bytes/records: local holding the bytes written
    length: Length | None = None
    fn: str = ""  # struct: encoder
    array: WriteArray | None = None
    mark: str = ""  # compiled encoders: what ``_field`` records before the value (its segment)
    helper: bool = False  # strings, bytes: written by a runtime helper


@dataclass(frozen=True, slots=True)
class WriteArray:
    strategy: str  # values | same_width | shaped | inline | call | generic
    seg: str
    item: str
    index: str = ""  # local: the index of the element written in place
    table: str = ""  # values: struct constants for the count and 0..31 values
    value_fmt: str = ""
    packed: str = ""  # values: local holding 32+ values packed
    count_source: str = ""  # values: the count as written (compact: n + 1)
    fn: str = ""  # struct elements: encoder
    same_width_fmt: str = ""
    same_width_values: tuple[str, ...] = ()
    absent: tuple[AbsentCheck, ...] = ()  # elements written in place: fields they may not carry
    body: tuple[WriteRun | WriteValue, ...] = ()  # inline: the element's fields written in place
    flexible: bool = False  # inline/shaped element: its tagged-field section
    shape: ShapeWrite | None = None
    element: WriteValue | None = None  # generic
    #: compiled target, struct elements written in place (same_width, shaped, inline): the local that
    #: holds an element of exactly the struct's native class (``cls``), through which its fields are
    #: read as native attributes; an element of any other type is written by its own encoder
    native: str = ""
    cls: str = ""
    holder: str = ""  # struct elements: the local their fields are read from (``native``, or ``item``)
    #: call: on an error, the element's encoder runs again on a new bytearray, whose error is raised (as
    #: for an element written in place, which it replaces: versioned modules)
    rerun: bool = False
    #: compiled encoders: the array's field and element index kept for errors (``_field``, ``_index``),
    #: an element written in place that fails written again by its own encoder to name the field
    tracked: bool = False


@dataclass(frozen=True, slots=True)
class ShapeWrite:
    writers: str  # module dict: shape -> struct
    pattern: str
    key: str  # local: the shape (array lengths)
    packer: str  # local: the struct
    arrays: tuple[tuple[str, str], ...]  # (local, source) of each array
    key_source: str  # source of the shape tuple
    values: str  # the pack arguments


@dataclass(frozen=True, slots=True)
class AbsentCheck:
    """A field the version does not have: encoding refuses a non-default value (Kafka's rule)."""

    seg: str
    condition: str  # true when the value is not the default
    json_name: str
    mark: str = ""  # compiled encoders: what ``_field`` records before the check


@dataclass(frozen=True, slots=True)
class WriteTagged:
    known: tuple[tuple[int, str, str, WriteValue], ...]  # (tag, attr, non-default condition, value)
    known_tags: str  # source of the tuple of tags the version defines
    tracked: bool = False  # compiled encoders: ``_field`` names each tagged field before it is written


# --- functions, classes, modules ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FunctionPlan:
    """The decoder, encoder and skip (or lazy) functions of one de-duplicated struct layout."""

    id: str  # stable: <Struct>_v<first version it serves>
    cls: str
    versions: str  # e.g. "9-11, 13"
    served: tuple[int, ...]  # the versions themselves
    strategy: str  # how arrays of this struct are read, for the comment heading each function
    layout: StructPlan
    flexible: bool
    is_root: bool
    records_view: bool  # the decoder slices records from a memoryview of the buffer
    read: tuple[ReadRun | ReadValue, ...]
    read_lazy: tuple[ReadRun | ReadValue, ...]  # roots: arrays of structs left as LazyArray
    read_defaults: tuple[tuple[str, str], ...]  # (attr, default) of absent fields
    read_tagged: ReadTagged | None
    skip: tuple[SkipValue, ...]
    write_absent: tuple[AbsentCheck, ...]
    write: tuple[WriteRun | WriteValue, ...]
    write_tagged: WriteTagged | None
    read_build: BuildObject | None = None  # compiled: the decoder makes its object in one call
    read_locals: tuple[str, ...] = ()  # compiled: locals the fields are read into (declared Any)
    read_lazy_tagged: ReadTagged | None = None  # roots: the lazy decoder's tagged section
    read_lazy_build: BuildObject | None = None  # roots, compiled: as read_build, for the lazy decoder
    read_lazy_locals: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ClassField:
    attr: str
    annotation: str
    default: str  # source of the default value
    param_default: str  # MISSING for mutable defaults
    doc: str  # one line for the class docstring


@dataclass(frozen=True, slots=True)
class ClassPlan:
    name: str
    is_root: bool
    doc: str
    fields: tuple[ClassField, ...]
    infos: tuple[tuple[str, tuple[str, ...]], ...]  # spec set -> FieldInfo sources
    #: source of ``StructInfo.in_place``: the version ranges at which arrays of the struct are written
    #: element in place (``strategy.write_strategy``: shaped or inline); "" for none
    in_place: str = ""

    @property
    def shared_infos(self) -> tuple[str, ...] | None:
        """The FieldInfo sources when every spec set describes the struct alike (printed once)."""
        first = self.infos[0][1] if self.infos else None
        return first if len(self.infos) > 1 and all(i == first for _s, i in self.infos) else None


# --- JSON conversion -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JsonField:
    """One member of a struct's Kafka JSON object: ``key`` and the expression giving its value.

    ``condition`` (tagged fields): the member is written only when it holds; the value is then in
    ``local`` (read once, as ``local := o.<attr>``). Untagged members have no condition."""

    key: str
    expr: str
    condition: str = ""
    local: str = ""
    attr: str = ""


@dataclass(frozen=True, slots=True)
class JsonFunction:
    """The converter of one struct layout to Kafka JSON (``JsonConverter.write``), shared by every
    version whose fields, tags and defaults are the same. ``literal``: the members before the first
    tagged one, built as one dict display; ``members``: the rest, in spec order."""

    id: str  # <Struct>_v<first version it serves>
    cls: str
    versions: str
    records: bool  # takes ``rec``, the converter of records values (it or a struct below has records)
    literal: tuple[JsonField, ...]
    members: tuple[JsonField, ...]
    served: tuple[int, ...] = ()  # the versions themselves


@dataclass(frozen=True, slots=True)
class JsonModulePlan:
    """A message's JSON module (``kcodec._generated.json_.<module>``), loaded on first ``to_json``."""

    name: str
    module: str
    sources: tuple[str, ...]
    classes: tuple[str, ...]  # imported from the codec module (annotations, tagged struct defaults)
    defaults: tuple[tuple[str, str], ...]  # (constant, source): defaults tagged values are compared with
    uses: tuple[str, ...]  # the helpers the functions use: b64, uuid, Uuid
    functions: tuple[JsonFunction, ...]  # children first
    roots: tuple[tuple[int, str], ...]  # version -> root function id
    records_versions: tuple[int, ...]  # the versions whose root converter takes ``rec``
    #: one converter per struct branching on the version (``kcodec.codegen.vmerge.merge_json``), each
    #: member its own statement; else one per layout, its first members one dict display
    versioned: bool = False


@dataclass(frozen=True, slots=True)
class FactsFunction:
    """The facts extractor of one struct layout, shared by the versions it serves (``versions``).

    ``steps`` in wire order, then the struct's children (``children``, in wire order). ``root``: the
    message itself (its values go to the message's values). ``broker``: the expression of a broker's
    node id when the struct has a host and a port (empty: it has not); ``node_id``: the local holding
    a ``node_id`` the root keeps as a value (empty: none). ``codes``: a codes extractor's function
    (``plan_facts``), which keeps a partition only if it carries a topic id, without its values."""

    id: str
    cls: str
    versions: str
    root: bool
    steps: tuple[FactsStep, ...]
    children: tuple[FactsStep, ...]
    locals_: tuple[str, ...]  # the locals set before the steps run: "values", "partition", ...
    broker: str = ""
    node_id: str = ""
    codes: bool = False
    served: tuple[int, ...] = ()  # the versions themselves


@dataclass(frozen=True, slots=True)
class FactsModulePlan:
    """A message's facts module (``kcodec._generated.facts_.<module>``), loaded on first use."""

    name: str
    module: str
    sources: tuple[str, ...]
    functions: tuple[FactsFunction, ...]  # children first
    roots: tuple[tuple[int, str], ...]  # version -> root function id
    codes: tuple[FactsFunction, ...] = ()  # the codes extractors' functions (children first)
    codes_roots: tuple[tuple[int, str], ...] = ()  # version -> root codes function id
    #: one extractor per struct branching on the version (``kcodec.codegen.vmerge.merge_facts``)
    versioned: bool = False


@dataclass(frozen=True, slots=True)
class ModulePlan:
    """Everything one message's generated modules hold (the codec module, its JSON and facts modules)."""

    name: str
    module: str
    kind: str
    api_key: int | None
    versions: str
    lowest: int
    highest: int
    target: Target
    sources: tuple[str, ...]
    owner_ranges: tuple[str, ...]
    classes: tuple[ClassPlan, ...]  # children first, the message class last
    functions: tuple[FunctionPlan, ...]  # children first
    roots: tuple[tuple[int, str], ...]  # version -> root function id
    formats: tuple[tuple[str, str], ...]  # (constant, struct format)
    value_tables: tuple[tuple[str, str], ...]  # (constant, struct format with %d)
    run_fields: tuple[tuple[str, str], ...]  # (constant, source of the run description)
    shapes: tuple[tuple[str, str, str], ...]  # (readers, writers, pattern)
    owners: tuple[tuple[int, str], ...]
    flexible: tuple[tuple[str, str], ...]  # spec set -> flexible range source
    source_files: tuple[tuple[str, str], ...]
    #: compiled: version -> root function id of the bound eager decoders (``kcodec.decoder``) printed as
    #: native functions: a whole ``bytes`` body read by one native call, anything else through
    #: ``kcodec.protocol.codec.decode``
    bound_decoders: tuple[tuple[int, str], ...] = ()
    #: compiled: version -> root function id of the bound encoders (``kcodec.encoder``) printed as
    #: native functions: a message of exactly the module's class encoded by one native call, anything
    #: else (a subclass, another type, an error) through ``kcodec.protocol.codec.encode_as``
    bound_encoders: tuple[tuple[int, str], ...] = ()
    #: the bound encoders write into a ``ChunkedOut`` (the message has bytes/records values, which it
    #: keeps uncopied when large) rather than a plain ``bytearray``
    bound_encoders_chunked: bool = True
    json: JsonModulePlan | None = None
    facts: FactsModulePlan | None = None


@dataclass(frozen=True, slots=True)
class PackagePlan:
    modules: tuple[ModulePlan, ...]
    index: dict[str, object] = field(default_factory=dict)  # the registry's rows for index.py.j2
    #: the interpreted plans of the compiled modules, printed as their type stubs (``.pyi``): type
    #: checkers see the precise attribute types and struct aliases the native classes cannot declare
    stubs: tuple[ModulePlan, ...] = ()
