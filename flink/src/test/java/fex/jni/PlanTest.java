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

    static byte[] list(String name, boolean shared, byte[]... features) {
        byte[][] parts = new byte[features.length + 2][];
        parts[0] = field(1, utf8(name));
        for (int i = 0; i < features.length; i++) {
            parts[i + 1] = field(2, features[i]);
        }
        parts[features.length + 1] = shared ? intField(3, 1) : new byte[0];
        return cat(parts);
    }

    /** A logged request of user {@code uid} with one row per item, as fex-server's request log holds it. */
    static byte[] logged(String requestId, long uid, long micros, boolean refresh, long... items) {
        byte[][] fids = new byte[items.length][];
        byte[][] lineIds = new byte[items.length][];
        byte[][] cates = new byte[items.length][];
        byte[][] titles = new byte[items.length][];
        for (int i = 0; i < items.length; i++) {
            fids[i] = fidFeature((3L << 48) | items[i]);
            lineIds[i] = field(6, field(1, cat(fixed64(2, uid), fixed64(4, items[i]))));
            cates[i] = bytesFeature("c" + items[i] % 8);
            titles[i] = bytesFeature("w" + items[i] % 6 + "\u001dw" + (items[i] * 2) % 6);
        }
        byte[] batch = cat(
                field(1, list("user_fids", true, fidFeature((1L << 48) | uid))),
                field(1, list("f_refresh", true, field(5, field(1, varint(refresh ? 1 : 0))))),
                field(1, list("item_fids", false, fids)),
                field(1, list("__LINE_ID__", false, lineIds)),
                // The strings the model's lookup and overlap read (data.py's layout).
                field(1, list("user_cate_cnt", true, bytesFeature("c" + uid % 8 + ":2\u001dbroken\u001dc3:5"))),
                field(1, list("item_cate", false, cates)),
                field(1, list("query", true, bytesFeature("w" + uid % 6 + "\u001dw1"))),
                field(1, list("title", false, titles)),
                intField(3, items.length));
        byte[] request = cat(field(1, utf8("nearline_ranker")), field(2, batch));
        return cat(field(1, request), field(2, utf8("nearline_ranker")), intField(5, micros), field(6, utf8(requestId)));
    }

    static final byte[] LOGGED = logged("r1", 1001, 1_760_000_000_123_456L, false, 5, 6, 7);
    static final int[][] ACTIONS = {{1}, null, {2, 3}};

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
        Path joined = dir.resolve("joined.pb");
        Path out = dir.resolve("samples.pb");
        Files.write(joined, computed.joined());
        Process cli = new ProcessBuilder(System.getProperty("fex.cli", "../target/debug/fex"), "extract",
                        joined.toString(), "--model", MODEL.toString(), "--format", "responses", "--output",
                        out.toString())
                .redirectErrorStream(true)
                .start();
        String said = new String(cli.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(cli.waitFor(60, TimeUnit.SECONDS), "fex extract did not finish");
        assertEquals(0, cli.exitValue(), said);
        assertArrayEquals(Files.readAllBytes(out), computed.samples());
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
