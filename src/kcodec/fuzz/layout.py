"""Where things are in an encoded body: every length, count, varint, null marker, tag and value.

``layout(message_name, version, data)`` returns one ``Span`` per wire item, in order: the spans of
the runtime's one walk over an encoding (``kcodec.protocol.wirewalk``, which
``kcodec.protocol.partial`` also reads values with). The spans tile the body exactly: every byte
belongs to one span. The mutator uses them to aim at lengths, counts and markers instead of random
bytes.

The walk checks what the decoders check (``DecodeError`` when the bytes do not fit, with the
decoder's reason), but a layout is a map: values are located, not kept.
"""

from __future__ import annotations

from kcodec.protocol._wire import Buffer
from kcodec.protocol.codec import message_info
from kcodec.protocol.errors import DecodeError, UnsupportedVersionError
from kcodec.protocol.wirewalk import LENGTH_KINDS, Span, walk_info

__all__ = ["LENGTH_KINDS", "Span", "layout"]


def layout(message_name: str, version: int, data: Buffer) -> list[Span]:
    """The spans of ``data``, an encoding of ``message_name`` at ``version`` (raises ``DecodeError``
    if the bytes do not fit the message, including bytes left over)."""
    info = message_info(message_name)
    if version not in info.owners:
        raise UnsupportedVersionError(f"{message_name} has no version {version!r}")
    spans = [e for e in walk_info(info, version, data) if isinstance(e, Span)]
    end = spans[-1].end if spans else 0
    if end != len(data):
        raise DecodeError(f"{len(data) - end} bytes left after the layout", end, message_name)
    return spans
