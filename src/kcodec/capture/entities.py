"""What a field names, from its spec: Kafka's message specs mark topic names, broker ids, group ids,
producer ids and transactional ids (a field's ``entityType``: ``topicName``, ``brokerId``,
``groupId``, ``producerId``, ``transactionalId``); the few fields they leave unmarked that name one
of these, and the topic ids and partition indexes they have no mark for, are listed in
``kcodec/data/entity_roles.json`` (the list the generated facts extractors were planned with, see
``kcodec.codegen.plan_facts``).

:func:`entity_values` reads the values of one kind out of a decoded body (the groups a request is
about, for ``--group``); :func:`field_entity` says what one field names.
"""

from __future__ import annotations

import json
import pkgutil
from functools import cache
from typing import Any

from kcodec.protocol.codec import message_info

__all__ = ["ROLES_FILE", "entity_values", "field_entity", "unmarked"]

ROLES_FILE = "entity_roles.json"  # in kcodec/data

# plan entry: (attribute, is an array, the child struct's plan or None for a value)
_Plan = tuple[tuple[str, bool, "_Plan | None"], ...]


@cache
def unmarked() -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], tuple[str, str]]]:
    """The list of unmarked fields: ``(message, field) -> entity`` and
    ``(field, type) -> (entity, where)`` (``where``: ``"partition"``, only in a partition struct)."""
    raw = pkgutil.get_data("kcodec", f"data/{ROLES_FILE}")  # (importlib.resources imports tempfile)
    assert raw is not None
    data: dict[str, Any] = json.loads(raw)
    fields = {(e["message"], e["field"]): e["entity"] for e in data["fields"]}
    names = {(e["field"], e["type"]): (e["entity"], e.get("in", "")) for e in data["names"]}
    return fields, names


def field_entity(message: str, name: str, type_text: str, entity_type: str | None,
                 in_partition: bool) -> str | None:
    """What a field of ``message`` (spec name ``name``, type ``type_text``) names: its spec's
    ``entityType``, else its entry in the list of unmarked fields (``in_partition``: the field is in
    a partition struct, one whose name or the field holding it says ``partition``); None: nothing."""
    if entity_type is not None:
        return entity_type
    fields, names = unmarked()
    found = fields.get((message, name))
    if found is not None:
        return found
    entity, where = names.get((name, type_text), (None, ""))
    return entity if not where or (where == "partition" and in_partition) else None


@cache
def _plan(message: str, struct: str, version: int, entity: str, parent_field: str = "") -> _Plan:
    info = message_info(message)
    in_partition = "partition" in struct.lower() or "partition" in parent_field
    out: list[tuple[str, bool, _Plan | None]] = []
    for f in info.fields_at(struct, version):
        child = f.struct_name
        if child is not None:
            plan = _plan(message, child, version, entity, f.attr)
            if plan:
                out.append((f.attr, f.is_array, plan))
        elif field_entity(message, f.name, f.type, f.entity_type, in_partition) == entity:
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
