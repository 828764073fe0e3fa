package fex.nearline;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * Manifest lines: one JSON object per line, written without a library (keys in the order given) straight into UTF-8
 * bytes, which go to the manifest's writer as they are (a String went through Flink's serializer char by char, and
 * was encoded again when written).
 */
final class Json {
    private byte[] out = new byte[128];
    private int length;
    /** No key yet in the object being written. */
    private boolean first = true;

    Json() {
        out[length++] = '{';
    }

    private void ensure(int more) {
        if (length + more > out.length) {
            out = Arrays.copyOf(out, Math.max(out.length * 2, length + more));
        }
    }

    private void ascii(String s) {
        int n = s.length();
        ensure(n);
        for (int i = 0; i < n; i++) {
            out[length++] = (byte) s.charAt(i);
        }
    }

    private Json key(String key) {
        if (!first) {
            ascii(", ");
        }
        first = false;
        string(key);
        ascii(": ");
        return this;
    }

    Json put(String key, String value) {
        key(key);
        if (value == null) {
            ascii("null");
        } else {
            string(value);
        }
        return this;
    }

    Json put(String key, long value) {
        key(key).ascii(Long.toString(value));
        return this;
    }

    Json put(String key, boolean value) {
        key(key).ascii(value ? "true" : "false");
        return this;
    }

    /** A value already written as JSON (UTF-8). */
    Json raw(String key, byte[] json) {
        key(key);
        ensure(json.length);
        System.arraycopy(json, 0, out, length, json.length);
        length += json.length;
        return this;
    }

    /** The source, index and offset a request was read at, when known. */
    Json where(Request r) {
        return where(r.source, r.index, r.offset);
    }

    /**
     * Where a record was, when known ({@code source} not empty): a file's path, the record's index and byte offset;
     * or a Kafka topic ({@code kafka:TOPIC}), partition and offset.
     */
    Json where(String source, long index, long offset) {
        if (source.startsWith(KAFKA)) {
            put("topic", source.substring(KAFKA.length())).put("partition", index).put("offset", offset);
        } else if (!source.isEmpty()) {
            put("file", source).put("index", index).put("offset", offset);
        }
        return this;
    }

    /** How a record's source names a Kafka topic. */
    static final String KAFKA = "kafka:";

    /** An action's fields, as parse_action reads them. */
    Json action(Action a) {
        return put("user_id", a.userId).put("request_id", a.requestId).put("item_id", a.itemId)
                .put("action", a.action).put("event_time", a.eventTime);
    }

    /** The actions as a JSON array of {@link #action} objects, UTF-8. */
    static byte[] actions(List<Action> actions) {
        Json s = new Json();
        s.out[0] = '[';
        for (Action a : actions) {
            if (s.length > 1) {
                s.ascii(", ");
            }
            s.ascii("{");
            s.first = true;
            s.action(a).ascii("}");
        }
        s.ascii("]");
        return Arrays.copyOf(s.out, s.length);
    }

    /** The line's bytes (UTF-8, no line end). */
    byte[] bytes() {
        byte[] b = Arrays.copyOf(out, length + 1);
        b[length] = '}';
        return b;
    }

    @Override
    public String toString() {
        return new String(bytes(), StandardCharsets.UTF_8);
    }

    /**
     * A JSON string: quotes, backslashes and control characters escaped, the rest as UTF-8 (an unpaired surrogate as
     * {@code ?}, as Java's encoder writes it).
     */
    private void string(String s) {
        int n = s.length();
        ensure(n + 2);
        out[length++] = '"';
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
                ensure(1);
                out[length++] = (byte) c;
                continue;
            }
            switch (c) {
                case '"' -> ascii("\\\"");
                case '\\' -> ascii("\\\\");
                case '\n' -> ascii("\\n");
                case '\r' -> ascii("\\r");
                case '\t' -> ascii("\\t");
                default -> {
                    if (c < 0x20) {
                        ascii(String.format("\\u%04x", (int) c));
                    } else {
                        int cp = c;
                        if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
                            cp = Character.toCodePoint(c, s.charAt(++i));
                        } else if (Character.isSurrogate(c)) {
                            cp = '?';
                        }
                        ensure(4);
                        if (cp < 0x80) {
                            out[length++] = (byte) cp;
                        } else if (cp < 0x800) {
                            out[length++] = (byte) (0xC0 | (cp >> 6));
                            out[length++] = (byte) (0x80 | (cp & 0x3F));
                        } else if (cp < 0x10000) {
                            out[length++] = (byte) (0xE0 | (cp >> 12));
                            out[length++] = (byte) (0x80 | ((cp >> 6) & 0x3F));
                            out[length++] = (byte) (0x80 | (cp & 0x3F));
                        } else {
                            out[length++] = (byte) (0xF0 | (cp >> 18));
                            out[length++] = (byte) (0x80 | ((cp >> 12) & 0x3F));
                            out[length++] = (byte) (0x80 | ((cp >> 6) & 0x3F));
                            out[length++] = (byte) (0x80 | (cp & 0x3F));
                        }
                    }
                }
            }
        }
        ensure(1);
        out[length++] = '"';
    }
}
