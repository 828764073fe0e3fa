package fex.jni;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The library through JNI, on the near-line tests' model (tests/nearline/model.yaml) and requests built as
 * tests/nearline/data.py builds them; samples are held to the real {@code fex extract} byte for byte.
 */
@Timeout(120)
class PlanTest {
    static final Path MODEL = Path.of(System.getProperty("fex.model", "../tests/nearline/model.yaml"));
    static Plan plan;

    @BeforeAll
    static void open() throws Exception {
        plan = Plan.fromFile(MODEL);
    }

    @AfterAll
    static void close() {
        plan.close();
    }

    // A few lines of protobuf writing (field numbers: proto/monolith/example.proto,
    // line_id.proto, proto/fex/v1/service.proto), as tests/nearline/data.py does.
    static byte[] varint(long n) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        while ((n & ~0x7FL) != 0) {
            out.write((int) ((n & 0x7F) | 0x80));
            n >>>= 7;
        }
        out.write((int) n);
        return out.toByteArray();
    }

    static byte[] cat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            out.writeBytes(p);
        }
        return out.toByteArray();
    }

    static byte[] field(int number, byte[] body) {
        return cat(varint((long) number << 3 | 2), varint(body.length), body);
    }

    static byte[] intField(int number, long value) {
        return cat(varint((long) number << 3), varint(value));
    }

    static byte[] fixed64(int number, long value) {
        byte[] le = new byte[8];
        for (int i = 0; i < 8; i++) {
            le[i] = (byte) (value >>> (8 * i));
        }
        return cat(varint((long) number << 3 | 1), le);
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static byte[] fidFeature(long... fids) {
        byte[][] les = new byte[fids.length][];
        for (int i = 0; i < fids.length; i++) {
            les[i] = Arrays.copyOfRange(fixed64(1, fids[i]), 1, 9);
        }
        return field(2, field(1, cat(les)));
    }

    static byte[] bytesFeature(String value) {
        return field(6, field(1, utf8(value)));
    }

    static byte[] bytesListFeature(List<String> values) {
        byte[][] parts = new byte[values.size()][];
        for (int i = 0; i < parts.length; i++) {
            parts[i] = field(1, utf8(values.get(i)));
        }
        return field(6, cat(parts));
    }

    static byte[] floatFeature(float... values) {
        byte[] le = new byte[4 * values.length];
        for (int i = 0; i < values.length; i++) {
            int bits = Float.floatToIntBits(values[i]);
            for (int b = 0; b < 4; b++) {
                le[4 * i + b] = (byte) (bits >>> (8 * b));
            }
        }
        return field(3, field(1, le));
    }

    static byte[] list(String name, boolean shared, byte[]... features) {
        byte[][] parts = new byte[features.length + 2][];
        parts[0] = field(1, utf8(name));
        for (int i = 0; i < features.length; i++) {
            parts[i + 1] = field(2, features[i]);
        }
        parts[features.length + 1] = shared ? intField(3, 1) : new byte[0];
        return cat(parts);
    }

    // The strings of the model's FG operators, as tests/nearline/data.py's
    // functions of the same names build them (the same layouts, values,
    // malformed entries and missing lists).
    static final String SEP = "\u001d";
    static final String SHOES = "运动鞋";
    static final String SHOES_CHT = "運動鞋";

    static String userCateCnt(long uid) {
        List<String> entries = new ArrayList<>();
        for (int k = 0; k < 4; k++) {
            entries.add("c" + (uid + k) % 8 + ":" + (uid * 7 + k) % 10);
        }
        if (uid % 5 == 0) {
            entries.add(1, "broken");
        }
        return String.join(SEP, entries);
    }

    static String itemCate(long item) {
        return "c" + item % 8;
    }

    static String query(long uid) {
        List<String> words = new ArrayList<>();
        for (int k = 0; k < 1 + uid % 3; k++) {
            words.add("w" + (uid + k * 2) % 6);
        }
        if (uid % 4 < 2) {
            words.add(SHOES);
        }
        return String.join(SEP, words);
    }

    static String title(long item) {
        List<String> words = new ArrayList<>();
        for (int k = 0; k < 1 + item % 4; k++) {
            words.add("w" + (item * (k + 1)) % 6);
        }
        if (item % 3 == 1) {
            words.add(SHOES_CHT);
        } else if (item % 3 == 2) {
            words.add(SHOES);
        }
        return String.join(SEP, words);
    }

    /** FG's two-level map `pk^sk:v,sk:v|pk^...`, or null: the list is missing. */
    static String userCateBrand(long uid) {
        if (uid % 6 == 5) {
            return null;
        }
        List<String> entries = new ArrayList<>();
        for (int k = 0; k < 4; k++) {
            List<String> brands = new ArrayList<>();
            for (int j = 0; j < 3; j++) {
                brands.add("b" + (uid + k + j) % 5 + ":" + (uid * 3 + k + j) % 7);
            }
            if (uid % 4 == 1 && k == 1) {
                brands.add(0, "b9");
            }
            entries.add("c" + (uid + 2 * k) % 8 + "^" + String.join(",", brands));
        }
        if (uid % 4 == 1) {
            entries.add(1, "c9");
        }
        return String.join("|", entries);
    }

    static String itemBrand(long item) {
        return "b" + item % 5;
    }

    /** The map as parallel lists: keys, or null when both lists are missing. */
    static List<String> userCateKeys(long uid) {
        if (uid % 7 == 3) {
            return null;
        }
        List<String> keys = new ArrayList<>();
        for (int k = 0; k < 3; k++) {
            keys.add("c" + (uid + 3 * k) % 8);
        }
        if (uid % 2 == 0) {
            keys.set(2, keys.get(0));
        }
        return keys;
    }

    static float[] userCateVals(long uid) {
        float[] vals = new float[3];
        for (int k = 0; k < 3; k++) {
            vals[k] = ((uid + k) % 9) / 2.0f;
        }
        return vals;
    }

    /** A logged request of user {@code uid} with one row per item, as fex-server's request log holds it. */
    static byte[] logged(String requestId, long uid, long micros, boolean refresh, long... items) {
        byte[][] fids = new byte[items.length][];
        byte[][] lineIds = new byte[items.length][];
        byte[][] cates = new byte[items.length][];
        byte[][] titles = new byte[items.length][];
        byte[][] brands = new byte[items.length][];
        for (int i = 0; i < items.length; i++) {
            fids[i] = fidFeature((3L << 48) | items[i]);
            lineIds[i] = field(6, field(1, cat(fixed64(2, uid), fixed64(4, items[i]))));
            cates[i] = bytesFeature(itemCate(items[i]));
            titles[i] = bytesFeature(title(items[i]));
            brands[i] = bytesFeature(itemBrand(items[i]));
        }
        List<byte[]> lists = new ArrayList<>(List.of(
                list("user_fids", true, fidFeature((1L << 48) | uid, (2L << 48) | (uid % 7))),
                list("f_refresh", true, field(5, field(1, varint(refresh ? 1 : 0)))),
                list("item_fids", false, fids),
                list("__LINE_ID__", false, lineIds),
                // The strings the model's FG operators read (data.py's layout).
                list("user_cate_cnt", true, bytesFeature(userCateCnt(uid))),
                list("item_cate", false, cates),
                list("query", true, bytesFeature(query(uid))),
                list("title", false, titles),
                list("item_brand", false, brands)));
        String kkv = userCateBrand(uid);
        if (kkv != null) {
            lists.add(list("user_cate_brand", true, bytesFeature(kkv)));
        }
        List<String> keys = userCateKeys(uid);
        if (keys != null) {
            lists.add(list("user_cate_keys", true, bytesListFeature(keys)));
            lists.add(list("user_cate_vals", true, floatFeature(userCateVals(uid))));
        }
        byte[][] parts = new byte[lists.size() + 1][];
        for (int i = 0; i < lists.size(); i++) {
            parts[i] = field(1, lists.get(i));
        }
        parts[lists.size()] = intField(3, items.length);
        byte[] batch = cat(parts);
        byte[] request = cat(field(1, utf8("nearline_ranker")), field(2, batch));
        return cat(field(1, request), field(2, utf8("nearline_ranker")), intField(5, micros), field(6, utf8(requestId)));
    }

    static final byte[] LOGGED = logged("r1", 1001, 1_760_000_000_123_456L, false, 5, 6, 7);
    static final int[][] ACTIONS = {{1}, null, {2, 3}};

    /**
     * Users and items whose strings between them give every case of the model's operators: a match map missing
     * (1001), with an entry without {@code ^} and a brand without {@code :} (1005), found under the item's category
     * and brand (1003, 1004); a lookup map with an entry without {@code :} (1000, 1005); the parallel lists
     * missing (1004), with a repeated key (1000); the query in the title (index_of: 1004; proximity_min_cover:
     * 1000, 1004); titles in traditional characters that TEXT_CHT2CHS makes the query's (1001's item 7).
     */
    static final long[][] USERS_AND_ITEMS = {
        {1001, 5, 6, 7}, {1005, 1, 8, 12, 15}, {1003, 2, 3, 4, 9}, {1000, 10, 11, 13}, {1004, 4, 9, 14, 22}
    };

    @Test
    void theLabelJoinSectionIsReadFromTheConfig() {
        assertEquals(new LabelJoin(3, 600_000, 60_000, 7_200_000, true, "correction"), plan.labelJoin());
        try (Plan without = Plan.fromYaml("name: m\nfeatures:\n  - {name: f, kind: sparse}\n", Path.of("."))) {
            assertNull(without.labelJoin());
        }
    }

    @Test
    void requestKeysAreReadWithTheLabelJoinKeys() {
        RequestKeys keys = plan.requestKeys(logged("r9", 1001, 1_760_000_000_123_456L, true, 5, 6, 7));
        assertEquals(
                new RequestKeys("r9", "1001", 1_760_000_000_123L, true, List.of("5", "6", "7"), "batch", 3,
                        "nearline_ranker"),
                keys);
    }

    @Test
    void samplesEqualFexExtractOnTheJoinedRecords(@TempDir Path dir) throws Exception {
        Computed computed = plan.compute(LOGGED, ACTIONS);
        assertEquals("batch", computed.payload());
        assertEquals(3, computed.rowsWritten());
        // Then the other users' requests, each computed alone, their joined
        // records and samples concatenated (the job's part files are so).
        ByteArrayOutputStream joinedAll = new ByteArrayOutputStream();
        ByteArrayOutputStream samplesAll = new ByteArrayOutputStream();
        joinedAll.writeBytes(computed.joined());
        samplesAll.writeBytes(computed.samples());
        for (int r = 1; r < USERS_AND_ITEMS.length; r++) {
            long[] items = Arrays.copyOfRange(USERS_AND_ITEMS[r], 1, USERS_AND_ITEMS[r].length);
            int[][] actions = new int[items.length][];
            for (int i = 0; i < items.length; i++) {
                actions[i] = ACTIONS[i % ACTIONS.length];
            }
            Computed c = plan.compute(logged("r" + r, USERS_AND_ITEMS[r][0], 1_760_000_000_123_456L + r, false, items),
                    actions);
            assertEquals(items.length, c.rowsWritten());
            joinedAll.writeBytes(c.joined());
            samplesAll.writeBytes(c.samples());
        }
        Path joined = dir.resolve("joined.pb");
        Path out = dir.resolve("samples.pb");
        Files.write(joined, joinedAll.toByteArray());
        Process cli = new ProcessBuilder(System.getProperty("fex.cli", "../target/debug/fex"), "extract",
                        joined.toString(), "--model", MODEL.toString(), "--format", "responses", "--output",
                        out.toString())
                .redirectErrorStream(true)
                .start();
        String said = new String(cli.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(cli.waitFor(60, TimeUnit.SECONDS), "fex extract did not finish");
        assertEquals(0, cli.exitValue(), said);
        assertArrayEquals(Files.readAllBytes(out), samplesAll.toByteArray());
    }

    @Test
    void errorsCrossAsFexExceptionsWithTheLibrarysMessage() {
        byte[] torn = Arrays.copyOf(LOGGED, LOGGED.length - 5);
        FexException e = assertThrows(FexException.class, () -> plan.requestKeys(torn));
        assertTrue(e.getMessage().startsWith("logged request: "), e.getMessage());
        assertTrue(e.offset() >= 0, "a decoding error says where: " + e.offset());

        e = assertThrows(FexException.class, () -> plan.compute(LOGGED, new int[][] {{1}}));
        assertEquals("found actions for 1 rows; the request has 3", e.getMessage());
        assertEquals(-1, e.offset());

        e = assertThrows(FexException.class, () -> plan.compute(null, ACTIONS));
        assertEquals("the logged request is null", e.getMessage());

        e = assertThrows(FexException.class,
                () -> Plan.fromYaml("name: m\nfeatures:\n  - {name: f, kind: sparce}\n", Path.of(".")));
        assertTrue(e.getMessage().contains("features.f.kind: unknown feature kind \"sparce\""), e.getMessage());
    }

    @Test
    void aClosedPlanIsAnErrorNotACrash() {
        Plan closed = Plan.fromYaml("name: m\nfeatures:\n  - {name: f, kind: sparse}\n", Path.of("."));
        closed.close();
        closed.close();
        FexException e = assertThrows(FexException.class, closed::labelJoin);
        assertTrue(e.getMessage().startsWith("no open plan has handle"), e.getMessage());
    }

    @Test
    void aPanicInTheLibraryIsAnExceptionAndTheJvmGoesOn() {
        FexException e = assertThrows(FexException.class, Native::panicForTest);
        assertTrue(e.getMessage().contains("deliberate panic"), e.getMessage());
        assertEquals(3, plan.compute(LOGGED, ACTIONS).rowsWritten());
    }

    @Test
    void threadsShareOnePlan() throws Exception {
        byte[] expected = plan.compute(LOGGED, ACTIONS).samples();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<Boolean>> results = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                results.add(pool.submit(() -> {
                    for (int i = 0; i < 200; i++) {
                        if (!Arrays.equals(expected, plan.compute(LOGGED, ACTIONS).samples())) {
                            return false;
                        }
                    }
                    return true;
                }));
            }
            for (Future<Boolean> r : results) {
                assertTrue(r.get(60, TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
