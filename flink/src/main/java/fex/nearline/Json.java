package fex.nearline;

import java.util.List;

/** Manifest lines: one JSON object per line, written without a library (keys in the order given). */
final class Json {
    private final StringBuilder out = new StringBuilder("{");

    private Json key(String key) {
        if (out.length() > 1) {
            out.append(", ");
        }
        string(out, key);
        return this;
    }

    Json put(String key, String value) {
        key(key).out.append(": ");
        if (value == null) {
            out.append("null");
        } else {
            string(out, value);
        }
        return this;
    }

    Json put(String key, long value) {
        key(key).out.append(": ").append(value);
        return this;
    }

    Json put(String key, boolean value) {
        key(key).out.append(": ").append(value);
        return this;
    }

    /** A value already written as JSON. */
    Json raw(String key, String json) {
        key(key).out.append(": ").append(json);
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

    static String actions(List<Action> actions) {
        StringBuilder s = new StringBuilder("[");
        for (Action a : actions) {
            if (s.length() > 1) {
                s.append(", ");
            }
            s.append(new Json().action(a));
        }
        return s.append(']').toString();
    }

    @Override
    public String toString() {
        return out + "}";
    }

    static void string(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
