"""Record ``tests/captures/mock_quirks.pcap``: real clients against librdkafka's mock cluster, chosen
to show the off-spec frames ``kcodec.protocol.quirks`` reads (maintainer script; not run by CI or the tests).

    python tools/record_quirks_capture.py        # needs confluent-kafka, kafka-python and dpkt

What it records, through the loopback recording proxy of ``tools/make_sample_capture.py``:

1. a confluent-kafka (librdkafka) producer asking for the metadata of all topics while the mock
   advertises Metadata up to v12 (``list_topics()``): librdkafka's all-topics Metadata v12 request
   (the 4-byte Topics placeholder) and the mock's flexible Metadata responses (a second, empty
   tagged-field section), after the mock's ApiVersions v3 error reply (1-byte ApiKeys count);
2. a committed offset, then an AdminClient listing the group's offsets for all topics while the mock
   advertises OffsetFetch up to v7: the mock answers the all-topics OffsetFetch v7 with a null
   Topics array;
3. kafka-python 3.0.12 bootstrapping with its default ApiVersions v4 request, which the mock answers
   in the same 1-byte-count layout (kafka-python gives up after its timeout).

Network use: loopback only; every client, the proxy and the mock cluster are closed at the end.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))

from make_sample_capture import Proxy, write_pcap  # noqa: E402
from rdkafka_mock import MockCluster  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "captures" / "mock_quirks.pcap")
    args = parser.parse_args(argv)

    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaProducer

    quiet = {"log_level": 0}
    with MockCluster(brokers=1) as mock:
        mock.set_api_versions("Metadata", 0, 12)
        mock.set_api_versions("OffsetFetch", 0, 7)
        proxy = Proxy(("127.0.0.1", 0), mock.brokers[0])
        proxy.start()
        bootstrap = f"{proxy.listen[0]}:{proxy.listen[1]}"
        try:
            producer = Producer({"bootstrap.servers": bootstrap, "client.id": "quirks-producer", **quiet})
            producer.produce("quirks", b"x", partition=0)
            producer.flush(5)
            print("topics:", sorted(producer.list_topics(timeout=5).topics))
            del producer
            group_conf = {"group.id": "quirks-group", "enable.auto.commit": False}
            consumer = Consumer({"bootstrap.servers": bootstrap, **group_conf, **quiet})
            consumer.commit(offsets=[TopicPartition("quirks", 0, 1)], asynchronous=False)
            consumer.close()
            admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "quirks-admin", **quiet})
            for group, fut in admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions("quirks-group")], request_timeout=5
            ).items():
                listed = fut.result(5).topic_partitions
                print("offsets of", group, [(tp.topic, tp.partition, tp.offset) for tp in listed])
            del admin
            try:
                KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=2000, max_block_ms=2000).close()
            except Exception as e:  # expected: kafka-python drops the off-spec ApiVersions reply
                print("kafka-python:", type(e).__name__, e)
            time.sleep(0.3)
        finally:
            proxy.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    n = write_pcap(args.out, proxy.connections)
    print(f"wrote {args.out} ({n} packets, {len(proxy.connections)} connections)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
