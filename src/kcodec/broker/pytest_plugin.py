"""pytest fixtures that start kcodec's mock Kafka cluster for your own tests.

Installed as a pytest plugin (entry point ``pytest11``), so with kcodec installed::

    def test_my_consumer(kcodec_broker):              # a 1-broker cluster, stopped after the test
        run_my_app(bootstrap=kcodec_broker.bootstrap)

    @pytest.mark.kcodec_broker(brokers=3, proposals=True)   # any BrokerConfig setting
    def test_failover(kcodec_broker):
        kcodec_broker.create_topic("t", partitions=3)
        kcodec_broker.move_leader("t", 0)

    def test_two_clusters(kcodec_broker_factory):
        a, b = kcodec_broker_factory(), kcodec_broker_factory(brokers=2)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kcodec.broker import MockCluster

MARKER = "kcodec_broker"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(**settings): BrokerConfig settings for the kcodec_broker fixture's cluster"
    )


@pytest.fixture
def kcodec_broker_factory() -> Iterator[Callable[..., MockCluster]]:
    """Start mock clusters with any :class:`~kcodec.broker.BrokerConfig` settings; all are stopped at
    the end of the test."""
    from kcodec.broker import MockCluster

    started: list[MockCluster] = []

    def start(**settings: Any) -> MockCluster:
        cluster = MockCluster(**settings).start()
        started.append(cluster)
        return cluster

    try:
        yield start
    finally:
        for cluster in reversed(started):
            cluster.stop()


@pytest.fixture
def kcodec_broker(
    request: pytest.FixtureRequest, kcodec_broker_factory: Callable[..., MockCluster]
) -> MockCluster:
    """A running mock cluster (1 broker unless the test's ``kcodec_broker`` marker says otherwise)."""
    marker = request.node.get_closest_marker(MARKER)
    settings = dict(marker.kwargs) if marker is not None else {}
    return kcodec_broker_factory(**settings)
