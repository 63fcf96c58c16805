"""How wire values look in Kafka's JSON (``JsonConverter``): the helpers the generated converters call
(``kcodec._generated.json_``, through ``kcodec.jsonconv``)."""

from __future__ import annotations

import binascii
from typing import Any

from kcodec.values import Uuid

__all__ = ["b64", "uuid_text"]


def b64(value: Any) -> str:
    """Bytes and records: standard base64 (``base64.b64encode``'s text, without its wrapper call)."""
    return binascii.b2a_base64(value, newline=False).decode("ascii")


def uuid_text(value: Any) -> str:
    """A uuid: Kafka's 22-character URL-safe base64 (``Uuid.toString()``)."""
    return str(value) if isinstance(value, Uuid) else str(Uuid(value))
