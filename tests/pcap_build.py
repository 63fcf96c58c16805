"""Build pcap/pcapng bytes for tests, quickly and without a network: Ethernet/IPv4/TCP packets of
TCP conversations (handshake, data segments with real seq/ack numbers, teardown). Checksums are left
zero (kcodec does not check them)."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

SYN, ACK, PSH, FIN, RST = 0x02, 0x10, 0x08, 0x01, 0x04


def tcp_packet(
    src: tuple[str, int], dst: tuple[str, int], seq: int, ack: int, flags: int, payload: bytes = b""
) -> bytes:
    """An Ethernet frame with an IPv4/TCP segment."""
    tcp = struct.pack(
        ">HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0
    )
    total = 20 + len(tcp) + len(payload)
    ip = struct.pack(
        ">BBHHHBBH4s4s", 0x45, 0, total, 0, 0, 64, 6, 0, socket.inet_aton(src[0]), socket.inet_aton(dst[0])
    )
    return b"\x00" * 12 + b"\x08\x00" + ip + tcp + payload


def pcap_header(linktype: int = 1, snaplen: int = 262144) -> bytes:
    return struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, linktype)


def pcap_record(ts: float, data: bytes, orig: int | None = None) -> bytes:
    sec = int(ts)
    usec = int(round((ts - sec) * 1e6))
    if usec >= 1_000_000:
        sec, usec = sec + 1, usec - 1_000_000
    return struct.pack("<IIII", sec, usec, len(data), len(data) if orig is None else orig) + data


def pcap(packets: Iterable[tuple[float, bytes]]) -> bytes:
    return pcap_header() + b"".join(pcap_record(ts, data) for ts, data in packets)


def pcapng(packets: Iterable[tuple[float, bytes]], linktype: int = 1) -> bytes:
    def block(btype: int, body: bytes) -> bytes:
        body += b"\x00" * (-len(body) % 4)
        n = 12 + len(body)
        return struct.pack("<II", btype, n) + body + struct.pack("<I", n)

    out = [block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))]
    out.append(block(1, struct.pack("<HHI", linktype, 0, 262144)))
    for ts, data in packets:
        t = int(round(ts * 1e6))
        out.append(block(6, struct.pack("<IIIII", 0, t >> 32, t & 0xFFFFFFFF, len(data), len(data)) + data))
    return b"".join(out)


@dataclass
class Conversation:
    """The packets of one TCP connection, client -> server, with correct sequence numbers."""

    client: tuple[str, int]
    server: tuple[str, int]
    t: float = 1_700_000_000.0
    cseq: int = 1000
    sseq: int = 90000
    mss: int = 1460
    step: float = 0.0001
    packets: list[tuple[float, bytes]] = field(default_factory=list)

    def emit(self, pkt: bytes) -> None:
        self.t += self.step
        self.packets.append((self.t, pkt))

    def open(self) -> Conversation:
        self.emit(tcp_packet(self.client, self.server, self.cseq, 0, SYN))
        self.emit(tcp_packet(self.server, self.client, self.sseq, self.cseq + 1, SYN | ACK))
        self.cseq += 1
        self.sseq += 1
        self.emit(tcp_packet(self.client, self.server, self.cseq, self.sseq, ACK))
        return self

    def segments(self, from_client: bool, data: bytes, size: int | None = None) -> list[tuple[int, bytes]]:
        """(seq, payload) pieces of ``data``; advances the sender's sequence number."""
        size = size or self.mss
        seq = self.cseq if from_client else self.sseq
        out = [(seq + i, data[i : i + size]) for i in range(0, len(data), size)]
        if from_client:
            self.cseq += len(data)
        else:
            self.sseq += len(data)
        return out

    def send(self, from_client: bool, segs: list[tuple[int, bytes]]) -> None:
        src, dst = (self.client, self.server) if from_client else (self.server, self.client)
        for seq, payload in segs:
            ack = self.sseq if from_client else self.cseq
            self.emit(tcp_packet(src, dst, seq, ack, ACK | PSH, payload))

    def request(self, data: bytes) -> None:
        self.send(True, self.segments(True, data))

    def response(self, data: bytes) -> None:
        self.send(False, self.segments(False, data))

    def close(self) -> None:
        self.emit(tcp_packet(self.client, self.server, self.cseq, self.sseq, FIN | ACK))
        self.emit(tcp_packet(self.server, self.client, self.sseq, self.cseq + 1, FIN | ACK))
        self.emit(tcp_packet(self.client, self.server, self.cseq + 1, self.sseq + 1, ACK))
