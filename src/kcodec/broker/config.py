"""How a mock cluster is set up: brokers, addresses, limits that keep its memory bounded."""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """Settings of a :class:`~kcodec.broker.MockCluster` (all brokers share them).

    ``port`` 0 lets the OS choose each broker's port; otherwise broker ``i`` listens on ``port + i``.
    ``proposals`` enables kcodec's proposal versions (KIP-359: Produce v14 with CurrentLeaderEpoch).
    The ``max_*`` limits bound memory: a request larger than ``max_request_bytes`` closes its
    connection (as Kafka does), a partition keeps at most ``partition_max_bytes`` of batches (the oldest
    are dropped, the log start offset moves on), and no more than ``max_partitions`` partitions,
    ``max_connections`` connections per broker and ``max_groups`` groups exist at once.
    Connections cannot hold a broker: one that sends nothing for ``connections_max_idle_ms`` (Kafka's
    ``connections.max.idle.ms``, 10 minutes) is closed, as is one whose request frame, once its first
    byte came, takes longer than ``request_timeout_ms`` to arrive whole (Kafka's ``request.timeout.ms``
    default), or that reads nothing of a response for ``connections_max_idle_ms``.
    """

    brokers: int = 1
    host: str = "127.0.0.1"
    port: int = 0
    cluster_id: str = "kcodec-mock-cluster"
    proposals: bool = False
    auto_create_topics: bool = True
    default_partitions: int = 1
    default_replication_factor: int = 0  # 0: min(3, brokers)
    partition_max_bytes: int = 64 * MIB
    max_request_bytes: int = 64 * MIB
    max_partitions: int = 10_000
    max_connections: int = 1_000
    connections_max_idle_ms: int = 600_000
    request_timeout_ms: int = 30_000
    max_groups: int = 1_000
    max_wait_ms: int = 30_000  # cap on a Fetch's MaxWaitMs
    group_initial_rebalance_delay_ms: int = 0
    controller_epoch: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.brokers <= 64:
            raise ValueError(f"brokers must be 1-64, not {self.brokers}")
        if not 0 <= self.port <= 65535 - self.brokers:
            raise ValueError(f"port {self.port} leaves no room for {self.brokers} brokers")
        if self.default_partitions < 1:
            raise ValueError("default_partitions must be at least 1")
        if not 0 <= self.default_replication_factor <= self.brokers:
            raise ValueError(f"default_replication_factor must be 0-{self.brokers}")
        if min(self.connections_max_idle_ms, self.request_timeout_ms, self.max_connections) < 1:
            raise ValueError("connections_max_idle_ms, request_timeout_ms, max_connections must be >= 1")
        if min(self.partition_max_bytes, self.max_request_bytes) < 1024:
            raise ValueError("partition_max_bytes and max_request_bytes must be at least 1024")

    @property
    def replication_factor(self) -> int:
        return self.default_replication_factor or min(3, self.brokers)
