"""librdkafka's mock cluster, run standalone through its C API (``rd_kafka_mock_*``) with ctypes.

The librdkafka shared library bundled in the ``confluent-kafka`` wheel (``confluent_kafka.libs/``)
exports the mock cluster API. :class:`MockCluster` creates a cluster of mock brokers listening on
127.0.0.1 (ports chosen by the OS), lets a test cap or remove the API versions they advertise
(``rd_kafka_mock_set_apiversion``) and destroys the cluster and its ``rd_kafka_t`` on close::

    with MockCluster(brokers=1) as mock:
        mock.set_api_versions("Fetch", 0, 8)   # CurrentLeaderEpoch (v9+) no longer offered
        mock.remove_api("OffsetForLeaderEpoch")
        host, port = mock.brokers[0]

:func:`load_librdkafka` raises :class:`MockUnavailable` (with the reason) when no suitable library is
found; ``KCODEC_LIBRDKAFKA=/path/to/librdkafka.so`` overrides the search.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import TracebackType
from typing import Any

import kcodec
from kcodec.net.client import parse_host_port

__all__ = ["MockCluster", "MockUnavailable", "find_librdkafka", "load_librdkafka"]

_RD_KAFKA_PRODUCER = 0
_RD_KAFKA_CONF_OK = 0
_ERRSTR_SIZE = 512
_REQUIRED = (
    "rd_kafka_conf_new",
    "rd_kafka_conf_set",
    "rd_kafka_conf_destroy",
    "rd_kafka_new",
    "rd_kafka_destroy",
    "rd_kafka_err2str",
    "rd_kafka_version_str",
    "rd_kafka_mock_cluster_new",
    "rd_kafka_mock_cluster_bootstraps",
    "rd_kafka_mock_cluster_destroy",
    "rd_kafka_mock_set_apiversion",
)


class MockUnavailable(RuntimeError):
    """No librdkafka with the mock cluster API can be loaded here (the message says why)."""


def find_librdkafka() -> Path | None:
    """The librdkafka shared library shipped in the confluent-kafka wheel (or ``$KCODEC_LIBRDKAFKA``)."""
    override = os.environ.get("KCODEC_LIBRDKAFKA")
    if override:
        return Path(override)
    spec = importlib.util.find_spec("confluent_kafka")
    if spec is None or spec.origin is None:
        return None
    site = Path(spec.origin).resolve().parent.parent
    for folder in (site / "confluent_kafka.libs", site / "confluent_kafka"):
        found = sorted(folder.glob("librdkafka*.so*")) + sorted(folder.glob("librdkafka*.dylib"))
        if found:
            return found[0]
    return None


@cache
def load_librdkafka() -> ctypes.CDLL:
    """Load librdkafka and declare the C signatures used here; raises :class:`MockUnavailable`."""
    path = find_librdkafka()
    if path is None:
        raise MockUnavailable(
            "confluent-kafka (which ships librdkafka) is not installed and KCODEC_LIBRDKAFKA is unset"
        )
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        raise MockUnavailable(f"cannot load {path}: {e}") from e
    missing = [name for name in _REQUIRED if not hasattr(lib, name)]
    if missing:
        raise MockUnavailable(f"{path} does not export {', '.join(missing)}")
    vp, cp, i16 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int16
    _sig(lib.rd_kafka_conf_new, vp)
    _sig(lib.rd_kafka_conf_set, ctypes.c_int, vp, cp, cp, cp, ctypes.c_size_t)
    _sig(lib.rd_kafka_conf_destroy, None, vp)
    _sig(lib.rd_kafka_new, vp, ctypes.c_int, vp, cp, ctypes.c_size_t)
    _sig(lib.rd_kafka_destroy, None, vp)
    _sig(lib.rd_kafka_err2str, cp, ctypes.c_int)
    _sig(lib.rd_kafka_version_str, cp)
    _sig(lib.rd_kafka_mock_cluster_new, vp, vp, ctypes.c_int)
    _sig(lib.rd_kafka_mock_cluster_bootstraps, cp, vp)
    _sig(lib.rd_kafka_mock_cluster_destroy, None, vp)
    _sig(lib.rd_kafka_mock_set_apiversion, ctypes.c_int, vp, i16, i16, i16)
    if hasattr(lib, "rd_kafka_mock_topic_create"):
        _sig(lib.rd_kafka_mock_topic_create, ctypes.c_int, vp, cp, ctypes.c_int, ctypes.c_int)
    return lib


def _sig(fn: Any, restype: Any, *argtypes: Any) -> None:
    """Declare a C function's result and argument types (ctypes defaults to int, truncating pointers)."""
    fn.restype = restype
    fn.argtypes = list(argtypes)


def _api_key(api: int | str) -> int:
    return api if isinstance(api, int) else kcodec.api(api).key


class MockCluster:
    """A standalone librdkafka mock cluster on 127.0.0.1; use as a context manager (or call
    :meth:`close`): it destroys the cluster, then the ``rd_kafka_t`` that hosts it."""

    def __init__(self, brokers: int = 1) -> None:
        self._lib = lib = load_librdkafka()
        self.librdkafka_version = (lib.rd_kafka_version_str() or b"?").decode()
        errstr = ctypes.create_string_buffer(_ERRSTR_SIZE)
        conf = lib.rd_kafka_conf_new()
        for name, value in (("log_level", "0"), ("client.id", "kcodec-tests-mock-host")):
            res = lib.rd_kafka_conf_set(conf, name.encode(), value.encode(), errstr, _ERRSTR_SIZE)
            if res != _RD_KAFKA_CONF_OK:
                lib.rd_kafka_conf_destroy(conf)
                raise MockUnavailable(f"rd_kafka_conf_set({name}): {errstr.value.decode()}")
        rk = lib.rd_kafka_new(_RD_KAFKA_PRODUCER, conf, errstr, _ERRSTR_SIZE)  # owns conf on success
        if not rk:
            lib.rd_kafka_conf_destroy(conf)
            raise MockUnavailable(f"rd_kafka_new failed: {errstr.value.decode()}")
        self._rk: int | None = rk
        self._mcluster: int | None = lib.rd_kafka_mock_cluster_new(rk, brokers)
        if not self._mcluster:
            self.close()
            raise MockUnavailable("rd_kafka_mock_cluster_new returned NULL")
        raw = lib.rd_kafka_mock_cluster_bootstraps(self._mcluster)
        self.bootstraps: str = raw.decode() if raw else ""
        self.brokers: list[tuple[str, int]] = [parse_host_port(b) for b in self.bootstraps.split(",") if b]
        if not all(host in ("127.0.0.1", "localhost") for host, _ in self.brokers):
            self.close()
            raise MockUnavailable(f"mock brokers are not on loopback: {self.bootstraps}")

    def set_api_versions(self, api: int | str, min_version: int, max_version: int) -> None:
        """Advertise (and accept) only ``min_version``..``max_version`` of ``api`` (a name or key).

        librdkafka checks only that the mock implements the API, not the range: a maximum above what
        it implements is accepted (and then advertised), so keep caps within the mock's own range."""
        if self._mcluster is None:
            raise RuntimeError("the mock cluster is closed")
        err = self._lib.rd_kafka_mock_set_apiversion(self._mcluster, _api_key(api), min_version, max_version)
        if err:
            raise ValueError(
                f"rd_kafka_mock_set_apiversion({api}, {min_version}, {max_version}): "
                f"{(self._lib.rd_kafka_err2str(err) or b'?').decode()}"
            )

    def create_topic(self, topic: str, partitions: int, replication_factor: int = 1) -> None:
        """Create ``topic`` with ``partitions`` partitions (``rd_kafka_mock_topic_create``; the mock
        does not answer CreateTopics requests)."""
        if self._mcluster is None:
            raise RuntimeError("the mock cluster is closed")
        if not hasattr(self._lib, "rd_kafka_mock_topic_create"):
            raise MockUnavailable("this librdkafka has no rd_kafka_mock_topic_create")
        err = self._lib.rd_kafka_mock_topic_create(
            self._mcluster, topic.encode(), partitions, replication_factor
        )
        if err:
            raise ValueError(
                f"rd_kafka_mock_topic_create({topic}): {self._lib.rd_kafka_err2str(err).decode()}"
            )

    def remove_api(self, api: int | str) -> None:
        """Stop offering ``api`` at all (librdkafka's -1/-1 range)."""
        self.set_api_versions(api, -1, -1)

    def close(self) -> None:
        mcluster, self._mcluster = self._mcluster, None
        rk, self._rk = self._rk, None
        if mcluster:
            self._lib.rd_kafka_mock_cluster_destroy(mcluster)
        if rk:
            self._lib.rd_kafka_destroy(rk)

    def __enter__(self) -> MockCluster:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@contextmanager
def in_process_mock() -> Iterator[tuple[str, int]]:
    """The mock cluster a confluent-kafka client starts with ``test.mock.num.brokers=1``: (host, port)
    of its broker on 127.0.0.1, for as long as the context lasts (it dies with its client).
    Raises ImportError when confluent-kafka is not installed."""
    import confluent_kafka

    owner = confluent_kafka.Producer({"test.mock.num.brokers": 1, "log_level": 0})
    try:
        brokers = owner.list_topics(timeout=5).brokers
        b = next(iter(brokers.values()))
        assert b.host == "127.0.0.1"
        yield b.host, b.port
    finally:
        owner.flush(1)
        del owner  # destroys the mock cluster with its rd_kafka_t
