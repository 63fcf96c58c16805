"""Recognise a peer that is not speaking Kafka from the first bytes it sends back.

A Kafka response starts with an int32 size; another protocol's reply read that way gives an absurd
size (``b"HTTP"`` is 1213486160). :func:`describe_foreign_reply` names the usual suspects so an error
can say "looks like HTTP" instead of "invalid frame size 1213486160".
"""

from __future__ import annotations

__all__ = ["describe_foreign_reply"]

_TLS_RECORD_TYPES = {0x14: "change_cipher_spec", 0x15: "alert", 0x16: "handshake", 0x17: "application_data"}


def _printable_line(data: bytes, limit: int = 60) -> str:
    line = data.split(b"\r\n", 1)[0].split(b"\n", 1)[0][:limit]
    return line.decode("ascii", "replace")


def describe_foreign_reply(data: bytes) -> str | None:
    """What ``data`` (the first bytes a peer sent) looks like when it is not a Kafka response, e.g.
    ``"looks like HTTP ('HTTP/1.1 400 Bad Request'): this port serves HTTP, not Kafka"``; None when
    nothing is recognised."""
    if data.startswith(b"HTTP/"):
        return f"looks like HTTP ({_printable_line(data)!r}): this port serves HTTP, not Kafka"
    if len(data) >= 3 and data[0] in _TLS_RECORD_TYPES and data[1] == 3 and data[2] <= 4:
        kind = _TLS_RECORD_TYPES[data[0]]
        return (
            f"looks like TLS (a TLS {kind} record): the listener expects TLS; connect with --tls "
            "(ssl_context= in kcodec.net.client)"
        )
    if data[:4] in (b"SSH-", b"220 ", b"220-", b"+OK ", b"-ERR", b"* OK"):
        return f"looks like a text protocol ({_printable_line(data)!r}), not Kafka"
    return None
