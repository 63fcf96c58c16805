"""An in-memory mock Kafka cluster built on kcodec's codecs, that enforces leader-epoch fencing.

One or several brokers on 127.0.0.1 ports (asyncio; bounded memory) serve ApiVersions, Metadata (with
leader epochs), CreateTopics, DeleteTopics, Produce (batches stored as received, idempotent sequence
checks, KIP-359 fencing in kcodec's proposal version), Fetch (KIP-320 fencing, high watermark, log
start offset, DivergingEpoch), ListOffsets, OffsetsForLeaderEpoch, FindCoordinator, the classic group
protocol, OffsetCommit/OffsetFetch (committed leader epochs), InitProducerId (KIP-360), StopReplica
(KIP-570) and transactions (AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn with
COMMIT/ABORT markers, the last stable offset and aborted transactions for ``read_committed`` Fetch). A
control API moves leadership and runs unclean leader elections::

    from kcodec.broker import MockCluster

    with MockCluster(brokers=3) as cluster:
        cluster.create_topic("t", partitions=3)
        ...  # point a client at cluster.bootstrap
        cluster.unclean_election("t", 0, truncate_to=5)

``kcodec broker --listen 127.0.0.1:9092`` runs one from the command line; the pytest fixture
``kcodec_broker`` (plugin ``kcodec.broker.pytest_plugin``) starts one per test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["AsyncMockCluster", "BrokerConfig", "BrokerError", "MockCluster", "PartitionInfo"]

# Imported on first use, so that loading the pytest plugin (kcodec.broker.pytest_plugin) stays cheap.
_LAZY = {
    "AsyncMockCluster": "kcodec.broker.cluster",
    "MockCluster": "kcodec.broker.cluster",
    "PartitionInfo": "kcodec.broker.cluster",
    "BrokerConfig": "kcodec.broker.config",
    "BrokerError": "kcodec.broker.errors",
}

if TYPE_CHECKING:
    from kcodec.broker.cluster import AsyncMockCluster, MockCluster, PartitionInfo
    from kcodec.broker.config import BrokerConfig
    from kcodec.broker.errors import BrokerError


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kcodec.broker' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
