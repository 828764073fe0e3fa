package fex.jni;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The calls into fex's library (the {@code fex-jni} crate). The library is loaded once per class loader: from the path
 * in system property {@code fex.jni.library} if set, else from the copy bundled in the jar for linux-x86_64. Every
 * method throws {@link FexException} on failure, a panic in the library included.
 */
public final class Native {
    /** Where the jar holds the library. */
    static final String BUNDLED = "/fex/jni/linux-x86_64/libfex_jni.so";

    static {
        load();
    }

    private Native() {}

    private static void load() {
        String path = System.getProperty("fex.jni.library");
        if (path != null && !path.isEmpty()) {
            System.load(Path.of(path).toAbsolutePath().toString());
            return;
        }
        String platform = System.getProperty("os.name") + "/" + System.getProperty("os.arch");
        try (InputStream in = Native.class.getResourceAsStream(BUNDLED)) {
            if (!System.getProperty("os.name").equals("Linux")
                    || !System.getProperty("os.arch").matches("amd64|x86_64")) {
                throw new UnsatisfiedLinkError("this jar bundles fex's JNI library for linux-x86_64 only, not "
                        + platform + ": build it there (cargo build --release -p fex-jni) and pass its path in "
                        + "-Dfex.jni.library");
            }
            if (in == null) {
                throw new UnsatisfiedLinkError("this jar holds no JNI library (" + BUNDLED + "): it was packaged "
                        + "before `cargo build -p fex-jni`; build that and package again, or pass the library's "
                        + "path in -Dfex.jni.library");
            }
            Path copy = Files.createTempFile("libfex_jni", ".so");
            try {
                Files.copy(in, copy, StandardCopyOption.REPLACE_EXISTING);
                System.load(copy.toString());
            } finally {
                // Loaded libraries stay mapped; the file is no longer needed.
                Files.deleteIfExists(copy);
            }
        } catch (IOException e) {
            throw new UnsatisfiedLinkError("cannot unpack fex's JNI library: " + e);
        }
    }

    /** Compiles a model config; {@code baseDir} resolves its relative paths. Returns a handle for {@link #close}. */
    static native long open(String yaml, String baseDir);

    /** Drops a plan; false when the handle held none. */
    static native boolean close(long plan);

    /** The config's {@code label_join:} section, or null without one. */
    static native LabelJoin labelJoin(long plan);

    static native RequestKeys requestKeys(long plan, byte[] logged);

    /** {@code actions}: one array per row of the request (null for none). */
    static native Computed compute(long plan, byte[] logged, int[][] actions);

    /** Compiles a model config for sample-table rows (for {@link #computeTable}). */
    static native long openTable(String yaml, String baseDir);

    /** The sample table's column names, in order: the identity columns, then the model's outputs. */
    static native String[] tableColumns(long tablePlan);

    /** The model's name, version and digest for each snapshot's summary, as key, value, key, value... */
    static native String[] tableSummary(long tablePlan);

    /**
     * As {@link #compute}, with {@code samples} the rows of the sample table ({@code fex.nearline.TableRows}), each
     * carrying {@code requestId} and {@code timeMs}, the request's as the join read them.
     */
    static native Computed computeTable(long tablePlan, byte[] logged, int[][] actions, String requestId, long timeMs);

    /** Panics inside the library, for the test that a panic becomes a {@link FexException}. */
    static native long panicForTest();
}
