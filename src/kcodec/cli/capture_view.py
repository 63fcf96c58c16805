"""How ``kcodec decode-capture`` shows a frame: a one-line summary that leads with errors and key
content, record lines, and the full ``-V`` view (presentation only; the facts come from
``kcodec.capture.facts``, the decoding from ``kcodec.capture``)."""

from __future__ import annotations

import json
from typing import Any, Final, Literal, NamedTuple

from kcodec.capture import CapturedFrame
from kcodec.capture.facts import Facts
from kcodec.capture.topics import renamed
from kcodec.protocol.error_codes import error_name

__all__ = [
    "Digest",
    "digest",
    "embedded_texts",
    "error_text",
    "full_view",
    "name_topics",
    "record_lines",
    "records_fields",
    "short_member",
    "summary_from",
    "summary_parts",
]

Part = tuple[str, str]  # (style: "error" | "note" | "" | "dim", text)

# partition values: (attribute, label, shown when -1)
_SHORT: Final[dict[str, tuple[str, bool]]] = {
    "leader_id": ("leader ", True),
    "leader_epoch": ("epoch ", True),
    "current_leader_epoch": ("current epoch ", True),
    "committed_leader_epoch": ("committed epoch ", False),
    "last_fetched_epoch": ("last fetched epoch ", False),
    "fetch_offset": ("@", True),
    "base_offset": ("base ", True),
    "committed_offset": ("committed ", True),
    "high_watermark": ("hw ", True),
    "last_stable_offset": ("lso ", False),
    "log_start_offset": ("log start ", False),
    "timestamp": ("ts ", True),
    "offset": ("offset ", True),
    "end_offset": ("end ", True),
    "epoch": ("epoch ", True),
}
_PREFIXES: Final = {attr: " " + label for attr, (label, _) in _SHORT.items()}  # what precedes the value
_HIDDEN_WHEN_NEGATIVE: Final = frozenset(attr for attr, (_, keep) in _SHORT.items() if not keep)
_KEY_LABELS: Final = {
    "generation_id": "generation",
    "generation_id_or_member_epoch": "generation",
    "client_software_name": "software",
    "allow_auto_topic_creation": "auto-create",
    "v3_and_below_transactional_id": "transactional_id",
    "v3_and_below_producer_id": "producer_id",
}
#: key values that say "none" with -1 (not shown then)
_NONE_WHEN_MINUS_ONE: Final = ("producer_id", "producer_epoch", "controller_id", "ongoing_txn_producer_id")
_SHOWN_ELSEWHERE: Final = ("brokers", "coordinators")  # counts the summary shows as a list of their own
_MAX_TOPICS: Final = 8
_MAX_PARTITIONS: Final = 12


def error_text(code: int) -> str:
    """``"NOT_LEADER_OR_FOLLOWER (6)"``."""
    return f"{error_name(code)} ({code})"


def _size(n: int) -> str:
    return f"{n}B" if n < 10_000 else f"{n / 1000:.1f}kB" if n < 10_000_000 else f"{n / 1e6:.1f}MB"


def _errors(codes: list[tuple[int, str]], names: dict[str, str]) -> list[Part]:
    by_code: dict[int, list[str]] = {}
    for code, where in codes:
        by_code.setdefault(code, []).append(renamed(where, names) if names else where)
    out: list[Part] = []
    for code, wheres in by_code.items():
        places = [w for w in dict.fromkeys(wheres) if w]
        text = error_text(code)
        if places:
            text += " " + ", ".join(places[:4]) + (f" +{len(places) - 4}" if len(places) > 4 else "")
        elif len(wheres) > 1:
            text += f" x{len(wheres)}"
        out.append(("error", text))
    return out


_SOFTWARE: Final = ("client_software_name", "client_software_version")


def _keys(frame: CapturedFrame, facts: Facts) -> list[Part]:
    values: dict[str, Any] = facts.values  # (typed: a compiled build walks it as a dict)
    out: list[Part] = []
    name = values.get("client_software_name")
    if name is not None:
        version = values.get("client_software_version")
        out.append(("", f"software {name} {version or ''}".rstrip()))
    if frame.message_name == "MetadataRequest":
        topics = getattr(frame.body, "topics", None)
        if topics is None:
            out.append(("", "all topics"))
        elif not topics:
            out.append(("", "no topics (brokers only)"))
    for key, value in values.items():
        if value is None or value == "" or (key in ("acks", "isolation_level", "session_id") and value == 0):
            continue
        if key in _SOFTWARE:
            continue
        if key in _NONE_WHEN_MINUS_ONE and value == -1:
            continue
        label = _KEY_LABELS.get(key, key)
        out.append(("", f"{label} {value!r}" if isinstance(value, str) else f"{label} {value}"))
    return out


def _assigned(pairs: list[tuple[str, list[int]]]) -> str:
    """``orders[0,1] payments[2]`` (``-`` for none)."""
    return " ".join(f"{t}[{','.join(map(str, ps))}]" for t, ps in pairs) or "-"


def short_member(member: str) -> str:
    """A member id as a table shows it: ``rd-a-1ea4b9e3`` for Kafka's ``rd-a-1ea4b9e3-f731-...`` (a
    client id and a UUID); other ids whole."""
    if len(member) > 37 and member[-37] == "-" and member[-28] == "-" and member[-23] == "-":
        return member[:-28]
    return member


def embedded_texts(frame: CapturedFrame) -> list[str]:
    """The protocol values embedded in a frame (``kcodec.capture.groups``), one text each: the topics
    a member subscribes to, the partitions each member is assigned (``member -> orders[0,1]``). A
    frame of one member's (a JoinGroup request, a SyncGroup response) does not repeat its member."""
    from kcodec.capture.groups import assignment_of, subscription_of

    own = frame.message_name in ("JoinGroupRequest", "SyncGroupResponse")
    out: list[str] = []
    for e in frame.embedded:
        who = "" if own or not e.member else f"{short_member(e.member)} "
        if e.type == "ConsumerProtocolAssignment":
            out.append(
                f"{who}-> {_assigned(assignment_of(e.value))}"
                if who
                else f"assigned {_assigned(assignment_of(e.value))}"
            )
        else:
            out.append(f"{who}subscribes {', '.join(subscription_of(e.value)) or '-'}")
    return list(dict.fromkeys(out))  # (a JoinGroup request: one subscription per assignor offered)


def _partition(p: Any) -> str:
    text = str(p.partition)  # (built by +=, which CPython extends in place: no list to join)
    prefixes, hidden = _PREFIXES, _HIDDEN_WHEN_NEGATIVE
    values: dict[str, Any] = p.values  # (typed: a compiled build walks it as a dict, not any iterable)
    for attr, value in values.items():
        if value == -1 and attr in hidden:
            continue
        prefix = prefixes.get(attr)
        text += f" {attr} {value}" if prefix is None else f"{prefix}{value}"
    if p.error_code:
        text += " " + error_name(p.error_code)
    if p.records_bytes:
        text += f" records {_size(p.records_bytes)}"
    return text


def _topics(
    partitions: list[tuple[str | None, str | None, str | None]],
    topics: list[tuple[str | None, str | None]],
    names: dict[str, str],
) -> list[Part]:
    groups: dict[str, list[str | None]] = {}
    for topic, topic_id, text in partitions:
        if topic is None and topic_id is not None:
            topic = names.get(topic_id)
        groups.setdefault(topic or topic_id or "?", []).append(text)
    out: list[Part] = []
    for topic, texts in list(groups.items())[:_MAX_TOPICS]:
        shown = "; ".join([t or "" for t in texts[:_MAX_PARTITIONS]])
        more = f"; +{len(texts) - _MAX_PARTITIONS} partitions" if len(texts) > _MAX_PARTITIONS else ""
        out.append(("", f"{topic}[{shown}{more}]"))
    if len(groups) > _MAX_TOPICS:
        out.append(("", f"+{len(groups) - _MAX_TOPICS} topics"))
    if not groups and topics:
        named = [(names.get(i) if n is None and i is not None else n, i) for n, i in topics]
        listed = [n or i or "?" for n, i in dict.fromkeys(named)]
        more = f" +{len(listed) - _MAX_TOPICS}" if len(listed) > _MAX_TOPICS else ""
        out.append(("", "topics " + ", ".join(listed[:_MAX_TOPICS]) + more))
    return out


class Digest(NamedTuple):
    """A frame's summary, digested: the texts topic names learnt elsewhere cannot change, and the
    little they can (error places, how partitions group by topic), so that the summary can be
    finished (:func:`summary_from`) by whoever knows the names: for a parallel decode, the parent
    of the worker that made the digest (a named tuple: it goes down the pipe as a plain one, see
    ``parallel_items.to_wire``; as a slotted dataclass it took twice as long to pickle and unpickle)."""

    error: list[Part]
    notes: list[Part]
    has_facts: bool
    keys: list[Part]
    codes: list[tuple[int, str]]  # (error code, where) with topics as the frame names them
    middle: list[Part]  # brokers, records
    #: (topic, topic id, text) of each partition; the text only where it may be shown (among the
    #: first of its topic)
    partitions: list[tuple[str | None, str | None, str | None]]
    topics: list[tuple[str | None, str | None]]  # (name, id) of the topics, when no partition is named
    counts: list[Part]


def digest(frame: CapturedFrame, facts: Facts | None, pending: bool = False) -> Digest:
    """The :class:`Digest` of a frame and its facts; ``pending``: names may still be given to the
    topics the frame names by id only (:func:`summary_from` with ``names``)."""
    error: list[Part] = []
    if frame.error is not None:
        error.append(("error", f"{type(frame.error).__name__}: {frame.error}"))
    notes: list[Part] = []
    if frame.diagnostics:
        from kcodec.protocol.quirks import short_note  # (a peer deviation: its short name; -V has it all)

        notes = [
            ("note", f"[{short_note(d)}]")
            for d in frame.diagnostics
            if frame.error is None or not d.endswith(str(frame.error))
        ]
    if frame.partial is not None:  # what the body holds before the bad spot, marked as such
        content = json.dumps(frame.partial.to_json(), separators=(",", ":"), ensure_ascii=False)
        notes.append(("", f"partial {content}"))
    # (made by tuple.__new__: a named tuple's own __new__ is Python code, a call per frame)
    if facts is None:
        return tuple.__new__(Digest, (error, notes, False, [], [], [], [], [], []))
    middle: list[Part] = []
    if facts.brokers:
        shown = ", ".join(f"{n}={h}:{p}" for n, h, p in facts.brokers[:6])
        more = f" +{len(facts.brokers) - 6}" if len(facts.brokers) > 6 else ""
        label = "coordinator" if "Coordinator" in (frame.message_name or "") else "brokers"
        middle.append(("", f"{label} {shown}{more}"))
    if facts.records_bytes and not facts.partitions:
        middle.append(("", f"records {_size(facts.records_bytes)}"))
    partitions = _partition_texts(facts, pending)
    counts: list[Part] = []
    if facts.counts:
        counts = [("dim", f"{name} {n}") for name, n in facts.counts.items() if name not in _SHOWN_ELSEWHERE]
    keys = _keys(frame, facts)
    if frame.embedded:
        keys += [("", text) for text in embedded_texts(frame)]
    return tuple.__new__(
        Digest,
        (error, notes, True, keys, list(facts.error_codes), middle, partitions, list(facts.topics), counts),
    )


def _partition_texts(facts: Facts, pending: bool) -> list[tuple[str | None, str | None, str | None]]:
    """``(topic, topic id, text)`` of each partition, the text made only where it may be shown:
    among the first ``_MAX_PARTITIONS`` of its topic, in one of the first ``_MAX_TOPICS`` topics. If
    names may still come (``pending``) for topics named by id only, partitions may still be grouped
    differently: then the first of every group that names could merge into a shown topic."""
    regroup = pending and any(p.topic is None and p.topic_id is not None for p in facts.partitions)
    seen: dict[object, int] = {}
    out: list[tuple[str | None, str | None, str | None]] = []
    for p in facts.partitions:
        # the group: what names cannot split (the shown topic is a function of it, whatever the names)
        group: object = (
            (p.topic, None if p.topic else p.topic_id) if regroup else p.topic or p.topic_id or "?"
        )
        n = seen.get(group)
        if n is None:  # (a topic beyond those shown: its partitions are only counted)
            n = 0 if regroup or len(seen) < _MAX_TOPICS else _MAX_PARTITIONS
        seen[group] = n + 1
        out.append((p.topic, p.topic_id, _partition(p) if n < _MAX_PARTITIONS else None))
    return out


def summary_parts(frame: CapturedFrame, facts: Facts | None) -> list[Part]:
    """The pieces of a frame's summary, most important first: the decode error or Kafka error codes,
    diagnostics, key fields, brokers, topic-partitions with their offsets and epochs, other counts."""
    return summary_from(digest(frame, facts), {})


def summary_from(d: Digest, names: dict[str, str]) -> list[Part]:
    """:func:`summary_parts` of a :class:`Digest`, with ``names`` (topic id -> name) for the topics
    the frame names by id only."""
    out = d.error + _errors(d.codes, names) + d.notes if d.codes else d.error + d.notes
    if not d.has_facts:
        return out
    return out + d.keys + d.middle + _topics(d.partitions, d.topics, names) + d.counts


def full_view(frame: CapturedFrame) -> list[str]:
    """``-V``: the header and body as an indented tree of Kafka JSON fields."""
    d = frame.to_dict()
    lines: list[str] = []

    def walk(key: str, value: Any, depth: int) -> None:
        pad = "  " * depth
        if isinstance(value, dict):
            lines.append(f"{pad}{key}:")
            for k, v in value.items():
                walk(k, v, depth + 1)
        elif isinstance(value, list) and value and isinstance(value[0], dict | list):
            lines.append(f"{pad}{key}: [{len(value)}]")
            for i, v in enumerate(value):
                walk(f"[{i}]", v, depth + 1)
        else:
            text = repr(value) if isinstance(value, str) else "null" if value is None else str(value)
            if key in ("errorCode",) and isinstance(value, int) and value:
                text += f" {error_name(value)}"
            lines.append(f"{pad}{key}: {text}")

    for part in ("header", "body"):
        if d.get(part) is not None:
            walk("body (partial)" if part == "body" and d.get("partial") else part, d[part], 1)
    for e in d["embedded"]:
        walk(f"{e['path']} ({e['type']} v{e['version']})", e["value"], 1)
    for diag in frame.diagnostics:
        lines.append(f"  ! {diag}")
    return lines


def records_fields(frame: CapturedFrame) -> list[tuple[str, Any]]:
    """``(where, value)`` of every non-null ``records`` field in the frame's body, in order;
    ``where`` names the topic and partition (``"orders/0"``) as far as the body tells."""
    if frame.body is None:
        return []
    from kcodec.capture.entities import field_entity
    from kcodec.protocol.codec import message_info
    from kcodec.protocol.entity_roles import in_partition

    body = frame.body
    version = frame.api_version or 0
    info = message_info(type(body).MESSAGE_NAME)
    out: list[tuple[str, Any]] = []

    message = type(body).MESSAGE_NAME

    def walk(struct_name: str, obj: Any, topic: str, partition: str, parent_field: str) -> None:
        partition_struct = in_partition(struct_name, parent_field)
        for f in info.fields_at(struct_name, version):
            value = getattr(obj, f.attr, None)
            if value is None:
                continue
            child = f.struct_name
            entity = None if child else field_entity(message, f.name, f.type, f.entity_type, partition_struct)
            if child is not None:
                for item in value if f.is_array else [value]:
                    walk(child, item, topic, partition, f.attr)
            elif f.type == "records":
                out.append((f"{topic or '?'}/{partition or '?'}", value))
            elif (entity == "topicName" and not f.is_array) or (entity == "topicId" and not topic):
                topic = str(value)
            elif entity == "partition":
                partition = str(value)

    walk(message, body, "", "", "")
    return out


def _text_of(obj: dict[str, Any], name: str, width: int = 40) -> str:
    text: str
    if name + "Base64" in obj:
        text = "base64:" + str(obj[name + "Base64"])
    elif obj.get(name) is None:
        text = "null"
    else:
        text = repr(obj[name]) if isinstance(obj[name], str) else str(obj[name])
    return text if len(text) <= width else text[: width - 3] + "..."


def record_lines(
    frame: CapturedFrame,
    values: Literal["base64", "text"] = "text",
    limit: int = 20,
    names: dict[str, str] | None = None,
) -> list[str]:
    """Lines describing the batches and records of the frame's ``records`` fields (for a table):
    per field a summary, then up to ``limit`` records (offset, key, value, headers) and any errors.
    Each field's summary line starts with its ``topic/partition``, the topic named by ``names``
    (topic id -> name) when the frame names it by id only; it is the only line not indented."""
    from kcodec.records.jsonview import records_summary, records_to_json

    lines: list[str] = []
    for where, data in records_fields(frame):
        if not len(data):
            continue  # nothing in it (e.g. a Fetch response partition without new records)
        lines.append(f"{renamed(where, names) if names else where}: {records_summary(data)}")
        view = records_to_json(data, values=values)
        assert view is not None
        shown = 0
        for batch in view["batches"]:
            for key in ("error", "recordsError"):
                if key in batch:
                    lines.append(f"  ! batch at byte {batch['position']}: {batch[key]['message']}")
            for rec in batch.get("records", ()):
                shown += 1
                if shown > limit:
                    continue
                headers = ",".join(f"{h['key']}={_text_of(h, 'value', 20)}" for h in rec["headers"])
                lines.append(
                    f"  @{rec['offset']} key={_text_of(rec, 'key')} value={_text_of(rec, 'value')}"
                    + (f" headers={headers}" if headers else "")
                )
        if shown > limit:
            lines.append(f"  ... {shown - limit} more records")
        if "error" in view:
            lines.append(f"  ! {view['error']['message']}")
        if view["truncatedBytes"]:
            lines.append(f"  ({view['truncatedBytes']} bytes of an incomplete last batch)")
    return lines


def name_topics(lines: list[str], names: dict[str, str]) -> list[str]:
    """The lines under a row (:func:`record_lines`, then :func:`full_view`'s, all indented) with the
    topic ids that start the records' summary lines replaced by their ``names``."""
    if not names:
        return lines
    return [line if line.startswith(" ") else renamed(line, names) for line in lines]
