package fex.nearline;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/** Manifest lines, written as bytes by hand, read back by Jackson: every string comes back as it went in. */
class JsonTest {
    private static final ObjectMapper JACKSON = new ObjectMapper();

    /** A random string of ASCII, control characters, quotes, backslashes, BMP and supplementary characters. */
    private static String random(Random r) {
        StringBuilder s = new StringBuilder();
        for (int n = r.nextInt(12); n > 0; n--) {
            switch (r.nextInt(7)) {
                case 0 -> s.append((char) r.nextInt(0x20));
                case 1 -> s.append(r.nextBoolean() ? '"' : '\\');
                case 2 -> s.append((char) (0x80 + r.nextInt(0x780)));
                case 3 -> s.append((char) (0x800 + r.nextInt(0xD000 - 0x800)));
                case 4 -> s.appendCodePoint(0x10000 + r.nextInt(0x100000));
                default -> s.append((char) (0x20 + r.nextInt(0x5F)));
            }
        }
        return s.toString();
    }

    @Test
    void stringsNumbersAndNestedActionsRoundTrip() throws Exception {
        Random r = new Random(11);
        for (int round = 0; round < 2_000; round++) {
            String key = random(r);
            String value = random(r);
            long n = r.nextLong();
            List<Action> actions = new ArrayList<>();
            for (int i = r.nextInt(3); i > 0; i--) {
                actions.add(new Action(r.nextLong(), random(r), random(r), r.nextInt(), random(r)));
            }
            byte[] line = new Json().put("k", key).put(key.isEmpty() ? "x" : "v" + key, value).put("n", n)
                    .put("b", round % 2 == 0).raw("actions", Json.actions(actions)).bytes();
            JsonNode tree = JACKSON.readTree(line);
            assertEquals(key, tree.get("k").asText());
            assertEquals(value, tree.get(key.isEmpty() ? "x" : "v" + key).asText());
            assertEquals(n, tree.get("n").asLong());
            assertEquals(round % 2 == 0, tree.get("b").asBoolean());
            assertEquals(actions.size(), tree.get("actions").size());
            for (int i = 0; i < actions.size(); i++) {
                JsonNode a = tree.get("actions").get(i);
                assertEquals(actions.get(i).userId, a.get("user_id").asText());
                assertEquals(actions.get(i).requestId, a.get("request_id").asText());
                assertEquals(actions.get(i).itemId, a.get("item_id").asText());
                assertEquals(actions.get(i).action, a.get("action").asInt());
                assertEquals(actions.get(i).eventTime, a.get("event_time").asLong());
            }
        }
    }

    @Test
    void theLayoutIsTheOneTheManifestAlwaysHad() {
        Action a = new Action(200, "A", "9", 1, "u");
        assertEquals("{\"user_id\": \"u\", \"request_id\": \"A\", \"item_id\": \"9\", \"action\": 1, \"event_time\": 200, "
                + "\"kind\": \"unknown_item\", \"late\": false, \"actions\": [{\"user_id\": \"u\", \"request_id\": \"A\", "
                + "\"item_id\": \"9\", \"action\": 1, \"event_time\": 200}, {\"user_id\": \"u\", \"request_id\": \"A\", "
                + "\"item_id\": \"9\", \"action\": 1, \"event_time\": 200}], \"none\": null}",
                new String(new Json().action(a).put("kind", "unknown_item").put("late", false)
                        .raw("actions", Json.actions(List.of(a, a))).put("none", (String) null).bytes(),
                        StandardCharsets.UTF_8));
        // An unpaired surrogate is written as '?', as Java's own UTF-8 encoder writes it.
        assertEquals("{\"s\": \"a?b\"}", new Json().put("s", "a\uD800b").toString());
        assertEquals("{\"s\": \"\\u0001\\n\\\"\\\\\"}", new Json().put("s", "\u0001\n\"\\").toString());
    }
}
