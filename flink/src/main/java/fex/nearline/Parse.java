package fex.nearline;

import fex.jni.FexException;
import fex.jni.Plan;
import fex.jni.RequestKeys;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonFactory;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonParser;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonProcessingException;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonToken;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/**
 * The job's two parsers: logged requests (read with the model's {@code label_join:} keys, through the library) and
 * action lines (JSON). A record that does not parse becomes a {@link Event#BAD} event holding the manifest line that
 * says where it was and why ({@link Route} sends it to the manifest), and the job goes on. In batch execution each
 * record is followed by its user's {@link Event#END}. Files are parsed by {@link Events} after their source; Kafka
 * records inside the source ({@link Kafka}), so that event time is tracked per partition.
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

    /** An element of {@link LocatedRecords}: where the record was, and its bytes. */
    record Located(String source, long index, long offset, byte[] payload) {}

    static Located located(byte[] element) {
        ByteBuffer b = ByteBuffer.wrap(element).order(ByteOrder.LITTLE_ENDIAN);
        int n = b.getInt();
        return new Located(new String(element, 4, n, StandardCharsets.UTF_8), b.getLong(4 + n), b.getLong(4 + n + 8),
                Arrays.copyOfRange(element, 4 + n + 16, element.length));
    }

    /** A logged request (an element of {@link LocatedRecords}) as an event, or a {@link Event#BAD} one. */
    static Event request(Plan plan, byte[] element) {
        Located at = located(element);
        Request r = new Request();
        r.source = at.source();
        r.index = at.index();
        r.offset = at.offset();
        r.logged = at.payload();
        RequestKeys k;
        try {
            k = plan.requestKeys(r.logged);
        } catch (FexException e) {
            Json line = new Json().where(r).put("kind", BAD_REQUEST).put("error", clip(e.getMessage()));
            if (e.offset() >= 0) {
                line.put("offset_in_record", e.offset());
            }
            return Event.bad(line.toString());
        }
        if (k.timeMs() < 0 || k.timeMs() >= MAX_TIME_MS) {
            return Event.bad(new Json().where(r).put("kind", BAD_REQUEST)
                    .put("error", "request time " + k.timeMs() + " ms is outside [0, 2^62)").toString());
        }
        r.requestId = k.requestId();
        r.userId = k.userId();
        r.timeMs = k.timeMs();
        r.refresh = k.refresh();
        r.itemIds = new ArrayList<>(k.itemIds());
        return Event.of(r);
    }

    /** An action line (an element of {@link LocatedRecords}) as an event, or a {@link Event#BAD} one. */
    static Event action(ObjectMapper json, byte[] element) {
        int start = 4 + ByteBuffer.wrap(element).order(ByteOrder.LITTLE_ENDIAN).getInt(0) + 16;
        Action fast = plainAction(element, start, element.length - start);
        if (fast == null) {
            fast = fastAction(json.getFactory(), element, start, element.length - start);
        }
        if (fast != null) {
            return Event.of(fast);
        }
        Located at = located(element);
        String line = new String(at.payload(), StandardCharsets.UTF_8);
        try {
            return Event.of(action(json, line));
        } catch (IllegalArgumentException e) {
            return Event.bad(new Json().where(at.source(), at.index(), at.offset()).put("kind", BAD_ACTION)
                    .put("error", e.getMessage()).put("line", clip(line)).toString());
        }
    }

    /**
     * The common case of {@link #action(ObjectMapper, String)} read token by token from the line's bytes, with no tree
     * and no copy: a well-formed action, or null for anything else (the tree reader then decides, and names what is
     * wrong). Accepts only what the tree reader accepts, with the same result; duplicate keys are left to it.
     */
    static Action fastAction(JsonFactory factory, byte[] bytes, int offset, int length) {
        try (JsonParser p = factory.createParser(bytes, offset, length)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return null;
            }
            String user = null;
            String request = null;
            String item = null;
            Integer action = null;
            long time = -1;
            JsonToken t;
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken v = p.nextToken();
                switch (name) {
                    // A key seen twice is left to the tree reader (the last one counts there).
                    case "user_id" -> {
                        if (user != null || (user = fastId(p, v)) == null) {
                            return null;
                        }
                    }
                    case "request_id" -> {
                        if (request != null || (request = fastId(p, v)) == null) {
                            return null;
                        }
                    }
                    case "item_id" -> {
                        if (item != null || (item = fastId(p, v)) == null) {
                            return null;
                        }
                    }
                    case "action" -> {
                        if (v != JsonToken.VALUE_NUMBER_INT || p.getNumberType() != JsonParser.NumberType.INT
                                || action != null) {
                            return null;
                        }
                        action = p.getIntValue();
                    }
                    case "event_time" -> {
                        if (v != JsonToken.VALUE_NUMBER_INT || p.getNumberType() == JsonParser.NumberType.BIG_INTEGER
                                || time >= 0) {
                            return null;
                        }
                        time = p.getLongValue();
                        if (time < 0 || time >= MAX_TIME_MS) {
                            return null;
                        }
                    }
                    default -> p.skipChildren();
                }
            }
            if (t != JsonToken.END_OBJECT || p.nextToken() != null) {
                return null;
            }
            if (user == null || request == null || item == null || action == null || time < 0) {
                return null;
            }
            return new Action(time, request, item, action, user);
        } catch (java.io.IOException | RuntimeException e) {
            return null;
        }
    }

    /** The longest string Jackson reads by default: the tree reader calls a longer id not JSON. */
    private static final int MAX_STRING =
            org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.StreamReadConstraints.defaults()
                    .getMaxStringLength();

    /** The five keys {@link #plainAction} reads, as bytes. */
    private static final byte[][] PLAIN_KEYS = {
        "user_id".getBytes(StandardCharsets.US_ASCII), "request_id".getBytes(StandardCharsets.US_ASCII),
        "item_id".getBytes(StandardCharsets.US_ASCII), "action".getBytes(StandardCharsets.US_ASCII),
        "event_time".getBytes(StandardCharsets.US_ASCII)};

    /**
     * The plainest action lines read straight from the bytes, before {@link #fastAction}'s token reader (Jackson's
     * parser set-up and number reading were most of the action source's time): an object of exactly the five keys, in
     * any order, each once; ids as strings of printable ASCII without escapes, or as integers of at most 18 digits
     * without a sign; {@code action} an int; {@code event_time} an integer of at most 18 digits without a sign; JSON
     * white space anywhere between. Anything else (another key, an escape, a byte past ASCII, a fraction or an
     * exponent, a leading zero, a missing or repeated key, something after the object) gives null, and the token
     * reader then decides. Gives only what the tree reader gives.
     */
    static Action plainAction(byte[] b, int offset, int length) {
        int end = offset + length;
        int i = skipSpace(b, offset, end);
        if (i >= end || b[i] != '{') {
            return null;
        }
        String[] ids = new String[3];
        long action = 0;
        long time = 0;
        int seen = 0;
        i = skipSpace(b, i + 1, end);
        while (true) {
            if (i >= end || b[i] != '"') {
                return null;
            }
            int key = -1;
            for (int k = 0; k < PLAIN_KEYS.length; k++) {
                byte[] name = PLAIN_KEYS[k];
                if (i + name.length + 1 < end && b[i + name.length + 1] == '"'
                        && java.util.Arrays.equals(b, i + 1, i + 1 + name.length, name, 0, name.length)) {
                    key = k;
                    i += name.length + 2;
                    break;
                }
            }
            if (key < 0 || (seen & (1 << key)) != 0) {
                return null;
            }
            seen |= 1 << key;
            i = skipSpace(b, i, end);
            if (i >= end || b[i] != ':') {
                return null;
            }
            i = skipSpace(b, i + 1, end);
            if (i >= end) {
                return null;
            }
            if (key < 3) {
                if (b[i] == '"') {
                    int from = i + 1;
                    int to = from;
                    while (to < end && b[to] != '"') {
                        if (b[to] < 0x20 || b[to] > 0x7e || b[to] == '\\') {
                            return null;
                        }
                        to++;
                    }
                    if (to >= end || to == from || to - from > MAX_STRING) {
                        return null;
                    }
                    ids[key] = new String(b, from, to - from, StandardCharsets.US_ASCII);
                    i = to + 1;
                } else {
                    int to = digitsEnd(b, i, end);
                    if (to < 0) {
                        return null;
                    }
                    ids[key] = Long.toString(digits(b, i, to));
                    i = to;
                }
            } else {
                boolean negative = key == 3 && b[i] == '-';
                int from = negative ? i + 1 : i;
                int to = digitsEnd(b, from, end);
                if (to < 0) {
                    return null;
                }
                long n = digits(b, from, to);
                if (key == 3) {
                    action = negative ? -n : n;
                    if (action < Integer.MIN_VALUE || action > Integer.MAX_VALUE) {
                        return null;
                    }
                } else {
                    time = n;
                    if (time >= MAX_TIME_MS) {
                        return null;
                    }
                }
                i = to;
            }
            i = skipSpace(b, i, end);
            if (i < end && b[i] == ',') {
                i = skipSpace(b, i + 1, end);
                continue;
            }
            if (i >= end || b[i] != '}' || seen != 0b11111 || skipSpace(b, i + 1, end) != end) {
                return null;
            }
            return new Action(time, ids[1], ids[2], (int) action, ids[0]);
        }
    }

    private static int skipSpace(byte[] b, int i, int end) {
        while (i < end && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) {
            i++;
        }
        return i;
    }

    /**
     * The end of a JSON integer's digits starting at {@code i} (1 to 18 of them, no leading zero, not followed by a
     * fraction or an exponent), or -1.
     */
    private static int digitsEnd(byte[] b, int i, int end) {
        int to = i;
        while (to < end && b[to] >= '0' && b[to] <= '9') {
            to++;
        }
        int n = to - i;
        if (n == 0 || n > 18 || (n > 1 && b[i] == '0')) {
            return -1;
        }
        if (to < end && (b[to] == '.' || b[to] == 'e' || b[to] == 'E')) {
            return -1;
        }
        return to;
    }

    private static long digits(byte[] b, int from, int to) {
        long n = 0;
        for (int i = from; i < to; i++) {
            n = n * 10 + (b[i] - '0');
        }
        return n;
    }

    /** An id as {@link #action(ObjectMapper, String)} reads it (a non-empty string, or a non-negative long), or null. */
    private static String fastId(JsonParser p, JsonToken v) throws java.io.IOException {
        if (v == JsonToken.VALUE_STRING) {
            String s = p.getText();
            return s.isEmpty() ? null : s;
        }
        if (v == JsonToken.VALUE_NUMBER_INT && p.getNumberType() != JsonParser.NumberType.BIG_INTEGER) {
            long n = p.getLongValue();
            return n >= 0 ? Long.toString(n) : null;
        }
        return null;
    }

    /**
     * Gives an event, and in batch execution the end of its user's input after it: sorted after every record of
     * theirs, one per record, as no operator here knows a user's last one (a user may have actions and no request:
     * their actions are still reported, unmatched, at the end).
     */
    static void emit(Event e, boolean batch, Collector<Event> out) {
        out.collect(e);
        if (batch && !Event.BAD.equals(e.kind)) {
            out.collect(Event.end(e.userId));
        }
    }

    /**
     * What a parsing task is made from: logged requests ({@code requests}) or action lines, the model config (its
     * text and the directory its relative paths start from), and whether the job runs in batch execution.
     */
    record Spec(boolean requests, String yaml, String baseDir, boolean batch) implements java.io.Serializable {
        Parser open(MetricGroup metrics) {
            return new Parser(this, metrics);
        }
    }

    /** Elements of {@link LocatedRecords} to events (files; Kafka records are parsed in the source). */
    static final class Events extends ProcessFunction<byte[], Event> {
        private static final long serialVersionUID = 1L;
        private final Spec spec;
        private transient Parser parser;

        Events(Spec spec) {
            this.spec = spec;
        }

        @Override
        public void open(OpenContext context) {
            parser = spec.open(getRuntimeContext().getMetricGroup());
        }

        @Override
        public void close() {
            if (parser != null) {
                parser.close();
            }
        }

        @Override
        public void processElement(byte[] element, Context ctx, Collector<Event> out) {
            parser.emit(element, out);
        }
    }

    /** What a parsing task holds: the plan (for requests) or a JSON reader, and its count of records read. */
    static final class Parser implements AutoCloseable {
        private final boolean batch;
        private final Plan plan;
        private final ObjectMapper json;
        private final Counter read;

        private Parser(Spec spec, MetricGroup metrics) {
            batch = spec.batch();
            plan = spec.requests() ? Plan.fromYaml(spec.yaml(), Path.of(spec.baseDir())) : null;
            json = spec.requests() ? null : new ObjectMapper();
            read = metrics.counter(spec.requests() ? "requests_read" : "actions_read");
        }

        /** The element's event (with its user's end in batch execution). */
        void emit(byte[] element, Collector<Event> out) {
            read.inc();
            Parse.emit(plan != null ? request(plan, element) : action(json, element), batch, out);
        }

        @Override
        public void close() {
            if (plan != null) {
                plan.close();
            }
        }
    }

    /** Bad records leave for the manifest ({@link LabelJoin#MANIFEST}); the rest go on to the join. */
    static final class Route extends ProcessFunction<Event, Event> {
        private static final long serialVersionUID = 1L;

        @Override
        public void processElement(Event e, Context ctx, Collector<Event> out) {
            if (Event.BAD.equals(e.kind)) {
                ctx.output(LabelJoin.MANIFEST, e.bad.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            } else {
                out.collect(e);
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
