"""The control API over TCP, for a cluster in another process (``kcodec broker --control``): one JSON
object per line in, one per line out. Requests name an operation and its arguments::

    {"op": "move_leader", "topic": "t", "partition": 0}
    {"op": "unclean_election", "topic": "t", "partition": 0, "truncate_to": 5, "records": ["a", "b"]}

and get ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "..."}``. Operations: ``topics``,
``create_topic``, ``delete_topic``, ``describe``, ``move_leader``, ``unclean_election``, ``append``,
``requests``, and the faults of :mod:`kcodec.broker.faults`::

    {"op": "inject_errors", "api": "Produce", "errors": [6, 6], "broker": 2, "latency_ms": 0}
    {"op": "broker_down", "broker": 2}
    {"op": "broker_up", "broker": 2}
    {"op": "stale_metadata", "broker": 2, "behind": 1}
    {"op": "faults"}
    {"op": "clear_faults"}

:func:`control_request` is the client side.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import Callable
from typing import Any

from kcodec.broker.cluster import AsyncMockCluster
from kcodec.broker.errors import BrokerError
from kcodec.records import NewRecord

MAX_LINE = 1024 * 1024
OPS = (
    "topics",
    "create_topic",
    "delete_topic",
    "describe",
    "move_leader",
    "unclean_election",
    "append",
    "requests",
    "inject_errors",
    "broker_down",
    "broker_up",
    "stale_metadata",
    "faults",
    "clear_faults",
)


def _records(values: Any) -> list[NewRecord]:
    if not isinstance(values, list) or not values:
        raise BrokerError("records must be a non-empty list of strings or {key, value} objects")
    out = []
    for v in values:
        if isinstance(v, str):
            out.append(NewRecord(v.encode()))
        elif isinstance(v, dict) and isinstance(v.get("value"), str | None):
            key = v.get("key")
            value = v.get("value")
            out.append(
                NewRecord(
                    value.encode() if value is not None else None,
                    key.encode() if isinstance(key, str) else None,
                )
            )
        else:
            raise BrokerError(f"a record must be a string or a {{key, value}} object, not {v!r}")
    return out


def _api(value: Any) -> str | int:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise BrokerError("inject_errors needs 'api': an API name (\"Fetch\") or key (1)")
    return value


def _codes(values: Any) -> list[int]:
    if (
        not isinstance(values, list)
        or not values
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in values)
    ):
        raise BrokerError("inject_errors needs 'errors': a non-empty list of error codes (0: latency only)")
    return list(values)


def execute(cluster: AsyncMockCluster, request: Any) -> Any:
    """Run one control request against ``cluster`` (in its event loop); raises BrokerError/ValueError."""
    if not isinstance(request, dict) or request.get("op") not in OPS:
        raise BrokerError(f"a request is an object with an op among {', '.join(OPS)}")
    op = request["op"]
    args: dict[str, Any] = {k: v for k, v in request.items() if k != "op"}

    def arg(name: str, kind: type, default: Any = ...) -> Any:
        value = args.get(name, default)
        if value is ...:
            raise BrokerError(f"{op} needs {name!r}")
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise BrokerError(f"{op}: {name!r} must be {kind.__name__}")
        return value

    actions: dict[str, Callable[[], Any]] = {
        "topics": cluster.topics,
        "create_topic": lambda: [
            p.to_dict()
            for p in cluster.create_topic(
                arg("topic", str), arg("partitions", int, 1), arg("replication_factor", int, None)
            )
        ],
        "delete_topic": lambda: cluster.delete_topic(arg("topic", str)),
        "describe": lambda: cluster.describe(arg("topic", str), arg("partition", int, 0)).to_dict(),
        "move_leader": lambda: cluster.move_leader(
            arg("topic", str), arg("partition", int, 0), arg("to", int, None)
        ).to_dict(),
        "unclean_election": lambda: cluster.unclean_election(
            arg("topic", str),
            arg("partition", int, 0),
            arg("truncate_to", int),
            to=arg("to", int, None),
            records=_records(args["records"]) if args.get("records") is not None else None,
        ).to_dict(),
        "append": lambda: cluster.append(
            arg("topic", str), arg("partition", int, 0), _records(args.get("records"))
        ),
        "requests": cluster.request_counts,
        "inject_errors": lambda: cluster.inject_errors(
            _api(args.get("api")),
            _codes(args.get("errors")),
            broker=arg("broker", int, None),
            latency_ms=arg("latency_ms", int, 0),
        ),
        "broker_down": lambda: cluster.set_broker_down(arg("broker", int), True),
        "broker_up": lambda: cluster.set_broker_down(arg("broker", int), False),
        "stale_metadata": lambda: cluster.stale_metadata(arg("broker", int), arg("behind", int, 1)),
        "faults": cluster.faults,
        "clear_faults": cluster.clear_faults,
    }
    return actions[op]()


class ControlServer:
    """Serves the control API of ``cluster`` on ``host:port`` (port 0: the OS chooses)."""

    def __init__(self, cluster: AsyncMockCluster, host: str = "127.0.0.1", port: int = 0) -> None:
        self.cluster = cluster
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, self.host, self.port, limit=MAX_LINE)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                writer.write(json.dumps(self.answer(line)).encode() + b"\n")
                await writer.drain()
        except (ValueError, ConnectionError, asyncio.CancelledError):
            pass  # an over-long line or a dropped connection: close it
        finally:
            writer.close()

    def answer(self, line: bytes) -> dict[str, Any]:
        try:
            return {"ok": True, "result": execute(self.cluster, json.loads(line))}
        except (BrokerError, ValueError, TypeError) as e:
            return {"ok": False, "error": str(e)}


def control_request(host: str, port: int, request: dict[str, Any], timeout: float = 10.0) -> Any:
    """Send one control request; return its result or raise BrokerError with the broker's message."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(json.dumps(request).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                raise BrokerError("the control connection closed without an answer", None)
            buf += chunk
            if len(buf) > MAX_LINE:
                raise BrokerError("the control answer is too long", None)
    with contextlib.suppress(ValueError):
        answer = json.loads(buf)
        if isinstance(answer, dict) and answer.get("ok"):
            return answer.get("result")
        if isinstance(answer, dict):
            raise BrokerError(str(answer.get("error")), None)
    raise BrokerError(f"not a control answer: {buf[:200]!r}", None)
