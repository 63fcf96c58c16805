"""What a body that does not decode holds, up to where its bytes stop making sense.

``read_partial(message_name, version, data)`` reads a body with the runtime's one walk over an
encoding (``kcodec.protocol.wirewalk``, the same walk ``kcodec.fuzz.layout`` maps bodies with) and returns a
:class:`PartialBody`: everything it could read, as the Kafka JSON ``kcodec.to_json`` writes (same
field names and value formats), and where and why it stopped (``error``: the ``DecodeError`` the
codec raises for the same bytes: reason, offset and field path).

What is shown:

- every field read whole before the bad spot, with its value;
- the struct or array the bad spot is in, cut there: an array holds its elements read whole and,
  when it is an array of structs, the element the bad spot is in (cut the same way), once any of
  that element's bytes are there; a struct holds the fields before the bad one;
- not the value at the bad spot itself (a string whose length overruns, invalid UTF-8, a null
  where none is allowed); a tagged field is all or nothing (its value is read whole or not shown).
  An array of fixed-width values whose count overruns the bytes shows the elements that fit, and
  ``error`` names the first that does not (as the codec does: bytes cut inside an array look
  exactly so; a count corrupted upwards reads the bytes after the array as elements, up to there).

Reading is bounded like the codec's: lengths and counts are checked against the bytes that remain
before anything is read for them. A body that decodes gives its full JSON and ``error`` None (bytes
left after it make ``error`` a ``TrailingBytesError``, as the strict codec says).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kcodec.protocol._wire import Buffer
from kcodec.protocol.codec import message_info
from kcodec.protocol.errors import DecodeError, TrailingBytesError, UnsupportedVersionError
from kcodec.protocol.jsonconv import RecordsMode, to_json
from kcodec.protocol.model import Message
from kcodec.protocol.schema import FieldInfo, MessageInfo
from kcodec.protocol.wirewalk import Enter, Leave, Value, walk_info

__all__ = ["PartialBody", "read_partial"]


@dataclass(slots=True)
class _Open:
    """A struct or array being read: its values so far, and which of them is cut (read partially)."""

    field: FieldInfo | None
    struct: str | None
    offset: int
    values: dict[str, Any] | list[Any]
    cut: bool = False  # whether its last value is itself cut


@dataclass(slots=True)
class PartialBody:
    """A body read as far as it goes (see the module docstring).

    ``message`` holds the values read, with every field that was not read at its default (so it is
    not the body: use :meth:`to_json`, which shows only what was read); ``error`` is where and why
    the reading stopped (None: the whole body was read); ``start``/``end``: where the body starts in
    the buffer read and where reading stopped (``error.offset`` for a body that does not decode).
    """

    name: str
    version: int
    message: Message
    error: DecodeError | None
    start: int
    end: int
    size: int  # bytes of the body (from ``start`` to the end of the buffer)
    _chain: list[_Open] = field(default_factory=list, repr=False)

    @property
    def complete(self) -> bool:
        return self.error is None

    def to_json(self, *, records: RecordsMode = "raw", error_names: bool = False) -> dict[str, Any]:
        """The Kafka JSON of what was read (``kcodec.to_json``'s format and options)."""
        out = to_json(self.message, self.version, records=records)
        node: Any = out
        info = message_info(self.name)
        for step in self._chain:  # from the message down to the innermost value cut
            if isinstance(step.values, dict):
                assert step.struct is not None
                fields = [f for f in info.fields_at(step.struct, self.version) if f.attr in step.values]
                keep = {f.json_name for f in fields}
                for key in [k for k in node if k not in keep]:
                    del node[key]
                if step.cut:
                    last = next(reversed(step.values))
                    node = node[next(f.json_name for f in fields if f.attr == last)]
            elif step.cut:
                node = node[-1]
        if error_names:
            from kcodec.protocol.error_codes import with_error_names

            named: dict[str, Any] = with_error_names(out)
            return named
        return out

    def describe(self) -> str:
        """One line: what was read, and where it stopped (the ``error`` says why)."""
        read = self.end - self.start
        if self.error is None:
            return f"{self.name} v{self.version}: whole body read ({self.size} bytes)"
        info = message_info(self.name)
        root = self._chain[0] if self._chain else None
        shown: list[str] = []
        if root is not None and isinstance(root.values, dict):
            for f in info.fields_at(self.name, self.version):
                if f.attr in root.values:
                    shown.append(f.json_name)
            if root.cut and shown:
                shown[-1] += " (cut)"
        fields = ", ".join(shown) if shown else "no field"
        return (
            f"partial body: {self.name} v{self.version} read {read} of its {self.size} bytes "
            f"({fields}), up to byte {self.end} in {self.error.path}"
        )


class _Builder:
    """Folds the walk's events into message objects; on a stop, what was open is kept, cut."""

    def __init__(self, info: MessageInfo) -> None:
        self.info = info
        self.stack: list[_Open] = []
        self.root: Any = None

    def feed(self, event: Any) -> None:
        if isinstance(event, Value):
            self._add(event.field, event.value)
        elif isinstance(event, Enter):
            values: dict[str, Any] | list[Any] = {} if event.struct is not None else []
            self.stack.append(_Open(event.field, event.struct, event.offset, values))
        elif isinstance(event, Leave):
            done = self.stack.pop()
            self._attach(done)

    def _add(self, f: FieldInfo, value: Any) -> None:
        top = self.stack[-1].values
        if isinstance(top, dict):
            top[f.attr] = value
        else:
            top.append(value)

    def _build(self, o: _Open) -> Any:
        if o.struct is None:
            return o.values
        assert isinstance(o.values, dict)
        return self.info.structs[o.struct].cls(**o.values)

    def _attach(self, o: _Open) -> None:
        if not self.stack:
            self.root = self._build(o)
        else:
            assert o.field is not None
            self._add(o.field, self._build(o))

    def cut(self, data_end: int) -> list[_Open]:
        """Close what is open after a stop: each open struct or array becomes its parent's last value,
        cut (an open struct only once any of its bytes are there). Returns the chain from the message
        down to the innermost value kept, for ``PartialBody.to_json`` to prune."""
        chain = list(self.stack)
        while len(chain) > 1 and chain[-1].struct is not None and chain[-1].offset >= data_end:
            chain.pop()  # a struct none of whose bytes are there
        for i in range(len(chain) - 1, 0, -1):
            o, parent = chain[i], chain[i - 1]
            parent.cut = True
            assert o.field is not None
            value = self._build(o)
            if isinstance(parent.values, dict):
                parent.values[o.field.attr] = value
            else:
                parent.values.append(value)
        self.stack = []
        self.root = self._build(chain[0])
        return chain


def read_partial(message_name: str, version: int, data: Buffer, start: int = 0) -> PartialBody:
    """Read the body of ``message_name`` at ``version`` that starts at ``start`` in ``data`` (and runs
    to its end) as far as it goes; never raises on bad bytes (see the module docstring). Offsets (in
    ``error`` too) count from ``data``'s start, as the codec's ``decode_at`` does."""
    info = message_info(message_name)
    if version not in info.owners:
        raise UnsupportedVersionError(f"{message_name} has no version {version!r}")
    builder = _Builder(info)
    end = len(data)
    error: DecodeError | None = None
    pos = start
    try:
        for event in walk_info(info, version, data, start):
            builder.feed(event)
            if isinstance(event, Leave):
                pos = event.offset
    except DecodeError as e:
        error = DecodeError(e.reason, e.offset, f"{message_name}.{e.path}" if e.path else message_name)
        chain = builder.cut(end)
        return PartialBody(message_name, version, builder.root, error, start, e.offset, end - start, chain)
    if pos != end:
        reason = f"{end - pos} trailing bytes after {message_name} v{version}"
        error = TrailingBytesError(reason, pos, message_name)
    return PartialBody(message_name, version, builder.root, error, start, pos, end - start)
