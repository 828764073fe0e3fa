package fex.jni;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A compiled model config, open in the library until {@link #close()}. Safe to share between threads: the calls read it
 * and keep no state between them.
 */
public final class Plan implements AutoCloseable {
    private final long handle;
    private volatile boolean closed;

    private Plan(long handle) {
        this.handle = handle;
    }

    /** Compiles a model config's text; relative file paths in it are resolved against {@code baseDir}. */
    public static Plan fromYaml(String yaml, Path baseDir) {
        return new Plan(Native.open(yaml, baseDir.toString()));
    }

    /** Compiles the model config in {@code path}. */
    public static Plan fromFile(Path path) throws IOException {
        String yaml = Files.readString(path, StandardCharsets.UTF_8);
        Path dir = path.toAbsolutePath().getParent();
        return fromYaml(yaml, dir == null ? Path.of(".") : dir);
    }

    /** The config's {@code label_join:} section, or null without one. */
    public LabelJoin labelJoin() {
        return Native.labelJoin(handle);
    }

    /** A logged request's join keys. */
    public RequestKeys requestKeys(byte[] logged) {
        return Native.requestKeys(handle, logged);
    }

    /**
     * Attaches {@code actions} (one array per row of the request) to a logged request's samples and runs the model's
     * transforms and extraction over them: one call per emitted request.
     */
    public Computed compute(byte[] logged, int[][] actions) {
        return Native.compute(handle, logged, actions);
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            Native.close(handle);
        }
    }
}
