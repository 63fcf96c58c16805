"""A live decoding proxy for Kafka: ``kcodec proxy --listen 127.0.0.1:PORT --upstream HOST:PORT``.

Clients connect to the proxy as if it were the broker. Every byte is forwarded unchanged both ways,
except the broker addresses advertised in responses (Metadata, FindCoordinator, DescribeCluster, and
the current-leader endpoints of Produce, Fetch, ShareFetch and ShareAcknowledge), which are replaced
with listeners of the proxy, one per upstream broker, opened on demand, so that clients of a
multi-broker cluster stay on the proxy. What each client sends and is sent is decoded live by the
capture decoder's per-connection stage (the same events as ``kcodec decode-capture``) and can be
written to a pcap with synthesised TCP/IP that ``kcodec decode-capture`` reads back to the same frames.

Modules, one job each:

- :mod:`~kcodec.proxy.rewrite` (sans-I/O): where responses advertise brokers, per API and version,
  and writing such a response again with other addresses;
- :mod:`~kcodec.proxy.inflight` (sans-I/O): which request a response answers;
- :mod:`~kcodec.proxy.pcap`: the synthesised TCP/IP capture and the clock it shares with decoding;
- :mod:`~kcodec.proxy.tap` (sans-I/O): one connection's live decoding and recording;
- :mod:`~kcodec.proxy.listeners`: broker address -> proxy listener, opened on demand;
- :mod:`~kcodec.proxy.session`: one client connection and its broker connection (backpressure,
  stalls, how it ends);
- :mod:`~kcodec.proxy.server`: :class:`Proxy`, all of the above started and stopped together.

Use from Python::

    async with Proxy(ProxyConfig(("127.0.0.1", 0), ("127.0.0.1", 9092)), on_event=print) as proxy:
        print(proxy.address)       # give this to the clients
        await asyncio.sleep(60)

Presentation (table, JSON lines) is the command line's (``kcodec.cli.proxy``).
"""

from __future__ import annotations

from kcodec.proxy.errors import FrameSizeError, ProxyError, ProxySetupError
from kcodec.proxy.events import NoticeKind, ProxyEvent, ProxyNotice
from kcodec.proxy.pcap import PcapWriter, TcpFlow, capture_time
from kcodec.proxy.rewrite import ADDRESS_APIS, ResponseRewrite, endpoint_paths, parse_response, rewrites
from kcodec.proxy.server import Proxy, ProxyConfig, ProxyStats
from kcodec.proxy.session import SessionLimits
from kcodec.proxy.tap import Tap

__all__ = [
    "ADDRESS_APIS",
    "FrameSizeError",
    "NoticeKind",
    "PcapWriter",
    "Proxy",
    "ProxyConfig",
    "ProxyError",
    "ProxyEvent",
    "ProxyNotice",
    "ProxySetupError",
    "ProxyStats",
    "ResponseRewrite",
    "SessionLimits",
    "Tap",
    "TcpFlow",
    "capture_time",
    "endpoint_paths",
    "parse_response",
    "rewrites",
]
