"""Errors without bookkeeping: the generated decoders and encoders of the pure build keep no account of
the field they are at; on a failure the runtime reads the body again with the wire walk (decoders) or
checks the object against the runtime model (encoders) to name the field, offset and reason.

These tests pin what that must give: the exact errors of the field-tracking code it replaced (also
checked over every message and version by ``tools/behaviour_diff.py``), in eager, lazy and
bound decoding, in elements built late by a ``LazyArray``, and in encoders of every kind of module
(hot, client group, versioned).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

import kcodec
from kcodec._generated import COMPILED, MESSAGES
from kcodec.protocol.codec import message_info
from kcodec.protocol.errors import DecodeError, EncodeError, NullValueError, UnsupportedVersionError

GENERATED = Path(kcodec.__file__).parent / "_generated"


def test_the_pure_build_has_no_error_bookkeeping() -> None:
    compiled = {MESSAGES[name][0] for name in COMPILED}
    for path in GENERATED.glob("*.py"):
        if path.stem in compiled:
            continue
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(_field|_index) = ", text, re.M), path.name
        assert "except Exception" not in text, path.name


def _metadata_response() -> bytes:
    cls = kcodec.message_class("MetadataResponse")
    partition = cls.MetadataResponsePartition(replica_nodes=[1])
    topic = cls.MetadataResponseTopic(name="abc", partitions=[partition])
    return kcodec.encode(cls(topics=[topic, topic]), 12)


def test_a_cut_body_names_the_field_eager_lazy_and_bound() -> None:
    data = _metadata_response()
    cut = data[:-12]
    errors = []
    decodes: list[Callable[[], object]] = [
        lambda: kcodec.decode("MetadataResponse", 12, cut),
        lambda: kcodec.decode("MetadataResponse", 12, cut, lazy=True),
        lambda: kcodec.decoder("MetadataResponse", 12)(cut),
        lambda: kcodec.decode("MetadataResponse", 12, memoryview(bytearray(cut))),
    ]
    for decode in decodes:
        with pytest.raises(DecodeError) as e:
            decode()
        errors.append((str(e.value), e.value.offset, e.value.path))
    assert len(set(errors)) == 1
    assert errors[0][2].startswith("MetadataResponse.topics[1].partitions[0].")


def test_invalid_utf8_in_a_lazy_array_fails_when_built_with_the_eager_path() -> None:
    data = bytearray(_metadata_response())
    at = data.index(b"abc", data.index(b"abc") + 1)  # the second topic's name
    data[at] = 0xFF
    with pytest.raises(DecodeError) as eager:
        kcodec.decode("MetadataResponse", 12, bytes(data))
    lazy = kcodec.decode("MetadataResponse", 12, bytes(data), lazy=True)  # strings are not decoded yet
    with pytest.raises(DecodeError) as built:
        list(lazy.topics)
    assert (str(built.value), built.value.offset) == (str(eager.value), eager.value.offset)
    assert eager.value.path == "MetadataResponse.topics[1].name" and eager.value.offset == at


def test_a_lazy_decode_checks_what_the_skipping_decoder_checks() -> None:
    # invalid UTF-8 in the first topic and a cut in the second: the eager decoder stops at the first,
    # the lazy one (which does not decode strings in its arrays) at the cut
    data = bytearray(_metadata_response())
    data[data.index(b"abc")] = 0xFF
    cut = bytes(data[:-12])
    with pytest.raises(DecodeError) as eager:
        kcodec.decode("MetadataResponse", 12, cut)
    with pytest.raises(DecodeError) as lazy:
        kcodec.decode("MetadataResponse", 12, cut, lazy=True)
    assert "UTF-8" in str(eager.value) and "UTF-8" not in str(lazy.value)
    assert lazy.value.path.startswith("MetadataResponse.topics[1]")


@pytest.mark.parametrize(
    ("name", "version"), [("MetadataRequest", 9), ("OffsetCommitRequest", 8), ("CreateTopicsRequest", 7)]
)
def test_encode_errors_name_the_element_and_field(name: str, version: int) -> None:
    info = message_info(name)
    array = next(f for f in info.fields_at(name, version) if f.is_array and f.struct_name)
    element = info.structs[array.struct_name].cls  # type: ignore[index]
    fields = info.fields_at(array.struct_name, version)  # type: ignore[arg-type]
    field = next(f for f in fields if f.type == "string" and not f.is_nullable(version))
    bad = element()
    setattr(bad, field.attr, None)
    msg = info.cls(**{array.attr: [element(), bad]})
    with pytest.raises(NullValueError) as e:
        kcodec.encode(msg, version)
    assert e.value.path == f"{name}.{array.attr}[1].{field.attr}"
    setattr(bad, field.attr, 5)
    with pytest.raises(EncodeError) as wrong:
        kcodec.encoder(name, version)(msg)
    assert wrong.value.path == f"{name}.{array.attr}[1].{field.attr}"
    assert "AttributeError: 'int' object has no attribute 'encode'" in str(wrong.value)


def test_encode_errors_of_runs_absent_fields_and_tagged_sections() -> None:
    cls = kcodec.message_class("InitProducerIdRequest")
    with pytest.raises(EncodeError, match="producer_epoch: 1180591620717411303424: argument out of range"):
        kcodec.encode(cls(producer_epoch=2**70), 5)
    with pytest.raises(UnsupportedVersionError, match="non-default producerId at version 2"):
        kcodec.encode(cls(producer_id=5), 2)
    msg = cls(unknown_tagged_fields=[(5, b"a"), (2, b"b")])
    with pytest.raises(EncodeError) as e:
        kcodec.encode(msg, 4)
    assert e.value.path == "InitProducerIdRequest._tagged_fields" and "ascending" in str(e.value)
    with pytest.raises(UnsupportedVersionError, match="Tagged fields were set, but version 1"):
        kcodec.encode(msg, 1)
