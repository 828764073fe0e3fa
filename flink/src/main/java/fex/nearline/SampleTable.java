package fex.nearline;

import java.io.Serializable;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.RowType;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.flink.CatalogLoader;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.flink.TableLoader;
import org.apache.iceberg.flink.sink.FlinkSink;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.types.Types;

/**
 * A table of the job in an Iceberg warehouse ({@code --iceberg-warehouse}): the model's sample table, and the
 * joined-request ("Shitu") table, one row per emitted request ({@link #SHITU_COLUMNS}). The sample table is
 * the one {@code fex table create} made (and {@code fex extract --format iceberg} appends to), in the same SQL catalog
 * (Iceberg's JDBC catalog, named {@code fex}: by default the SQLite file {@code catalog.db} in the warehouse). The
 * samples arrive as rows ({@link TableRows}) and go through Iceberg's own Flink sink, which writes data files as they
 * come and commits them when a checkpoint completes (at the end, in batch execution): exactly once across a restore,
 * each checkpoint's files committed once (the sink keeps the last committed checkpoint in the snapshot summary).
 *
 * <p>Iceberg's jars (iceberg-flink-runtime, Hadoop's client, the SQLite driver) are not in fex's jar; the launcher puts
 * them on the classpath (flink/target/iceberg-lib).
 */
final class SampleTable implements Serializable {
    private static final long serialVersionUID = 1L;
    /** The catalog's name in the SQL catalog's rows: the one fex-iceberg writes. */
    static final String CATALOG = "fex";

    final String warehouse;
    final String table;
    final String catalogUri;
    /** Catalog and file-IO properties as given (KEY=VALUE), over fex's own. */
    final List<String> given;

    SampleTable(String warehouse, String table, String catalogUri, List<String> properties) {
        this.warehouse = isLocal(warehouse) ? Path.of(warehouse).toAbsolutePath().toString()
                : warehouse.replaceAll("/+$", "");
        this.table = table;
        this.catalogUri = catalogUri;
        this.given = List.copyOf(properties);
    }

    /** Whether a warehouse is a local directory rather than an object store's URI (s3://...). */
    static boolean isLocal(String warehouse) {
        return warehouse.startsWith("file:") || !warehouse.matches("^[A-Za-z][A-Za-z0-9+.-]*://.*");
    }

    /** {@code KEY=VALUE} checked ({@code --iceberg-property}). */
    static String property(String keyValue) {
        int eq = keyValue.indexOf('=');
        if (eq <= 0 || keyValue.substring(0, eq).isBlank()) {
            throw new IllegalArgumentException("--iceberg-property " + keyValue + ": give it as KEY=VALUE");
        }
        return keyValue;
    }

    boolean isRest() {
        return catalogUri != null && (catalogUri.startsWith("http://") || catalogUri.startsWith("https://"));
    }

    /** What the catalog is, for messages (credentials in the URI are not shown, as fex-iceberg's). */
    String describe() {
        String shown = (isRest() ? catalogUri : jdbcUri()).replaceAll("://[^@/]*@", "://\u2026@");
        return isRest() ? shown + " (REST)" : shown;
    }

    /**
     * The JDBC URL: the SQLite file in the warehouse by default; fex's own forms ({@code sqlite://PATH},
     * {@code postgresql://user:password@host/db}) translated; a {@code jdbc:} URL as given.
     */
    String jdbcUri() {
        if (catalogUri == null || catalogUri.isEmpty()) {
            if (!isLocal(warehouse)) {
                throw new IllegalArgumentException("the warehouse " + warehouse + " is not a local directory, so it "
                        + "has no embedded catalog: give --iceberg-catalog (postgresql://..., jdbc:..., or a REST "
                        + "catalog's http(s)://...)");
            }
            return "jdbc:sqlite:" + Path.of(warehouse, "catalog.db");
        }
        if (catalogUri.startsWith("jdbc:")) {
            return catalogUri;
        }
        if (catalogUri.startsWith("sqlite://")) {
            String path = catalogUri.substring("sqlite://".length()).replaceAll("\\?.*$", "");
            return "jdbc:sqlite:" + path;
        }
        if (catalogUri.startsWith("postgres://") || catalogUri.startsWith("postgresql://")) {
            return "jdbc:postgresql://" + catalogUri.substring(catalogUri.indexOf("://") + 3).replaceAll("^[^@/]*@", "");
        }
        throw new IllegalArgumentException("--iceberg-catalog " + catalogUri + ": not a catalog URI fex knows "
                + "(jdbc:..., sqlite://PATH, postgresql://user:password@host/db, or a REST catalog's http(s)://...)");
    }

    Map<String, String> properties() {
        Map<String, String> p = new HashMap<>();
        p.put(CatalogProperties.WAREHOUSE_LOCATION, warehouse);
        if (isRest()) {
            p.put(CatalogProperties.URI, catalogUri);
        } else {
            p.put(CatalogProperties.URI, jdbcUri());
            // A JDBC catalog's default file IO is Hadoop's, which reads s3:// only with hadoop-aws: Iceberg's
            // resolving IO picks its own S3FileIO (or GCS, ADLS) by the location's scheme, Hadoop's otherwise.
            if (!isLocal(warehouse)) {
                p.put(CatalogProperties.FILE_IO_IMPL, "org.apache.iceberg.io.ResolvingFileIO");
            }
        }
        if (catalogUri != null && catalogUri.matches("^postgres(ql)?://[^@/]+@.*")) {
            String credentials = catalogUri.substring(catalogUri.indexOf("://") + 3, catalogUri.indexOf('@'));
            int colon = credentials.indexOf(':');
            p.put("jdbc.user", colon < 0 ? credentials : credentials.substring(0, colon));
            if (colon >= 0) {
                p.put("jdbc.password", credentials.substring(colon + 1));
            }
        }
        for (String kv : given) {
            int eq = kv.indexOf('=');
            p.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return p;
    }

    CatalogLoader loader() {
        org.apache.hadoop.conf.Configuration hadoop = new org.apache.hadoop.conf.Configuration();
        if (isRest()) {
            return CatalogLoader.rest(CATALOG, hadoop, properties());
        }
        return CatalogLoader.custom(CATALOG, properties(), hadoop, JdbcCatalog.class.getName());
    }

    TableIdentifier identifier() {
        int dot = table.lastIndexOf('.');
        if (dot <= 0 || dot == table.length() - 1) {
            throw new IllegalArgumentException("--iceberg-table " + table + ": give it as namespace.table");
        }
        return TableIdentifier.parse(table);
    }

    /** The joined-request ("Shitu") table's columns, in order, as fex-iceberg's {@code shitu.rs} makes them. */
    static final List<String> SHITU_COLUMNS = List.of("request_id", "user_id", "request_time", "emitted_at", "rule",
            "payload", "rows", "late_request", "actions", "joined");

    /**
     * The table, checked against the columns the job's rows have (in order): a table that is missing, or whose
     * columns differ, is refused here, before the job starts, naming what differs. {@code rows} says what the rows
     * are, for the message.
     */
    Table load(List<String> columns, String model, String rows) {
        TableIdentifier id = identifier();
        if ((catalogUri == null || catalogUri.isEmpty()) && isLocal(warehouse)) {
            // The embedded catalog's file goes into the warehouse, which may not be there yet.
            try {
                java.nio.file.Files.createDirectories(Path.of(warehouse));
            } catch (java.io.IOException e) {
                throw new IllegalArgumentException("cannot create the warehouse " + warehouse + ": " + e);
            }
        }
        Catalog catalog;
        try {
            catalog = loader().loadCatalog();
        } catch (RuntimeException e) {
            throw new Kafka.Unavailable("cannot open the Iceberg catalog " + describe() + ": " + Job.cause(e));
        }
        Table t;
        try {
            t = catalog.loadTable(id);
        } catch (NoSuchTableException e) {
            throw new IllegalArgumentException("the Iceberg catalog " + describe() + " has no table " + table
                    + ": create it with `fex table create --model " + model + " -o " + warehouse
                    + (rows.startsWith("joined") ? " --shitu-table " : " --table ") + table + "`");
        } catch (RuntimeException e) {
            throw new Kafka.Unavailable("cannot read the Iceberg catalog " + describe() + ": " + Job.cause(e));
        } finally {
            if (catalog instanceof AutoCloseable c) {
                try {
                    c.close();
                } catch (Exception ignored) {
                    // Only the catalog's connections; the table is read.
                }
            }
        }
        List<String> have = new ArrayList<>();
        for (Types.NestedField f : t.schema().columns()) {
            have.add(f.name());
        }
        if (!have.equals(columns)) {
            List<String> missing = new ArrayList<>(columns);
            missing.removeAll(have);
            List<String> extra = new ArrayList<>(have);
            extra.removeAll(columns);
            throw new IllegalArgumentException("the table " + table + " in " + describe()
                    + " does not match the " + rows + ": "
                    + (missing.isEmpty() ? "" : "the table has no column " + String.join(", ", missing) + "; ")
                    + (extra.isEmpty() ? "" : "the job writes no column " + String.join(", ", extra) + "; ")
                    + "columns " + have + ", rows " + columns);
        }
        return t;
    }

    /** The samples' rows into the table, committed on checkpoints, each snapshot's summary naming the model. */
    void sink(DataStream<Keyed> samples, Schema schema, Map<String, String> summary, int parallelism) {
        RowType rowType = FlinkSchemaUtil.convert(schema);
        DataStream<RowData> rows = samples.flatMap(new TableRows(rowType), InternalTypeInfo.of(rowType))
                .name("sample rows").uid("sample-rows");
        append(rows, summary, parallelism, "samples-iceberg");
    }

    /** {@code rows} (of the table's row type) appended to the table, committed on checkpoints. */
    void append(DataStream<RowData> rows, Map<String, String> summary, int parallelism, String uidPrefix) {
        FlinkSink.forRowData(rows)
                .tableLoader(TableLoader.fromCatalog(loader(), identifier()))
                .setSnapshotProperties(summary)
                .writeParallelism(parallelism)
                .uidPrefix(uidPrefix)
                .append();
    }
}
