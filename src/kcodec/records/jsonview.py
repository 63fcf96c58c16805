"""A JSON view of a ``records`` buffer: batches with their header fields, and their records.

``records_to_json(data, values="base64"|"text")`` is what ``kcodec.to_json(msg, v, records=...)`` and
``kcodec decode-capture --records`` put in place of a ``records`` field's opaque base64 blob::

    {"sizeInBytes": 192,
     "batches": [{"position": 0, "sizeInBytes": 192, "baseOffset": 0, "magic": 2, "compression": "none",
                  ..., "records": [{"offset": 0, "timestamp": 1700000000000, "key": "a2V5",
                                     "value": "aGVsbG8=", "headers": [{"key": "h", "value": "MQ=="}]}]}],
     "truncatedBytes": 0}

Keys, values and header values are ``null`` when null; with ``values="base64"`` they are standard
base64 (as Kafka's JSON writes bytes); with ``values="text"`` they are text when they are valid UTF-8,
and otherwise written as ``keyBase64`` / ``valueBase64`` (base64) in place of ``key`` / ``value``.

It is a view for people and tools, not a format ``from_json`` reads back.  It never raises for bad
input: decoding stops where the data stops making sense and the problem is reported in place, with
what was decoded before it kept:

* a batch whose CRC does not match, or whose codec is unknown: the batch (read without the CRC check
  when possible) gets ``"error"``; the next batches are still read (the framing is intact);
* records that cannot be decompressed or parsed: the batch gets ``"recordsError"``, its ``records``
  hold those read before the problem;
* a framing error (bad length, unknown magic): ``"error"`` at the top, no further batches;
* an incomplete trailing batch (a Fetch response cut at max bytes): ``"truncatedBytes"`` > 0.
"""

from __future__ import annotations

from typing import Any, Literal

from kcodec.protocol._wire import Buffer, byte_view
from kcodec.protocol.errors import DecodeError, InvalidArgumentError, KcodecError
from kcodec.protocol.json_values import b64
from kcodec.records import batch as _v2
from kcodec.records import legacy as _legacy
from kcodec.records.base import DEFAULT_MAX_RECORDS, Batch, RecordBudget
from kcodec.records.batch import parse_control_record
from kcodec.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from kcodec.records.model import ControlType, Header
from kcodec.records.reader import next_batch_end

ValueMode = Literal["base64", "text"]
VALUE_MODES: tuple[ValueMode, ...] = ("base64", "text")


def error_json(error: BaseException) -> dict[str, Any]:
    """A decoding error as JSON: its class and message; byte offset, reason and base offset if known."""
    out: dict[str, Any] = {"type": type(error).__name__, "message": str(error)}
    if isinstance(error, DecodeError):
        out["offset"] = error.offset
        out["reason"] = error.reason
    base_offset = getattr(error, "base_offset", None)
    if base_offset is not None:
        out["baseOffset"] = base_offset
    return out


def _put_bytes(out: dict[str, Any], name: str, value: bytes | None, text: bool) -> None:
    if value is None:
        out[name] = None
        return
    if text:
        try:
            out[name] = value.decode("utf-8")
            return
        except UnicodeDecodeError:
            out[name + "Base64"] = b64(value)
            return
    out[name] = b64(value)


def _headers_json(headers: list[Header], text: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key, value in headers:
        h: dict[str, Any] = {"key": key}
        _put_bytes(h, "value", value, text)
        out.append(h)
    return out


def _batch_header(batch: Batch) -> dict[str, Any]:
    out: dict[str, Any] = {
        "position": batch.position,
        "sizeInBytes": batch.size,
        "magic": batch.magic,
        "crc": batch.crc,
        "compression": batch.compression.value,
        "timestampType": batch.timestamp_type.name,
    }
    if isinstance(batch, _v2.RecordBatch):
        out.update(
            baseOffset=batch.base_offset,
            lastOffsetDelta=batch.last_offset_delta,
            partitionLeaderEpoch=batch.partition_leader_epoch,
            attributes=batch.attributes,
            isTransactional=batch.is_transactional,
            isControl=batch.is_control,
            baseTimestamp=batch.base_timestamp,
            maxTimestamp=batch.max_timestamp,
            producerId=batch.producer_id,
            producerEpoch=batch.producer_epoch,
            baseSequence=batch.base_sequence,
            recordCount=batch.record_count,
        )
        if batch.delete_horizon_ms is not None:
            out["deleteHorizonMs"] = batch.delete_horizon_ms
    elif isinstance(batch, _legacy.LegacyBatch):
        # base_offset of a compressed wrapper needs decompression: the records carry the offsets.
        out.update(lastOffset=batch.last_offset, attributes=batch.attributes, timestamp=batch.timestamp)
    return out


def _batch_json(batch: Batch, text: bool) -> dict[str, Any]:
    out = _batch_header(batch)
    records: list[dict[str, Any]] = []
    out["records"] = records
    try:
        for r in batch.records():
            rec: dict[str, Any] = {"offset": r.offset, "timestamp": r.timestamp}
            _put_bytes(rec, "key", r.key, text)
            _put_bytes(rec, "value", r.value, text)
            rec["headers"] = _headers_json(r.headers, text)
            if batch.is_control:
                try:
                    marker = parse_control_record(r)
                except KcodecError as e:
                    rec["control"] = {"error": error_json(e)}
                else:
                    kind = marker.type
                    rec["control"] = {
                        "type": kind.name if isinstance(kind, ControlType) else kind,
                        "version": marker.version,
                        "coordinatorEpoch": marker.coordinator_epoch,
                    }
            records.append(rec)
    except Exception as e:  # also a decoder bug: it must not stop the output
        out["recordsError"] = error_json(e)
    return out


def records_to_json(
    data: Buffer | None,
    *,
    values: ValueMode = "base64",
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    max_records: int = DEFAULT_MAX_RECORDS,
) -> dict[str, Any] | None:
    """The batches and records in ``data`` (a ``records`` field) as JSON-ready dicts; see the module
    (``max_records``: as for ``iter_batches``, over it a batch gets ``recordsError``)."""
    if data is None:
        return None
    if values not in VALUE_MODES:
        raise InvalidArgumentError(f"values must be one of {VALUE_MODES}, not {values!r}")
    text = values == "text"
    buf = byte_view(data)
    n = len(buf)
    batches: list[dict[str, Any]] = []
    out: dict[str, Any] = {"sizeInBytes": n, "batches": batches, "truncatedBytes": 0}
    pos = 0
    left = RecordBudget(max_records)
    max_size = max_decompressed_size
    while pos < n:
        try:
            end = next_batch_end(buf, pos)
        except Exception as e:
            out["error"] = error_json(e)
            break
        if end is None:
            out["truncatedBytes"] = n - pos
            break
        cls: type[_v2.RecordBatch] | type[_legacy.LegacyBatch]
        cls = _v2.RecordBatch if buf[pos + 16] == 2 else _legacy.LegacyBatch
        entry: dict[str, Any]
        try:
            batch = cls(buf, pos, end, verify_crc=True, max_decompressed_size=max_size, budget=left)
        except Exception as e:
            try:  # show what the batch holds anyway (e.g. a CRC mismatch), flagged with the error
                unchecked = cls(buf, pos, end, verify_crc=False, max_decompressed_size=max_size, budget=left)
            except Exception:
                entry = {"position": pos, "sizeInBytes": end - pos}
            else:
                entry = _batch_json(unchecked, text)
            entry["error"] = error_json(e)
        else:
            entry = _batch_json(batch, text)
        batches.append(entry)
        pos = end
    return out


def records_summary(data: Buffer | None) -> str:
    """A short text about a ``records`` field: bytes, batches, records, codecs, problems."""
    if data is None:
        return "null"
    view = records_to_json(data)
    assert view is not None
    batches = view["batches"]
    count = sum(len(b.get("records", ())) for b in batches)
    codecs = sorted({b["compression"] for b in batches if "compression" in b} - {"none"})
    parts = [f"{view['sizeInBytes']}B", f"{len(batches)} batch{'es' if len(batches) != 1 else ''}"]
    parts.append(f"{count} record{'s' if count != 1 else ''}")
    if codecs:
        parts.append("/".join(codecs))
    if view["truncatedBytes"]:
        parts.append(f"{view['truncatedBytes']}B truncated")
    errors = [b[k]["type"] for b in batches for k in ("error", "recordsError") if k in b]
    if "error" in view:
        errors.append(view["error"]["type"])
    if errors:
        parts.append("errors: " + ",".join(errors))
    return " ".join(parts)
