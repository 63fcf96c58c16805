"""Property-based round trips of every (message, version) pair kcodec knows, via kcodec.protocol.strategies.

For each pair, hypothesis draws valid messages and checks that

- ``decode(encode(m)) == m`` and re-encoding the decoded message gives byte-identical output;
- ``to_json(m)`` is plain JSON, and ``from_json(to_json(m))`` equals ``m`` and encodes to the same
  bytes, once unknown tagged fields are cleared (JsonConverter output does not carry them).

Each pair is its own test with a few examples (8 by default) so the ~700 pairs stay fast; set
``KCODEC_HYPOTHESIS_EXAMPLES`` (e.g. 200) to search harder locally or in a nightly CI profile.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

import kcodec
from kcodec.protocol import strategies
from kcodec.protocol.model import Message, Struct

EXAMPLES = int(os.environ.get("KCODEC_HYPOTHESIS_EXAMPLES", "8"))

SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

PAIRS = strategies.pairs()


def _clear_unknown_tagged_fields(obj: Any) -> None:
    if isinstance(obj, Struct):
        obj._unknown_tagged_fields = None
        for name in obj._fields_:
            _clear_unknown_tagged_fields(getattr(obj, name))
    elif isinstance(obj, list):
        for item in obj:
            _clear_unknown_tagged_fields(item)


def without_unknown_tagged_fields(msg: Message) -> Message:
    """A deep copy of ``msg`` with every ``unknown_tagged_fields`` emptied."""
    copied = copy.deepcopy(msg)
    _clear_unknown_tagged_fields(copied)
    return copied


def check_round_trips(name: str, version: int, msg: Message) -> None:
    data = kcodec.encode(msg, version)

    decoded = kcodec.decode(name, version, data)
    assert decoded == msg
    assert kcodec.encode(decoded, version) == data

    as_json = kcodec.to_json(msg, version)
    as_json = json.loads(json.dumps(as_json, allow_nan=False))  # must be plain, finite JSON
    from_json = kcodec.from_json(name, version, as_json)
    known_only = without_unknown_tagged_fields(msg)
    assert from_json == known_only
    assert kcodec.encode(from_json, version) == kcodec.encode(known_only, version)
    # Not ``== as_json``: a tagged struct whose only non-default content is unknown tagged fields is
    # written by to_json (Kafka's equals() compares them too) but is at its default once they are gone.
    assert kcodec.to_json(from_json, version) == kcodec.to_json(known_only, version)


def test_every_message_version_is_covered() -> None:
    codec = kcodec.protocol.codec
    assert len(PAIRS) == sum(len(codec.message_info(n).owners) for n in codec.message_names())
    for info in kcodec.apis():
        for v in info.versions:
            assert (info.request, v) in PAIRS
            assert (info.response, v) in PAIRS


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=[f"{n}-v{v}" for n, v in PAIRS])
def test_round_trip(name: str, version: int) -> None:
    def check(msg: Message) -> None:
        check_round_trips(name, version, msg)

    # A distinct name per pair gives each pair its own key in hypothesis's example database.
    check.__name__ = check.__qualname__ = f"check_round_trip_{name}_v{version}"
    SETTINGS(given(strategies.messages(name, version))(check))()


# Each message's oldest and newest version again with bigger values: compact lengths of 128 bytes and
# more take multi-byte varints, which the small default sizes never reach.
EDGE_PAIRS = sorted(
    {(n, strategies.versions(n)[i]) for n in kcodec.protocol.codec.message_names() for i in (0, -1)}
)
LARGE = {"max_string_size": 80, "max_bytes_size": 300, "max_array_size": 4}


@pytest.mark.parametrize(("name", "version"), EDGE_PAIRS, ids=[f"{n}-v{v}" for n, v in EDGE_PAIRS])
def test_round_trip_larger_values(name: str, version: int) -> None:
    def check(msg: Message) -> None:
        check_round_trips(name, version, msg)

    check.__name__ = check.__qualname__ = f"check_round_trip_large_{name}_v{version}"
    examples = settings(SETTINGS, max_examples=max(2, EXAMPLES // 2))
    examples(given(strategies.messages(name, version, **LARGE))(check))()




def _tags(obj: Any) -> set[int]:
    return {tag for tag, _ in obj._unknown_tagged_fields or ()}


@settings(SETTINGS, max_examples=max(EXAMPLES, 30))
@given(strategies.messages("FetchRequest", 12, max_array_size=2))
def test_unknown_tags_never_reuse_a_tag_the_struct_has_at_other_versions(msg: Message) -> None:
    """FetchRequest v12 has ClusterId (tag 0) but not ReplicaState (tag 1, v15+), and its FetchPartition
    has no ReplicaDirectoryId (tag 0, v17+): Kafka's readers refuse those tags at v12 ("Tag 1 is not
    valid for version 12"), so they are not unknown tags a valid message can carry."""
    assert not _tags(msg) & {0, 1}
    for topic in msg.topics:
        for partition in topic.partitions:
            assert 0 not in _tags(partition)
