"""Mistakes the types must catch (each line marked ``# E:`` must be reported by mypy)."""

from __future__ import annotations

import kcodec
from kcodec.protocol.messages import FetchRequest


def mistakes(data: bytes) -> None:
    req = kcodec.decode("FetchRequest", 12, data)
    req.topics[0].no_such_field  # E: attr-defined
    epoch: str = req.topics[0].partitions[0].current_leader_epoch  # E: assignment
    FetchRequest(max_wait_ms="500")  # E: arg-type
    kcodec.encoder("FetchRequest", 12)(kcodec.decode("FetchResponse", 12, data))  # E: arg-type
    name: int = kcodec.message_class("MetadataResponse").MESSAGE_NAME  # E: assignment
    print(epoch, name)
