"""An in-memory mock Kafka cluster built on kcodec's codecs, that enforces leader-epoch fencing.

One or several brokers on 127.0.0.1 ports (asyncio; bounded memory) serve ApiVersions, Metadata (with
leader epochs), CreateTopics, DeleteTopics, Produce (batches stored as received, idempotent sequence
checks, KIP-359 fencing in kcodec's proposal version), Fetch (KIP-320 fencing, high watermark, log
start offset, DivergingEpoch), ListOffsets, OffsetsForLeaderEpoch, FindCoordinator, the classic group
protocol, OffsetCommit/OffsetFetch (committed leader epochs), InitProducerId (KIP-360) and StopReplica
(KIP-570). A control API moves leadership and runs unclean leader elections::

    from kcodec.broker import MockCluster

    with MockCluster(brokers=3) as cluster:
        cluster.create_topic("t", partitions=3)
        ...  # point a client at cluster.bootstrap
        cluster.unclean_election("t", 0, truncate_to=5)

``kcodec broker --listen 127.0.0.1:9092`` runs one from the command line; the pytest fixture
``kcodec_broker`` (plugin ``kcodec.broker.pytest_plugin``) starts one per test.
"""

from __future__ import annotations

from kcodec.broker.cluster import AsyncMockCluster, MockCluster, PartitionInfo
from kcodec.broker.config import BrokerConfig
from kcodec.broker.errors import BrokerError

__all__ = ["AsyncMockCluster", "BrokerConfig", "BrokerError", "MockCluster", "PartitionInfo"]
