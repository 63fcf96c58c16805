"""A mock cluster of N brokers on 127.0.0.1, run inside an asyncio event loop (:class:`AsyncMockCluster`)
or in a background thread with a blocking control API (:class:`MockCluster`)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

from kcodec.broker.config import BrokerConfig
from kcodec.broker.errors import BrokerError
from kcodec.broker.faults import can_inject
from kcodec.broker.server import BrokerServer
from kcodec.broker.state import ClusterState, Node, Partition
from kcodec.protocol.codec import message_class
from kcodec.protocol.error_codes import ErrorCode
from kcodec.records import NewRecord

T = TypeVar("T")
START_TIMEOUT_S = 10.0
#: Node ids of the brokers start here (as in librdkafka's mock cluster).
FIRST_NODE_ID = 1


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A snapshot of one partition, for tests and the control API."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    epochs: tuple[tuple[int, int], ...]  # the leader-epoch cache: (epoch, start offset)

    @staticmethod
    def of(p: Partition) -> PartitionInfo:
        log = p.log
        return PartitionInfo(
            p.topic,
            p.index,
            p.leader,
            p.leader_epoch,
            tuple(p.replicas),
            tuple(p.isr),
            log.log_start_offset,
            log.log_end_offset,
            log.high_watermark,
            tuple((e.epoch, e.start_offset) for e in log.epochs),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "replicas": list(self.replicas),
            "isr": list(self.isr),
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "high_watermark": self.high_watermark,
            "epochs": [list(e) for e in self.epochs],
        }


class AsyncMockCluster:
    """The cluster in the running event loop: ``await start()``, then clients connect to
    :attr:`bootstrap`; the control methods change its state directly (they are not coroutines)."""

    def __init__(self, config: BrokerConfig | None = None) -> None:
        self.config = config or BrokerConfig()
        self.state = ClusterState(self.config)
        self.servers: list[BrokerServer] = []
        self._sweeper: asyncio.Task[None] | None = None
        self._txn_sweeper: asyncio.Task[None] | None = None

    async def start(self) -> AsyncMockCluster:
        c = self.config
        try:
            for i in range(c.brokers):
                node_id = FIRST_NODE_ID + i
                server = BrokerServer(self.state, node_id, c.host, c.port + i if c.port else 0)
                port = await server.start()
                self.servers.append(server)
                self.state.nodes.append(Node(node_id, c.host, port))
        except OSError:
            await self.stop()
            raise
        self._sweeper = asyncio.get_running_loop().create_task(self.state.groups.run_sweeper())
        self._txn_sweeper = asyncio.get_running_loop().create_task(self.state.transactions.run_sweeper())
        return self

    async def stop(self) -> None:
        if self._txn_sweeper is not None:
            self._txn_sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._txn_sweeper
            self._txn_sweeper = None
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        for s in self.servers:
            await s.close()
        self.servers = []

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{n.host}:{n.port}" for n in self.state.nodes)

    @property
    def addresses(self) -> list[tuple[str, int]]:
        return [(n.host, n.port) for n in self.state.nodes]

    def request_counts(self) -> dict[str, dict[int, int]]:
        """Requests served so far, all brokers together: ``{"Fetch": {12: 40}, ...}`` (API name -> version
        -> count): what a client actually used."""
        from kcodec.protocol.registry import api

        out: dict[str, dict[int, int]] = {}
        for s in self.servers:
            for (key, version), n in s.requests.items():
                per = out.setdefault(api(key).name, {})
                per[version] = per.get(version, 0) + n
        return {name: dict(sorted(v.items())) for name, v in sorted(out.items())}

    def broker_request_counts(self, broker: int) -> dict[str, int]:
        """Requests broker ``broker`` served so far, per API name (all versions together)."""
        from kcodec.protocol.registry import api

        out: dict[str, int] = {}
        for (key, _), n in self._server(broker).requests.items():
            out[api(key).name] = out.get(api(key).name, 0) + n
        return dict(sorted(out.items()))

    # --- control --------------------------------------------------------------------------------------

    def create_topic(
        self, name: str, partitions: int = 1, replication_factor: int | None = None
    ) -> list[PartitionInfo]:
        topic = self.state.create_topic(name, partitions, replication_factor)
        return [PartitionInfo.of(p) for p in topic.partitions]

    def delete_topic(self, name: str) -> None:
        self.state.delete_topic(name)

    def describe(self, topic: str, partition: int = 0) -> PartitionInfo:
        p = self.state.partition(topic, partition)
        if p is None:
            raise BrokerError(f"no partition {topic}-{partition}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return PartitionInfo.of(p)

    def topics(self) -> dict[str, int]:
        return {name: len(t.partitions) for name, t in sorted(self.state.topics.items())}

    def move_leader(self, topic: str, partition: int = 0, to: int | None = None) -> PartitionInfo:
        return PartitionInfo.of(self.state.move_leader(topic, partition, to))

    def unclean_election(
        self,
        topic: str,
        partition: int,
        truncate_to: int,
        *,
        to: int | None = None,
        records: list[NewRecord] | None = None,
    ) -> PartitionInfo:
        return PartitionInfo.of(
            self.state.unclean_election(topic, partition, truncate_to, to=to, records=records)
        )

    def append(self, topic: str, partition: int, records: list[NewRecord], compression: str = "none") -> int:
        """Write records as the partition's leader; returns the base offset they got."""
        return self.state.append_records(topic, partition, records, compression).base_offset

    # --- faults (kcodec.broker.faults) -------------------------------------------------------------------

    def _server(self, broker: int) -> BrokerServer:
        found = next((s for s in self.servers if s.node_id == broker), None)
        if found is None:
            raise BrokerError(f"no broker {broker} (brokers: {[s.node_id for s in self.servers]})")
        return found

    def inject_errors(
        self, api: str | int, errors: list[int], *, broker: int | None = None, latency_ms: int = 0
    ) -> int:
        """The next ``len(errors)`` requests of ``api`` (name or key) to ``broker`` (None: any) wait
        ``latency_ms`` and are answered with these error codes (0: served as usual, after the latency)
        instead of being served. Returns how many injected answers wait for that API now."""
        from kcodec.protocol.errors import UnknownMessageError
        from kcodec.protocol.registry import api as api_info

        try:
            info = api_info(api)
        except UnknownMessageError:
            raise BrokerError(f"no API {api!r}") from None
        served = self.servers[0].versions if self.servers else {}
        if info.key not in served:
            raise BrokerError(f"the mock broker does not serve {info.name}")
        if not can_inject(info.key, message_class(f"{info.name}Response")):
            raise BrokerError(f"errors cannot be injected into {info.name}: its response has no error code")
        if broker is not None:
            self._server(broker)
        return self.state.faults.inject(info.key, list(errors), broker=broker, latency_ms=latency_ms)

    def set_broker_down(self, broker: int, down: bool = True) -> None:
        """Take ``broker`` down (its connections dropped, new ones closed at once) or bring it back up."""
        server = self._server(broker)
        self.state.faults.set_down(broker, down)
        if down:
            server.drop_connections()

    def stale_metadata(self, broker: int, behind: int = 1) -> None:
        """``broker``'s Metadata answers show every partition as it was ``behind`` leadership changes ago
        (0: up to date again)."""
        self._server(broker)
        self.state.faults.set_stale(broker, behind)

    def clear_faults(self) -> None:
        """Drop queued errors, bring brokers up, make stale brokers up to date."""
        self.state.faults.clear()

    def faults(self) -> dict[str, Any]:
        f = self.state.faults
        return {"pending": f.pending(), "down": sorted(f.down), "stale": dict(sorted(f.stale.items()))}


class MockCluster:
    """A mock cluster served by a background thread's event loop, with a blocking control API::

    with MockCluster(BrokerConfig(brokers=3)) as cluster:
        producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap})
        cluster.create_topic("t", partitions=2)
        cluster.move_leader("t", 0)            # new leader, leader epoch + 1
        cluster.unclean_election("t", 0, truncate_to=5, records=[NewRecord(b"x")])
    """

    def __init__(self, config: BrokerConfig | None = None, **settings: Any) -> None:
        self.config = config or BrokerConfig(**settings)
        self.inner = AsyncMockCluster(self.config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready: Future[None] = Future()
        self._thread = threading.Thread(target=self._run, name="kcodec-mock-cluster", daemon=True)

    def _run(self) -> None:
        """The background thread: asyncio.run() starts the cluster, serves until stop(), then cancels
        and awaits whatever is left (connections included) before the loop closes."""
        try:
            asyncio.run(self._main())
        except BaseException as e:  # reported to start() if it happens before the cluster is up
            if not self._ready.done():
                self._ready.set_exception(e)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        try:
            await self.inner.start()
        except BaseException as e:
            self._ready.set_exception(e)
            return
        self._ready.set_result(None)
        try:
            await self._stopping.wait()
        finally:
            await self.inner.stop()

    def start(self) -> MockCluster:
        self._thread.start()
        try:
            self._ready.result(START_TIMEOUT_S)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop serving and join the thread (idempotent)."""
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop may have closed meanwhile
                loop.call_soon_threadsafe(stopping.set)
        if self._thread.is_alive():
            self._thread.join(START_TIMEOUT_S)

    def __enter__(self) -> MockCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` in the cluster's event loop (where its state lives) and return its result."""
        if self._loop is None or not self._thread.is_alive():
            raise BrokerError("the mock cluster is not running")
        fut: Future[T] = Future()

        def run() -> None:
            try:
                fut.set_result(fn())
            except BaseException as e:  # handed to the caller's thread
                fut.set_exception(e)

        self._loop.call_soon_threadsafe(run)
        return fut.result(START_TIMEOUT_S)

    @property
    def bootstrap(self) -> str:
        return self.inner.bootstrap

    @property
    def addresses(self) -> list[tuple[str, int]]:
        return self.inner.addresses

    @property
    def state(self) -> ClusterState:
        return self.inner.state

    def create_topic(
        self, name: str, partitions: int = 1, replication_factor: int | None = None
    ) -> list[PartitionInfo]:
        return self.call(lambda: self.inner.create_topic(name, partitions, replication_factor))

    def delete_topic(self, name: str) -> None:
        self.call(lambda: self.inner.delete_topic(name))

    def describe(self, topic: str, partition: int = 0) -> PartitionInfo:
        return self.call(lambda: self.inner.describe(topic, partition))

    def topics(self) -> dict[str, int]:
        return self.call(self.inner.topics)

    def move_leader(self, topic: str, partition: int = 0, to: int | None = None) -> PartitionInfo:
        return self.call(lambda: self.inner.move_leader(topic, partition, to))

    def unclean_election(
        self,
        topic: str,
        partition: int,
        truncate_to: int,
        *,
        to: int | None = None,
        records: list[NewRecord] | None = None,
    ) -> PartitionInfo:
        return self.call(
            lambda: self.inner.unclean_election(topic, partition, truncate_to, to=to, records=records)
        )

    def request_counts(self) -> dict[str, dict[int, int]]:
        return self.call(self.inner.request_counts)

    def append(self, topic: str, partition: int, records: list[NewRecord], compression: str = "none") -> int:
        return self.call(lambda: self.inner.append(topic, partition, records, compression))

    def inject_errors(
        self, api: str | int, errors: list[int], *, broker: int | None = None, latency_ms: int = 0
    ) -> int:
        return self.call(lambda: self.inner.inject_errors(api, errors, broker=broker, latency_ms=latency_ms))

    def set_broker_down(self, broker: int, down: bool = True) -> None:
        self.call(lambda: self.inner.set_broker_down(broker, down))

    def stale_metadata(self, broker: int, behind: int = 1) -> None:
        self.call(lambda: self.inner.stale_metadata(broker, behind))

    def clear_faults(self) -> None:
        self.call(self.inner.clear_faults)

    def faults(self) -> dict[str, Any]:
        return self.call(self.inner.faults)

    def broker_request_counts(self, broker: int) -> dict[str, int]:
        """Requests broker ``broker`` served so far, per API name (all versions together)."""
        return self.call(lambda: self.inner.broker_request_counts(broker))
