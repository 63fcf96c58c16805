// Kafka's Java clients (kafka-clients) driven by the kcodec tests against `kcodec broker`.
// Usage: KafkaClientDriver <scenario> <args...>; prints one JSON object per line on stdout.
//   produce BOOTSTRAP TOPIC COUNT PARTITIONS
//   consume BOOTSTRAP TOPIC GROUP COUNT RESET subscribe|assign COMMIT(true|false) MAX_POLLS
//   copy BOOTSTRAP SRC DST GROUP TRANSACTIONAL_ID COUNT ABORT_EVERY MAX_POLLS
//   forgotten BOOTSTRAP TOPIC TRANSACTIONAL_ID: commits a transaction, prints {"paused":1}, waits for a
//     line on stdin (the coordinator forgets the id meanwhile), then tries a second one
// Work ends on counts; MAX_POLLS bounds the polls (one second each at most) as a safety net.
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.LogTruncationException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class KafkaClientDriver {
    private static final Duration POLL = Duration.ofSeconds(1);
    private static final Duration API = Duration.ofSeconds(120);

    private KafkaClientDriver() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            throw new IllegalArgumentException("usage: KafkaClientDriver produce|consume|copy ARGS...");
        }
        String[] rest = java.util.Arrays.copyOfRange(args, 1, args.length);
        switch (args[0]) {
            case "produce" -> produce(rest);
            case "consume" -> consume(rest);
            case "copy" -> copy(rest);
            case "forgotten" -> forgotten(rest);
            default -> throw new IllegalArgumentException("unknown scenario " + args[0]);
        }
        emit("{\"done\":true}");
    }

    static void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static String str(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : String.valueOf(s).toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    static String offsetsJson(Map<TopicPartition, OffsetAndMetadata> offsets) {
        List<String> parts = new ArrayList<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            OffsetAndMetadata om = e.getValue();
            parts.add("[" + e.getKey().partition() + "," + (om == null ? -1 : om.offset()) + ","
                + (om == null ? -1 : om.leaderEpoch().orElse(-1)) + "]");
        }
        return "[" + String.join(",", parts) + "]";
    }

    static Properties consumerProps(String bootstrap, String group, String reset, String isolation) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        if (!group.isEmpty()) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, reset);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "1000");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return p;
    }

    // --- produce ---------------------------------------------------------------------------------------

    static void produce(String[] a) throws Exception {
        String bootstrap = a[0], topic = a[1];
        int count = Integer.parseInt(a[2]), partitions = Integer.parseInt(a[3]);
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < count; i++) {
                byte[] value = String.format("m-%05d", i).getBytes();
                sent.add(producer.send(new ProducerRecord<>(topic, i % partitions, ("k" + i).getBytes(), value)));
            }
            producer.flush();
            Map<Integer, List<Long>> offsets = new HashMap<>();
            for (java.util.concurrent.Future<RecordMetadata> f : sent) {
                RecordMetadata m = f.get();
                offsets.computeIfAbsent(m.partition(), k -> new ArrayList<>()).add(m.offset());
            }
            List<String> parts = new ArrayList<>();
            for (Map.Entry<Integer, List<Long>> e : offsets.entrySet()) {
                parts.add("\"" + e.getKey() + "\":" + e.getValue());
            }
            emit("{\"produced\":" + sent.size() + ",\"offsets\":{" + String.join(",", parts) + "}}");
        }
    }

    // --- consume ---------------------------------------------------------------------------------------

    static void consume(String[] a) {
        String bootstrap = a[0], topic = a[1], group = a[2];
        int count = Integer.parseInt(a[3]);
        String reset = a[4];
        boolean assign = a[5].equals("assign");
        boolean commit = Boolean.parseBoolean(a[6]);
        int maxPolls = Integer.parseInt(a[7]);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerProps(bootstrap, group, reset, "read_uncommitted"))) {
            if (assign) {
                List<TopicPartition> tps = new ArrayList<>();
                for (PartitionInfo info : c.partitionsFor(topic, API)) {
                    tps.add(new TopicPartition(topic, info.partition()));
                }
                c.assign(tps);
                c.seekToBeginning(tps);
            } else {
                c.subscribe(List.of(topic));
            }
            int got = 0;
            for (int polls = 0; got < count && polls < maxPolls; polls++) {
                ConsumerRecords<byte[], byte[]> records;
                try {
                    records = c.poll(POLL);
                } catch (LogTruncationException e) {
                    emit("{\"exception\":\"LogTruncationException\",\"fetch\":" + positions(e.offsetOutOfRangePartitions())
                        + ",\"divergent\":" + offsetsJson(e.divergentOffsets()) + ",\"message\":" + str(e.getMessage()) + "}");
                    return;
                } catch (OffsetOutOfRangeException e) {
                    emit("{\"exception\":\"OffsetOutOfRangeException\",\"fetch\":" + positions(e.offsetOutOfRangePartitions())
                        + ",\"message\":" + str(e.getMessage()) + "}");
                    return;
                } catch (KafkaException e) {
                    emit("{\"exception\":" + str(e.getClass().getSimpleName()) + ",\"message\":" + str(e.getMessage()) + "}");
                    return;
                }
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    got++;
                    emit("{\"record\":[" + r.partition() + "," + r.offset() + "," + r.leaderEpoch().orElse(-1) + ","
                        + str(new String(r.value())) + "]}");
                }
            }
            if (commit) {
                c.commitSync(API);
                emit("{\"committed\":" + offsetsJson(c.committed(c.assignment(), API)) + "}");
            }
        }
    }

    static String positions(Map<TopicPartition, Long> fetch) {
        List<String> parts = new ArrayList<>();
        for (Map.Entry<TopicPartition, Long> e : fetch.entrySet()) {
            parts.add("[" + e.getKey().partition() + "," + e.getValue() + "]");
        }
        return "[" + String.join(",", parts) + "]";
    }

    // --- transactional copy ----------------------------------------------------------------------------

    static void copy(String[] a) {
        String bootstrap = a[0], src = a[1], dst = a[2], group = a[3], tid = a[4];
        int count = Integer.parseInt(a[5]), abortEvery = Integer.parseInt(a[6]), maxPolls = Integer.parseInt(a[7]);
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tid);
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        Properties cp = consumerProps(bootstrap, group, "earliest", "read_committed");
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "500");
        long committed = 0, transactions = 0, abortedByApp = 0, abortedWritten = 0, recovered = 0;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp);
             KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            c.subscribe(List.of(src));
            for (int polls = 0; committed < count && polls < maxPolls; polls++) {
                ConsumerRecords<byte[], byte[]> records = c.poll(POLL);
                if (records.isEmpty()) {
                    continue;
                }
                transactions++;
                Map<TopicPartition, OffsetAndMetadata> ends = new HashMap<>();
                try {
                    producer.beginTransaction();
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        producer.send(new ProducerRecord<>(dst, r.partition(), r.key(), r.value()));
                        ends.put(new TopicPartition(src, r.partition()), new OffsetAndMetadata(r.offset() + 1, r.leaderEpoch(), ""));
                    }
                    producer.sendOffsetsToTransaction(ends, c.groupMetadata());
                    if (transactions % abortEvery == 0) {
                        producer.flush();
                        producer.abortTransaction();
                        abortedByApp++;
                        abortedWritten += records.count();
                        rewind(c);
                        continue;
                    }
                    producer.commitTransaction();
                    committed += records.count();
                } catch (ProducerFencedException e) {
                    throw e;
                } catch (KafkaException e) {
                    emit("{\"abortable\":" + str(e.getClass().getSimpleName() + ": " + e.getMessage()) + "}");
                    producer.abortTransaction();
                    recovered++;
                    rewind(c);
                }
            }
        }
        emit("{\"copy\":{\"committed\":" + committed + ",\"transactions\":" + transactions + ",\"aborted_by_app\":"
            + abortedByApp + ",\"aborted_written\":" + abortedWritten + ",\"recovered\":" + recovered + "}}");
    }

    static void forgotten(String[] a) throws java.io.IOException {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, a[0]);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, a[2]);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(a[1], 0, null, "first".getBytes()));
            producer.commitTransaction();
            emit("{\"paused\":1}");
            new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(a[1], 0, null, "second".getBytes()));
            try {
                producer.commitTransaction();
                emit("{\"second\":\"committed\"}");
            } catch (KafkaException e) {
                emit("{\"commit_failed\":" + str(cause(e)) + "}");
                try {
                    producer.abortTransaction();
                    emit("{\"aborted\":true}");
                } catch (KafkaException e2) {
                    emit("{\"abort_failed\":" + str(cause(e2)) + "}");
                }
            }
        }
    }

    static String cause(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null) {
            root = root.getCause();
        }
        return root.getClass().getSimpleName();
    }

    static void rewind(KafkaConsumer<byte[], byte[]> c) {
        Set<TopicPartition> assigned = c.assignment();
        Map<TopicPartition, OffsetAndMetadata> offsets = c.committed(assigned, API);
        for (TopicPartition tp : assigned) {
            OffsetAndMetadata om = offsets.get(tp);
            if (om == null) {
                c.seekToBeginning(List.of(tp));
            } else {
                c.seek(tp, om.offset());
            }
        }
    }
}
