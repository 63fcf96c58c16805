"""What the capture stages yield: decoded frames (``CapturedFrame``) and problems (``CaptureIssue``).

Both are plain records (slots dataclasses, compiled in a standard install) that pickle, so that a
distributed job can ship them; their ``to_dict`` is the JSON-lines object ``kcodec decode-capture
--json`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Literal

from kcodec.capture.errors import UnmatchedResponseError
from kcodec.capture.record import PLAIN_ATTRS, PLAIN_NAMES
from kcodec.protocol.errors import DecodeError, KcodecError
from kcodec.protocol.model import Message
from kcodec.protocol.registry import api

if TYPE_CHECKING:
    from kcodec.capture.groups import EmbeddedValue
    from kcodec.protocol.jsonconv import RecordsMode
    from kcodec.protocol.partial import PartialBody

__all__ = [
    "CaptureEvent",
    "CaptureIssue",
    "CapturedFrame",
    "Direction",
    "IssueKind",
    "UnmatchedResponseError",
    "error_dict",
]

Direction = Literal["request", "response"]
#: ``capture-file``: the file itself (damaged record, cut short, unreadable part); ``gap``: bytes of a
#: TCP stream that were not captured; ``truncated``: a stream ends inside a frame; ``resync``: bytes
#: skipped to find the next frame boundary; ``retransmits``: duplicate or overlapping segments dropped;
#: ``not-kafka``: a TCP connection that is not Kafka traffic; ``buffer``: a bound was reached (too many
#: out-of-order segments, too many unanswered requests) and data was given up on.
IssueKind = Literal[
    "gap", "truncated", "retransmits", "not-kafka", "resync", "capture-file", "buffer", "anomaly"
]


def error_dict(error: KcodecError) -> dict[str, Any]:
    """The typed error of a frame as JSON: class, message, and offset/path for decode errors."""
    out: dict[str, Any] = {"type": type(error).__name__, "message": str(error)}
    if isinstance(error, DecodeError):
        out["offset"] = error.offset
        out["path"] = error.path
        out["reason"] = error.reason
    return out



def reduce_by_fields(record: Any) -> tuple[Any, ...]:
    """``__reduce__`` of the capture's records with written-out ``__init__``s (frames, raw frames,
    segments): pickled as a call of the class with the fields in order (compiled, such a class
    cannot be made empty and filled in, which pickle's default does)."""
    return (type(record), tuple([getattr(record, f.name) for f in fields(record)]))


_API_NAMES: dict[int, str | None] = {}


def _api_name(key: int) -> str | None:
    name = _API_NAMES.get(key, "")
    if name == "":
        try:
            name = api(key).name
        except KcodecError:
            name = None
        _API_NAMES[key] = name
    return name


#: Kafka JSON converters of messages as their JSON lines write them (records as one base64 blob), by
#: class and version: ``kcodec.protocol.jsonconv.json_converter``'s, found once each
_RAW_JSON: dict[tuple[type, int], Any] = {}


def _raw_json(message: Message, version: int) -> dict[str, Any]:
    """``kcodec.to_json(message, version)`` without its per-call dispatch."""
    key = (type(message), version)
    convert = _RAW_JSON.get(key)
    if convert is None:
        from kcodec.protocol.jsonconv import json_converter

        convert = _RAW_JSON[key] = json_converter(type(message).MESSAGE_NAME, version)
    out: dict[str, Any] = convert(message)
    return out


@dataclass(slots=True, init=False)
class CapturedFrame:
    """One Kafka frame seen on a connection, decoded or not.

    ``error`` is set when the frame could not be decoded (``header``/``body`` are then ``None``, or
    only ``header`` is set; ``partial`` then holds what the body's bytes hold up to where they stop
    making sense, when the header decoded: ``kcodec.protocol.partial``), and its text is then also the last
    entry of ``diagnostics``, which lists
    everything non-conformant about the frame (bytes left over, a peer's known off-spec layout and
    how it was read). ``api_key``, ``api_version`` and ``correlation_id`` are filled in as far as the
    bytes tell. ``stream_offset`` is the position of the frame's size prefix in its direction's byte
    stream; ``error.offset`` counts from the size prefix. ``size`` is the size prefix (the bytes after
    it), ``raw`` the frame as captured (``4 + size`` bytes unless the capture cut it).
    """

    timestamp: float  # capture time of the segment that completed the frame (seconds since the epoch)
    connection: int  # 1, 2, ... in order of first packet
    client: str  # "host:port"
    server: str
    direction: Direction
    stream_offset: int
    size: int | None  # the size prefix (bytes after it), if it was captured
    raw: bytes
    api_key: int | None
    api_version: int | None
    correlation_id: int | None
    header_version: int | None
    header: Message | None
    body: Message | None
    error: KcodecError | None
    diagnostics: tuple[str, ...]
    latency: float | None  # responses: seconds since the matching request
    partial: PartialBody | None  # a body that does not decode, read as far as it goes
    extra: dict[str, Any]  # added by later stages (e.g. topic names)
    embedded: tuple[EmbeddedValue, ...]  # protocol messages in its bytes fields (kcodec.capture.groups)
    groups: tuple[str, ...]  # the consumer groups it is about (a response: its request's)

    # (written out: compiled, the __init__ that dataclass writes costs 8x the instructions)
    def __init__(
        self,
        timestamp: float,
        connection: int,
        client: str,
        server: str,
        direction: Direction,
        stream_offset: int,
        size: int | None,
        raw: bytes,
        api_key: int | None = None,
        api_version: int | None = None,
        correlation_id: int | None = None,
        header_version: int | None = None,
        header: Message | None = None,
        body: Message | None = None,
        error: KcodecError | None = None,
        diagnostics: tuple[str, ...] = (),
        latency: float | None = None,
        partial: PartialBody | None = None,
        extra: dict[str, Any] | None = None,
        embedded: tuple[EmbeddedValue, ...] = (),
        groups: tuple[str, ...] = (),
    ) -> None:
        self.timestamp = timestamp
        self.connection = connection
        self.client = client
        self.server = server
        self.direction = direction
        self.stream_offset = stream_offset
        self.size = size
        self.raw = raw
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.header_version = header_version
        self.header = header
        self.body = body
        self.error = error
        self.diagnostics = diagnostics
        self.latency = latency
        self.partial = partial
        self.extra = {} if extra is None else extra
        self.embedded = embedded
        self.groups = groups

    def __reduce__(self) -> tuple[Any, ...]:
        return reduce_by_fields(self)

    @property
    def api_name(self) -> str | None:
        return None if self.api_key is None else _api_name(self.api_key)

    @property
    def ok(self) -> bool:
        return self.error is None and self.body is not None

    @property
    def message_name(self) -> str | None:
        return None if self.body is None else type(self.body).MESSAGE_NAME

    def fail(self, error: KcodecError) -> None:
        """Record ``error`` (and its text in ``diagnostics``, so that the two always agree)."""
        self.error = error
        text = f"{type(error).__name__}: {error}"
        if text not in self.diagnostics:
            self.diagnostics += (text,)

    def json_objects(
        self, records: RecordsMode = "raw"
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The header and the body as Kafka JSON objects (``kcodec.to_json``; the partial body's when
        the body did not decode), as :meth:`to_dict` shows them; None where there is none."""
        header = (
            None
            if self.header is None or self.header_version is None
            else _raw_json(self.header, self.header_version)
        )
        if self.partial is not None:
            return header, self.partial.to_json(records=records)
        if self.body is None or self.api_version is None:
            return header, None
        if records != "raw":
            from kcodec.protocol.jsonconv import to_json

            return header, to_json(self.body, self.api_version, records=records)
        return header, _raw_json(self.body, self.api_version)

    def to_dict(self, *, body: bool = True, records: RecordsMode = "raw") -> dict[str, Any]:
        """The JSON-lines object: the members of :data:`~kcodec.capture.record.FRAME_RECORD` in its
        order (``latency`` only when set), header and body as Kafka JSON (``kcodec.to_json``) when ``body``.

        ``partial`` is true when the body did not decode and ``body`` shows what it holds up to the
        bad spot (``kcodec.protocol.partial``: every field read whole before it, the struct or array it is in
        cut there); ``error`` then says where and why it stopped.

        ``records``: ``"raw"`` keeps ``records`` fields as Kafka JSON's base64 blob; ``"base64"`` /
        ``"text"`` expand them into batches and records (``kcodec.to_json(..., records=...)``).
        ``diagnostics`` is always there (``[]`` for a conformant frame), and ``embedded``: the protocol
        messages found in its bytes fields (``kcodec.capture.groups``; ``[]`` if none).
        """
        out: dict[str, Any] = {"type": "frame"}
        values = PLAIN_ATTRS(self)  # then the rest, in record order
        for i, name in enumerate(PLAIN_NAMES):  # (compiled: a loop of stores; update(zip) makes pairs)
            out[name] = values[i]
        if self.latency is not None:
            out["latency"] = self.latency
        if body:
            out["header"], out["body"] = self.json_objects(records)
        out["partial"] = self.partial is not None
        out["error"] = None if self.error is None else error_dict(self.error)
        out["diagnostics"] = list(self.diagnostics)
        out["embedded"] = [e.to_json() for e in self.embedded] if self.embedded else []
        if self.extra:
            out.update(self.extra)
        return out


@dataclass(slots=True)
class CaptureIssue:
    """A problem with the file or a stream rather than one frame: a damaged record, missing bytes, ..."""

    timestamp: float
    kind: IssueKind
    message: str
    connection: int | None = None
    client: str | None = None
    server: str | None = None
    direction: Direction | None = None
    stream_offset: int | None = None
    length: int | None = None  # bytes concerned (missing, skipped, left over)
    file: str | None = None  # capture-file issues: the file and the byte offset in it
    file_offset: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "issue",
            "time": self.timestamp,
            "kind": self.kind,
            "message": self.message,
            "connection": self.connection,
            "client": self.client,
            "server": self.server,
            "direction": self.direction,
            "stream_offset": self.stream_offset,
            "length": self.length,
        }
        if self.file is not None:
            out["file"] = self.file
            out["file_offset"] = self.file_offset
        return out


CaptureEvent = CapturedFrame | CaptureIssue
