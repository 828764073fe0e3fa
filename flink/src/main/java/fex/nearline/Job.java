package fex.nearline;

import fex.jni.FexException;
import fex.jni.Plan;
import fex.jni.TablePlan;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.util.OutputTag;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import fex.nearline.Rules.Settings;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.Encoder;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.connector.file.src.FileSource;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.filesystem.OutputFileConfig;
import org.apache.flink.streaming.api.functions.sink.filesystem.bucketassigners.BasePathBucketAssigner;
import org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.OnCheckpointRollingPolicy;

/**
 * The near-line label join as a Flink job: fex-server's request logs (PBDataset-framed LoggedRequest records, files or
 * a Kafka topic) and actions (JSON lines, files or a Kafka topic) in; under {@code --out}, through Flink's FileSink
 * (part files committed on checkpoints, so a restored job writes no row twice), or to Kafka topics {@code PREFIX.NAME}
 * in transactions committed on checkpoints ({@link Kafka}):
 *
 * <ul>
 *   <li>{@code joined/}: the emitted requests' samples with their actions in LineId.actions, framed, what {@code fex
 *       extract} reads;
 *   <li>{@code samples/}: those through the model's {@code offline:} transforms and extraction, framed
 *       {@code fex.v1.ExtractResponse} records, the bytes {@code fex extract --format responses} writes for them;
 *   <li>{@code manifest/}: one JSON line per emitted request, late, unmatched or unknown-item action, duplicate
 *       request and bad input record;
 *   <li>{@code corrections/} ({@code late_actions: correction}): one JSON line per late action.
 * </ul>
 *
 * <p>With {@code --iceberg-warehouse} the samples go instead to the model's Iceberg sample table as rows, committed on
 * checkpoints by Iceberg's own Flink sink ({@link SampleTable}).
 *
 * <p>{@code python -m fex.nearline} runs it on a local mini-cluster and prints the summary; {@code flink run
 * fex-flink.jar --config ... } submits it to a cluster. Exit status of {@link #main}: 0 done, 64 arguments or a config
 * that cannot be used, 69 Kafka brokers or an Iceberg catalog that cannot be reached, 70 the job failed (its cause on stderr).
 */
public final class Job {
    public static final int EX_USAGE = 64;
    public static final int EX_SOFTWARE = 70;
    public static final int EX_UNAVAILABLE = 69;

    /** The command line, as {@code python -m fex.nearline} passes it (durations in milliseconds). */
    public static final class Options {
        public Path config;
        public List<String> requests = new ArrayList<>();
        public List<String> actions = new ArrayList<>();
        public String out;
        public boolean batch;
        public int parallelism = 1;
        public long checkpointMs = 5000;
        public String checkpointDir;
        public String restore;
        public long monitorMs;
        public long idlenessMs;
        public int restartAttempts;
        public long maxRecordBytes = 64L << 20;
        public String stateBackend = "rocksdb";
        /** Kafka's bootstrap servers, for kafka://TOPIC inputs and a kafka://PREFIX output. */
        public String brokers;
        public String kafkaGroup = "fex-nearline";
        public String transactionalIdPrefix;
        /** Kafka inputs are read up to their end at the start, then the job finishes. */
        public boolean bounded;
        /** The benchmark's floor ({@link Floor}) instead of the join; nothing is written. */
        public boolean floor;
        public long kafkaTimeoutMs = 30_000;
        /** Events a second read from each input at most (0: as fast as the job goes). */
        public double maxRatePerInput;
        /** The samples go to the Iceberg sample table in this warehouse ({@link SampleTable}), not to files or Kafka. */
        public String icebergWarehouse;
        /** The sample table, namespace.table. */
        public String icebergTable;
        /** The catalog's URI; by default the SQLite file catalog.db in the warehouse. */
        public String icebergCatalog;
        /** The joined-request ("Shitu") table, namespace.table: one row per emitted request; none when null. */
        public String icebergShituTable;
        /** Catalog and file-IO properties, KEY=VALUE ({@code --iceberg-property}, repeatable). */
        public List<String> icebergProperties = new ArrayList<>();

        static final String USAGE = "usage: fex.nearline.Job --config MODEL.yaml --requests PATH... --actions PATH... "
                + "--out DIR [--batch] [--parallelism N] [--checkpoint-interval-ms MS] [--checkpoint-dir DIR] "
                + "[--restore CHECKPOINT] [--monitor-ms MS] [--idleness-ms MS] [--restart-attempts N] "
                + "[--max-record-bytes N] [--floor] [--state-backend rocksdb|hashmap] [--brokers HOST:PORT,...] "
                + "[--kafka-group ID] [--transactional-id-prefix P] [--bounded] [--kafka-timeout-ms MS] "
                + "[--max-rate-per-input EVENTS_PER_SECOND] [--iceberg-warehouse DIR --iceberg-table NS.NAME "
                + "[--iceberg-catalog URI] [--iceberg-shitu-table NS.NAME] [--iceberg-property KEY=VALUE]...]\n"
                + "  a path kafka://TOPIC reads a topic; --out kafka://PREFIX writes PREFIX.joined, PREFIX.samples, "
                + "PREFIX.manifest (and PREFIX.corrections)";

        public static Options parse(String[] args) {
            Options o = new Options();
            for (int i = 0; i < args.length; i++) {
                String flag = args[i];
                if (flag.equals("--batch")) {
                    o.batch = true;
                    continue;
                }
                if (flag.equals("--bounded")) {
                    o.bounded = true;
                    continue;
                }
                if (flag.equals("--floor")) {
                    o.floor = true;
                    continue;
                }
                if (flag.equals("--requests") || flag.equals("--actions")) {
                    List<String> to = flag.equals("--requests") ? o.requests : o.actions;
                    while (i + 1 < args.length && !args[i + 1].startsWith("--")) {
                        to.add(args[++i]);
                    }
                    if (to.isEmpty()) {
                        throw new IllegalArgumentException(flag + " needs at least one path");
                    }
                    continue;
                }
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(flag + " needs a value");
                }
                String v = args[++i];
                switch (flag) {
                    case "--config" -> o.config = Path.of(v);
                    case "--out" -> o.out = v;
                    case "--parallelism" -> o.parallelism = (int) number(flag, v, 1, 1 << 15);
                    case "--checkpoint-interval-ms" -> o.checkpointMs = number(flag, v, 10, Long.MAX_VALUE);
                    case "--checkpoint-dir" -> o.checkpointDir = v;
                    case "--restore" -> o.restore = v;
                    case "--monitor-ms" -> o.monitorMs = number(flag, v, 1, Long.MAX_VALUE);
                    case "--idleness-ms" -> o.idlenessMs = number(flag, v, 1, Long.MAX_VALUE);
                    case "--restart-attempts" -> o.restartAttempts = (int) number(flag, v, 0, Integer.MAX_VALUE);
                    case "--max-record-bytes" -> o.maxRecordBytes = number(flag, v, 1, Integer.MAX_VALUE - (1 << 16));
                    case "--brokers" -> o.brokers = v;
                    case "--kafka-group" -> o.kafkaGroup = v;
                    case "--transactional-id-prefix" -> o.transactionalIdPrefix = v;
                    case "--kafka-timeout-ms" -> o.kafkaTimeoutMs = number(flag, v, 1, Long.MAX_VALUE);
                    case "--max-rate-per-input" -> o.maxRatePerInput = number(flag, v, 1, Long.MAX_VALUE);
                    case "--iceberg-warehouse" -> o.icebergWarehouse = v;
                    case "--iceberg-table" -> o.icebergTable = v;
                    case "--iceberg-catalog" -> o.icebergCatalog = v;
                    case "--iceberg-shitu-table" -> o.icebergShituTable = v;
                    case "--iceberg-property" -> o.icebergProperties.add(SampleTable.property(v));
                    case "--state-backend" -> {
                        if (!v.equals("rocksdb") && !v.equals("hashmap")) {
                            throw new IllegalArgumentException("--state-backend is rocksdb or hashmap, not " + v);
                        }
                        o.stateBackend = v;
                    }
                    default -> throw new IllegalArgumentException("unknown flag " + flag);
                }
            }
            List<String> missing = new ArrayList<>();
            if (o.config == null) {
                missing.add("--config");
            }
            if (o.requests.isEmpty()) {
                missing.add("--requests");
            }
            if (o.actions.isEmpty()) {
                missing.add("--actions");
            }
            if (o.out == null) {
                missing.add("--out");
            }
            if (!missing.isEmpty()) {
                throw new IllegalArgumentException("missing " + String.join(", ", missing));
            }
            if (o.batch && (o.monitorMs > 0 || o.restore != null || o.checkpointDir != null)) {
                throw new IllegalArgumentException(
                        "--monitor-ms, --restore and --checkpoint-dir are for streaming execution, not --batch");
            }
            if (o.icebergWarehouse == null && (o.icebergTable != null || o.icebergCatalog != null
                    || o.icebergShituTable != null || !o.icebergProperties.isEmpty())) {
                throw new IllegalArgumentException("--iceberg-table, --iceberg-shitu-table, --iceberg-catalog and "
                        + "--iceberg-property need --iceberg-warehouse");
            }
            if (o.icebergWarehouse != null && o.icebergTable == null) {
                throw new IllegalArgumentException("--iceberg-warehouse needs --iceberg-table (namespace.table)");
            }
            if (o.floor && o.icebergWarehouse != null) {
                throw new IllegalArgumentException("--floor (the benchmark's floor) writes nothing: no --iceberg-*");
            }
            if (o.floor && (o.batch || Kafka.named(o.out))) {
                throw new IllegalArgumentException("--floor (the benchmark's floor) is for streaming over files");
            }
            List<String> kafka = new ArrayList<>();
            for (String p : o.requests) {
                if (Kafka.named(p)) {
                    kafka.add(p);
                }
            }
            for (String p : o.actions) {
                if (Kafka.named(p)) {
                    kafka.add(p);
                }
            }
            if (Kafka.named(o.out)) {
                kafka.add(o.out);
            }
            if (!kafka.isEmpty() && o.brokers == null) {
                throw new IllegalArgumentException(String.join(", ", kafka) + ": Kafka needs --brokers");
            }
            for (List<String> given : List.of(o.requests, o.actions)) {
                if (given.stream().anyMatch(Kafka::named) && given.size() > 1) {
                    throw new IllegalArgumentException("a Kafka topic is read alone, not with other paths: " + given);
                }
            }
            if (Kafka.named(o.out) && !o.batch && o.checkpointDir == null) {
                throw new IllegalArgumentException("--out " + o.out + " needs --checkpoint-dir: a streaming job "
                        + "writing Kafka commits its transactions on checkpoints, kept there");
            }
            if (o.batch && !kafka.isEmpty()) {
                o.bounded = true;
            }
            return o;
        }

        private static long number(String flag, String v, long min, long max) {
            long n;
            try {
                n = Long.parseLong(v);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(flag + " takes a whole number, not " + v);
            }
            if (n < min || n > max) {
                throw new IllegalArgumentException(flag + " must be in " + min + ".." + max + ", not " + n);
            }
            return n;
        }
    }

    private Job() {}

    public static void main(String[] args) {
        System.exit(run(args, System.err));
    }

    /** Runs the job to its end; returns the exit status, errors written to {@code err}. */
    public static int run(String[] args, PrintStream err) {
        Options o;
        StreamExecutionEnvironment env;
        try {
            o = Options.parse(args);
            env = build(o);
        } catch (Kafka.Unavailable e) {
            err.println("error: " + e.getMessage());
            return EX_UNAVAILABLE;
        } catch (IllegalArgumentException | IOException | FexException e) {
            err.println("error: " + e.getMessage());
            if (e instanceof IllegalArgumentException && !(e instanceof FexException)) {
                err.println(Options.USAGE);
            }
            return EX_USAGE;
        } catch (RuntimeException e) {
            err.println("error: the Flink job could not be built: " + cause(e));
            return EX_SOFTWARE;
        }
        try {
            env.execute("fex label join");
        } catch (Exception e) {
            err.println("error: the Flink job failed: " + cause(e));
            return EX_SOFTWARE;
        }
        return 0;
    }

    /** The innermost cause's message: the reason, not the layers of Flink that passed it on. */
    static String cause(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String m = root.getMessage();
        return root.getClass().getName() + ": " + (m == null ? "" : m);
    }

    /** A path for Flink: a URI (hdfs://, s3://, file://) as given, a local path made absolute. */
    static String location(String path) {
        return path.contains("://") ? path : Path.of(path).toAbsolutePath().toString();
    }

    private static String uri(String path) {
        return path.contains("://") ? path : Path.of(path).toAbsolutePath().toUri().toString();
    }

    /** The job's environment, configured and with its graph, ready to execute. */
    public static StreamExecutionEnvironment build(Options o) throws IOException {
        String yaml;
        try {
            yaml = Files.readString(o.config, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IOException("cannot read the model config " + o.config + ": " + e, e);
        }
        Path base = o.config.toAbsolutePath().getParent();
        String baseDir = base == null ? "." : base.toString();
        fex.jni.LabelJoin section;
        try (Plan plan = Plan.fromYaml(yaml, Path.of(baseDir))) {
            section = plan.labelJoin();
        } catch (FexException e) {
            throw new IllegalArgumentException(o.config + ": " + e.getMessage());
        }
        if (section == null) {
            throw new IllegalArgumentException(o.config + ": the model config has no label_join: section");
        }

        boolean correction = section.lateActions().equals("correction");
        List<String> topics = new ArrayList<>();
        for (String p : o.requests.size() == 1 && Kafka.named(o.requests.get(0)) ? o.requests : List.<String>of()) {
            topics.add(Kafka.topic(p));
        }
        for (String p : o.actions.size() == 1 && Kafka.named(o.actions.get(0)) ? o.actions : List.<String>of()) {
            topics.add(Kafka.topic(p));
        }
        if (Kafka.named(o.out)) {
            for (String t : Kafka.outputs(Kafka.topic(o.out), correction)) {
                // With an Iceberg sample table the samples go there, not to PREFIX.samples.
                if (o.icebergWarehouse == null || !t.endsWith(".samples")) {
                    topics.add(t);
                }
            }
        }
        if (!topics.isEmpty()) {
            Kafka.check(o.brokers, topics, Duration.ofMillis(o.kafkaTimeoutMs));
        }
        SampleTable sampleTable = null;
        org.apache.iceberg.Schema tableSchema = null;
        Map<String, String> tableSummary = Map.of();
        if (o.icebergWarehouse != null) {
            sampleTable = new SampleTable(o.icebergWarehouse, o.icebergTable, o.icebergCatalog, o.icebergProperties);
            List<String> columns;
            try (TablePlan plan = TablePlan.fromYaml(yaml, Path.of(baseDir))) {
                columns = plan.columns();
                tableSummary = plan.summary();
            } catch (FexException e) {
                throw new IllegalArgumentException(o.config + ": " + e.getMessage());
            }
            tableSchema = sampleTable.load(columns, o.config.toString(), "model's samples").schema();
        }
        SampleTable shituTable = null;
        org.apache.iceberg.Schema shituSchema = null;
        if (o.icebergShituTable != null) {
            shituTable = new SampleTable(o.icebergWarehouse, o.icebergShituTable, o.icebergCatalog, o.icebergProperties);
            shituSchema = shituTable.load(SampleTable.SHITU_COLUMNS, o.config.toString(), "joined requests")
                    .schema();
        }
        OutputTag<RowData> shituRows = null;
        if (shituSchema != null) {
            shituRows = new OutputTag<>("shitu", InternalTypeInfo.of(FlinkSchemaUtil.convert(shituSchema)));
        }

        Map<String, String> conf = new HashMap<>();
        // By default a failure (a torn file) ends the job with its cause instead of restarting it forever.
        if (o.restartAttempts > 0) {
            conf.put("restart-strategy.type", "fixed-delay");
            conf.put("restart-strategy.fixed-delay.attempts", Integer.toString(o.restartAttempts));
            conf.put("restart-strategy.fixed-delay.delay", "10 s");
        } else {
            conf.put("restart-strategy.type", "none");
        }
        conf.put("state.backend.type", o.stateBackend);
        if (o.stateBackend.equals("rocksdb")) {
            // Timers on the heap, snapshotted with the checkpoint: a user's wake-ups are few and bounded by what waits,
            // and in RocksDB each registration was a write and each firing a seek.
            conf.put("state.backend.rocksdb.timer-service.factory", "HEAP");
        }
        if (!o.batch) {
            // Checkpoints go to files, under OUT/_checkpoints unless told where, and are kept when the job dies so
            // that it can be restored (--restore).
            String dir = o.checkpointDir != null ? o.checkpointDir : location(o.out).replaceAll("/+$", "") + "/_checkpoints";
            conf.put("execution.checkpointing.dir", uri(dir));
            conf.put("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
            conf.put("execution.checkpointing.interval", o.checkpointMs + " ms");
        }
        if (o.restore != null) {
            conf.put("execution.state-recovery.path", uri(o.restore));
        }
        if (!o.batch) {
            // Chained operators hand records on as they are instead of a deep copy through the serializer per hop
            // (Flink's POJO copy, by reflection, was 15% of the action source's thread). Every operator of the job
            // makes a new record for what it emits and changes none it received, and records from the network are
            // always read into new objects. Not in batch execution, whose sorted inputs may reuse the objects they
            // hand out, which the join's state would keep.
            conf.put("pipeline.object-reuse", "true");
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(Configuration.fromMap(conf));
        env.setParallelism(o.parallelism);
        env.setRuntimeMode(o.batch ? RuntimeExecutionMode.BATCH : RuntimeExecutionMode.STREAMING);

        WatermarkStrategy<Event> watermarks = watermarks(section, o.idlenessMs);
        DataStream<Event> requestStream = input(env, o, o.requests, true, yaml, baseDir, watermarks);
        DataStream<Event> actionStream = input(env, o, o.actions, false, yaml, baseDir, watermarks);
        if (o.floor) {
            Floor.wire(requestStream, actionStream);
            return env;
        }
        Outputs outputs = wire(yaml, baseDir, section, o.batch, sampleTable != null, shituRows, requestStream,
                actionStream);
        if (sampleTable != null) {
            sampleTable.sink(outputs.samples, tableSchema, tableSummary, o.parallelism);
        }
        if (shituTable != null) {
            shituTable.append(outputs.shitu, tableSummary, o.parallelism, "shitu-iceberg");
        }
        if (Kafka.named(o.out)) {
            String prefix = Kafka.topic(o.out);
            // One transactional id prefix per output; stable across restores of this job, distinct between jobs
            // writing the same brokers (--transactional-id-prefix when two jobs write one PREFIX).
            String tx = o.transactionalIdPrefix != null ? o.transactionalIdPrefix : "fex-nearline-" + prefix;
            outputs.joined.sinkTo(Kafka.sink(o.brokers, prefix + ".joined", tx + "-joined")).name("joined")
                    .uid("joined-kafka");
            if (sampleTable == null) {
                outputs.samples.sinkTo(Kafka.sink(o.brokers, prefix + ".samples", tx + "-samples")).name("samples")
                        .uid("samples-kafka");
            }
            outputs.manifest.map(Job::unkeyed, TypeInformation.of(Keyed.class)).name("manifest records")
                    .sinkTo(Kafka.sink(o.brokers, prefix + ".manifest", tx + "-manifest")).name("manifest")
                    .uid("manifest-kafka");
            if (correction) {
                outputs.corrections.map(Job::unkeyed, TypeInformation.of(Keyed.class)).name("correction records")
                        .sinkTo(Kafka.sink(o.brokers, prefix + ".corrections", tx + "-corrections"))
                        .name("corrections").uid("corrections-kafka");
            }
            return env;
        }
        String out = location(o.out).replaceAll("/+$", "");
        outputs.joined.sinkTo(sink(out + "/joined", new RawBytesEncoder(), ".pb")).name("joined").uid("joined-files");
        if (sampleTable == null) {
            outputs.samples.sinkTo(sink(out + "/samples", new RawBytesEncoder(), ".responses")).name("samples")
                    .uid("samples-files");
        }
        outputs.manifest.sinkTo(sink(out + "/manifest", new LineEncoder(), ".jsonl")).name("manifest")
                .uid("manifest-files");
        outputs.corrections.sinkTo(sink(out + "/corrections", new LineEncoder(), ".jsonl"))
                .name("corrections").uid("corrections-files");
        return env;
    }

    private static Keyed unkeyed(byte[] line) {
        return new Keyed(null, line);
    }

    /**
     * Events of a Kafka topic, or of files read in name order, parsed ({@code requests}: logged requests, else action
     * lines) and with event-time watermarks.
     */
    private static DataStream<Event> input(StreamExecutionEnvironment env, Options o, List<String> given,
            boolean requests, String yaml, String baseDir, WatermarkStrategy<Event> watermarks) {
        String name = requests ? "requests" : "actions";
        Parse.Spec spec = new Parse.Spec(requests, yaml, baseDir, o.batch);
        if (Kafka.named(given.get(0))) {
            String topic = Kafka.topic(given.get(0));
            return throttled(o, name, env.fromSource(
                    Kafka.source(o.brokers, topic, o.kafkaGroup + "-" + name, o.bounded, spec),
                    watermarks, name + " (kafka " + topic + ")").uid(name + "-kafka"));
        }
        LocatedRecords format = requests ? new FramedRecords(o.maxRecordBytes) : new JsonLines(o.maxRecordBytes);
        FileSource.FileSourceBuilder<byte[]> files = FileSource.forBulkFileFormat(format, paths(given));
        // Files in name order (request logs are named by time), so event time moves forward with the reading.
        files.setSplitAssigner(OrderedSplitAssigner.provider());
        if (o.monitorMs > 0) {
            files.monitorContinuously(Duration.ofMillis(o.monitorMs));
        }
        return throttled(o, name, env.fromSource(files.build(), WatermarkStrategy.noWatermarks(), name + " (files)").uid(name + "-files")
                .process(new Parse.Events(spec), TypeInformation.of(Event.class))
                .name("parse " + name)
                .assignTimestampsAndWatermarks(watermarks));
    }

    /** {@code events} held to {@code --max-rate-per-input}, shared among the input's subtasks (chained to them). */
    private static DataStream<Event> throttled(Options o, String name, DataStream<Event> events) {
        if (o.maxRatePerInput <= 0) {
            return events;
        }
        return events.map(new Throttle(o.maxRatePerInput / o.parallelism), events.getType())
                .name("at most " + (long) o.maxRatePerInput + " " + name + " a second");
    }

    /** Event time: at most {@code watermark_delay} out of order; {@code idlenessMs} lets a quiet input go. */
    static WatermarkStrategy<Event> watermarks(fex.jni.LabelJoin section, long idlenessMs) {
        WatermarkStrategy<Event> w = WatermarkStrategy
                .<Event>forBoundedOutOfOrderness(Duration.ofMillis(section.watermarkDelayMs()))
                .withTimestampAssigner((e, t) -> e.time);
        return idlenessMs > 0 ? w.withIdleness(Duration.ofMillis(idlenessMs)) : w;
    }

    private static org.apache.flink.core.fs.Path[] paths(List<String> given) {
        return given.stream().map(p -> new org.apache.flink.core.fs.Path(location(p)))
                .toArray(org.apache.flink.core.fs.Path[]::new);
    }

    private static <T> FileSink<T> sink(String dir, Encoder<T> encoder, String suffix) {
        return FileSink.forBulkFormat(new org.apache.flink.core.fs.Path(dir), new BufferedRecords<>(encoder))
                .withBucketAssigner(new BasePathBucketAssigner<>())
                .withRollingPolicy(OnCheckpointRollingPolicy.build())
                .withOutputFileConfig(OutputFileConfig.builder().withPartPrefix("part").withPartSuffix(suffix).build())
                .build();
    }

    /** What the join writes: joined and sample records (framed bytes), manifest and correction lines. */
    public record Outputs(
            DataStream<Keyed> joined, DataStream<Keyed> samples, DataStream<byte[]> manifest,
            DataStream<byte[]> corrections, DataStream<RowData> shitu) {}

    /**
     * The join of request and action events (parsed, with watermarks; bad records as {@link Event#BAD} events): the
     * rules in {@link LabelJoin} keyed by user, the samples through the library in {@link Compute}.
     */
    public static Outputs wire(String yaml, String baseDir, fex.jni.LabelJoin section, boolean batch,
            boolean tableRows, OutputTag<RowData> shituRows, DataStream<Event> requests, DataStream<Event> actions) {
        Settings settings = new Settings(section.requestsBack(), section.afterMs(), section.retentionMs());
        boolean correction = section.lateActions().equals("correction");
        TypeInformation<Event> eventType = TypeInformation.of(Event.class);
        SingleOutputStreamOperator<Event> goodRequests =
                requests.process(new Parse.Route(), eventType).name("bad requests out");
        SingleOutputStreamOperator<Event> goodActions =
                actions.process(new Parse.Route(), eventType).name("bad actions out");
        DataStream<Event> events = goodRequests.union(goodActions);
        SingleOutputStreamOperator<Joined> joined = events.keyBy((Event e) -> e.userId, org.apache.flink.api.common.typeinfo.Types.STRING)
                .transform("label join", TypeInformation.of(Joined.class),
                        new LabelJoin.Operator(new LabelJoin(settings, correction, batch)))
                .uid("label-join");
        SingleOutputStreamOperator<Keyed> computed = joined.process(new Compute(yaml, baseDir, tableRows, shituRows,
                        shituRows == null ? null : SampleTable.SHITU_COLUMNS.toArray(new String[0])),
                TypeInformation.of(Keyed.class)).name("sample computation");
        DataStream<byte[]> manifest = computed.getSideOutput(LabelJoin.MANIFEST).union(
                joined.getSideOutput(LabelJoin.MANIFEST),
                goodRequests.getSideOutput(LabelJoin.MANIFEST),
                goodActions.getSideOutput(LabelJoin.MANIFEST));
        return new Outputs(computed, computed.getSideOutput(Compute.SAMPLES), manifest,
                joined.getSideOutput(LabelJoin.CORRECTIONS),
                shituRows == null ? null : computed.getSideOutput(shituRows));
    }
}
