package fex.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import fex.nearline.TableRows;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.List;
import org.apache.flink.table.data.ArrayData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.junit.jupiter.api.Test;

/**
 * A request's samples as sample-table rows through the library ({@code computeTable}), read back as the job's Iceberg
 * sink reads them ({@link TableRows}): one row per row written, each with the request's id and time and its place.
 */
class TablePlanTest {

    /** The identity columns and the first outputs of the test model, as the table types them. */
    private static RowType prefixType(List<String> columns, int outputs) {
        LogicalType[] types = new LogicalType[3 + outputs];
        types[0] = new VarCharType(VarCharType.MAX_LENGTH);
        types[1] = new IntType(false);
        types[2] = new LocalZonedTimestampType(6);
        for (int i = 3; i < types.length; i++) {
            types[i] = new ArrayType(false, new BigIntType(false));
        }
        return RowType.of(types, columns.subList(0, types.length).toArray(new String[0]));
    }

    @Test
    void aRequestsRowsCarryItsIdentityInOrder() throws Exception {
        try (TablePlan plan = TablePlan.fromYaml(Files.readString(PlanTest.MODEL), PlanTest.MODEL.toAbsolutePath().getParent())) {
            List<String> columns = plan.columns();
            assertEquals(List.of("request_id", "row", "request_time", "user_fids", "item_fids"), columns.subList(0, 5));
            assertEquals("nearline_ranker", plan.summary().get("fex.model"));
            Computed c = plan.compute(PlanTest.LOGGED, PlanTest.ACTIONS, "r1", 1_760_000_000_123L);
            assertEquals(3, c.rowsWritten());
            // The whole row type is the table's; the first columns are enough to read the identity and fids, so
            // decode a copy cut after them by re-encoding the count of columns read.
            RowData[] rows = TableRows.decode(prefixType(columns, 2), prefix(c.samples(), 5));
            assertEquals(3, rows.length);
            for (int r = 0; r < 3; r++) {
                assertEquals("r1", rows[r].getString(0).toString());
                assertEquals(r, rows[r].getInt(1));
                assertEquals(1_760_000_000_123L, rows[r].getTimestamp(2, 6).getMillisecond());
                ArrayData fids = rows[r].getArray(3);
                assertTrue(fids.size() > 0, "user fids");
            }
        }
    }

    /** The row count and the first {@code columns} columns of an encoding of the test model's row types. */
    private static byte[] prefix(byte[] rows, int columns) {
        ByteBuffer b = ByteBuffer.wrap(rows).order(ByteOrder.LITTLE_ENDIAN);
        int n = b.getInt();
        skipString(b, n);
        skipFixed(b, n, 4);
        skipFixed(b, n, 8);
        for (int i = 3; i < columns; i++) {
            skipList(b, n, 8);
        }
        return Arrays.copyOf(rows, b.position());
    }

    private static void skipValidity(ByteBuffer b, int n) {
        if (b.get() == 1) {
            b.position(b.position() + n);
        }
    }

    private static void skipFixed(ByteBuffer b, int n, int width) {
        skipValidity(b, n);
        b.position(b.position() + n * width);
    }

    private static void skipString(ByteBuffer b, int n) {
        skipValidity(b, n);
        int last = b.getInt(b.position() + 4 * n);
        b.position(b.position() + 4 * (n + 1) + last);
    }

    private static void skipList(ByteBuffer b, int n, int width) {
        skipValidity(b, n);
        int last = b.getInt(b.position() + 4 * n);
        b.position(b.position() + 4 * (n + 1));
        skipFixed(b, last, width);
    }

}
