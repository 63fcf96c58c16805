"""A pcap of proxied connections as their clients saw them, with synthesised TCP/IP.

The proxy sees byte streams, not packets. :class:`PcapWriter` writes a classic pcap file (Ethernet,
microsecond timestamps, little-endian) and :class:`TcpFlow` turns one connection's events into the
packets a capture on the client's host would have shown: the three-way handshake, data segments of at
most ``mss`` bytes with consistent sequence and acknowledgement numbers, and the FIN (or RST) exchange
at the end. Addresses are the client's and the proxy listener's, IPv4 or IPv6 as they are. ``kcodec
decode-capture`` reads such a file back to the frames the proxy decoded live.

Headers are packed with ``struct`` and a segment's payload is written as it is, never copied into a
packet object (building dpkt packets copied each payload four times and checksummed it in Python,
which made a recording proxy three times slower). IPv4 header checksums are computed; TCP checksums
are left zero, as in a capture of loopback traffic with checksum offload (Wireshark does not check
them unless asked; kcodec never does).

:func:`capture_time` is the clock both use: the current time rounded to the microsecond, as the
float a pcap reader computes from the record's seconds and microseconds, so that live and read-back
timestamps are equal.
"""

from __future__ import annotations

import ipaddress
import os
import struct
import time
from typing import IO, Literal

__all__ = ["MSS", "PcapWriter", "TcpFlow", "capture_time"]

#: Largest TCP payload per synthesised segment (an IPv4 packet holds at most 65535 bytes).
MSS = 65000
SNAPLEN = 262144
LINKTYPE_ETHERNET = 1
FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10
_FILE_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET)
_RECORD = struct.Struct("<IIII")  # seconds, microseconds, captured length, original length
_ETHERNET_IPV4 = b"\x00" * 12 + b"\x08\x00"
_ETHERNET_IPV6 = b"\x00" * 12 + b"\x86\xdd"
_IPV4 = struct.Struct(">BBHHHBBH4s4s")
_IPV6 = struct.Struct(">IHBB16s16s")
_TCP = struct.Struct(">HHIIBBHHH")
Side = Literal["client", "server"]


def capture_time() -> float:
    """Now, to the microsecond, as ``seconds + microseconds * 1e-6`` (how pcap readers compute it)."""
    sec, usec = divmod(time.time_ns() // 1000, 1_000_000)
    return sec + usec * 1e-6


def _ipv4_checksum(header: bytes) -> int:
    total: int = sum(struct.unpack(">10H", header))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


class PcapWriter:
    """Packets to a pcap file (or binary stream); flushed at most every ``flush_interval`` seconds
    and on :meth:`flush`/:meth:`close`."""

    def __init__(self, out: IO[bytes], *, flush_interval: float = 0.5, close_file: bool = False) -> None:
        self._out = out
        out.write(_FILE_HEADER)
        self._flush_interval = flush_interval
        self._last_flush = time.monotonic()
        self._close_file = close_file
        self.packets = 0
        self.closed = False

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> PcapWriter:
        return cls(open(path, "wb", buffering=1 << 20), close_file=True)

    def write(self, ts: float, headers: bytes, payload: bytes | memoryview = b"") -> None:
        """One packet: ``headers`` then ``payload`` (written as it is)."""
        if self.closed:
            return
        n = len(headers) + len(payload)
        sec = int(ts)
        usec = round((ts - sec) * 1e6)
        if usec >= 1_000_000:
            sec, usec = sec + 1, usec - 1_000_000
        out = self._out
        out.write(_RECORD.pack(sec, usec, n, n) + headers)
        if payload:
            out.write(payload)
        self.packets += 1
        now = time.monotonic()
        if now - self._last_flush >= self._flush_interval:
            self._last_flush = now
            out.flush()

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
        self._ip_id = 0

    @staticmethod
    def _other(side: Side) -> Side:
        return "server" if side == "client" else "client"

    def _packet(
        self, side: Side, flags: int, payload: bytes | memoryview, ts: float, ack: bool = True
    ) -> None:
        other = self._other(side)
        tcp = _TCP.pack(
            self._port[side],
            self._port[other],
            self._seq[side] & 0xFFFFFFFF,
            (self._seq[other] & 0xFFFFFFFF) if ack else 0,
            5 << 4,
            flags | (ACK if ack else 0),
            65535,
            0,
            0,
        )
        length = len(tcp) + len(payload)
        if self._v6:
            ip = _IPV6.pack(0x60000000, length, 6, 64, self._addr[side], self._addr[other])
            link = _ETHERNET_IPV6
        else:
            self._ip_id = (self._ip_id + 1) & 0xFFFF
            ip = _IPV4.pack(
                0x45, 0, 20 + length, self._ip_id, 0x4000, 64, 6, 0, self._addr[side], self._addr[other]
            )
            ip = ip[:10] + _ipv4_checksum(ip).to_bytes(2, "big") + ip[12:]
            link = _ETHERNET_IPV4
        self.writer.write(ts, link + ip + tcp, payload)

    def open(self, ts: float) -> None:
        """The three-way handshake."""
        self._packet("client", SYN, b"", ts, ack=False)
        self._seq["client"] += 1
        self._packet("server", SYN, b"", ts)
        self._seq["server"] += 1
        self._packet("client", 0, b"", ts)

    def data(self, side: Side, payload: bytes | bytearray | memoryview, ts: float) -> None:
        """Bytes ``side`` sent, in segments of at most ``mss`` bytes (PSH on the last)."""
        view = memoryview(payload)
        for start in range(0, len(view), self.mss):
            piece = view[start : start + self.mss]
            last = start + self.mss >= len(view)
            self._packet(side, PSH if last else 0, piece, ts)
            self._seq[side] += len(piece)

    def close(self, first: Side, ts: float, *, reset: bool = False) -> None:
        """The end of the connection, begun by ``first``: FIN, FIN, ACK (or one RST)."""
        if self._ended:
            return
        if reset:
            self._packet(first, RST, b"", ts)
            self._ended.update(("client", "server"))
            return
        second = self._other(first)
        self._packet(first, FIN, b"", ts)
        self._seq[first] += 1
        self._packet(second, FIN, b"", ts)
        self._seq[second] += 1
        self._packet(first, 0, b"", ts)
        self._ended.update(("client", "server"))
