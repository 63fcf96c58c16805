"""What the proxy reports besides the decoded traffic: :class:`ProxyNotice` (listeners opened,
connections ended and why, addresses rewritten, peers that could not be reached or stalled).

The decoded traffic itself is the capture decoder's events (``CapturedFrame``, ``CaptureIssue``);
:data:`ProxyEvent` is either. ``ProxyNotice.to_dict`` is its JSON-lines object (``"type": "proxy"``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from kcodec.capture import CaptureEvent

__all__ = ["NoticeKind", "ProxyEvent", "ProxyNotice"]

#: ``listening``: a listener was opened (the first one for ``--upstream``, then one per broker the
#: upstream advertises); ``rewritten``: a response's broker addresses were replaced; ``unrewritten``: a
#: response that may advertise brokers could not be decoded or an address could not be given a
#: listener, and went out as it came; ``unreachable``: the broker a client connection goes to could not
#: be connected to; ``stalled``: a peer stopped reading and its connection was closed; ``protocol``: a
#: peer sent something that is not a Kafka frame; ``closed``: a connection ended (the message says
#: who ended it and what went through).
NoticeKind = Literal["listening", "rewritten", "unrewritten", "unreachable", "stalled", "protocol", "closed"]


@dataclass(slots=True)
class ProxyNotice:
    """Something the proxy did or saw (see :data:`NoticeKind`)."""

    timestamp: float
    kind: NoticeKind
    message: str
    connection: int | None = None
    client: str | None = None
    server: str | None = None  # the proxy listener the client is connected to
    upstream: str | None = None  # the broker behind it
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "proxy",
            "time": self.timestamp,
            "kind": self.kind,
            "message": self.message,
            "connection": self.connection,
            "client": self.client,
            "server": self.server,
            "upstream": self.upstream,
        }
        out.update(self.details)
        return out


ProxyEvent = CaptureEvent | ProxyNotice
