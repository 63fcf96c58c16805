"""The APIs the mock broker serves: api key -> (handler, lowest version, highest version).

The ranges are those the handlers implement, within kcodec's released codecs; Produce v14 (kcodec's
KIP-359 proposal) is added when the cluster is configured with ``proposals=True``.
"""

from __future__ import annotations

from typing import NamedTuple

from kcodec.broker.handlers.commits import handle_offset_commit, handle_offset_fetch
from kcodec.broker.handlers.common import Handler, RequestContext
from kcodec.broker.handlers.fetch import handle_fetch
from kcodec.broker.handlers.groups import (
    handle_find_coordinator,
    handle_heartbeat,
    handle_join_group,
    handle_leave_group,
    handle_sync_group,
)
from kcodec.broker.handlers.metadata import handle_metadata
from kcodec.broker.handlers.offsets import handle_list_offsets, handle_offset_for_leader_epoch
from kcodec.broker.handlers.produce import handle_produce
from kcodec.broker.handlers.producer_ids import handle_init_producer_id
from kcodec.broker.handlers.stop_replica import handle_stop_replica
from kcodec.broker.handlers.topics import handle_create_topics, handle_delete_topics
from kcodec.broker.handlers.transactions import (
    handle_add_offsets_to_txn,
    handle_add_partitions_to_txn,
    handle_describe_transactions,
    handle_end_txn,
    handle_list_transactions,
    handle_txn_offset_commit,
)
from kcodec.protocol.registry import api

API_VERSIONS_KEY = 18
PRODUCE_KEY = 0


class Route(NamedTuple):
    handler: Handler | None  # None: ApiVersions, answered by the connection itself
    min_version: int
    max_version: int


ROUTES: dict[int, Route] = {
    0: Route(handle_produce, 3, 13),
    1: Route(handle_fetch, 4, 18),
    2: Route(handle_list_offsets, 1, 11),
    3: Route(handle_metadata, 0, 13),
    5: Route(handle_stop_replica, 0, 4),
    8: Route(handle_offset_commit, 2, 9),
    9: Route(handle_offset_fetch, 1, 9),
    10: Route(handle_find_coordinator, 0, 6),
    11: Route(handle_join_group, 0, 9),
    12: Route(handle_heartbeat, 0, 4),
    13: Route(handle_leave_group, 0, 5),
    14: Route(handle_sync_group, 0, 5),
    18: Route(None, 0, 4),
    19: Route(handle_create_topics, 2, 7),
    20: Route(handle_delete_topics, 1, 6),
    22: Route(handle_init_producer_id, 0, 5),
    23: Route(handle_offset_for_leader_epoch, 2, 4),
    24: Route(handle_add_partitions_to_txn, 0, 5),
    25: Route(handle_add_offsets_to_txn, 0, 4),
    26: Route(handle_end_txn, 0, 4),
    28: Route(handle_txn_offset_commit, 0, 4),
    65: Route(handle_describe_transactions, 0, 0),
    66: Route(handle_list_transactions, 0, 1),
}


def served_versions(proposals: bool) -> dict[int, tuple[int, int]]:
    """api key -> (min, max) the cluster advertises in ApiVersions."""
    out = {key: (r.min_version, r.max_version) for key, r in ROUTES.items()}
    if proposals:
        out[PRODUCE_KEY] = (out[PRODUCE_KEY][0], api(PRODUCE_KEY).max_version)
    return out


__all__ = ["ROUTES", "Handler", "RequestContext", "Route", "served_versions"]
