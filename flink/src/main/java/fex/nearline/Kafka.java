package fex.nearline;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.lineage.DefaultKafkaDatasetFacet;
import org.apache.flink.connector.kafka.lineage.DefaultKafkaDatasetIdentifier;
import org.apache.flink.connector.kafka.lineage.KafkaDatasetFacet;
import org.apache.flink.connector.kafka.lineage.KafkaDatasetFacetProvider;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.sink.TransactionNamingStrategy;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.KafkaSourceBuilder;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * The job's Kafka ends. Inputs: a topic of LoggedRequest records (fex-server's {@code --request-log-kafka}, keyed by
 * user id) and a topic of action JSON lines, read from the earliest offset, {@code read_committed}, parsed in the
 * source (watermarks per partition), a bad record reported by topic, partition and offset. Outputs: {@code PREFIX.joined}, {@code PREFIX.samples},
 * {@code PREFIX.manifest} and {@code PREFIX.corrections}, written in Kafka transactions committed on checkpoints
 * (exactly once for {@code read_committed} readers).
 */
final class Kafka {
    static final String SCHEME = "kafka://";
    /** Within the broker's default transaction.max.timeout.ms (15 minutes). */
    static final String TRANSACTION_TIMEOUT_MS = "600000";

    private Kafka() {}

    static boolean named(String path) {
        return path.startsWith(SCHEME);
    }

    static String topic(String path) {
        return path.substring(SCHEME.length());
    }

    /** The output topics for {@code --out kafka://PREFIX}. */
    static List<String> outputs(String prefix, boolean correction) {
        List<String> topics = new ArrayList<>(List.of(prefix + ".joined", prefix + ".samples", prefix + ".manifest"));
        if (correction) {
            topics.add(prefix + ".corrections");
        }
        return topics;
    }

    /**
     * Checks, before the job is built, that the brokers answer and every topic exists: an unreachable broker or a
     * missing topic is an error naming them, not a job that waits.
     */
    static void check(String brokers, List<String> topics, Duration timeout) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(timeout.toMillis()));
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Long.toString(timeout.toMillis()));
        Set<String> existing;
        try (Admin admin = Admin.create(p)) {
            existing = admin.listTopics().names().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            throw new Unavailable("cannot reach the Kafka brokers " + brokers + " in " + timeout.toSeconds() + " s"
                    + (e.getCause() != null ? ": " + e.getCause().getMessage() : ""));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Unavailable("interrupted while reaching the Kafka brokers " + brokers);
        }
        List<String> missing = topics.stream().filter(t -> !existing.contains(t)).toList();
        if (!missing.isEmpty()) {
            throw new IllegalArgumentException("no such Kafka topic on " + brokers + ": " + String.join(", ", missing)
                    + " (create it first)");
        }
    }

    /** The brokers cannot be reached: exit status 69, as fex-server's. */
    static final class Unavailable extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Unavailable(String message) {
            super(message);
        }
    }

    /**
     * A topic of logged requests ({@code requests}) or action lines, parsed into events inside the source, so that
     * its watermarks are per partition: Flink's Kafka source takes the least of its partitions' watermarks, and a
     * partition read ahead of another does not make the other's records late.
     */
    static BoundedRestore<Event> source(String brokers, String topic, String group, boolean bounded, Parse.Spec spec) {
        KafkaSourceBuilder<Event> b = KafkaSource.<Event>builder()
                .setBootstrapServers(brokers)
                .setTopics(topic)
                .setGroupId(group)
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setDeserializer(new Events(spec))
                .setProperty("isolation.level", "read_committed")
                // A restored job continues from its checkpoint; committed offsets only show progress.
                .setProperty("commit.offsets.on.checkpoint", "true");
        if (bounded) {
            // A backfill from Kafka: up to each partition's end at the start, then the job finishes.
            b.setBounded(OffsetsInitializer.latest());
        }
        return new BoundedRestore<>(b.build());
    }

    /** Kafka records as events: each as a {@link LocatedRecords} element, then through {@link Parse}. */
    private static final class Events implements KafkaRecordDeserializationSchema<Event> {
        private static final long serialVersionUID = 1L;
        private final Parse.Spec spec;
        private transient Parse.Parser parser;

        Events(Parse.Spec spec) {
            this.spec = spec;
        }

        @Override
        public void open(DeserializationSchema.InitializationContext context) {
            // Held for the source reader's life: the schema has no close.
            parser = spec.open(context.getMetricGroup());
        }

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> r, Collector<Event> out) {
            byte[] value = r.value() == null ? new byte[0] : r.value();
            byte[] source = (Json.KAFKA + r.topic()).getBytes(StandardCharsets.UTF_8);
            parser.emit(LocatedRecords.pack(source, r.partition(), r.offset(), value, 0, value.length), out);
        }

        @Override
        public TypeInformation<Event> getProducedType() {
            return TypeInformation.of(Event.class);
        }
    }

    /** An exactly-once sink of keyed records to {@code topic}. */
    static KafkaSink<Keyed> sink(String brokers, String topic, String transactionalIdPrefix) {
        return KafkaSink.<Keyed>builder()
                .setBootstrapServers(brokers)
                .setRecordSerializer(new Serializer(topic))
                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .setTransactionalIdPrefix(transactionalIdPrefix)
                // Transactional ids from a pool kept in the sink's state (FLIP-511), not one new id per checkpoint:
                // a restore then aborts exactly the transactions the state names instead of probing for them.
                .setTransactionNamingStrategy(TransactionNamingStrategy.POOLING)
                // A broker down for a while stalls the writers instead of failing them: records and blocked sends
                // wait as long as the open transaction may (Kafka's defaults, 2 minutes and 1, failed the task, and
                // the connector's writers then took the local TaskManager down with them, restarts or not).
                //
                // Batches of up to 1 MiB, held up to 50 ms: records become visible only when the checkpoint commits
                // their transaction, so waiting to fill a batch costs no latency a reader sees, and a produce
                // request carries up to 50 ms of records instead of the few that Kafka's default batch (16 KiB, sent
                // after 5 ms) held: a 30-row request's samples are about 4.2 KB, its joined records 1.3 KB.
                .setKafkaProducerConfig(properties(Map.of("transaction.timeout.ms", TRANSACTION_TIMEOUT_MS,
                        "delivery.timeout.ms", TRANSACTION_TIMEOUT_MS, "max.block.ms", TRANSACTION_TIMEOUT_MS,
                        "batch.size", Integer.toString(1 << 20), "linger.ms", "50")))
                .build();
    }

    private static Properties properties(Map<String, String> m) {
        Properties p = new Properties();
        p.putAll(m);
        return p;
    }

    /**
     * A record to {@code topic}, keyed by user id (or without a key), timestamped when it is written: the element's
     * event time may be none (a bad record's) or the end of time (batch execution's), which Kafka refuses.
     */
    private static final class Serializer implements KafkaRecordSerializationSchema<Keyed>, KafkaDatasetFacetProvider {
        private static final long serialVersionUID = 1L;
        private final String topic;

        Serializer(String topic) {
            this.topic = topic;
        }

        @Override
        public ProducerRecord<byte[], byte[]> serialize(Keyed r, KafkaSinkContext context, Long timestamp) {
            byte[] key = r.key == null ? null : r.key.getBytes(StandardCharsets.UTF_8);
            return new ProducerRecord<>(topic, null, null, key, r.value);
        }

        /** The topic, which the sink's pooled transactional ids need to know (POOLING). */
        @Override
        public Optional<KafkaDatasetFacet> getKafkaDatasetFacet() {
            return Optional.of(new DefaultKafkaDatasetFacet(DefaultKafkaDatasetIdentifier.ofTopics(List.of(topic))));
        }
    }
}
