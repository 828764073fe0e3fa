package fex.jni;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A compiled model config whose samples are rows of its Iceberg sample table, open in the library until
 * {@link #close()}. {@link #compute} returns the rows in the encoding {@code fex.nearline.TableRows} reads, in the
 * order of {@link #columns()}: {@code request_id}, {@code row}, {@code request_time} (the emitted request's id and
 * time, and the row's place in it), then the model's outputs: the columns {@code fex table create} gives the table.
 */
public final class TablePlan implements AutoCloseable {
    private final long handle;
    private volatile boolean closed;

    private TablePlan(long handle) {
        this.handle = handle;
    }

    /** Compiles a model config's text; relative file paths in it are resolved against {@code baseDir}. */
    public static TablePlan fromYaml(String yaml, Path baseDir) {
        return new TablePlan(Native.openTable(yaml, baseDir.toString()));
    }

    /** The table's column names, in order. */
    public List<String> columns() {
        return List.of(Native.tableColumns(handle));
    }

    /**
     * What each snapshot's summary says of the model: {@code fex.model}, {@code fex.model_version},
     * {@code fex.model_digest}, {@code fex.version}, as {@code fex extract --format iceberg} writes them.
     */
    public Map<String, String> summary() {
        String[] pairs = Native.tableSummary(handle);
        Map<String, String> out = new TreeMap<>();
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            out.put(pairs[i], pairs[i + 1]);
        }
        return out;
    }

    /** {@link Plan#compute}, with {@link Computed#samples()} as table rows of request {@code requestId} at {@code timeMs}. */
    public Computed compute(byte[] logged, int[][] actions, String requestId, long timeMs) {
        return Native.computeTable(handle, logged, actions, requestId, timeMs);
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            Native.close(handle);
        }
    }
}
