"""What a field names, from its spec: Kafka's message specs mark topic names, broker ids, group ids,
producer ids and transactional ids (a field's ``entityType``: ``topicName``, ``brokerId``,
``groupId``, ``producerId``, ``transactionalId``); the few fields they leave unmarked that name one
of these, and the topic ids and partition indexes they have no mark for, are listed in
``kcodec/data/entity_roles.json``; the rules are those of the facts extractors
(``kcodec.protocol.entity_roles``).

:func:`entity_values` reads the values of one kind out of a decoded body (the groups a request is
about, for ``--group``); :func:`field_entity` says what one field names.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from kcodec.protocol.codec import message_info
from kcodec.protocol.entity_roles import ROLES_FILE, field_entity, in_partition, unmarked

__all__ = ["ROLES_FILE", "entity_values", "field_entity", "unmarked"]

# plan entry: (attribute, is an array, the child struct's plan or None for a value)
_Plan = tuple[tuple[str, bool, "_Plan | None"], ...]


@cache
def _plan(message: str, struct: str, version: int, entity: str, parent_field: str = "") -> _Plan:
    info = message_info(message)
    partition = in_partition(struct, parent_field)
    out: list[tuple[str, bool, _Plan | None]] = []
    for f in info.fields_at(struct, version):
        child = f.struct_name
        if child is not None:
            plan = _plan(message, child, version, entity, f.attr)
            if plan:
                out.append((f.attr, f.is_array, plan))
        elif field_entity(message, f.name, f.type, f.entity_type, partition) == entity:
            out.append((f.attr, f.is_array, None))
    return tuple(out)


def _collect(plan: _Plan, obj: Any, out: list[Any]) -> None:
    for attr, is_array, child in plan:
        value = getattr(obj, attr, None)
        if value is None:
            continue
        if child is None:
            if is_array:
                out.extend(v for v in value if v is not None)
            else:
                out.append(value)
        else:
            for item in value if is_array else (value,):
                if item is not None:
                    _collect(child, item, out)


def entity_values(body: Any, version: int, entity: str) -> list[Any]:
    """The values of the fields of ``body`` (a decoded message at ``version``) that name ``entity``
    (``"groupId"``, ``"topicName"``, ...; see :func:`field_entity`), in wire order, arrays
    flattened, nulls left out."""
    name = type(body).MESSAGE_NAME
    out: list[Any] = []
    _collect(_plan(name, name, version, entity), body, out)
    return out
