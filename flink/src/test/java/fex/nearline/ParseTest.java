package fex.nearline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/**
 * Action lines: the token reader ({@link Parse#fastAction}) that reads the common case, against the tree reader that
 * decides every line and names what is wrong. The token reader may hand a line over (null), never read it otherwise.
 */
class ParseTest {
    static final ObjectMapper JSON = new ObjectMapper();

    /** The tree reader's answer: the action, or its error message. */
    static String tree(String line) {
        try {
            return Parse.action(JSON, line).toString();
        } catch (IllegalArgumentException e) {
            return "error: " + e.getMessage();
        }
    }

    static Action fast(String line) {
        byte[] b = ("xx" + line + "yy").getBytes(StandardCharsets.UTF_8);
        return Parse.fastAction(JSON.getFactory(), b, 2, b.length - 4);
    }

    static Action plain(String line) {
        byte[] b = ("xx" + line + "yy").getBytes(StandardCharsets.UTF_8);
        return Parse.plainAction(b, 2, b.length - 4);
    }

    /** The token reader and the plain reader each read `line` to the tree reader's action, or hand it over. */
    static void agree(String line) {
        Action a = fast(line);
        if (a != null) {
            assertEquals(tree(line), a.toString(), line);
        }
        Action p = plain(line);
        if (p != null) {
            assertEquals(tree(line), p.toString(), line);
        }
    }

    @Test
    void thePlainestLinesAreReadFromTheirBytes() {
        for (String line : List.of(
                "{\"user_id\": \"u1\", \"request_id\": \"r1\", \"item_id\": \"i1\", \"action\": 1, \"event_time\": 5}",
                "{\"event_time\":0,\"action\":-3,\"item_id\":7,\"request_id\":\"r\",\"user_id\":18446744}",
                "\t{ \"user_id\" :\"u\" ,\"request_id\":\"r\",\"item_id\":0,\"action\":-2147483648,"
                        + "\"event_time\":999999999999999999 }\r\n",
                "{\"user_id\":\"a b~!\",\"request_id\":\"r\",\"item_id\":\"i\",\"action\":-0,\"event_time\":1}")) {
            assertNotNull(plain(line), line);
            agree(line);
        }
        String ok = "\"request_id\":\"r\",\"item_id\":\"i\",\"action\":1";
        // Handed to the token reader: what it reads, and what it hands on.
        for (String line : List.of(
                "{\"user_id\":\"\\u00e9\"," + ok + ",\"event_time\":5}",
                "{\"user_id\":\"\u00e9\"," + ok + ",\"event_time\":5}",
                "{\"user_id\":\"u\"," + ok + ",\"event_time\":5,\"other\":1}",
                "{\"user_id\":\"u\"," + ok + ",\"event_time\":4611686018427387903}",
                "{\"user_id\":\"u\"," + ok + ",\"event_time\":05}",
                "{\"user_id\":\"u\"," + ok + ",\"event_time\":5.0}",
                "{\"user_id\":\"u\"," + ok + ",\"event_time\":5e0}",
                "{\"user_id\":\"u\"," + ok + ",\"event_time\":-0}",
                "{\"user_id\":-1," + ok + ",\"event_time\":5}",
                "{\"user_id\":\"\"," + ok + ",\"event_time\":5}",
                "{\"user_id\":\"u\"," + ok.replace("1", "2147483648") + ",\"event_time\":5}",
                "{\"user_id\":\"u\"," + ok + ",\"event_time\":5,}",
                "{\"user_id\":\"u\"," + ok + ",\"event_time\":5} x",
                "{\"user_id\":\"u\"," + ok + ",\"event_time\":5",
                "{\"user_id\":\"u\"," + ok + ",\"user_id\":\"v\",\"event_time\":5}",
                "{\"user_id\":\"u\"," + ok + "}", "{}", "", "[]")) {
            assertNull(plain(line), line);
            agree(line);
        }
    }

    @Test
    void wellFormedLinesAreReadByTokens() {
        for (String line : List.of(
                "{\"user_id\": \"u1\", \"request_id\": \"r1\", \"item_id\": \"i1\", \"action\": 1, \"event_time\": 5}",
                "{\"event_time\":0,\"action\":-3,\"item_id\":7,\"request_id\":\"r\",\"user_id\":18446744}",
                "{\"user_id\":\"u\",\"request_id\":\"r\",\"item_id\":\"i\",\"action\":2147483647,"
                        + "\"event_time\":4611686018427387903,\"extra\":{\"a\":[1,{\"b\":null}]},\"x\":[]}",
                " {\"user_id\":\"\\u00e9t\\u00e9\",\"request_id\":\"r\",\"item_id\":\"0\",\"action\":0,\"event_time\":1} ")) {
            assertNotNull(fast(line), line);
            agree(line);
        }
    }

    @Test
    void everythingElseIsHandedToTheTreeReader() {
        String ok = "\"request_id\":\"r\",\"item_id\":\"i\",\"action\":1,\"event_time\":5";
        for (String line : List.of(
                "", "   ", "null", "[]", "[1]", "\"x\"", "{", "{}", "{\"user_id\":\"u\"}",
                "{\"user_id\":\"\"," + ok + "}",
                "{\"user_id\":-1," + ok + "}",
                "{\"user_id\":1.5," + ok + "}",
                "{\"user_id\":true," + ok + "}",
                "{\"user_id\":null," + ok + "}",
                "{\"user_id\":123456789012345678901234567890," + ok + "}",
                "{\"user_id\":\"u\",\"user_id\":\"v\"," + ok + "}",
                "{\"user_id\":\"u\"," + ok + ",\"action\":2}",
                "{\"user_id\":\"u\"," + ok.replace("\"action\":1", "\"action\":2147483648") + "}",
                "{\"user_id\":\"u\"," + ok.replace("\"action\":1", "\"action\":1.0") + "}",
                "{\"user_id\":\"u\"," + ok.replace("\"event_time\":5", "\"event_time\":-5") + "}",
                "{\"user_id\":\"u\"," + ok.replace("\"event_time\":5", "\"event_time\":4611686018427387904") + "}",
                "{\"user_id\":\"u\"," + ok.replace("\"event_time\":5", "\"event_time\":\"5\"") + "}",
                "{\"user_id\":\"u\"," + ok + "} trailing",
                "{\"user_id\":\"u\"," + ok + "}{}")) {
            assertNull(fast(line), line);
        }
    }

    /** An id longer than Jackson reads is the tree reader's to refuse, not the plain reader's to take. */
    @Test
    void anIdPastJacksonsStringLimitIsHandedOver() {
        String id = "u".repeat(20_000_001);
        String line = "{\"user_id\":\"" + id + "\",\"request_id\":\"r\",\"item_id\":\"i\",\"action\":1,\"event_time\":5}";
        assertNull(plain(line));
        assertEquals(true, tree(line).startsWith("error: "), tree(line).substring(0, 40));
    }

    @Test
    void randomLinesAgree() {
        String[] keys = {"user_id", "request_id", "item_id", "action", "event_time", "other"};
        String[] values = {"\"a\"", "\"\"", "7", "-7", "0", "2147483648", "1.5", "1e3", "true", "null", "[1,2]",
            "{\"k\":\"v\"}", "4611686018427387904", "99999999999999999999", "\"\\u0000\"", "\"\\ud800\""};
        Random random = new Random(34);
        int read = 0;
        int readPlain = 0;
        for (int n = 0; n < 20_000; n++) {
            List<String> fields = new ArrayList<>();
            for (String k : keys) {
                if (random.nextInt(8) != 0) {
                    String v = random.nextInt(3) == 0 ? values[random.nextInt(values.length)]
                            : k.equals("action") || k.equals("event_time") ? String.valueOf(random.nextInt(100))
                            : "\"" + k.charAt(0) + random.nextInt(100) + "\"";
                    fields.add("\"" + k + "\":" + v);
                }
            }
            if (random.nextInt(10) == 0) {
                fields.add(fields.isEmpty() ? "\"user_id\":\"z\"" : fields.get(random.nextInt(fields.size())));
            }
            java.util.Collections.shuffle(fields, random);
            String line = "{" + String.join(",", fields) + "}";
            if (random.nextInt(20) == 0) {
                line = line.substring(0, random.nextInt(line.length() + 1));
            }
            agree(line);
            if (fast(line) != null) {
                read++;
            }
            if (plain(line) != null) {
                readPlain++;
            }
        }
        // The generator makes well-formed lines often enough that both readers are exercised, not just bypassed.
        assertEquals(true, read > 1_000, "read " + read);
        assertEquals(true, readPlain > 200, "read plainly " + readPlain);
    }
}
