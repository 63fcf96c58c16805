"""Make ``samples/sample.pcap``: real Kafka client traffic to Apache Kafka 4.4.0, recorded through a
loopback proxy.

How the committed sample was made (maintainer script; it does not run in CI or the test suite):

    pip install confluent-kafka dpkt        # confluent-kafka bundles librdkafka
    python tools/make_sample_capture.py      # writes samples/sample.pcap (a few tens of KB)
    kcodec decode-capture samples/sample.pcap

Needs Java 17+ and Maven: Apache Kafka comes from Maven Central's jars, as the test suite runs it.

1. An Apache Kafka 4.4.0 broker (one combined KRaft controller+broker node, ``KafkaCluster`` of
   tests/apache_kafka_broker.py) is started on 127.0.0.1 with a free port. Before any client runs,
   Kafka's kafka-topics creates the topic ``kcodec-sample`` and a FindCoordinator request (kcodec's
   client, not recorded) waits until the group coordinator is up, so that the recorded clients see
   no LEADER_NOT_AVAILABLE or COORDINATOR_NOT_AVAILABLE replies while Kafka creates its topics.
2. A small recording TCP proxy listens on 127.0.0.1:9092 (or ``--port``) and forwards every byte to
   the broker, frame by frame. It records each connection's two byte streams as the client sees
   them, with capture times. The only bytes it changes: brokers advertise their own address in
   Metadata, FindCoordinator and DescribeCluster responses, so the proxy decodes those responses with
   kcodec, puts its own host:port in place of the broker's, and re-encodes them (after checking that
   kcodec re-encodes the untouched response byte for byte). Clients thus keep connecting through
   the proxy.
3. Real clients (confluent-kafka, i.e. librdkafka) run against the proxy: a producer sends a few
   records to ``kcodec-sample`` partition 0 in two batches (ApiVersions, Metadata, Produce); a
   consumer in group ``kcodec-sample-group`` (the KIP-848 consumer group protocol,
   ``group.protocol=consumer``) reads them back and commits (FindCoordinator, ConsumerGroupHeartbeat,
   OffsetFetch, ListOffsets, Fetch, OffsetCommit).
4. The recorded streams are written as a pcap with dpkt: synthesised Ethernet/IPv4/TCP headers,
   handshake (SYN, SYN-ACK, ACK), data segments of at most one loopback MSS with correct seq/ack
   numbers and pure ACKs, and FIN/ACK teardown, at the recorded times.

``Proxy`` and ``write_pcap`` also serve tools/record_quirks_capture.py (librdkafka's mock cluster).
Network use: loopback only. Every step has a deadline and every client, thread and socket is closed;
the broker is stopped by pid.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dpkt

from kcodec.protocol.frames import decode_response, encode_response

ROOT = Path(__file__).resolve().parent.parent
TOPIC = "kcodec-sample"
GROUP = "kcodec-sample-group"
MSS = 65483  # Linux loopback MSS
COORDINATOR_ATTEMPTS = 120
REWRITE_KEYS = {3: "Metadata", 10: "FindCoordinator", 60: "DescribeCluster"}


# --- recording proxy -------------------------------------------------------------------------------


@dataclass
class Recorded:
    """One proxied connection: (time, "c2s"|"s2c", bytes) in the order the proxy passed them on."""

    client: tuple[str, int]
    server: tuple[str, int]
    opened: float
    closed: float | None = None
    chunks: list[tuple[float, str, bytes]] = field(default_factory=list)


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _read_frame(sock: socket.socket) -> bytes | None:
    head = _read_exact(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    body = _read_exact(sock, size)
    return None if body is None else head + body


def _reframe(frame: bytes, trailing: bytes) -> bytes:
    """``frame`` with ``trailing`` appended inside it (size prefix adjusted)."""
    return struct.pack(">i", len(frame) - 4 + len(trailing)) + frame[4:] + trailing


class Proxy:
    def __init__(self, listen: tuple[str, int], upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.server = socket.create_server(listen, reuse_port=False)
        self.server.settimeout(0.2)
        self.listen = self.server.getsockname()[:2]
        self.connections: list[Recorded] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self.sockets: list[socket.socket] = []
        self.rewrites = 0
        self.warnings: list[str] = []

    def start(self) -> None:
        t = threading.Thread(target=self._accept_loop, name="proxy-accept", daemon=True)
        t.start()
        self.threads.append(t)

    def _accept_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                client, addr = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            upstream = socket.create_connection(self.upstream, timeout=5)
            upstream.settimeout(None)
            client.settimeout(None)
            rec = Recorded((addr[0], addr[1]), (self.listen[0], self.listen[1]), time.time())
            inflight: dict[int, tuple[int, int]] = {}
            with self.lock:
                self.connections.append(rec)
                self.sockets += [client, upstream]
            for target in (self._client_to_server, self._server_to_client):
                t = threading.Thread(target=target, args=(rec, client, upstream, inflight), daemon=True)
                t.start()
                self.threads.append(t)

    def _client_to_server(
        self,
        rec: Recorded,
        client: socket.socket,
        upstream: socket.socket,
        inflight: dict[int, tuple[int, int]],
    ) -> None:
        while (frame := _read_frame(client)) is not None:
            key, version, corr = struct.unpack_from(">hhi", frame, 4)
            with self.lock:
                inflight[corr] = (key, version)
                rec.chunks.append((time.time(), "c2s", frame))
            try:
                upstream.sendall(frame)
            except OSError:
                break
        self._close(rec, client, upstream)

    def _server_to_client(
        self,
        rec: Recorded,
        client: socket.socket,
        upstream: socket.socket,
        inflight: dict[int, tuple[int, int]],
    ) -> None:
        while (frame := _read_frame(upstream)) is not None:
            (corr,) = struct.unpack_from(">i", frame, 4)
            with self.lock:
                request = inflight.pop(corr, None)
            if request is not None and request[0] in REWRITE_KEYS:
                try:
                    frame = self._rewrite(frame, *request, corr)
                except Exception as e:  # keep proxying; the sample would then show the broker's address
                    self.warnings.append(f"cannot rewrite {REWRITE_KEYS[request[0]]} v{request[1]}: {e!r}")
            with self.lock:
                rec.chunks.append((time.time(), "s2c", frame))
            try:
                client.sendall(frame)
            except OSError:
                break
        self._close(rec, client, upstream)

    def _rewrite(self, frame: bytes, key: int, version: int, corr: int) -> bytes:
        """Advertise the proxy instead of the broker (kcodec decode -> edit -> encode)."""
        resp = decode_response(frame, key, version, strict=False)
        # Bytes after the body (librdkafka's mock cluster writes some) are kept as they are.
        trailing = frame[resp.diagnostics[0].offset :] if resp.diagnostics else b""
        if trailing:
            print(f"note: {REWRITE_KEYS[key]} v{version}: {resp.diagnostics[0].reason}: {trailing.hex()}")
        same = encode_response(resp.body, version, correlation_id=corr, header=resp.header)
        if _reframe(same, trailing) != frame:
            self.warnings.append(
                f"{REWRITE_KEYS[key]} v{version} does not re-encode byte for byte; not rewritten"
            )
            return frame
        changed = 0
        body: Any = resp.body
        targets: list[Any] = list(getattr(body, "brokers", None) or []) + list(
            getattr(body, "coordinators", None) or []
        )
        if key == 10 and version < 4:
            targets.append(body)
        for t in targets:
            if (getattr(t, "host", None), getattr(t, "port", None)) == self.upstream:
                t.host, t.port = self.listen
                changed += 1
        if not changed:
            return frame
        self.rewrites += 1
        return _reframe(encode_response(body, version, correlation_id=corr, header=resp.header), trailing)

    def _close(self, rec: Recorded, *socks: socket.socket) -> None:
        with self.lock:
            if rec.closed is None:
                rec.closed = time.time()
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        self.stopping.set()
        self.server.close()
        with self.lock:
            socks = list(self.sockets)
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        for t in self.threads:
            t.join(timeout=5)
        now = time.time()
        for rec in self.connections:
            if rec.closed is None:
                rec.closed = now


# --- the session ---------------------------------------------------------------------------------


def run_clients(bootstrap: str, deadline: float) -> list[str]:
    """Produce a few records and consume them back in a group; return what happened."""
    from confluent_kafka import Consumer, KafkaError, Producer

    log: list[str] = []
    quiet = {"log_level": 3}
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "kcodec-sample-producer",
            "linger.ms": 20,
            "acks": "all",
            **quiet,
        }
    )
    delivered: list[str] = []

    def on_delivery(err: Any, msg: Any) -> None:
        delivered.append(f"{msg.topic()}[{msg.partition()}]@{msg.offset()}" if err is None else str(err))

    for batch in ([b"hello", b"kafka", b"wire"], [b"protocol", b"kcodec"]):
        for i, value in enumerate(batch):
            producer.produce(
                TOPIC,
                key=f"key-{i}".encode(),
                value=value,
                partition=0,
                headers=[("source", b"make_sample_capture")],
                on_delivery=on_delivery,
            )
        left = producer.flush(max(0.1, min(10.0, deadline - time.time())))
        if left:
            raise RuntimeError(f"{left} records not delivered")
    log.append(f"produced {len(delivered)} records: {', '.join(delivered)}")
    del producer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "client.id": "kcodec-sample-consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "group.protocol": "consumer",
            **quiet,
        }
    )
    try:
        consumer.subscribe([TOPIC])
        got: list[Any] = []
        while len(got) < len(delivered) and time.time() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    log.append(f"consumer error: {error}")
                continue
            got.append(msg)
        log.append(f"consumed {len(got)} records: {[m.value() for m in got]}")
        if got:
            consumer.commit(asynchronous=False)
            log.append("committed offsets")
    finally:
        consumer.close()
    return log


# --- pcap ----------------------------------------------------------------------------------------


def _packet(
    src: tuple[str, int], dst: tuple[str, int], seq: int, ack: int, flags: int, data: bytes = b""
) -> bytes:
    tcp = dpkt.tcp.TCP(
        sport=src[1],
        dport=dst[1],
        seq=seq & 0xFFFFFFFF,
        ack=ack & 0xFFFFFFFF,
        flags=flags,
        win=65535,
        data=data,
    )
    ip = dpkt.ip.IP(
        src=socket.inet_aton(src[0]),
        dst=socket.inet_aton(dst[0]),
        p=dpkt.ip.IP_PROTO_TCP,
        ttl=64,
        id=0,
        data=tcp,
    )
    ip.len = len(ip)  # dpkt fills in both checksums when packed
    eth = dpkt.ethernet.Ethernet(src=b"\x00" * 6, dst=b"\x00" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
    return bytes(eth)


def write_pcap(path: Path, connections: list[Recorded], seed: int = 9092) -> int:
    rng = random.Random(seed)
    packets: list[tuple[float, int, bytes]] = []
    order = 0

    def emit(ts: float, pkt: bytes) -> None:
        nonlocal order
        packets.append((ts, order, pkt))
        order += 1

    syn, ack, psh, fin = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_PUSH, dpkt.tcp.TH_FIN
    for rec in connections:
        c, s = rec.client, rec.server
        cseq, sseq = rng.getrandbits(32), rng.getrandbits(32)
        t0 = rec.opened
        emit(t0, _packet(c, s, cseq, 0, syn))
        emit(t0 + 0.000010, _packet(s, c, sseq, cseq + 1, syn | ack))
        emit(t0 + 0.000020, _packet(c, s, cseq + 1, sseq + 1, ack))
        cseq += 1
        sseq += 1
        for ts, direction, data in rec.chunks:
            src, dst = (c, s) if direction == "c2s" else (s, c)
            for i in range(0, len(data), MSS):
                part = data[i : i + MSS]
                if direction == "c2s":
                    emit(ts, _packet(src, dst, cseq, sseq, ack | psh, part))
                    cseq += len(part)
                    emit(ts + 0.000005, _packet(dst, src, sseq, cseq, ack))
                else:
                    emit(ts, _packet(src, dst, sseq, cseq, ack | psh, part))
                    sseq += len(part)
                    emit(ts + 0.000005, _packet(dst, src, cseq, sseq, ack))
        t1 = rec.closed or (rec.chunks[-1][0] if rec.chunks else t0)
        emit(t1, _packet(c, s, cseq, sseq, fin | ack))
        emit(t1 + 0.000010, _packet(s, c, sseq, cseq + 1, fin | ack))
        emit(t1 + 0.000020, _packet(c, s, cseq + 1, sseq + 1, ack))
    packets.sort(key=lambda p: (p[0], p[1]))
    with open(path, "wb") as f:
        writer = dpkt.pcap.Writer(f, snaplen=262144, linktype=dpkt.pcap.DLT_EN10MB)
        for ts, _, pkt in packets:
            writer.writepkt(pkt, ts=ts)
    return len(packets)


def prepare(kafka: Any, deadline: float) -> None:
    """Create the topic and wait for the group coordinator, before anything is recorded."""
    from kcodec.net.client import Connection
    from kcodec.protocol.messages import FindCoordinatorRequest

    kafka.create_topic(TOPIC, partitions=1)
    for _ in range(COORDINATOR_ATTEMPTS):
        with Connection(*kafka.address, timeout=10) as conn:
            body: Any = conn.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP]), 4).body
        if all(c.error_code == 0 for c in body.coordinators) or time.time() > deadline:
            return
        time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=ROOT / "samples" / "sample.pcap")
    parser.add_argument("--port", type=int, default=9092, help="proxy port (0: any free port)")
    parser.add_argument("--timeout", type=float, default=300.0, help="deadline for the whole session (s)")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT / "tests"))
    from apache_kafka_broker import KafkaCluster

    deadline = time.time() + args.timeout
    proxy: Proxy | None = None
    with KafkaCluster("4.4") as kafka:
        prepare(kafka, deadline)
        try:
            proxy = Proxy(("127.0.0.1", args.port), kafka.address)
            proxy.start()
            listen = f"{proxy.listen[0]}:{proxy.listen[1]}"
            print(f"Apache Kafka {kafka.version} on {kafka.bootstrap}, proxy {listen}")
            for line in run_clients(f"{proxy.listen[0]}:{proxy.listen[1]}", deadline):
                print(line)
            time.sleep(0.3)  # let the last responses and closes pass the proxy
        finally:
            if proxy is not None:
                proxy.stop()
    for w in proxy.warnings:
        print("warning:", w, file=sys.stderr)
    conns = [c for c in proxy.connections if c.chunks]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    n = write_pcap(args.out, conns)
    frames = sum(len(c.chunks) for c in conns)
    print(
        f"wrote {args.out} ({args.out.stat().st_size} bytes): {len(conns)} connections, {frames} frames, "
        f"{n} packets; {proxy.rewrites} responses rewritten to advertise the proxy"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
