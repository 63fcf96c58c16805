"""Cross-checks of the versions only the 4.x spec set defines against independent implementations.

The golden fixtures come from Apache Kafka 3.9.0, so versions newer than 3.9.0's highest (e.g.
FetchRequest v18, ProduceRequest v12-13, MetadataRequest v13) have no Java-made bytes to compare with.
For each such (message, version), hypothesis draws messages with ``kcodec.protocol.strategies``, kcodec
encodes them, and each peer library decodes the bytes; then the peer's field values must equal kcodec's, the
peer's re-encoding must be byte-identical, and kcodec must decode the peer's bytes to the message.

Peers (test-only dependencies, the ``test`` extra):

- ``kio`` 0.6.5: entity classes per message and version (``kio.schema.<api>.v<N>.request``/``response``),
  a Rust decoder (``kio.serial.entity_reader``) and ``kio.serial.entity_writer``.
- ``kafka-python`` 3.0.12: the new-style ``kafka.protocol`` message classes generated from the JSON
  specs (``Cls.decode(data, version=v)`` / ``obj.encode(version=v)``).

Each peer's modelling quirks are normalised explicitly (see ``_kio_*`` and ``_kp_*``).
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import os
import pkgutil
import re
import typing
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import golden_data
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kcodec
from kcodec.protocol import strategies
from kcodec.protocol.codec import message_info
from kcodec.protocol.model import Message, Struct
from kcodec.protocol.schema import MessageInfo

pytest.importorskip("kio", reason="kio (test extra) is not installed")
pytest.importorskip("kafka.protocol.api_message", reason="kafka-python (test extra) is not installed")

pytestmark = pytest.mark.interop

EXAMPLES = int(os.environ.get("KCODEC_HYPOTHESIS_EXAMPLES", "15"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --- which versions: those newer than Kafka 3.9.0's, defined only by the 4.x spec set ---------------


NEWEST_SET = "4.4.0"  # the spec set of the newest Apache Kafka release (schemas/sets.json)


@cache
def kafka_39_max_versions() -> dict[int, int]:
    """api key -> highest version of Apache Kafka 3.9.0's own ApiMessageType table (golden fixture)."""
    return {row["apiKey"]: row["highestSupportedVersion"] for row in golden_data.api_table()}


def new_in_4x() -> list[tuple[str, int]]:
    """(message, version) pairs of every API version kcodec takes from 4.x above 3.9.0's maximum."""
    maxima = kafka_39_max_versions()
    found: list[tuple[str, int]] = []
    for api in kcodec.apis():
        for v in api.versions:
            if api.sources[v] == NEWEST_SET and v > maxima.get(api.key, -1):
                found += [(api.request, v), (api.response, v)]
    return found


PAIRS = new_in_4x()
IDS = [f"{name}-v{v}" for name, v in PAIRS]


def test_new_versions_are_the_ones_without_golden_fixtures() -> None:
    examples = {
        ("FetchRequest", 18), ("ProduceRequest", 12), ("ProduceRequest", 13), ("MetadataResponse", 13),
        ("ListOffsetsRequest", 10), ("ListOffsetsResponse", 11), ("OffsetCommitRequest", 10),
    }
    assert examples <= set(PAIRS)
    with_fixtures = {(case["message"], case["version"]) for case in golden_data.message_cases()}
    assert not with_fixtures & set(PAIRS)
    for name, v in PAIRS:  # and every older version of these APIs does have one
        api = kcodec.api(name)
        assert v == api.min_version or (name, v - 1) in with_fixtures or api.sources[v - 1] == NEWEST_SET


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _strip_unknown_tagged_fields(obj: Any) -> Any:
    if isinstance(obj, Struct):
        obj._unknown_tagged_fields = None
        for name in obj._fields_:
            _strip_unknown_tagged_fields(getattr(obj, name))
    elif isinstance(obj, list):
        for item in obj:
            _strip_unknown_tagged_fields(item)
    return obj


def kcodec_plain(info: MessageInfo, struct: str, obj: Any, version: int) -> dict[str, Any]:
    """The fields of ``obj`` present at ``version`` as plain values (uuids and records as bytes)."""
    out: dict[str, Any] = {}
    for f in info.fields_at(struct, version):
        out[f.attr] = _kcodec_value(info, f.struct_name, f.is_array, getattr(obj, f.attr), version)
    return out


def _kcodec_value(info: MessageInfo, struct: str | None, array: bool, value: Any, version: int) -> Any:
    if value is None:
        return None
    if array:
        return [_kcodec_value(info, struct, False, v, version) for v in value]
    if struct is not None:
        return kcodec_plain(info, struct, value, version)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return value


# --- kio ------------------------------------------------------------------------------------------

# kio models int64 timestamps as timezone-aware datetimes: it refuses negative values (-1 is None when
# the field is optional) and years past 9999.
_KIO_MAX_DATETIME_MS = 253402300799999
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def kio_class(name: str, version: int) -> type | None:
    api = kcodec.api(name)
    kind = "request" if name == api.request else "response"
    try:
        mod = importlib.import_module(f"kio.schema.{_snake(api.name)}.v{version}.{kind}")
    except ImportError:
        return None
    cls = getattr(mod, name, None)
    return cls if isinstance(cls, type) else None


def _kio_inner(field: dataclasses.Field[Any]) -> tuple[Any, bool]:
    """(element type, optional) of a kio field: unwraps ``X | None`` and ``tuple[X, ...]``."""
    tp: Any = field.type
    args = typing.get_args(tp)
    optional = type(None) in args
    if optional:
        tp = next(a for a in args if a is not type(None))
    if typing.get_origin(tp) is tuple:
        tp = typing.get_args(tp)[0]
    return tp, optional


def _kio_pairs(info: MessageInfo, struct: str, version: int, cls: type) -> list[tuple[Any, Any]]:
    """kcodec FieldInfo and kio dataclass field side by side (both are in spec order)."""
    ours = info.fields_at(struct, version)
    theirs = dataclasses.fields(cls)
    assert len(ours) == len(theirs), (struct, [f.attr for f in ours], [f.name for f in theirs])
    for f, k in zip(ours, theirs, strict=True):
        # kio renames the *Ms fields it models as timedelta/datetime (timeout_ms -> timeout).
        assert k.name == f.attr or f.attr.startswith(k.name + "_"), (struct, f.attr, k.name)
    return list(zip(ours, theirs, strict=True))


def kio_adapt(data: st.DataObject, info: MessageInfo, struct: str, obj: Any, version: int, cls: type) -> None:
    """Replace values kio cannot represent with ones it can (in place)."""
    from kio.schema.errors import ErrorCode

    for f, k in _kio_pairs(info, struct, version, cls):
        value = getattr(obj, f.attr)
        if value is None:
            continue
        inner, optional = _kio_inner(k)
        if f.struct_name is not None:
            for item in value if f.is_array else [value]:
                kio_adapt(data, info, f.struct_name, item, version, inner)
            continue
        kind = k.metadata.get("kafka_type")
        strategy: st.SearchStrategy[int] | None = None
        if kind == "error_code":  # kio refuses error codes its ErrorCode enum does not list
            strategy = st.sampled_from(sorted(e.value for e in ErrorCode))
        elif kind == "datetime_i64":
            strategy = st.integers(0, _KIO_MAX_DATETIME_MS)
            if optional:
                strategy = st.one_of(st.just(-1), strategy)
        if strategy is not None:
            if f.is_array:
                setattr(obj, f.attr, [data.draw(strategy) for _ in value])
            else:
                setattr(obj, f.attr, data.draw(strategy))


def kio_plain(info: MessageInfo, struct: str, entity: Any, version: int) -> dict[str, Any]:
    """A kio entity as ``kcodec_plain`` would show the same message."""
    out: dict[str, Any] = {}
    for f, k in _kio_pairs(info, struct, version, type(entity)):
        value = getattr(entity, k.name)
        if f.is_array:
            out[f.attr] = None if value is None else [
                _kio_value(info, f.struct_name, f.element_type, v, version) for v in value
            ]
        else:
            out[f.attr] = _kio_value(info, f.struct_name, f.element_type, value, version)
    return out


def _kio_value(info: MessageInfo, struct: str | None, t: str, value: Any, version: int) -> Any:
    if struct is not None:
        return None if value is None else kio_plain(info, struct, value, version)
    if t == "uuid":  # kio models the zero UUID as None
        return bytes(16) if value is None else value.bytes
    if isinstance(value, timedelta):  # *Ms durations
        return value // timedelta(milliseconds=1)
    if isinstance(value, datetime):  # *Ms timestamps (float arithmetic inside kio: round to ms)
        return round((value - _EPOCH) / timedelta(microseconds=1) / 1000)
    if value is None and t == "int64":  # optional timestamp: -1
        return -1
    if t in strategies.INT_BOUNDS:  # ErrorCode enum and kio's int NewTypes
        return int(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return value


KIO_PAIRS = [(n, v) for n, v in PAIRS if kio_class(n, v) is not None]


@pytest.mark.parametrize(("name", "version"), KIO_PAIRS, ids=[f"{n}-v{v}" for n, v in KIO_PAIRS])
def test_kio_agrees(name: str, version: int) -> None:
    from kio.serial import entity_reader, entity_writer

    cls = kio_class(name, version)
    assert cls is not None
    info = message_info(name)
    read, write = entity_reader(cls), entity_writer(cls)
    # kio refuses unknown tagged fields (KeyError), so none are generated for it.
    msgs = strategies.messages(name, version, unknown_tagged_fields=False)

    def check(data: st.DataObject) -> None:
        msg = data.draw(msgs)
        kio_adapt(data, info, name, msg, version, cls)
        encoded = kcodec.encode(msg, version)
        entity, size = read(encoded, 0)
        assert size == len(encoded)
        assert kio_plain(info, name, entity, version) == kcodec_plain(info, name, msg, version)
        buf = io.BytesIO()
        write(buf, entity)
        assert buf.getvalue() == encoded
        assert kcodec.decode(name, version, buf.getvalue()) == msg

    check.__name__ = check.__qualname__ = f"check_kio_{name}_v{version}"
    SETTINGS(given(st.data())(check))()


# --- kafka-python ---------------------------------------------------------------------------------


@cache
def _kafka_python_classes() -> dict[str, Any]:
    from kafka.protocol.api_message import ApiMessage

    found: dict[str, Any] = {}

    def walk(module_name: str) -> None:
        module = importlib.import_module(module_name)
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, ApiMessage) and getattr(value, "_json", None):
                found.setdefault(value.name, value)
        for sub in pkgutil.iter_modules(getattr(module, "__path__", [])):
            walk(f"{module_name}.{sub.name}")

    for package in ("admin", "consumer", "metadata", "producer", "sasl"):
        walk(f"kafka.protocol.{package}")
    return found


def kafka_python_class(name: str, version: int) -> Any:
    cls = _kafka_python_classes().get(name)
    if cls is None or cls.valid_versions is None:
        return None
    lo, hi = cls.valid_versions
    return cls if lo <= version <= hi else None


#: (struct, kcodec attribute) -> the name the field had before Kafka 4.4 renamed it
KAFKA_44_RENAMES = {("TxnOffsetCommitRequest", "generation_id_or_member_epoch"): "generation_id"}


def _kp_pairs(info: MessageInfo, struct: str, version: int, obj: Any) -> list[tuple[Any, Any]]:
    """kcodec FieldInfo and kafka-python field side by side (both in spec order)."""
    ours = info.fields_at(struct, version)
    theirs = [f for f in obj._struct._fields if f.for_version_q(version)]
    assert len(ours) == len(theirs), (struct, [f.attr for f in ours], [f.name for f in theirs])
    for f, k in zip(ours, theirs, strict=True):
        # kafka-python renames some fields, e.g. TopicAuthorizedOperations -> authorized_operations;
        # it bundles specs older than Kafka 4.4, which renamed a field (same bytes, see test_release_specs)
        older = KAFKA_44_RENAMES.get((struct, f.attr), f.attr)
        assert k.name in (f.attr, older) or f.attr.endswith("_" + k.name), (struct, f.attr, k.name)
    return list(zip(ours, theirs, strict=True))


def kp_plain(info: MessageInfo, struct: str, obj: Any, version: int) -> dict[str, Any]:
    """A kafka-python message or struct as ``kcodec_plain`` would show the same message."""
    out: dict[str, Any] = {}
    for f, k in _kp_pairs(info, struct, version, obj):
        value = getattr(obj, k.name)
        kind = getattr(k, "type_str", None)
        if f.is_array:
            out[f.attr] = None if value is None else [
                _kp_value(info, f.struct_name, f.element_type, kind, v, version) for v in value
            ]
        elif value is None and f.struct_name is not None and f.is_tagged(version):
            # kafka-python leaves a tagged struct that was not on the wire as None, not its default.
            out[f.attr] = kcodec_plain(info, f.struct_name, info.structs[f.struct_name].cls(), version)
        else:
            out[f.attr] = _kp_value(info, f.struct_name, f.element_type, kind, value, version)
    return out


def _kp_value(
    info: MessageInfo, struct: str | None, t: str, kind: str | None, value: Any, version: int
) -> Any:
    if struct is not None:
        return None if value is None else kp_plain(info, struct, value, version)
    if t == "uuid":  # kafka-python also models the zero UUID as None
        return bytes(16) if value is None else value.bytes
    if kind == "bitfield":  # *AuthorizedOperations: a set of bit numbers, None for INT32_MIN
        if value is None:
            return -(2**31)
        bits = sum(1 << b for b in value)
        return bits - 2**32 if bits >= 2**31 else bits
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return value


def _kp_unknown_tags(info: MessageInfo, struct: str, obj: Any, version: int) -> list[Any]:
    """Every struct's unknown tagged fields as kafka-python keeps them (``{'_<tag>': bytes}``)."""
    tags = getattr(obj, "unknown_tags", None) or {}
    found: list[Any] = [sorted((int(k[1:]), bytes(v)) for k, v in tags.items())]
    for f, k in _kp_pairs(info, struct, version, obj):
        if f.struct_name is None:
            continue
        value = getattr(obj, k.name)
        for item in (value or []) if f.is_array else ([value] if value is not None else []):
            found += _kp_unknown_tags(info, f.struct_name, item, version)
    return found


def _kcodec_unknown_tags(info: MessageInfo, struct: str, obj: Any, version: int) -> list[Any]:
    found: list[Any] = [sorted(obj._unknown_tagged_fields or [])]
    for f in info.fields_at(struct, version):
        if f.struct_name is None:
            continue
        value = getattr(obj, f.attr)
        for item in (value or []) if f.is_array else ([value] if value is not None else []):
            found += _kcodec_unknown_tags(info, f.struct_name, item, version)
    return found


def kp_adapt(info: MessageInfo, struct: str, obj: Any, version: int, in_tagged: bool = False) -> None:
    """Drop unknown tagged fields kafka-python cannot read (in place).

    kafka-python decodes a struct stored in a tagged field (e.g. ``CurrentLeader``) with
    ``TaggedFields.decode_empty``, which asserts that the struct's own tagged-field section is empty.
    """
    if in_tagged:
        obj._unknown_tagged_fields = None
    for f in info.fields_at(struct, version):
        if f.struct_name is None:
            continue
        value = getattr(obj, f.attr)
        for item in (value or []) if f.is_array else ([value] if value is not None else []):
            kp_adapt(info, f.struct_name, item, version, in_tagged or f.is_tagged(version))


KP_PAIRS = [(n, v) for n, v in PAIRS if kafka_python_class(n, v) is not None]


@pytest.mark.parametrize(("name", "version"), KP_PAIRS, ids=[f"{n}-v{v}" for n, v in KP_PAIRS])
def test_kafka_python_agrees(name: str, version: int) -> None:
    cls = kafka_python_class(name, version)
    info = message_info(name)

    def check(msg: Message) -> None:
        kp_adapt(info, name, msg, version)
        encoded = kcodec.encode(msg, version)
        theirs = cls.decode(encoded, version=version)
        assert kp_plain(info, name, theirs, version) == kcodec_plain(info, name, msg, version)
        # kafka-python keeps unknown tagged fields on decode but drops them on encode.
        # (Structs not on the wire are None in kafka-python: compare the non-empty lists, in order.)
        theirs_unknown = [tags for tags in _kp_unknown_tags(info, name, theirs, version) if tags]
        assert theirs_unknown == [tags for tags in _kcodec_unknown_tags(info, name, msg, version) if tags]
        known_only = _strip_unknown_tagged_fields(msg)
        theirs._header = None  # decoded objects lack the attribute encode() reads
        reencoded = theirs.encode(version=version)
        assert reencoded == kcodec.encode(known_only, version)
        assert kcodec.decode(name, version, reencoded) == known_only

    check.__name__ = check.__qualname__ = f"check_kafka_python_{name}_v{version}"
    SETTINGS(given(strategies.messages(name, version))(check))()


#: versions newer than both peers (kio 0.6.5, kafka-python 3.0.12): only Kafka's own classes can check
#: them (the Java oracle of issue 35)
_NEWER_APIS = (
    ("ApiVersions", 5), ("DeleteGroups", 3), ("StreamsGroupDescribe", 1), ("StreamsGroupHeartbeat", 1),
    ("StreamsGroupTopologyDescriptionUpdate", 0), ("TxnOffsetCommit", 6), ("UnregisterController", 0),
)
NEWER_THAN_PEERS = {(api + kind, v) for api, v in _NEWER_APIS for kind in ("Request", "Response")}


def test_coverage_report() -> None:
    """Every new version is checked by at least one peer (the lists are in the test ids), but for the
    versions newer than both peers."""
    unchecked = set(PAIRS) - set(KIO_PAIRS) - set(KP_PAIRS)
    assert unchecked == NEWER_THAN_PEERS, f"not cross-checked by any peer: {sorted(unchecked)}"
