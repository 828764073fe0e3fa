package fex.jni;

import java.nio.file.Path;
import java.util.Arrays;

/**
 * The JNI crossing beside the library's own work, per emitted request (benches/README.md, "The library through
 * JNI"). Not a test: run it with a release build of the library,
 *
 * <pre>
 * cargo build --release -p fex-jni
 * mvn -q -f flink/pom.xml -Dmaven.repo.local=target/m2 test-compile
 * java -Dfex.jni.library=target/release/libfex_jni.so -cp flink/target/classes:flink/target/test-classes \
 *     fex.jni.ComputeBench tests/nearline/model.yaml
 * </pre>
 *
 * <p>Four calls, interleaved round by round: {@code compute} on a 30-row request (the library's sample computation
 * and the arrays both ways), {@code requestKeys} on the same bytes, {@code labelJoin} (one Java string and one object
 * built in Rust, so mostly the cost of making an object there), and {@code close} of a handle that holds nothing (a
 * crossing with a table lookup and no arrays). Each round times a block of calls; the medians of the rounds are
 * printed in microseconds per call. {@code cargo bench --features offline --bench nearline} times the library's
 * {@code compute} and {@code request_keys} alone on the same request.
 */
public final class ComputeBench {
    private ComputeBench() {}

    public static void main(String[] args) throws Exception {
        Path model = Path.of(args.length > 0 ? args[0] : "tests/nearline/model.yaml");
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 30;
        int block = args.length > 2 ? Integer.parseInt(args[2]) : 2000;
        long[] items = new long[30];
        int[][] actions = new int[30][];
        for (int i = 0; i < items.length; i++) {
            items[i] = i + 1;
            actions[i] = i % 3 == 0 ? new int[] {1} : i % 3 == 1 ? new int[] {2, 3} : new int[0];
        }
        byte[] logged = PlanTest.logged("bench", 1001, 1_760_000_000_123_456L, false, items);
        try (Plan plan = Plan.fromFile(model)) {
            long sink = 0;
            for (int i = 0; i < block * 2; i++) { // warm-up
                sink += plan.compute(logged, actions).samples().length;
                sink += plan.requestKeys(logged).rows();
            }
            double[] compute = new double[rounds];
            double[] keys = new double[rounds];
            double[] section = new double[rounds];
            double[] crossing = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                long t0 = System.nanoTime();
                for (int i = 0; i < block; i++) {
                    sink += plan.compute(logged, actions).samples().length;
                }
                long t1 = System.nanoTime();
                for (int i = 0; i < block; i++) {
                    sink += plan.requestKeys(logged).rows();
                }
                long t2 = System.nanoTime();
                for (int i = 0; i < block; i++) {
                    sink += plan.labelJoin().requestsBack();
                }
                long t3 = System.nanoTime();
                for (int i = 0; i < block; i++) {
                    sink += Native.close(-1) ? 1 : 0;
                }
                long t4 = System.nanoTime();
                compute[r] = (t1 - t0) / 1e3 / block;
                keys[r] = (t2 - t1) / 1e3 / block;
                section[r] = (t3 - t2) / 1e3 / block;
                crossing[r] = (t4 - t3) / 1e3 / block;
            }
            System.out.printf("request: %d rows, %d bytes logged; %d rounds of %d calls (checksum %d)%n",
                    items.length, logged.length, rounds, block, sink);
            System.out.printf("compute      median %.2f us/call (min %.2f, max %.2f)%n", median(compute),
                    min(compute), max(compute));
            System.out.printf("requestKeys  median %.2f us/call (min %.2f, max %.2f)%n", median(keys), min(keys),
                    max(keys));
            System.out.printf("labelJoin    median %.3f us/call (min %.3f, max %.3f)%n", median(section),
                    min(section), max(section));
            System.out.printf("empty call   median %.3f us/call (min %.3f, max %.3f)%n", median(crossing),
                    min(crossing), max(crossing));
        }
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    static double min(double[] v) {
        return Arrays.stream(v).min().orElse(Double.NaN);
    }

    static double max(double[] v) {
        return Arrays.stream(v).max().orElse(Double.NaN);
    }
}
