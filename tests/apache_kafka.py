"""pytest fixtures that run Apache Kafka (from Maven Central's jars) on 127.0.0.1; a plugin registered
by tests/conftest.py. The brokers themselves are apache_kafka_broker.KafkaCluster (tools/apache_kafka.py
runs the same code from the command line).

Fixtures (all session scoped; each broker or cluster starts on first use and stops, by pid, at the end
of the session):

``apache_kafka``
    a :class:`KafkaCluster` of one combined controller+broker node of the newest 4.x release (4.4.0):
    ``.bootstrap`` ("127.0.0.1:PORT"), ``.address`` ((host, port)), ``.version``, ``.pids``,
    ``.cluster_id``, ``.tool(main_class, *args)`` to run Kafka's command-line tools from the same jars,
    ``.create_topic(name, partitions, replication_factor, configs)``, ``.describe_topic(name)`` (parsed
    kafka-topics --describe), ``.quorum_status()`` (parsed kafka-metadata-quorum describe --status).
``apache_kafka_release``
    parametrized over :data:`RELEASES` (ids "4.4" and "3.9"): the same kind of single broker for the
    newest 4.x and the newest 3.9.x release (3.9.2, else 3.9.1). The 4.4 one is ``apache_kafka``'s.
``apache_kafka_cluster``
    a :class:`KafkaCluster` of three combined nodes (a 3-voter KRaft quorum) of 4.4.0, internal topics
    replicated three times: ``.nodes`` (node id 1..3 -> :class:`KafkaNode` with ``.port``, ``.pid``,
    ``.running``), ``.stop_node(id, kill=False)``, ``.start_node(id)``, ``.bootstrap`` (all three).
    A test that stops a node starts it again before it ends (the cluster is shared).
``apache_kafka_brokers``
    the session's :class:`ApacheKafkaBrokers`: ``.broker(release)`` and ``.cluster(release, nodes,
    overrides)`` for other releases or server settings (e.g. ``{"unclean.leader.election.enable":
    "true"}``); each distinct request starts once per session.

Tests that use them are marked ``@pytest.mark.apache_kafka``; the plugin adds
``xdist_group("apache_kafka")`` to them, so that with ``--dist loadgroup`` (tools/test.sh) they all run
in one worker and each broker runs once. Where Java or Maven is missing, or Maven Central cannot be
reached, they skip with one line saying what is missing; when the environment variable CI is set
(CI=true), they fail instead. A broker that does not start is an error, with the tail of its log.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import NoReturn

import pytest
from apache_kafka_broker import KafkaCluster, KafkaNode, KafkaStartError
from apache_kafka_fetch import NEWEST_3_9, NEWEST_4X, KafkaUnavailable

__all__ = [
    "RELEASES",
    "ApacheKafkaBrokers",
    "KafkaCluster",
    "KafkaNode",
    "apache_kafka",
    "apache_kafka_brokers",
    "apache_kafka_cluster",
    "apache_kafka_release",
    "in_ci",
    "unavailable",
]

RELEASES = (NEWEST_4X, NEWEST_3_9)
MARKER = "apache_kafka"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str) -> NoReturn:
    """Skip (a user's machine) or fail (CI=true): Apache Kafka cannot run here, for ``reason``."""
    if in_ci():
        pytest.fail(f"Apache Kafka is required in CI: {reason}", pytrace=False)
    pytest.skip(f"Apache Kafka unavailable: {reason}")


_Key = tuple[str, int, tuple[tuple[str, str], ...]]


class ApacheKafkaBrokers:
    """The session's brokers and clusters, started on first request, each once."""

    def __init__(self) -> None:
        self._running: dict[_Key, KafkaCluster] = {}
        self._failed: dict[_Key, BaseException] = {}

    def cluster(
        self, release: str = NEWEST_4X, nodes: int = 3, overrides: Mapping[str, str] | None = None
    ) -> KafkaCluster:
        key: _Key = (release, nodes, tuple(sorted((overrides or {}).items())))
        if key in self._running:
            return self._running[key]
        if key not in self._failed:
            try:
                self._running[key] = KafkaCluster(release, nodes, overrides=overrides).start()
                return self._running[key]
            except (KafkaUnavailable, OSError) as e:
                self._failed[key] = e
        error = self._failed[key]
        if isinstance(error, KafkaStartError) or not isinstance(error, KafkaUnavailable):
            pytest.fail(str(error), pytrace=False)
        unavailable(str(error))

    def broker(self, release: str = NEWEST_4X) -> KafkaCluster:
        return self.cluster(release, 1)

    def stop_all(self) -> None:
        while self._running:
            _, cluster = self._running.popitem()
            cluster.stop()


@pytest.fixture(scope="session")
def apache_kafka_brokers() -> Iterator[ApacheKafkaBrokers]:
    brokers = ApacheKafkaBrokers()
    try:
        yield brokers
    finally:
        brokers.stop_all()


@pytest.fixture(scope="session")
def apache_kafka(apache_kafka_brokers: ApacheKafkaBrokers) -> KafkaCluster:
    return apache_kafka_brokers.broker(NEWEST_4X)


@pytest.fixture(scope="session", params=RELEASES)
def apache_kafka_release(
    apache_kafka_brokers: ApacheKafkaBrokers, request: pytest.FixtureRequest
) -> KafkaCluster:
    return apache_kafka_brokers.broker(str(request.param))


@pytest.fixture(scope="session")
def apache_kafka_cluster(apache_kafka_brokers: ApacheKafkaBrokers) -> KafkaCluster:
    return apache_kafka_brokers.cluster(NEWEST_4X, 3)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: runs Apache Kafka from Maven Central's jars (tests/apache_kafka.py)"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Before pytest-xdist reads the groups (--dist loadgroup): every Apache Kafka test in one worker.
    for item in items:
        if item.get_closest_marker(MARKER) is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(MARKER))
