package fex.nearline;

import fex.jni.Computed;
import fex.jni.FexException;
import fex.jni.Plan;
import fex.jni.TablePlan;
import java.nio.file.Path;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.metrics.Counter;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * An emitted request's samples: one call into the library per emitted request attaches its actions and runs the
 * model's {@code offline:} transforms and extraction. The main output is the joined records (framed, what {@code fex
 * extract} reads), {@link #SAMPLES} the framed ExtractResponse records {@code fex extract --format responses} writes
 * for them (or, for a job writing an Iceberg sample table, the table's rows as {@link TableRows} reads them), and the
 * request's manifest line goes to {@link LabelJoin#MANIFEST}. A request whose samples the library
 * refuses is reported there, where it was read, and the job goes on.
 */
final class Compute extends ProcessFunction<Joined, Keyed> {
    private static final long serialVersionUID = 1L;
    static final OutputTag<Keyed> SAMPLES = new OutputTag<>("samples", TypeInformation.of(Keyed.class));

    private final String yaml;
    private final String baseDir;
    /** The samples as sample-table rows ({@link TablePlan}), not ExtractResponse records. */
    private final boolean tableRows;
    /** The joined-request table's rows, in its columns' order; null when the job writes no such table. */
    private final OutputTag<RowData> shitu;
    private final String[] shituColumns;
    private transient Plan plan;
    private transient TablePlan tablePlan;
    private transient Counter rows;

    Compute(String yaml, String baseDir, boolean tableRows, OutputTag<RowData> shitu, String[] shituColumns) {
        this.yaml = yaml;
        this.baseDir = baseDir;
        this.tableRows = tableRows;
        this.shitu = shitu;
        this.shituColumns = shituColumns;
    }

    @Override
    public void open(OpenContext context) {
        if (tableRows) {
            tablePlan = TablePlan.fromYaml(yaml, Path.of(baseDir));
        } else {
            plan = Plan.fromYaml(yaml, Path.of(baseDir));
        }
        rows = getRuntimeContext().getMetricGroup().counter("rows_written");
    }

    @Override
    public void close() {
        if (plan != null) {
            plan.close();
        }
        if (tablePlan != null) {
            tablePlan.close();
        }
    }

    @Override
    public void processElement(Joined j, Context ctx, Collector<Keyed> out) {
        Computed c;
        try {
            c = tableRows ? tablePlan.compute(j.logged, j.rows(), j.requestId, j.timeMs) : plan.compute(j.logged, j.rows());
        } catch (FexException e) {
            ctx.output(LabelJoin.MANIFEST, new Json().where(j.source, j.index, j.offset).put("kind", Parse.BAD_REQUEST)
                    .put("request_id", j.requestId).put("user_id", j.userId).put("error", Parse.clip(e.getMessage()))
                    .bytes());
            return;
        }
        rows.inc(c.rowsWritten());
        Json line = new Json().put("kind", LabelJoin.EMITTED).put("request_id", j.requestId).put("user_id", j.userId)
                .put("time", j.timeMs).put("emitted_at", j.dueMs).put("rule", j.rule).put("payload", c.payload())
                .put("rows", j.rowLengths.length).put("rows_written", c.rowsWritten())
                .put("actions_joined", j.actionsJoined);
        if (j.lateRequest) {
            line.put("late_request", true);
        }
        // Last, so a reader that wants the counts can stop before the actions (fex.nearline.summarize_lines).
        line.raw("actions", j.joinedJson);
        out.collect(new Keyed(j.userId, c.joined()));
        ctx.output(SAMPLES, new Keyed(j.userId, c.samples()));
        ctx.output(LabelJoin.MANIFEST, line.bytes());
        if (shitu != null) {
            ctx.output(shitu, shituRow(j, c));
        }
    }

    /** The emitted request as a row of the joined-request table (SampleTable.SHITU_COLUMNS). */
    private RowData shituRow(Joined j, Computed c) {
        GenericRowData row = new GenericRowData(shituColumns.length);
        for (int i = 0; i < shituColumns.length; i++) {
            row.setField(i, switch (shituColumns[i]) {
                case "request_id" -> StringData.fromString(j.requestId);
                case "user_id" -> StringData.fromString(j.userId);
                case "request_time" -> TimestampData.fromEpochMillis(j.timeMs);
                case "emitted_at" -> TimestampData.fromEpochMillis(j.dueMs);
                case "rule" -> StringData.fromString(j.rule);
                case "payload" -> StringData.fromString(c.payload());
                case "rows" -> j.rowLengths.length;
                case "late_request" -> j.lateRequest;
                case "actions" -> StringData.fromBytes(j.joinedJson);
                case "joined" -> c.joined();
                default -> throw new IllegalStateException("the joined-request table has a column " + shituColumns[i]
                        + " the job does not know");
            });
        }
        return row;
    }
}
