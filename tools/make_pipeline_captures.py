"""Record ``tests/captures/rotated/``: real Kafka client traffic captured by dumpcap on loopback, in
rotated files, with leader-epoch fencing errors and a leader change in it (for the pipeline tests).

Maintainer script (it does not run in CI or the test suite); needs root (or dumpcap's capture
capability), Debian's ``dumpcap`` and ``confluent-kafka``:

    python tools/make_pipeline_captures.py            # writes tests/captures/rotated/*.pcap

1. librdkafka's mock cluster (three brokers on 127.0.0.1, ephemeral ports; the C API through
   ``tests/rdkafka_mock.py``) gets topic ``kcodec-pipeline`` with two partitions.
2. dumpcap captures the brokers' ports on ``lo`` into a ring of small pcap files (``-b filesize``),
   so that connections continue from one file into the next, as with ``tcpdump -C``.
3. Real clients (confluent-kafka, i.e. librdkafka) run: a producer writes records to both
   partitions; a consumer in a group reads them. The mock is told to answer the next ListOffsets
   with UNKNOWN_LEADER_EPOCH (75) and the next two Fetch requests with FENCED_LEADER_EPOCH (74)
   (``rd_kafka_mock_push_request_errors_array``), and partition 0's leader moves to another broker
   mid-way (``rd_kafka_mock_partition_set_leader``: its leader epoch goes up), so the clients
   refresh metadata and see the new epoch. More records are produced and consumed after that.
4. dumpcap is stopped; the ring's files are renamed ``part-01.pcap``, ``part-02.pcap``, ...

Network use: loopback only; every step has a deadline and every client and process is stopped.
"""

from __future__ import annotations

import argparse
import ctypes
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from rdkafka_mock import MockCluster  # noqa: E402

TOPIC = "kcodec-pipeline"
GROUP = "kcodec-pipeline-group"
FETCH, LIST_OFFSETS = 1, 2
FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH = 74, 75


def _mock_calls(mock: MockCluster) -> Any:
    lib: Any = mock._lib
    vp, cp, i32 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32
    lib.rd_kafka_mock_topic_create.restype = ctypes.c_int
    lib.rd_kafka_mock_topic_create.argtypes = [vp, cp, ctypes.c_int, ctypes.c_int]
    lib.rd_kafka_mock_partition_set_leader.restype = ctypes.c_int
    lib.rd_kafka_mock_partition_set_leader.argtypes = [vp, cp, i32, i32]
    lib.rd_kafka_mock_push_request_errors_array.restype = None
    lib.rd_kafka_mock_push_request_errors_array.argtypes = [
        vp,
        ctypes.c_int16,
        ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_int),
    ]
    return lib


def push_errors(mock: MockCluster, api_key: int, *codes: int) -> None:
    lib = _mock_calls(mock)
    arr = (ctypes.c_int * len(codes))(*codes)
    lib.rd_kafka_mock_push_request_errors_array(mock._mcluster, api_key, len(codes), arr)


def produce(bootstrap: str, values: list[bytes], deadline: float) -> int:
    from confluent_kafka import Producer

    p = Producer(
        {"bootstrap.servers": bootstrap, "client.id": "pipeline-producer", "linger.ms": 5, "log_level": 0}
    )
    sent = 0
    for i, v in enumerate(values):
        p.produce(TOPIC, value=v, key=f"k{i}".encode(), partition=i % 2)
        sent += 1
    left = p.flush(max(0.1, deadline - time.time()))
    if left:
        raise RuntimeError(f"{left} records not delivered")
    return sent


def consume(consumer: Any, want: int, deadline: float) -> int:
    got = 0
    while got < want and time.time() < deadline:
        msg = consumer.poll(0.3)
        if msg is not None and msg.error() is None:
            got += 1
    return got


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "captures" / "rotated")
    parser.add_argument("--file-kb", type=int, default=24, help="rotate after this many kB")
    parser.add_argument("--timeout", type=float, default=90.0)
    args = parser.parse_args(argv)
    if shutil.which("dumpcap") is None:
        print("dumpcap is not installed (apt-get install tshark or wireshark-common)", file=sys.stderr)
        return 1
    from confluent_kafka import Consumer

    deadline = time.time() + args.timeout
    work = Path(tempfile.mkdtemp(prefix="kcodec-capture-"))
    with MockCluster(brokers=3) as mock:
        lib = _mock_calls(mock)
        if lib.rd_kafka_mock_topic_create(mock._mcluster, TOPIC.encode(), 2, 3):
            raise RuntimeError("cannot create the topic")
        ports = [port for _, port in mock.brokers]
        filt = " or ".join(f"tcp port {p}" for p in ports)
        dumpcap = subprocess.Popen(
            [
                "dumpcap",
                "-q",
                "-i",
                "lo",
                "-P",
                "-f",
                filt,
                "-b",
                f"filesize:{args.file_kb}",
                "-w",
                str(work / "ring.pcap"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            time.sleep(1.5)  # dumpcap is capturing
            bootstrap = mock.bootstraps
            produce(bootstrap, [f"before-{i}".encode() * 8 for i in range(40)], deadline)
            push_errors(mock, LIST_OFFSETS, UNKNOWN_LEADER_EPOCH)
            push_errors(mock, FETCH, FENCED_LEADER_EPOCH, FENCED_LEADER_EPOCH)
            consumer = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": GROUP,
                    "client.id": "pipeline-consumer",
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": True,
                    "log_level": 0,
                    "topic.metadata.refresh.interval.ms": 1000,
                }
            )
            try:
                consumer.subscribe([TOPIC])
                first = consume(consumer, 40, deadline)
                leader = 1 + (ports.index(ports[0]) + 1) % 3
                if lib.rd_kafka_mock_partition_set_leader(mock._mcluster, TOPIC.encode(), 0, leader):
                    raise RuntimeError("cannot move the leader")
                produce(bootstrap, [f"after-{i}".encode() * 8 for i in range(40)], deadline)
                second = consume(consumer, 40, deadline)
                print(f"consumed {first} + {second} records")
            finally:
                consumer.close()
            time.sleep(1.0)
        finally:
            dumpcap.send_signal(signal.SIGINT)
            try:
                dumpcap.wait(10)
            except subprocess.TimeoutExpired:
                dumpcap.kill()
                dumpcap.wait(5)
    ring = sorted(work.glob("ring_*.pcap"))
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    for i, f in enumerate(ring, 1):
        shutil.move(str(f), args.out / f"part-{i:02d}.pcap")
    shutil.rmtree(work)
    total = sum(p.stat().st_size for p in args.out.iterdir())
    print(f"wrote {len(ring)} files ({total} bytes) to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
