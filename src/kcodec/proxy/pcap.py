"""A pcap of proxied connections as their clients saw them, with synthesised TCP/IP (dpkt).

The proxy sees byte streams, not packets. :class:`PcapWriter` writes a classic pcap file (Ethernet,
microsecond timestamps) and :class:`TcpFlow` turns one connection's events into the packets a capture
on the client's host would have shown: the three-way handshake, data segments of at most ``mss`` bytes
with consistent sequence and acknowledgement numbers, and the FIN (or RST) exchange at the end.
Addresses are the client's and the proxy listener's, IPv4 or IPv6 as they are. ``kcodec
decode-capture`` reads such a file back to the frames the proxy decoded live.

:func:`capture_time` is the clock both use: the current time rounded to the microsecond, as the
float a pcap reader computes from the record's seconds and microseconds, so that live and read-back
timestamps are equal.
"""

from __future__ import annotations

import ipaddress
import os
import time
from typing import IO, Literal

import dpkt

__all__ = ["MSS", "PcapWriter", "TcpFlow", "capture_time"]

#: Largest TCP payload per synthesised segment (an IPv4 packet holds at most 65535 bytes).
MSS = 65000
SNAPLEN = 262144
_TCP = dpkt.tcp
_FIN, _SYN, _RST, _PSH, _ACK = _TCP.TH_FIN, _TCP.TH_SYN, _TCP.TH_RST, _TCP.TH_PUSH, _TCP.TH_ACK
_ZERO_MAC = b"\x00" * 6
Side = Literal["client", "server"]


def capture_time() -> float:
    """Now, to the microsecond, as ``seconds + microseconds * 1e-6`` (how pcap readers compute it)."""
    sec, usec = divmod(time.time_ns() // 1000, 1_000_000)
    return sec + usec * 1e-6


class PcapWriter:
    """Packets to a pcap file (or binary stream); flushed at most every ``flush_interval`` seconds
    and on :meth:`flush`/:meth:`close`."""

    def __init__(self, out: IO[bytes], *, flush_interval: float = 0.5, close_file: bool = False) -> None:
        self._out = out
        self._writer = dpkt.pcap.Writer(out, snaplen=SNAPLEN, linktype=dpkt.pcap.DLT_EN10MB)
        self._flush_interval = flush_interval
        self._last_flush = time.monotonic()
        self._close_file = close_file
        self.packets = 0
        self.closed = False

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> PcapWriter:
        return cls(open(path, "wb", buffering=1 << 20), close_file=True)

    def write(self, frame: bytes, ts: float) -> None:
        if self.closed:
            return
        self._writer.writepkt_time(frame, ts)
        self.packets += 1
        now = time.monotonic()
        if now - self._last_flush >= self._flush_interval:
            self._last_flush = now
            self._out.flush()

    def flush(self) -> None:
        if not self.closed:
            self._out.flush()

    def close(self) -> None:
        if self.closed:
            return
        self._out.flush()
        self.closed = True
        if self._close_file:
            self._out.close()


class TcpFlow:
    """One TCP connection's packets (see the module docstring); ``client``/``server`` are
    ``(host, port)`` with IP address hosts."""

    def __init__(
        self,
        writer: PcapWriter,
        client: tuple[str, int],
        server: tuple[str, int],
        *,
        mss: int = MSS,
    ) -> None:
        self.writer = writer
        self.mss = mss
        caddr, saddr = ipaddress.ip_address(client[0]), ipaddress.ip_address(server[0])
        if caddr.version != saddr.version:
            raise ValueError(f"client {client[0]} and server {server[0]} are not of one IP version")
        self._v6 = caddr.version == 6
        self._addr = {"client": caddr.packed, "server": saddr.packed}
        self._port = {"client": client[1], "server": server[1]}
        # sequence number of the next byte each side sends (initial ones random, as a stack's are)
        self._seq = {
            "client": int.from_bytes(os.urandom(4), "big"),
            "server": int.from_bytes(os.urandom(4), "big"),
        }
        self._ended: set[Side] = set()

    @staticmethod
    def _other(side: Side) -> Side:
        return "server" if side == "client" else "client"

    def _packet(self, side: Side, flags: int, payload: bytes, ts: float, ack: bool = True) -> None:
        other = self._other(side)
        tcp = dpkt.tcp.TCP(
            sport=self._port[side],
            dport=self._port[other],
            seq=self._seq[side] & 0xFFFFFFFF,
            ack=(self._seq[other] & 0xFFFFFFFF) if ack else 0,
            flags=flags | (_ACK if ack else 0),
            win=65535,
            data=payload,
        )
        ip: dpkt.Packet
        if self._v6:
            ip = dpkt.ip6.IP6(
                src=self._addr[side], dst=self._addr[other], nxt=dpkt.ip.IP_PROTO_TCP, hlim=64, data=tcp
            )
            ip.plen = len(tcp)
            eth_type = dpkt.ethernet.ETH_TYPE_IP6
        else:
            ip = dpkt.ip.IP(
                src=self._addr[side], dst=self._addr[other], p=dpkt.ip.IP_PROTO_TCP, ttl=64, data=tcp
            )
            eth_type = dpkt.ethernet.ETH_TYPE_IP
        frame = dpkt.ethernet.Ethernet(src=_ZERO_MAC, dst=_ZERO_MAC, type=eth_type, data=ip)
        self.writer.write(bytes(frame), ts)

    def open(self, ts: float) -> None:
        """The three-way handshake."""
        self._packet("client", _SYN, b"", ts, ack=False)
        self._seq["client"] += 1
        self._packet("server", _SYN, b"", ts)
        self._seq["server"] += 1
        self._packet("client", 0, b"", ts)

    def data(self, side: Side, payload: bytes | memoryview, ts: float) -> None:
        """Bytes ``side`` sent, in segments of at most ``mss`` bytes (PSH on the last)."""
        view = memoryview(payload)
        for start in range(0, len(view), self.mss):
            piece = bytes(view[start : start + self.mss])
            last = start + self.mss >= len(view)
            self._packet(side, _PSH if last else 0, piece, ts)
            self._seq[side] += len(piece)

    def close(self, first: Side, ts: float, *, reset: bool = False) -> None:
        """The end of the connection, begun by ``first``: FIN, FIN, ACK (or one RST)."""
        if self._ended:
            return
        if reset:
            self._packet(first, _RST, b"", ts)
            self._ended.update(("client", "server"))
            return
        second = self._other(first)
        self._packet(first, _FIN, b"", ts)
        self._seq[first] += 1
        self._packet(second, _FIN, b"", ts)
        self._seq[second] += 1
        self._packet(first, 0, b"", ts)
        self._ended.update(("client", "server"))
