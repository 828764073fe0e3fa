package fex.nearline;

import fex.jni.FexException;
import fex.jni.Plan;
import fex.jni.RequestKeys;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonProcessingException;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/**
 * The job's two parsers: logged requests (read with the model's {@code label_join:} keys, through the library) and
 * action lines (JSON). A record that does not parse becomes a manifest line saying where it was and why, and the job
 * goes on. In batch execution each record is followed by its user's {@link Event#END}.
 */
final class Parse {
    /** Event times are bounded so that a time plus {@code after} or {@code retention} stays a long. */
    static final long MAX_TIME_MS = 1L << 62;

    static final String BAD_REQUEST = "bad_request";
    static final String BAD_ACTION = "bad_action";
    static final List<String> ACTION_KEYS = List.of("user_id", "request_id", "item_id", "action", "event_time");

    private Parse() {}

    static String clip(String text) {
        return text.length() <= 300 ? text : text.substring(0, 300) + "...";
    }

    /** A request element of {@link FramedRecords}: where it was, and the LoggedRequest bytes. */
    static Request located(byte[] element) {
        ByteBuffer b = ByteBuffer.wrap(element).order(ByteOrder.LITTLE_ENDIAN);
        int n = b.getInt();
        Request r = new Request();
        r.source = new String(element, 4, n, StandardCharsets.UTF_8);
        r.index = b.getLong(4 + n);
        r.offset = b.getLong(4 + n + 8);
        r.logged = Arrays.copyOfRange(element, 4 + n + 16, element.length);
        return r;
    }

    /** Logged requests (elements of {@link FramedRecords}) to events. */
    static final class Requests extends ProcessFunction<byte[], Event> {
        private static final long serialVersionUID = 1L;
        private final String yaml;
        private final String baseDir;
        private final boolean batch;
        private transient Plan plan;
        private transient Counter read;

        Requests(String yaml, String baseDir, boolean batch) {
            this.yaml = yaml;
            this.baseDir = baseDir;
            this.batch = batch;
        }

        @Override
        public void open(OpenContext context) {
            plan = Plan.fromYaml(yaml, Path.of(baseDir));
            read = getRuntimeContext().getMetricGroup().counter("requests_read");
        }

        @Override
        public void close() {
            if (plan != null) {
                plan.close();
            }
        }

        @Override
        public void processElement(byte[] element, Context ctx, Collector<Event> out) {
            read.inc();
            Request r = located(element);
            RequestKeys k;
            try {
                k = plan.requestKeys(r.logged);
            } catch (FexException e) {
                Json line = new Json().where(r).put("kind", BAD_REQUEST).put("error", clip(e.getMessage()));
                if (e.offset() >= 0) {
                    line.put("offset_in_record", e.offset());
                }
                ctx.output(LabelJoin.MANIFEST, line.toString());
                return;
            }
            if (k.timeMs() < 0 || k.timeMs() >= MAX_TIME_MS) {
                ctx.output(LabelJoin.MANIFEST, new Json().where(r).put("kind", BAD_REQUEST)
                        .put("error", "request time " + k.timeMs() + " ms is outside [0, 2^62)").toString());
                return;
            }
            r.requestId = k.requestId();
            r.userId = k.userId();
            r.timeMs = k.timeMs();
            r.refresh = k.refresh();
            r.itemIds = new java.util.ArrayList<>(k.itemIds());
            out.collect(Event.of(r));
            if (batch) {
                // The end of this user's input, sorted after every record of theirs; one per record, as no
                // operator here knows a user's last one.
                out.collect(Event.end(r.userId));
            }
        }
    }

    /** Action lines (JSON objects) to events. */
    static final class Actions extends ProcessFunction<String, Event> {
        private static final long serialVersionUID = 1L;
        private final boolean batch;
        private transient ObjectMapper json;
        private transient Counter read;

        Actions(boolean batch) {
            this.batch = batch;
        }

        @Override
        public void open(OpenContext context) {
            json = new ObjectMapper();
            read = getRuntimeContext().getMetricGroup().counter("actions_read");
        }

        @Override
        public void processElement(String line, Context ctx, Collector<Event> out) {
            read.inc();
            Action a;
            try {
                a = action(json, line);
            } catch (IllegalArgumentException e) {
                ctx.output(LabelJoin.MANIFEST, new Json().put("kind", BAD_ACTION).put("error", e.getMessage())
                        .put("line", clip(line)).toString());
                return;
            }
            out.collect(Event.of(a));
            if (batch) {
                // A user may have actions and no request: their actions are still reported (unmatched) at the end.
                out.collect(Event.end(a.userId));
            }
        }
    }

    /**
     * One action event, a JSON object on one line: {@code user_id}, {@code request_id}, {@code item_id} (strings or
     * non-negative integers), {@code action} (an int32) and {@code event_time} (integer milliseconds since the epoch,
     * in [0, 2^62)). Other keys are ignored. Throws IllegalArgumentException naming what is wrong.
     */
    static Action action(ObjectMapper json, String line) {
        JsonNode event;
        try {
            event = json.readTree(line);
        } catch (JsonProcessingException e) {
            String m = e.getOriginalMessage();
            throw new IllegalArgumentException("not JSON: " + clip(m == null ? e.toString() : m.lines().findFirst().orElse("")));
        }
        if (event == null || event.isMissingNode()) {
            throw new IllegalArgumentException("not JSON: an empty line");
        }
        if (!event.isObject()) {
            throw new IllegalArgumentException("not a JSON object but " + event.getNodeType().toString().toLowerCase());
        }
        List<String> missing = ACTION_KEYS.stream().filter(k -> !event.has(k)).toList();
        if (!missing.isEmpty()) {
            throw new IllegalArgumentException("missing " + String.join(", ", missing));
        }
        String[] ids = new String[3];
        for (int i = 0; i < 3; i++) {
            String key = ACTION_KEYS.get(i);
            JsonNode v = event.get(key);
            if (v.isTextual()) {
                ids[i] = v.textValue();
            } else if (v.isIntegralNumber() && v.bigIntegerValue().signum() >= 0) {
                ids[i] = v.bigIntegerValue().toString();
            } else {
                throw new IllegalArgumentException(clip(key + " must be a string or a non-negative integer, not " + v));
            }
            if (ids[i].isEmpty()) {
                throw new IllegalArgumentException(key + " is empty");
            }
        }
        JsonNode action = event.get("action");
        JsonNode time = event.get("event_time");
        if (!action.isIntegralNumber() || !action.canConvertToInt()) {
            throw new IllegalArgumentException(clip("action must be an int32, not " + action));
        }
        if (!time.isIntegralNumber() || !time.canConvertToLong() || time.longValue() < 0
                || time.longValue() >= MAX_TIME_MS) {
            throw new IllegalArgumentException(clip("event_time must be integer milliseconds in [0, 2^62), not " + time));
        }
        return new Action(time.longValue(), ids[1], ids[2], action.intValue(), ids[0]);
    }
}
