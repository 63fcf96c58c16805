"""The plan layer: the decisions the planner takes (strategies, ids, constant and local names) and the
one table of wire types, checked on the project's own specs without printing anything."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

from kcodec.codegen.constants import ConstantPool, format_name
from kcodec.codegen.generate import merged_messages
from kcodec.codegen.layout import layout_message
from kcodec.codegen.merge import MergedMessage
from kcodec.codegen.plan_ops import RESERVED, arith
from kcodec.codegen.planner import plan_module, struct_layouts, version_ranges
from kcodec.codegen.program import FunctionPlan, ModulePlan, ReadArray, ReadValue, WriteArray, WriteValue
from kcodec.codegen.spec.types import PRIMITIVES
from kcodec.codegen.strategy import read_strategy, same_width, shape, write_strategy
from kcodec.codegen.wire_types import INT_BOUNDS, WIRE_TYPES, runtime_copy


@cache
def merged() -> dict[str, MergedMessage]:
    messages, _ = merged_messages(ROOT / "schemas")
    return {m.name: m for m in messages}


@cache
def module(name: str, compiled: bool = False) -> ModulePlan:
    m = merged()[name]
    return plan_module(m, {s.source: f"{s.source}/{name}.json" for s in m.specs}, compiled)


def function(name: str, version: int, cls: str) -> FunctionPlan:
    plan = module(name)
    root = dict(plan.roots)[version]
    layouts = struct_layouts(next(f.layout for f in plan.functions if f.id == root))
    want = next(sp for sp in layouts if sp.class_name == cls)
    return next(f for f in plan.functions if f.layout == want)


def element_layout(name: str, version: int, cls: str):  # type: ignore[no-untyped-def]
    return function(name, version, cls).layout


# --- strategies ----------------------------------------------------------------------------------------


def test_array_strategies_of_the_hot_messages() -> None:
    partition = element_layout("MetadataResponse", 12, "MetadataResponsePartition")
    assert read_strategy(partition) == "shaped" and write_strategy(partition) == "shaped"
    layout = shape(partition)
    assert layout is not None and layout.pattern == ">hiiiB%diB%diB%diB" and layout.widths == (4, -1, -1, -1)
    keys = element_layout("ApiVersionsResponse", 3, "ApiVersion")
    sw = same_width(keys)
    assert read_strategy(keys) == "same_width" and sw is not None and sw.size == 7 and sw.flexible
    topic = element_layout("ListOffsetsRequest", 4, "ListOffsetsTopic")
    assert read_strategy(topic) == "call" and write_strategy(topic) == "inline"  # partitions in place too
    broker = element_layout("MetadataResponse", 12, "MetadataResponseBroker")
    assert read_strategy(broker) == "inline"  # strings: not one width, no arrays for a shape


def test_the_plan_carries_each_decision_for_the_templates() -> None:
    topic = function("MetadataResponse", 12, "MetadataResponseTopic")
    partitions = next(op for op in topic.read if isinstance(op, ReadValue) and op.seg == "partitions")
    assert isinstance(partitions.array, ReadArray)
    a = partitions.array
    assert a.strategy == "shaped" and a.shape is not None
    assert a.shape.readers == "_SHAPE_READERS_MetadataResponsePartition"
    assert partitions.length is not None and partitions.length.var == "partitions_count"
    # the element's own fields are read in place, untracked (its decoder re-reads it on any error)
    assert all(not getattr(op, "track", None) for op in a.body)
    assert a.fn == function("MetadataResponse", 12, "MetadataResponsePartition").id
    root = function("MetadataResponse", 12, "MetadataResponse")
    lazy = next(op for op in root.read_lazy if isinstance(op, ReadValue) and op.seg == "topics")
    assert lazy.array is not None and lazy.array.strategy == "lazy"
    produce = function("ProduceRequest", 9, "PartitionProduceData")
    assert produce.records_view  # records are memoryview slices of the buffer
    records = next(op for op in produce.write if isinstance(op, WriteValue) and op.seg == "records")
    assert records.length is not None and records.length.limit is None and records.length.compact


def test_known_tags_carry_their_spec_names_for_the_size_check() -> None:
    partition = function("FetchResponse", 12, "PartitionData")
    assert partition.read_tagged is not None
    known = [(k.tag, k.attr, k.name) for k in partition.read_tagged.known]
    assert known == [
        (0, "diverging_epoch", "DivergingEpoch"), (1, "current_leader", "CurrentLeader"),
        (2, "snapshot_id", "SnapshotId"),
    ]
    assert all(k.value.target == f"obj.{k.attr}" and k.value.track for k in partition.read_tagged.known)


def test_the_json_plan_orders_members_as_the_spec_and_writes_tagged_ones_when_not_default() -> None:
    plan = module("FetchResponse").json
    assert plan is not None and plan.module == "fetch_response"
    functions = {f.id: f for f in plan.functions}
    partition = functions["PartitionData_v12"]
    assert partition.versions == "12-18" and partition.records  # takes the records converter
    assert [m.key for m in partition.literal] == [
        "partitionIndex", "errorCode", "highWatermark", "lastStableOffset", "logStartOffset",
    ]
    # the tagged members keep their place in the spec's order; the members after them are statements
    assert [(m.key, m.condition) for m in partition.members] == [
        ("divergingEpoch", "type(diverging_epoch) is not EpochEndOffset"
         " or diverging_epoch.epoch != _DEFAULT_EpochEndOffset.epoch"
         " or diverging_epoch.end_offset != _DEFAULT_EpochEndOffset.end_offset"
         " or diverging_epoch._unknown_tagged_fields"),
        ("currentLeader", "type(current_leader) is not LeaderIdAndEpoch"
         " or current_leader.leader_id != _DEFAULT_LeaderIdAndEpoch.leader_id"
         " or current_leader.leader_epoch != _DEFAULT_LeaderIdAndEpoch.leader_epoch"
         " or current_leader._unknown_tagged_fields"),
        ("snapshotId", "type(snapshot_id) is not SnapshotId"
         " or snapshot_id.end_offset != _DEFAULT_SnapshotId.end_offset"
         " or snapshot_id.epoch != _DEFAULT_SnapshotId.epoch"
         " or snapshot_id._unknown_tagged_fields"),
        ("abortedTransactions", ""), ("preferredReadReplica", ""), ("records", ""),
    ]
    assert partition.members[-1].expr == "None if (records := o.records) is None else rec(records)"
    assert ("_DEFAULT_LeaderIdAndEpoch", "LeaderIdAndEpoch()") in plan.defaults
    assert not functions["AbortedTransaction_v4"].records  # no records below: no rec parameter
    # versions that convert alike share a function; every version has a root
    roots = dict(plan.roots)
    assert sorted(roots) == list(range(19)) and roots[1] == roots[2] == roots[3] == "FetchResponse_v1"
    assert plan.records_versions == tuple(range(19))
    header = module("RequestHeader").json
    assert header is not None and not header.records_versions and "b64" not in header.uses


def test_json_plan_defaults_follow_the_spec_set_owning_the_version() -> None:
    request = module("FetchRequest").json
    assert request is not None
    fetch12 = {f.id: f for f in request.functions}[dict(request.roots)[12]]
    cluster_id = next(m for m in fetch12.members if m.key == "clusterId")
    assert cluster_id.condition == "cluster_id is not None"  # tagged, default null
    replica_state = next(m for m in {f.id: f for f in request.functions}[dict(request.roots)[15]].members
                         if m.key == "replicaState")
    assert replica_state.condition == (
        "type(replica_state) is not ReplicaState"
        " or replica_state.replica_id != _DEFAULT_ReplicaState.replica_id"
        " or replica_state.replica_epoch != _DEFAULT_ReplicaState.replica_epoch"
        " or replica_state._unknown_tagged_fields"
    )


def test_function_ids_are_stable_and_cover_every_version() -> None:
    plan = module("FetchRequest")
    ids = [f.id for f in plan.functions]
    assert len(ids) == len(set(ids))
    for v, fid in plan.roots:
        f = next(f for f in plan.functions if f.id == fid)
        assert fid.startswith("FetchRequest_v") and f.is_root
        first = int(fid.rsplit("_v", 1)[1])
        assert first <= v and str(first) == f.versions.split("-")[0].split(",")[0]
    # identical layouts of neighbouring versions share one function
    assert len({fid for _, fid in plan.roots}) < len(plan.roots)
    assert version_ranges([1, 2, 3, 5, 7, 8]) == "1-3, 5, 7-8"


def test_planning_is_deterministic_and_has_no_side_effects() -> None:
    m = merged()["MetadataResponse"]
    files = {s.source: "x.json" for s in m.specs}
    assert plan_module(m, files) == plan_module(m, files)
    assert layout_message(m, 12) == layout_message(m, 12)


def test_local_names_say_what_they_hold_and_never_shadow() -> None:
    for name in ("MetadataResponse", "FetchRequest", "ProduceRequest", "ListOffsetsRequest"):
        for f in module(name).functions:
            names: list[str] = []

            def walk(op: object) -> None:
                for attr in ("var", "end", "items", "item", "start", "value", "data", "packed", "index"):
                    v = getattr(op, attr, "")
                    if isinstance(v, str) and v and v.isidentifier() and attr != "value" or attr == "var":
                        names.append(str(v))
                for child in ("length", "array", "element", "tagged"):
                    c = getattr(op, child, None)
                    if c is not None and not isinstance(c, str | bool | int):
                        walk(c)
                for body in getattr(op, "body", ()):
                    walk(body)

            for op in (*f.read, *f.write):
                walk(op)
            assert not set(names) & RESERVED, (f.id, set(names) & RESERVED)


def test_constant_names_say_what_they_hold() -> None:
    assert format_name(">hiq") == "int16_int32_int64"
    assert format_name(">16s?") == "uuid_bool"
    pool = ConstantPool()
    assert pool.fmt(">hi") == "_S_int16_int32" and pool.fmt(">hi") == "_S_int16_int32"
    assert pool.values_table("i") == "_VALUES_int32" and pool.values_table("i", "B") == "_COMPACT_COUNT_VALUES_int32"
    plan = module("MetadataResponse")
    assert ("_S_int16_int32_int32_int32", ">hiii") in plan.formats
    assert any(name == "_FIELDS_error_code_to_leader_epoch" for name, _ in plan.run_fields)


@pytest.mark.parametrize("name", ["MetadataResponse", "ProduceRequest"])
def test_compiled_target_reads_bytes_only_without_records(name: str) -> None:
    plan = module(name, compiled=True)
    assert plan.target.compiled and plan.target.bytes_buffer == (name == "MetadataResponse")
    assert not module(name).target.compiled


# --- the one table of wire types ----------------------------------------------------------------------


def test_the_wire_type_table_drives_the_spec_model() -> None:
    assert set(WIRE_TYPES) == PRIMITIVES
    for t in WIRE_TYPES.values():
        assert t.fixed_width == (t.size > 0) and t.nullable == (not t.fixed_width)
        assert (t.bounds is not None) == (t.json == "int")
        if not t.fixed_width:
            assert t.length_fmt in ("h", "i") and t.max_length in (2**15 - 1, 2**31 - 1)


def test_the_runtime_reads_the_generated_copy_of_the_table() -> None:
    from kcodec.protocol import schema, wire_table
    from kcodec._generated import wire_types

    namespace: dict[str, object] = {}
    exec(compile(runtime_copy(), "wire_types.py", "exec"), namespace)  # noqa: S102 - our own generated source
    assert namespace["ROWS"] == wire_types.ROWS and namespace["COLUMNS"] == wire_types.COLUMNS
    assert wire_table.INT_BOUNDS == INT_BOUNDS == schema.INT_BOUNDS
    assert wire_table.JSON_KINDS == {t.name: t.json for t in WIRE_TYPES.values()}
    for name, t in WIRE_TYPES.items():  # every fact of the generator's entry reaches the runtime's
        runtime = wire_table.WIRE_TYPES[name]
        for column in wire_types.COLUMNS:
            assert getattr(runtime, column) == getattr(t, column), (name, column)
    assert list(wire_table.WIRE_TYPES) == list(WIRE_TYPES)


def test_generated_functions_name_their_struct_versions_and_strategy() -> None:
    import kcodec._generated

    # the source ships beside the compiled extension too
    source = (Path(kcodec._generated.__file__).parent / "metadata_response.py").read_text(encoding="utf-8")
    if "MetadataResponse" in kcodec._generated.COMPILED:  # a function per layout
        fn = source[source.index("def d_MetadataResponsePartition_v9(") :]
        header = "# decode MetadataResponsePartition at versions 9-13 (in arrays: read shaped, written shaped)"
    else:  # one function per struct, its layouts' strategies in version order
        fn = source[source.index("def d_MetadataResponsePartition(v: int, ") :]
        header = (
            "# decode MetadataResponsePartition at versions 0-13 (in arrays: read inline, written inline"
            " / in arrays: read shaped, written shaped)"
        )
    assert fn.splitlines()[1].strip() == header
    cls = source[source.index("class MetadataResponsePartition(") :]
    doc = cls[: cls.index('"""', cls.index('"""') + 3)]
    assert "replica_nodes: []int32, versions 0+; default []" in doc
    assert "offline_replicas: []int32, versions 5+" in doc


# --- the compiled build's selection ---------------------------------------------------------------------


def test_kcodec_compile_selects_hot_apis_named_apis_or_all() -> None:
    from kcodec.codegen.compile import HOT_APIS, SelectionError, selection

    apis = {"Fetch": ("FetchRequest", "FetchResponse"), "Metadata": ("MetadataRequest", "MetadataResponse"),
            "Produce": ("ProduceRequest", "ProduceResponse"),
            "ApiVersions": ("ApiVersionsRequest", "ApiVersionsResponse"),
            "ListOffsets": ("ListOffsetsRequest", "ListOffsetsResponse")}
    messages = ["FetchRequest", "FetchResponse", "MetadataRequest", "MetadataResponse", "ProduceRequest",
                "ProduceResponse", "RequestHeader", "ResponseHeader", "LeaderAndIsrRequest", "ApiVersionsRequest",
                "ApiVersionsResponse", "ListOffsetsRequest", "ListOffsetsResponse"]
    for off in (None, "", "0", "false", "no"):
        assert selection(off, apis, messages) == set()
    assert selection("Fetch", apis, messages) == {"FetchRequest", "FetchResponse", "RequestHeader", "ResponseHeader"}
    assert selection(" Metadata , LeaderAndIsrRequest", apis, messages) == {
        "MetadataRequest", "MetadataResponse", "LeaderAndIsrRequest", "RequestHeader", "ResponseHeader"
    }
    assert selection("all", apis, messages) == set(messages)
    assert set(HOT_APIS) == set(apis)
    assert selection("1", apis, messages) == set(messages) - {"LeaderAndIsrRequest"}
    with pytest.raises(SelectionError, match="Fetc is not an API or message name"):
        selection("Fetc", apis, messages)


def test_kcodec_compile_chooses_the_kind_of_build_a_wheel_compiles_the_capture_path_by_default() -> None:
    from kcodec.codegen.compile import CAPTURE, CODECS, PURE, build_kind

    for wheel_default in (None, "", "  "):
        assert build_kind(wheel_default, editable=False) == CAPTURE
        assert build_kind(wheel_default, editable=True) == PURE  # (compiled modules in src/ would hide edits)
    for off in ("0", "false", "no", "off", "pure", " PURE "):
        assert build_kind(off, editable=False) == PURE
        assert build_kind(off, editable=True) == PURE
    assert build_kind("capture", editable=True) == CAPTURE
    for codecs in ("1", "hot", "all", "Fetch,Metadata"):
        assert build_kind(codecs, editable=False) == CODECS


def test_the_capture_build_compiles_the_capture_path_and_the_headers_codecs_only(tmp_path: Path) -> None:
    from kcodec.codegen.compile import (
        CAPTURE_CLI_MODULES,
        CAPTURE_MESSAGES,
        CAPTURE_MODULES,
        PIPELINE_MODULES,
        RUNTIME_MODULES,
        capture_modules,
        modules_to_compile,
    )

    got = capture_modules()
    assert got == [*CAPTURE_MODULES, *CAPTURE_CLI_MODULES, *PIPELINE_MODULES]
    assert all(m.startswith("kcodec.pipeline.") for m in PIPELINE_MODULES)
    assert not set(got) & set(RUNTIME_MODULES) and not any(m.startswith("kcodec._generated") for m in got)
    assert set(CAPTURE_MESSAGES) == {"RequestHeader", "ResponseHeader"}
    # what hatch_build compiles for it: the headers' codecs (and companions) with their base classes
    (tmp_path / "json_").mkdir()
    for module in ("request_header", "response_header", "fetch_request"):
        (tmp_path / f"{module}.py").write_text("")
        (tmp_path / "json_" / f"{module}.py").write_text("")
    built = modules_to_compile(tmp_path, ["request_header", "response_header"])
    generated = {m for m in built if m.startswith("kcodec._generated")}
    assert generated == {
        f"kcodec._generated.{p}{m}" for p in ("", "json_.") for m in ("request_header", "response_header")
    }
    assert built[: len(RUNTIME_MODULES)] == list(RUNTIME_MODULES) and set(got) <= set(built)


def test_kcodec_build_says_which_build_is_installed() -> None:
    import kcodec
    from kcodec.capture import packets
    from kcodec.cli import capture_view

    capture_compiled = not str(packets.__file__).endswith(".py")
    assert capture_compiled == (not str(capture_view.__file__).endswith(".py"))
    expected = "compiled" if kcodec.compiled else "capture" if capture_compiled else "pure"
    assert kcodec.build == expected and "build" in dir(kcodec)


def test_the_compiled_build_takes_each_codec_with_its_json_and_facts_modules(tmp_path: Path) -> None:
    from kcodec.codegen.compile import (
        CAPTURE_CLI_MODULES,
        CAPTURE_MODULES,
        PIPELINE_MODULES,
        RUNTIME_MODULES,
        modules_to_compile,
    )

    for package, module in (("json_", "fetch_response"), ("facts_", "fetch_response"), ("json_", "request_header")):
        (tmp_path / package).mkdir(exist_ok=True)
        (tmp_path / package / f"{module}.py").write_text("")
    got = modules_to_compile(tmp_path, ["fetch_response", "request_header"])
    assert got == [
        *RUNTIME_MODULES,
        *CAPTURE_MODULES,
        *CAPTURE_CLI_MODULES,
        *PIPELINE_MODULES,
        "kcodec._generated.fetch_response",
        "kcodec._generated.json_.fetch_response",
        "kcodec._generated.facts_.fetch_response",
        "kcodec._generated.request_header",
        "kcodec._generated.json_.request_header",  # (no facts module: none written for it here)
    ]
    assert "kcodec.capture.framing" in CAPTURE_MODULES and "kcodec.protocol.frames" not in CAPTURE_MODULES
    # it gives the compiled codecs' i64 a value when their source runs interpreted: never compiled
    assert "kcodec.protocol._gen_runtime" not in got
    assert all(m.startswith("kcodec.") and not m.startswith("kcodec.cli") for m in CAPTURE_MODULES)
    # the CLI's own per-frame work, kept apart; not the click commands
    assert all(m.startswith("kcodec.cli.") for m in CAPTURE_CLI_MODULES)
    assert "kcodec.cli.decode_capture" not in CAPTURE_CLI_MODULES
    for name in (*CAPTURE_CLI_MODULES, *PIPELINE_MODULES):  # each is a module of the source tree
        assert (Path(__file__).parents[1] / "src" / (name.replace(".", "/") + ".py")).is_file(), name


def test_compiled_modules_print_native_classes_and_bytes_reads() -> None:
    from kcodec.codegen.render import environment, render_module

    text = render_module(environment(), module("ListOffsetsRequest", compiled=True))
    assert "__slots__" not in text and "partition_index: Any  # int" in text
    assert "def d_ListOffsetsPartition_v4(buf: bytes, pos: i64, blen: i64)" in text
    # objects are made in one constructor call from the locals their fields were read into
    assert "obj = ListOffsetsRequest()" not in text and "BYTES_INPUT = True" in text
    assert "obj = ListOffsetsRequest(replica_id=replica_id_value, " in text
    assert "partitions_item = ListOffsetsPartition(partition_index=partition_index_value, " in text
    assert "^ 0x80000000) - 0x80000000" in text  # int32 counts read with integer arithmetic
    assert "buf[pos + 9]" in text and "buf[pos + 8 + 1]" not in text  # one addition per byte index
    # each byte is a native i64, so shifts and ors are C operations (not a tagged-integer call each)
    assert "partitions_count = ((i64(buf[pos]) << 24 | i64(buf[pos + 1]) << 16 |" in text
    assert "timestamp_value = (((i64(buf[pos + 4]) << 24 |" in text and "<< 24 | buf[" not in text
    # byte offsets are mypyc's native 64-bit integers (C arithmetic), imported for the type checker only
    assert "def d_ListOffsetsRequest_v4(buf: bytes, pos: i64, blen: i64)" in text
    assert "from kcodec.protocol._gen_runtime import i64" in text and "mypy_extensions" not in text
    # module constants are Final (mypyc keeps them in C statics: no globals-dict lookup per use)
    assert "_ZERO_UUID: Final = _Uuid.ZERO" in text and "_S_int32_int32_int64: Final = _struct.Struct(" in text
    # so are the names the encoders test per bytes/records value, imported from kcodec.protocol._wire
    assert "_Chunked: Final = ChunkedOut" in text and "_CHUNK_BYTES: Final = CHUNK_BYTES" in text
    pure = render_module(environment(), module("ListOffsetsRequest"))
    assert "__slots__" in pure and "_I32(buf, pos)[0]" in pure and "BYTES_INPUT = False" in pure
    assert "pos: int, blen: int" in pure and "i64" not in pure and "Final" not in pure
    # pure modules import only what they use (ListOffsetsRequest writes no bytes: no chunked output)
    assert "ChunkedOut" not in pure and "from kcodec.protocol._wire import Buffer" in pure
    assert "from kcodec.protocol._wire import ChunkedOut as _Chunked" in render_module(
        environment(), module("ProduceRequest")
    )


@pytest.mark.parametrize("code", ["b", "?", "h", "H", "i", "I", "q"])
def test_compiled_arithmetic_reads_what_struct_reads(code: str) -> None:
    """The integer arithmetic of compiled reads (evaluated here with ``i64`` as ``int``: mypyc's
    i64 gives the same values for these, none exceeding 64 bits) matches struct at every bound."""
    import struct

    size = struct.calcsize(">" + code)
    lo, hi = (0, 1) if code == "?" else (INT_BOUNDS[{"b": "int8", "h": "int16", "H": "uint16", "i": "int32",
                                                     "I": "uint32", "q": "int64"}[code]])
    values = {lo, hi, 0, 1, lo + 1, hi - 1, -1 if lo < 0 else 2, 0x7F, 0x80 & hi}
    expr = arith(code, 3)
    for value in sorted(values):
        buf = b"\xee" * 3 + struct.pack(">" + code, value) + b"\xee"
        got = eval(expr, {"i64": int}, {"buf": buf, "pos": 0})  # noqa: S307 - the planner's own expression
        assert got == struct.unpack_from(">" + code, buf, 3)[0], (code, value)
        with pytest.raises(IndexError):  # past the end: IndexError, as bytes indexing raises it
            eval(expr, {"i64": int}, {"buf": buf[: 3 + size - 1], "pos": 0})  # noqa: S307


def test_compiled_decoders_build_each_object_from_locals() -> None:
    """Compiled: fields are read into locals (none into attributes), defaults and the unknown tagged
    fields go into the one constructor call; same-width elements are read in place with arithmetic
    (no iter_unpack tuple per element). The interpreted plan is untouched."""
    plan = module("ApiVersionsResponse", compiled=True)
    root = next(f for f in plan.functions if f.id == dict(plan.roots)[3])
    assert root.read_build is not None and root.read_build.target == "obj"
    assert root.read_build.cls == "ApiVersionsResponse"
    assert "unknown_tagged_fields=unknown_tagged" in root.read_build.args
    assert root.read_tagged is not None and root.read_tagged.store == "unknown_tagged"
    assert "error_code_value" in root.read_locals and "unknown_tagged" in root.read_locals
    keys = next(op for op in root.read if isinstance(op, ReadValue) and op.seg == "api_keys")
    assert keys.target == "api_keys_value"
    assert keys.array is not None and keys.array.strategy == "inline" and keys.array.build is not None
    assert keys.array.build.args.startswith("api_key=api_key_value, min_version=min_version_value")
    assert root.read_lazy_build is not None and root.read_lazy_tagged is not root.read_tagged
    pure = module("ApiVersionsResponse")
    pure_root = next(f for f in pure.functions if f.id == dict(pure.roots)[3])
    assert pure_root.read_build is None and pure_root.read_locals == ()
    assert pure_root.read_tagged is not None and pure_root.read_tagged.store == "obj._unknown_tagged_fields"
    pure_keys = next(op for op in pure_root.read if isinstance(op, ReadValue) and op.seg == "api_keys")
    assert pure_keys.target == "obj.api_keys"
    assert pure_keys.array is not None and pure_keys.array.strategy == "same_width"


def test_compiled_modules_bind_their_eager_decoders_natively() -> None:
    """kcodec.decoder returns a compiled module's own native function per version (no Python frame per
    call); it falls back to kcodec.decode for anything but a whole bytes body, which keeps the errors."""
    from kcodec.codegen.render import environment, render_module

    plan = module("ListOffsetsRequest", compiled=True)
    assert plan.bound_decoders == plan.roots and module("ListOffsetsRequest").bound_decoders == ()
    assert plan.bound_encoders == plan.roots and module("ListOffsetsRequest").bound_encoders == ()
    text = render_module(environment(), plan)
    assert "def decode_ListOffsetsRequest_v4(data: Any) -> Any:" in text
    assert "obj, end = d_ListOffsetsRequest_v4(data, 0, size)" in text and "    4: decode_ListOffsetsRequest_v4," in text
    assert "BOUND_DECODERS" not in render_module(environment(), module("ListOffsetsRequest"))
    assert "def encode_ListOffsetsRequest_v4(message: Any) -> bytes:" in text
    assert "e_ListOffsetsRequest_v4(message, out)" in text and "    4: encode_ListOffsetsRequest_v4," in text
    assert "BOUND_ENCODERS" not in render_module(environment(), module("ListOffsetsRequest"))
    # no bytes/records values: a plain bytearray; with records, the ChunkedOut that keeps them uncopied
    assert not plan.bound_encoders_chunked and "out = bytearray()" in text
    produce = module("ProduceRequest", compiled=True)
    assert produce.bound_encoders_chunked and "out = _Chunked()" in render_module(environment(), produce)


def test_compiled_encoders_read_elements_through_their_native_class() -> None:
    """Compiled: an array's struct elements written in place are read through a local of their native
    class (attribute reads in C), when of exactly that class; any other object goes to the element's
    own encoder. The interpreted plan reads every element by name, as before."""
    from kcodec.codegen.render import environment, render_module

    plan = module("ListOffsetsRequest", compiled=True)
    root = next(f for f in plan.functions if f.id == dict(plan.roots)[4])
    topics = next(op for op in root.write if isinstance(op, WriteValue) and op.seg == "topics")
    assert topics.array is not None and topics.array.strategy == "inline"
    assert topics.array.item == "topics_item"
    assert (topics.array.native, topics.array.cls) == ("topics_element", "ListOffsetsTopic")
    partitions = next(op for op in topics.array.body if isinstance(op, WriteValue) and op.seg == "partitions")
    assert partitions.source == "topics_element.partitions"
    assert partitions.array is not None and partitions.array.native == "partitions_element"
    text = render_module(environment(), plan)
    assert "if type(topics_item) is not ListOffsetsTopic:" in text
    assert "topics_element: ListOffsetsTopic = topics_item" in text
    assert "e_ListOffsetsTopic_v4(topics_item, out)\n" in text  # the other objects: by their own encoder
    pure = module("ListOffsetsRequest")
    pure_root = next(f for f in pure.functions if f.id == dict(pure.roots)[4])
    pure_topics = next(op for op in pure_root.write if isinstance(op, WriteValue) and op.seg == "topics")
    assert pure_topics.array is not None and pure_topics.array.native == "" and pure_topics.array.cls == ""
    assert "_element" not in render_module(environment(), pure)
    # every in-place strategy of the hot messages gets the native local in compiled modules
    for name in ("MetadataResponse", "ApiVersionsResponse", "ProduceRequest", "FetchRequest"):
        arrays = [a for f in module(name, compiled=True).functions for a in _write_arrays(f.write)]
        in_place = [a for a in arrays if a.strategy in ("inline", "shaped", "same_width")]
        assert in_place and all(a.native and a.cls for a in in_place), name
        assert all(not a.native for a in arrays if a.strategy not in ("inline", "shaped", "same_width"))


def _write_arrays(ops: tuple[object, ...]) -> list[WriteArray]:
    found: list[WriteArray] = []
    for op in ops:
        if isinstance(op, WriteValue) and op.array is not None:
            found.append(op.array)
            found += _write_arrays(op.array.body)
    return found


def test_codes_extractors_read_only_error_codes_topics_and_partitions() -> None:
    # the codes extractors (what a JSON line needs of the facts) of FetchResponse v13: per struct, only
    # the error code, topic id and partition index steps; no counted arrays, no values, no records
    facts = module("FetchResponse").facts
    assert facts is not None
    codes = {f.id: f for f in facts.codes}
    roots = dict(facts.codes_roots)
    root = codes[roots[13]]
    assert root.codes and [(s.attr, s.role) for s in root.steps] == [("error_code", "error")]
    [topics] = root.children
    topic = codes[topics.child]
    assert [(s.attr, s.role) for s in topic.steps] == [("topic_id", "topic_id")]
    [partitions] = topic.children
    assert not partitions.counted
    partition = codes[partitions.child]
    assert [(s.attr, s.role) for s in partition.steps] == [("partition_index", "partition"), ("error_code", "error")]
    assert set(partition.locals_) == {"partition", "error_code"}
    # the facts extractors of the same struct read its values and records too
    full = {f.id: f for f in facts.functions}
    full_partition = full[full[full[dict(facts.roots)[13]].children[0].child].children[0].child]
    assert {"value", "records"} <= {s.role for s in full_partition.steps}
