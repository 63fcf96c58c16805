"""How ``kcodec decode-capture`` shows frames: one-line summaries and record lines (presentation only;
the decoding is ``kcodec.capture``'s)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Literal

from kcodec.capture import CapturedFrame

__all__ = ["record_lines", "records_fields", "summarize"]


def summarize(frame: CapturedFrame, width: int = 100) -> str:
    """A one-line summary of a frame: error, or key fields, topics, record bytes and error codes."""
    if frame.error is not None:
        return f"{type(frame.error).__name__}: {frame.error}"
    if frame.body is None:
        return ""
    from kcodec.codec import message_info

    body = frame.body
    name = type(body).MESSAGE_NAME
    version = frame.api_version or 0
    info = message_info(name)
    parts: list[str] = []
    topics: list[str] = []
    counts: dict[str, int] = defaultdict(int)
    errors: dict[int, int] = defaultdict(int)
    record_bytes = 0

    def walk(struct_name: str, obj: Any, depth: int) -> None:
        nonlocal record_bytes
        for f in info.fields_at(struct_name, version):
            value = getattr(obj, f.attr, None)
            if value is None:
                continue
            child = f.struct_name
            if f.is_array and child is not None:
                counts[f.attr] += len(value)
                for item in value:
                    walk(child, item, depth + 1)
                continue
            if child is not None:
                walk(child, value, depth + 1)
                continue
            if f.type == "records":
                record_bytes += len(value)
            elif f.attr == "error_code" and value:
                errors[int(value)] += 1
            elif depth == 1 and f.attr in ("name", "topic", "topic_name") and "topic" in struct_name.lower():
                topics.append(str(value))
            elif depth == 0 and _interesting(f.attr, value, f.default):
                parts.append(f"{f.attr}={_short(value)}")

    walk(name, body, 0)
    head: list[str] = []
    if frame.diagnostics:
        head.append("[" + "; ".join(frame.diagnostics) + "]")
    if errors:
        codes = (f"{code}x{n}" if n > 1 else str(code) for code, n in sorted(errors.items()))
        head.append("error_codes=" + ",".join(codes))
    if record_bytes:
        head.append(f"records={record_bytes}B")
    if topics:
        uniq = list(dict.fromkeys(topics))
        parts.append("topics=" + ",".join(uniq[:3]) + ("..." if len(uniq) > 3 else ""))
    parts.extend(f"{attr}={n}" for attr, n in counts.items() if attr != "topics")
    parts = head + parts
    text = " ".join(parts)
    return text if len(text) <= width else text[: width - 3] + "..."


def records_fields(frame: CapturedFrame) -> list[tuple[str, Any]]:
    """``(where, value)`` of every non-null ``records`` field in the frame's body, in order;
    ``where`` names the topic and partition (``"orders/0"``) as far as the body tells."""
    if frame.body is None:
        return []
    from kcodec.codec import message_info

    body = frame.body
    version = frame.api_version or 0
    info = message_info(type(body).MESSAGE_NAME)
    out: list[tuple[str, Any]] = []

    def walk(struct_name: str, obj: Any, topic: str, partition: str) -> None:
        for f in info.fields_at(struct_name, version):
            value = getattr(obj, f.attr, None)
            if value is None:
                continue
            child = f.struct_name
            if child is not None:
                for item in value if f.is_array else [value]:
                    walk(child, item, topic, partition)
            elif f.type == "records":
                out.append((f"{topic or '?'}/{partition or '?'}", value))
            elif "topic" in struct_name.lower() and f.attr in ("name", "topic", "topic_name", "topic_id"):
                topic = topic if f.attr == "topic_id" and topic else str(value)
            elif f.attr in ("partition", "partition_index", "index") and f.type == "int32":
                partition = str(value)

    walk(type(body).MESSAGE_NAME, body, "", "")
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
    frame: CapturedFrame, values: Literal["base64", "text"] = "text", limit: int = 20
) -> list[str]:
    """Lines describing the batches and records of the frame's ``records`` fields (for a table):
    per field a summary, then up to ``limit`` records (offset, key, value, headers) and any errors."""
    from kcodec.records.jsonview import records_summary, records_to_json

    lines: list[str] = []
    for where, data in records_fields(frame):
        if not len(data):
            continue  # nothing in it (e.g. a Fetch response partition without new records)
        lines.append(f"{where}: {records_summary(data)}")
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


def _interesting(attr: str, value: Any, default: Any) -> bool:
    if isinstance(value, bool | int | float | str):
        return bool(value != default) and attr != "throttle_time_ms"
    return False


def _short(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."
