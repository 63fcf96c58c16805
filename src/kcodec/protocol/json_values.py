"""How wire values look in Kafka's JSON (``JsonConverter``): the helpers the converters call, generated
(``kcodec._generated.json_``) or built at run time (``kcodec.protocol.json_build``)."""

from __future__ import annotations

import binascii
from collections.abc import Callable
from typing import Any

from kcodec.protocol.values import Uuid

__all__ = ["b64", "uuid_text"]

_SIMD_FROM = 64  # bytes: from this size on, pybase64's SIMD encoder is the faster (measured)
_simd: Callable[[Any], str] | None
try:  # libbase64's SIMD encoder: 45x faster than binascii on 100 KiB of record batches (measured)
    from pybase64 import b64encode_as_string as _simd
except ImportError:  # (a dependency, but kcodec works without it)
    _simd = None


def b64(value: Any) -> str:
    """Bytes and records: standard base64 (``base64.b64encode``'s text)."""
    if _simd is not None and len(value) >= _SIMD_FROM:
        return _simd(value)
    return binascii.b2a_base64(value, newline=False).decode("ascii")


#: The texts of the uuids seen last (a capture names the same few topic ids in frame after frame; the
#: text costs about 1.5 us to make, a lookup 0.05). Emptied when it reaches ``_TEXTS_MAX`` entries.
_texts: dict[bytes, str] = {}
_TEXTS_MAX = 4096


def uuid_text(value: Any) -> str:
    """A uuid: Kafka's 22-character URL-safe base64 (``Uuid.toString()``)."""
    if type(value) is not Uuid:
        return str(value) if isinstance(value, Uuid) else str(Uuid(value))
    text = _texts.get(value)
    if text is None:
        if len(_texts) >= _TEXTS_MAX:
            _texts.clear()
        text = _texts[value] = str(value)
    return text
