"""The live proxy (kcodec.proxy.Proxy) run in a background thread for tests: its event loop in a daemon
thread, the events it reports collected in a list, stopped (every connection closed, the pcap flushed
and closed) when the context ends.

    with running_proxy(("127.0.0.1", 9092), pcap=path) as run:
        client.connect(run.bootstrap)
        ...
    run.frames()      # the CapturedFrame events, in the order they were decoded
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcodec.capture import CapturedFrame, iter_capture
from kcodec.proxy import PcapWriter, Proxy, ProxyConfig, ProxyEvent, ProxyNotice, SessionLimits


@dataclass
class ProxyRun:
    proxy: Proxy
    loop: asyncio.AbstractEventLoop
    events: list[ProxyEvent] = field(default_factory=list)

    @property
    def address(self) -> tuple[str, int]:
        assert self.proxy.address is not None
        return self.proxy.address

    @property
    def bootstrap(self) -> str:
        host, port = self.address
        return f"{host}:{port}"

    def call(self, coro: Any, timeout: float = 10.0) -> Any:
        """Run a coroutine on the proxy's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def frames(self) -> list[CapturedFrame]:
        return [e for e in list(self.events) if isinstance(e, CapturedFrame)]

    def notices(self, kind: str | None = None) -> list[ProxyNotice]:
        return [e for e in list(self.events) if isinstance(e, ProxyNotice) and kind in (None, e.kind)]

    def listener_ports(self) -> list[int]:
        return [local[1] for _, local in self.proxy.listeners]


@contextmanager
def running_proxy(
    upstream: tuple[str, int], *, pcap: Path | None = None, limits: SessionLimits | None = None, **config: Any
) -> Iterator[ProxyRun]:
    loop = asyncio.new_event_loop()
    writer = PcapWriter.open(pcap) if pcap is not None else None
    cfg = ProxyConfig(("127.0.0.1", 0), upstream, limits=limits or SessionLimits(), **config)
    events: list[ProxyEvent] = []
    proxy = Proxy(cfg, on_event=events.append, pcap=writer)
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    run = ProxyRun(proxy, loop, events)
    try:
        run.call(proxy.start())
        yield run
    finally:
        try:
            run.call(proxy.stop(), timeout=30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()
            if writer is not None:
                writer.close()


def read_back(pcap: Path, ports: list[int]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(frames, other events) of ``kcodec decode-capture``'s reading of the recorded pcap, as JSON."""
    frames: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    for ev in iter_capture(pcap, ports=ports):
        (frames if isinstance(ev, CapturedFrame) else others).append(ev.to_dict())
    return frames, others
