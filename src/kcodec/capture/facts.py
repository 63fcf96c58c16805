"""The facts people look for in a frame, pulled out of its body: error codes (and where), the
topic-partitions it is about with their offsets and leader epochs, brokers, and key fields (group,
member, generation, client software, ...). Shared by the summaries, the filters and the statistics
of ``kcodec decode-capture``, and by anything that flattens frames into table rows.

:func:`frame_facts` runs the message's extractor: for the hot and the consumer group messages the
one generated for it (``kcodec._generated.facts_``, one straight-line function per struct layout and
version, planned at build time by ``kcodec.codegen.plan_facts``), for the others one built at run
time from the message's description by the same rules (``kcodec.protocol.facts_build``); either
reads only the fields that hold such facts. What a field names comes from its spec
(``kcodec.protocol.entity_roles``): topic names, broker ids, group ids, producer ids and
transactional ids by the specs' ``entityType``; topic ids and partition indexes, which the specs do
not mark, by a short list. ``ErrorCode`` anywhere is an error code; leader epochs, offsets and a few
other values are shown by name (the same module's tables).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from kcodec.capture.events import CapturedFrame, CaptureEvent
from kcodec.protocol.codec import companion_module, message_info
from kcodec.protocol.errors import KcodecError, UnsupportedVersionError
from kcodec.protocol.facts_build import build_extractor
from kcodec.protocol.facts_model import Facts, PartitionFacts
from kcodec.protocol.model import Message

__all__ = [
    "Facts",
    "PartitionFacts",
    "codes_extractor",
    "event_codes",
    "event_facts",
    "extractor",
    "facts_reader",
    "frame_codes",
    "frame_facts",
]

_Extractor = Callable[[Any, Facts], None]
_extractors: dict[tuple[str, int, str], _Extractor] = {}


def extractor(message_name: str, version: int, table: str = "FACTS") -> _Extractor:
    """The facts extractor of one message at ``version``, cached; ``table="CODES"``: its codes
    extractor (see :func:`frame_codes`). The one the generator wrote if it wrote one (the hot and the
    consumer group messages: its module imported on first use), else one built from the message's
    description (``kcodec.protocol.facts_build``), which finds the same facts."""
    key = (message_name, version, table)
    fn = _extractors.get(key)
    if fn is None:
        mod = _facts_module(message_name)
        found = getattr(mod, table).get(version) if mod is not None else None
        if found is None:
            if mod is not None or version not in message_info(message_name).owners:
                raise UnsupportedVersionError(f"{message_name} has no version {version}")
            found = build_extractor(message_name, version, codes=table == "CODES")
        fn = _extractors[key] = found
    return fn


def _facts_module(message_name: str) -> ModuleType | None:
    """The generated facts module of one message, imported on first use (None if there is none)."""
    return companion_module(message_name, "facts_")


def codes_extractor(message_name: str, version: int) -> _Extractor:
    """The generated codes extractor of one message at ``version`` (see :func:`frame_codes`)."""
    return extractor(message_name, version, "CODES")


def frame_facts(body: Message, version: int, table: str = "FACTS") -> Facts:
    """The facts of a decoded body (see the module docstring); ``table="CODES"``: :func:`frame_codes`."""
    facts = Facts()
    extractor(type(body).MESSAGE_NAME, version, table)(body, facts)
    return facts


def frame_codes(body: Message, version: int) -> Facts:
    """The part of a body's facts that its JSON line needs, found by reading only that: its error codes
    (and where), its topics, and its partitions that carry a topic id (without their values), from
    which :mod:`~kcodec.capture.topics` learns and resolves topic names. Its error codes, topics, and
    topic ids named and unnamed are those of :func:`frame_facts`; the rest stays empty."""
    return frame_facts(body, version, "CODES")


def event_facts(ev: CaptureEvent, table: str = "FACTS") -> Facts | None:
    """The facts of a captured frame's decoded body; None for an issue, a frame whose body did not
    decode, or a body the extractor cannot read. ``table="CODES"``: :func:`event_codes`."""
    if not isinstance(ev, CapturedFrame) or ev.body is None or ev.api_version is None:
        return None
    try:
        return frame_facts(ev.body, ev.api_version, table)
    except (KcodecError, AttributeError, TypeError):
        return None


def event_codes(ev: CaptureEvent) -> Facts | None:
    """:func:`event_facts`, by :func:`frame_codes`: what a JSON line needs of them."""
    return event_facts(ev, "CODES")


def facts_reader(json_only: bool, topic_filter: bool) -> Callable[[CaptureEvent], Facts | None]:
    """What a decode-capture output reads a frame's facts with: :func:`event_codes` when all it shows
    is JSON lines and no ``--topic`` filter needs the topic-partitions; :func:`event_facts` else."""
    return event_codes if json_only and not topic_filter else event_facts
