"""Record ``tests/captures/apache_kafka_*.pcap``: real clients talking to Apache Kafka 4.4.0
(maintainer script; not run by CI or the tests, which decode the committed files).

    python tools/record_apache_captures.py               # all three captures
    python tools/record_apache_captures.py --only java   # one of: java, librdkafka, kafka-python

Needs Java 17+ and Maven (Apache Kafka from Maven Central, as tests/apache_kafka.py runs it),
tcpdump (run as root), confluent-kafka and kafka-python.

For each client family, an Apache Kafka 4.4.0 broker (a combined KRaft controller+broker,
``KafkaCluster`` of tests/apache_kafka_broker.py) is started on 127.0.0.1 with a free port, and
``tcpdump -i lo`` records the broker's port (``tcp port PORT``) into the family's file while the
clients run; then both are stopped by pid. kcodec then reads the file: a capture with any issue (a
TCP retransmission on a loaded loopback, say) or any frame that is undecodable or off-spec is
recorded again, up to ``--attempts`` times. The broker's own connections to its listener (the
transaction marker sender's WriteTxnMarkers, the AddPartitionsToTxn verification of KIP-890) are
part of the traffic too:

``apache_kafka_java.pcap``
    Kafka's own Java clients, run from the same jars as the broker: kafka-topics (TopicCommand:
    create, describe, list), the console producer once per compression codec (none, gzip, snappy,
    lz4, zstd), the console consumer in a classic group and in a KIP-848 group
    (``group.protocol=consumer``), kafka-consumer-groups (list, describe), the transactional message
    copier (a consume-transform-produce transaction with the consumer's offsets) and kafka-transactions
    (list, describe).
``apache_kafka_librdkafka.pcap``
    confluent-kafka (librdkafka): admin calls (create topics and partitions, describe configs, the
    cluster and groups, list groups and offsets, delete a topic), a producer per compression codec, a
    consumer in a group that commits, and a transactional producer (one committed transaction with the
    consumer's offsets, one aborted).
``apache_kafka_python.pcap``
    kafka-python: an admin client creating a topic, a producer (no compression, then gzip) and a
    consumer in a group that commits.

Every client is bounded by a count of records; every process started (broker, tcpdump, Java tools)
is stopped by its pid. Network use: loopback only.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from apache_kafka_broker import KafkaCluster  # noqa: E402

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
TOOL_TIMEOUT_S = 300.0  # a safety net for one Java tool on a loaded machine, not a pace
POLL_ATTEMPTS = 120  # consumer polls of 0.5 s at most, per consumer
TOOLS = "org.apache.kafka.tools."


# --- tcpdump -------------------------------------------------------------------------------------


@contextlib.contextmanager
def tcpdump(path: Path, port: int) -> Iterator[None]:
    """Record loopback traffic to or from ``port`` into ``path`` while the block runs."""
    binary = shutil.which("tcpdump")
    if binary is None:
        raise SystemExit("tcpdump is not installed (e.g. apt-get install tcpdump)")
    path.parent.mkdir(parents=True, exist_ok=True)
    command = [binary, "-i", "lo", "-n", "-U", "-s", "0", "-Z", "root", "-w", str(path), f"tcp port {port}"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()  # "listening on lo, ..." once the capture is open
    if "listening on" not in line:
        proc.wait(30)
        raise SystemExit(f"tcpdump did not start: {line.strip()} {proc.stderr.read().strip()}")
    try:
        yield
        time.sleep(1.0)  # the last FIN/ACKs of clients that just exited
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate(timeout=30)
        print(f"  tcpdump: {' '.join(err.split())}")


# --- Kafka's Java clients ------------------------------------------------------------------------


def java_tool(kafka: KafkaCluster, main_class: str, *args: str, stdin: str = "") -> str:
    """Run one of Kafka's tools from the broker's jars (by pid, bounded); its stdout."""
    command = [*kafka.java("WARN", "256m"), main_class, *args]
    name = main_class.rsplit(".", 1)[-1]
    proc = subprocess.run(
        command, input=stdin, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{name} {' '.join(args)} exited with {proc.returncode}: {proc.stderr[-2000:]}")
    print(f"  {name} {' '.join(a for a in args if not a.startswith('127.'))}: ok")
    return proc.stdout


def java_session(kafka: KafkaCluster) -> None:
    b = kafka.bootstrap
    topic, copied, group = "kcodec-java", "kcodec-java-copied", "kcodec-java-group"
    topics = TOOLS + "TopicCommand"
    java_tool(kafka, topics, "--bootstrap-server", b, "--create", "--topic", topic, "--partitions", "1",
              "--replication-factor", "1")
    java_tool(kafka, topics, "--bootstrap-server", b, "--create", "--topic", copied, "--partitions", "1",
              "--replication-factor", "1", "--config", "compression.type=producer")
    java_tool(kafka, topics, "--bootstrap-server", b, "--describe", "--topic", topic)
    java_tool(kafka, topics, "--bootstrap-server", b, "--list")
    for codec in CODECS:
        lines = "".join(f"key-{i}:{codec} record {i} from the Java console producer\n" for i in range(3))
        java_tool(kafka, TOOLS + "ConsoleProducer", "--bootstrap-server", b, "--topic", topic,
                  "--compression-codec", codec, "--property", "parse.key=true", "--property",
                  "key.separator=:", stdin=lines)
    total = str(3 * len(CODECS))
    consumer = TOOLS + "consumer.ConsoleConsumer"
    java_tool(kafka, consumer, "--bootstrap-server", b, "--topic", topic, "--group", group,
              "--from-beginning", "--max-messages", total, "--property", "print.key=true")
    java_tool(kafka, consumer, "--bootstrap-server", b, "--topic", topic, "--group", group + "-kip848",
              "--from-beginning", "--max-messages", total, "--consumer-property", "group.protocol=consumer")
    groups = TOOLS + "consumer.group.ConsumerGroupCommand"
    java_tool(kafka, groups, "--bootstrap-server", b, "--list")
    java_tool(kafka, groups, "--bootstrap-server", b, "--describe", "--group", group)
    java_tool(kafka, TOOLS + "TransactionalMessageCopier", "--broker-list", b, "--input-topic", topic,
              "--input-partition", "0", "--output-topic", copied, "--transactional-id", "kcodec-java-txn",
              "--consumer-group", "kcodec-java-copier", "--max-messages", "6", "--transaction-size", "3",
              "--use-group-metadata")
    txns = TOOLS + "TransactionsCommand"
    java_tool(kafka, txns, "--bootstrap-server", b, "list")
    java_tool(kafka, txns, "--bootstrap-server", b, "describe", "--transactional-id", "kcodec-java-txn")


# --- librdkafka ----------------------------------------------------------------------------------


def _wait_all(futures: dict[Any, Any]) -> None:
    for f in futures.values():
        f.result(timeout=60)


def _consume(consumer: Any, count: int) -> list[Any]:
    got: list[Any] = []
    for _ in range(POLL_ATTEMPTS):
        if len(got) >= count:
            break
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg)
    if len(got) < count:
        raise RuntimeError(f"consumed {len(got)} of {count} records")
    return got


def librdkafka_session(kafka: KafkaCluster) -> None:
    from confluent_kafka import (
        Consumer,
        ConsumerGroupTopicPartitions,
        Producer,
        TopicPartition,
    )
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        ConfigResource,
        NewPartitions,
        NewTopic,
        OffsetSpec,
    )

    b = kafka.bootstrap
    base: dict[str, Any] = {"bootstrap.servers": b, "log_level": 3}
    topic, out, group = "kcodec-rdkafka", "kcodec-rdkafka-txn", "kcodec-rdkafka-group"
    admin = AdminClient({**base, "client.id": "kcodec-rdkafka-admin"})
    _wait_all(admin.create_topics([NewTopic(topic, 1, 1), NewTopic(out, 1, 1), NewTopic("kcodec-tmp", 1, 1)]))
    _wait_all(admin.create_partitions([NewPartitions("kcodec-tmp", 2)]))
    _wait_all(admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)]))
    admin.describe_cluster().result(timeout=60)
    _wait_all(admin.delete_topics(["kcodec-tmp"]))
    print("  admin: created, described, deleted topics")

    for codec in CODECS:
        producer = Producer({**base, "client.id": f"kcodec-rdkafka-{codec}", "compression.type": codec,
                             "linger.ms": 5, "acks": "all"})
        for i in range(3):
            value = f"{codec} record {i} from librdkafka".encode()
            producer.produce(topic, key=f"key-{i}".encode(), value=value, headers=[("codec", codec.encode())],
                             partition=0)
        if producer.flush(60):
            raise RuntimeError(f"{codec}: records not delivered")
    print(f"  produced {3 * len(CODECS)} records, one producer per codec")

    consumer = Consumer({**base, "group.id": group, "client.id": "kcodec-rdkafka-consumer",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    got = _consume(consumer, 3 * len(CODECS))
    consumer.commit(asynchronous=False)
    print(f"  consumed {len(got)} records in group {group} and committed")

    txn = Producer({**base, "client.id": "kcodec-rdkafka-txn", "transactional.id": "kcodec-rdkafka-txn"})
    txn.init_transactions(60)
    txn.begin_transaction()
    for msg in got[:3]:
        txn.produce(out, key=msg.key(), value=b"copied: " + (msg.value() or b""), partition=0)
    offsets = [TopicPartition(topic, 0, got[2].offset() + 1)]
    txn.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 60)
    txn.commit_transaction(60)
    txn.begin_transaction()
    txn.produce(out, value=b"aborted", partition=0)
    txn.flush(60)
    txn.abort_transaction(60)
    consumer.close()
    print("  one transaction committed (with offsets), one aborted")

    admin.list_consumer_groups().result(timeout=60)
    _wait_all(admin.describe_consumer_groups([group]))
    _wait_all(admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]))
    _wait_all(admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.latest()}))  # type: ignore[no-untyped-call]
    print("  admin: listed and described groups, offsets")


# --- kafka-python ---------------------------------------------------------------------------------


def kafka_python_session(kafka: KafkaCluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    b = kafka.bootstrap
    topic, group = "kcodec-python", "kcodec-python-group"
    admin = KafkaAdminClient(bootstrap_servers=b, client_id="kcodec-python-admin")
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.close()
    for codec in (None, "gzip"):
        producer = KafkaProducer(bootstrap_servers=b, client_id=f"kcodec-python-{codec or 'none'}",
                                 compression_type=codec, acks="all")
        for i in range(3):
            value = f"{codec} record {i} from kafka-python".encode()
            header = ("codec", str(codec).encode())
            producer.send(topic, key=f"key-{i}".encode(), value=value, headers=[header], partition=0)
        producer.flush(60)
        producer.close(60)
    print("  produced 6 records (none, gzip)")
    consumer = KafkaConsumer(topic, bootstrap_servers=b, group_id=group, client_id="kcodec-python-consumer",
                             auto_offset_reset="earliest", enable_auto_commit=False)
    got = 0
    for _ in range(POLL_ATTEMPTS):
        got += sum(len(v) for v in consumer.poll(timeout_ms=500).values())
        if got >= 6:
            break
    if got < 6:
        raise RuntimeError(f"kafka-python consumed {got} of 6 records")
    consumer.commit()
    consumer.close()
    print(f"  consumed {got} records in group {group} and committed")


SESSIONS: dict[str, tuple[str, Callable[[KafkaCluster], None]]] = {
    "java": ("apache_kafka_java.pcap", java_session),
    "librdkafka": ("apache_kafka_librdkafka.pcap", librdkafka_session),
    "kafka-python": ("apache_kafka_python.pcap", kafka_python_session),
}


def problems(path: Path) -> list[str]:
    """What kcodec finds wrong with a recorded capture: issues (retransmits on a loaded loopback, say)
    and frames that are undecodable or carry diagnostics."""
    from kcodec.capture import CapturedFrame, iter_capture

    found: list[str] = []
    for event in iter_capture(path):
        if isinstance(event, CapturedFrame):
            if event.error is not None or event.diagnostics:
                found.append(f"frame {event.api_name} v{event.api_version}: {event.diagnostics}")
        else:
            found.append(f"{type(event).__name__}: {getattr(event, 'message', event)}")
    return found


def record(name: str, path: Path, attempts: int) -> None:
    """Record one session against a fresh broker, again (up to ``attempts`` times) while kcodec finds
    anything wrong with the capture."""
    session = SESSIONS[name][1]
    for attempt in range(1, attempts + 1):
        with KafkaCluster("4.4") as kafka:
            print(f"{name} -> {path}: Apache Kafka {kafka.version} on {kafka.bootstrap}, pid {kafka.pids[0]}")
            with tcpdump(path, kafka.address[1]):
                session(kafka)
        found = problems(path)
        print(f"  wrote {path} ({path.stat().st_size} bytes); attempt {attempt}: {found or 'clean'}")
        if not found:
            return
    raise SystemExit(f"{name}: no clean capture in {attempts} attempts")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--out-dir", type=Path, default=ROOT / "tests" / "captures")
    parser.add_argument("--only", choices=sorted(SESSIONS), action="append")
    parser.add_argument("--attempts", type=int, default=5, help="recordings per session at most")
    args = parser.parse_args(argv)
    for name in args.only or list(SESSIONS):
        record(name, args.out_dir / SESSIONS[name][0], args.attempts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
