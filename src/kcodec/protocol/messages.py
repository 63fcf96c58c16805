"""Every Kafka message class kcodec generates, importable by name::

    from kcodec.protocol.messages import FetchRequest, MetadataResponse

    req = FetchRequest(max_wait_ms=500, topics=[FetchRequest.FetchTopic(topic="t")])

Requests, responses, the request/response headers and the data messages (e.g.
``ConsumerProtocolAssignment``); the structs inside a message are attributes of its class
(``FetchRequest.FetchTopic``). A class is imported on first use, like the codecs; type checkers see
them all (``kcodec._generated.typing_api``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kcodec._generated.typing_api import *  # noqa: F403
    from kcodec.protocol.model import Message


def __getattr__(name: str) -> type[Message]:
    from kcodec._generated import MESSAGES
    from kcodec.protocol.codec import message_class

    if name not in MESSAGES:
        raise AttributeError(f"module 'kcodec.protocol.messages' has no attribute {name!r} (no such message)")
    cls = message_class(name)
    globals()[name] = cls
    return cls


def __dir__() -> list[str]:
    from kcodec._generated import MESSAGES

    return sorted({*globals(), *MESSAGES})


def _all() -> list[str]:
    from kcodec._generated import MESSAGES

    return sorted(MESSAGES)


if not TYPE_CHECKING:
    __all__ = _all()
