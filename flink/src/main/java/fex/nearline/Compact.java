package fex.nearline;

import java.io.PrintStream;
import java.util.concurrent.TimeUnit;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.iceberg.Table;
import org.apache.iceberg.actions.RewriteDataFilesActionResult;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.flink.actions.Actions;

/**
 * Compaction of a table the job writes (a streaming job commits a few data files per partition on every checkpoint):
 * Iceberg's own {@code rewriteDataFiles} action (its Flink implementation) bins each partition's small files into
 * files of {@code --target-file-bytes} and commits the rewrite; then, with {@code --expire-older-than-ms}, snapshots
 * older than that are expired (keeping the last one). Iceberg deletes the files that the expired snapshots removed;
 * the files this rewrite replaced go when its own snapshot is expired, at a later run. Readers see the same rows before
 * and after. {@code python -m fex.nearline.compact} runs it.
 *
 * <p>Exit status: 0 done, 64 arguments or a table that cannot be used, 69 a catalog that cannot be reached, 70 the
 * rewrite failed.
 */
public final class Compact {
    private Compact() {}

    static final String USAGE = "usage: fex.nearline.Compact --iceberg-warehouse DIR --iceberg-table NS.NAME "
            + "[--iceberg-catalog URI] [--iceberg-property KEY=VALUE]... [--target-file-bytes N] "
            + "[--expire-older-than-ms MS]";

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    public static int run(String[] args, PrintStream out, PrintStream err) {
        String warehouse = null;
        String table = null;
        String catalog = null;
        java.util.List<String> properties = new java.util.ArrayList<>();
        long target = 128L << 20;
        long expireOlderThanMs = -1;
        try {
            for (int i = 0; i < args.length; i += 2) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(args[i] + " needs a value");
                }
                String v = args[i + 1];
                switch (args[i]) {
                    case "--iceberg-warehouse" -> warehouse = v;
                    case "--iceberg-table" -> table = v;
                    case "--iceberg-catalog" -> catalog = v;
                    case "--iceberg-property" -> properties.add(SampleTable.property(v));
                    case "--target-file-bytes" -> target = Long.parseLong(v);
                    case "--expire-older-than-ms" -> expireOlderThanMs = Long.parseLong(v);
                    default -> throw new IllegalArgumentException("unknown flag " + args[i]);
                }
            }
            if (warehouse == null || table == null) {
                throw new IllegalArgumentException("--iceberg-warehouse and --iceberg-table are required");
            }
            if (target < 1) {
                throw new IllegalArgumentException("--target-file-bytes must be positive");
            }
        } catch (NumberFormatException e) {
            err.println("error: not a whole number: " + e.getMessage());
            err.println(USAGE);
            return Job.EX_USAGE;
        } catch (IllegalArgumentException e) {
            err.println("error: " + e.getMessage());
            err.println(USAGE);
            return Job.EX_USAGE;
        }
        SampleTable where = new SampleTable(warehouse, table, catalog, properties);
        Catalog c = null;
        try {
            // Open until the end: the table's commits go through its connections.
            c = where.loader().loadCatalog();
            return compact(c.loadTable(where.identifier()), table, target, expireOlderThanMs, out, err);
        } catch (org.apache.iceberg.exceptions.NoSuchTableException e) {
            err.println("error: the Iceberg catalog " + where.describe() + " has no table " + table);
            return Job.EX_USAGE;
        } catch (IllegalArgumentException e) {
            err.println("error: " + e.getMessage());
            return Job.EX_USAGE;
        } catch (RuntimeException e) {
            err.println("error: cannot read the Iceberg catalog " + where.describe() + ": " + Job.cause(e));
            return Job.EX_UNAVAILABLE;
        } finally {
            if (c instanceof AutoCloseable closeable) {
                try {
                    closeable.close();
                } catch (Exception ignored) {
                    // The work is committed or failed by now; only connections are left.
                }
            }
        }
    }

    private static int compact(Table t, String table, long target, long expireOlderThanMs, PrintStream out,
            PrintStream err) {
        int before = files(t);
        try {
            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
            env.setParallelism(1);
            // Files are binned by their bytes alone: Iceberg's default counts each file as at least 4 MB
            // (read.split.open-file-cost), so a partition of 308 one-checkpoint files came out as 10 files, where
            // their 3 MB fit in one.
            RewriteDataFilesActionResult result = Actions.forTable(env, t).rewriteDataFiles()
                    .targetSizeInBytes(target).splitOpenFileCost(1).execute();
            t.refresh();
            out.printf("rewrote %d data files of %s into %d; %d data files before, %d after%n",
                    result.deletedDataFiles().size(), table, result.addedDataFiles().size(), before, files(t));
            if (expireOlderThanMs >= 0) {
                long cutoff = System.currentTimeMillis() - expireOlderThanMs;
                int snapshots = count(t.snapshots());
                t.expireSnapshots().expireOlderThan(cutoff).retainLast(1).commit();
                t.refresh();
                out.printf("expired %d of %d snapshots older than %d s%n", snapshots - count(t.snapshots()), snapshots,
                        TimeUnit.MILLISECONDS.toSeconds(expireOlderThanMs));
            }
        } catch (RuntimeException e) {
            err.println("error: the compaction of " + table + " failed: " + Job.cause(e));
            return Job.EX_SOFTWARE;
        }
        return 0;
    }

    /** Data files of the table's current snapshot. */
    private static int files(Table t) {
        if (t.currentSnapshot() == null) {
            return 0;
        }
        java.util.Set<String> paths = new java.util.HashSet<>();
        try (var tasks = t.newScan().planFiles()) {
            // A large file may be planned as several splits: counted once.
            for (var task : tasks) {
                paths.add(task.file().location());
            }
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return paths.size();
    }

    private static int count(Iterable<?> it) {
        int n = 0;
        for (Object ignored : it) {
            n++;
        }
        return n;
    }
}
