package fex.nearline;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.table.data.GenericArrayData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.Collector;

/**
 * An emitted request's samples, as the library encodes them for the sample table (fex-jni's {@code rows}: the row
 * count, then each column: a validity flag and bytes, then the values; lists and strings as offsets from 0 and their
 * contents), turned into Flink {@link RowData} of the table's row type for Iceberg's Flink sink. The types come from
 * the table, which {@code fex table create} made from the same model; bytes that do not fit them are an error naming
 * the column, never a read past the end or an allocation larger than what arrived.
 */
public final class TableRows implements FlatMapFunction<Keyed, RowData> {
    private static final long serialVersionUID = 1L;
    private final RowType type;

    public TableRows(RowType type) {
        this.type = type;
    }

    @Override
    public void flatMap(Keyed samples, Collector<RowData> out) {
        for (RowData row : decode(type, samples.value)) {
            out.collect(row);
        }
    }

    /** The rows in {@code bytes}, of {@code type}. */
    public static RowData[] decode(RowType type, byte[] bytes) {
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        int fields = type.getFieldCount();
        String at = "the row count";
        try {
            int n = b.getInt();
            if (n < 0 || n > b.remaining()) {
                throw new IllegalStateException("a row count of " + n + " in " + bytes.length + " bytes");
            }
            Object[][] columns = new Object[fields][];
            for (int i = 0; i < fields; i++) {
                at = "column " + type.getFieldNames().get(i);
                columns[i] = column(b, type.getTypeAt(i), n);
            }
            if (b.hasRemaining()) {
                throw new IllegalStateException(b.remaining() + " bytes after the last column");
            }
            RowData[] rows = new RowData[n];
            for (int r = 0; r < n; r++) {
                GenericRowData row = new GenericRowData(fields);
                for (int i = 0; i < fields; i++) {
                    row.setField(i, columns[i][r]);
                }
                rows[r] = row;
            }
            return rows;
        } catch (BufferUnderflowException e) {
            throw new IllegalStateException("the sample rows end inside " + at + " (" + bytes.length + " bytes)");
        } catch (IllegalStateException e) {
            throw new IllegalStateException("the sample rows do not fit the table at " + at + ": " + e.getMessage());
        }
    }

    /** {@code n} values of {@code t}: the validity flag (and bytes), then the values. */
    private static Object[] column(ByteBuffer b, LogicalType t, int n) {
        boolean[] valid = validity(b, n);
        Object[] out = new Object[n];
        switch (t.getTypeRoot()) {
            case INTEGER -> {
                need(b, n, 4);
                for (int r = 0; r < n; r++) {
                    out[r] = b.getInt();
                }
            }
            case BIGINT -> {
                need(b, n, 8);
                for (int r = 0; r < n; r++) {
                    out[r] = b.getLong();
                }
            }
            case FLOAT -> {
                need(b, n, 4);
                for (int r = 0; r < n; r++) {
                    out[r] = b.getFloat();
                }
            }
            case DOUBLE -> {
                need(b, n, 8);
                for (int r = 0; r < n; r++) {
                    out[r] = b.getDouble();
                }
            }
            case BOOLEAN -> {
                need(b, n, 1);
                for (int r = 0; r < n; r++) {
                    out[r] = b.get() != 0;
                }
            }
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE, TIMESTAMP_WITHOUT_TIME_ZONE -> {
                need(b, n, 8);
                for (int r = 0; r < n; r++) {
                    long micros = b.getLong();
                    out[r] = TimestampData.fromEpochMillis(Math.floorDiv(micros, 1000L),
                            (int) Math.floorMod(micros, 1000L) * 1000);
                }
            }
            case VARCHAR, CHAR, VARBINARY, BINARY -> {
                boolean text = t.getTypeRoot() == org.apache.flink.table.types.logical.LogicalTypeRoot.VARCHAR
                        || t.getTypeRoot() == org.apache.flink.table.types.logical.LogicalTypeRoot.CHAR;
                int[] offsets = offsets(b, n);
                byte[] data = new byte[offsets[n]];
                b.get(data);
                for (int r = 0; r < n; r++) {
                    byte[] v = Arrays.copyOfRange(data, offsets[r], offsets[r + 1]);
                    out[r] = text ? StringData.fromBytes(v) : v;
                }
            }
            case ARRAY -> list(b, ((ArrayType) t).getElementType(), n, out);
            case ROW -> {
                RowType row = (RowType) t;
                Object[][] fields = new Object[row.getFieldCount()][];
                for (int i = 0; i < fields.length; i++) {
                    fields[i] = column(b, row.getTypeAt(i), n);
                }
                for (int r = 0; r < n; r++) {
                    GenericRowData v = new GenericRowData(fields.length);
                    for (int i = 0; i < fields.length; i++) {
                        v.setField(i, fields[i][r]);
                    }
                    out[r] = v;
                }
            }
            default -> throw new IllegalStateException("a column of " + t + " has no encoding");
        }
        if (valid != null) {
            for (int r = 0; r < n; r++) {
                if (!valid[r]) {
                    out[r] = null;
                }
            }
        }
        return out;
    }

    /**
     * {@code n} lists of {@code element}: primitive elements without nulls as one array per row (what Iceberg's writer
     * reads fastest), others as objects.
     */
    private static void list(ByteBuffer b, LogicalType element, int n, Object[] out) {
        int[] offsets = offsets(b, n);
        int total = offsets[n];
        int start = b.position();
        boolean noNulls = b.get() == 0;
        switch (noNulls ? element.getTypeRoot() : org.apache.flink.table.types.logical.LogicalTypeRoot.NULL) {
            case BIGINT -> {
                need(b, total, 8);
                long[] all = new long[total];
                b.asLongBuffer().get(all);
                b.position(b.position() + total * 8);
                for (int r = 0; r < n; r++) {
                    out[r] = new GenericArrayData(Arrays.copyOfRange(all, offsets[r], offsets[r + 1]));
                }
            }
            case FLOAT -> {
                need(b, total, 4);
                float[] all = new float[total];
                b.asFloatBuffer().get(all);
                b.position(b.position() + total * 4);
                for (int r = 0; r < n; r++) {
                    out[r] = new GenericArrayData(Arrays.copyOfRange(all, offsets[r], offsets[r + 1]));
                }
            }
            case INTEGER -> {
                need(b, total, 4);
                int[] all = new int[total];
                b.asIntBuffer().get(all);
                b.position(b.position() + total * 4);
                for (int r = 0; r < n; r++) {
                    out[r] = new GenericArrayData(Arrays.copyOfRange(all, offsets[r], offsets[r + 1]));
                }
            }
            case DOUBLE -> {
                need(b, total, 8);
                double[] all = new double[total];
                b.asDoubleBuffer().get(all);
                b.position(b.position() + total * 8);
                for (int r = 0; r < n; r++) {
                    out[r] = new GenericArrayData(Arrays.copyOfRange(all, offsets[r], offsets[r + 1]));
                }
            }
            default -> {
                b.position(start);
                Object[] all = column(b, element, total);
                for (int r = 0; r < n; r++) {
                    out[r] = new GenericArrayData(Arrays.copyOfRange(all, offsets[r], offsets[r + 1]));
                }
            }
        }
    }

    /** Null when every value is valid; else whether each is. */
    private static boolean[] validity(ByteBuffer b, int n) {
        byte flag = b.get();
        if (flag == 0) {
            return null;
        }
        if (flag != 1) {
            throw new IllegalStateException("a validity flag of " + flag);
        }
        need(b, n, 1);
        boolean[] valid = new boolean[n];
        for (int r = 0; r < n; r++) {
            valid[r] = b.get() != 0;
        }
        return valid;
    }

    /** {@code n + 1} offsets from 0, never decreasing, the last within what is left. */
    private static int[] offsets(ByteBuffer b, int n) {
        need(b, n + 1L, 4);
        int[] o = new int[n + 1];
        for (int r = 0; r <= n; r++) {
            o[r] = b.getInt();
            if (r == 0 ? o[r] != 0 : o[r] < o[r - 1]) {
                throw new IllegalStateException("offsets " + Arrays.toString(Arrays.copyOf(o, r + 1))
                        + " do not start at 0 and rise");
            }
        }
        // Every element takes at least its validity flag's share of a byte: a list cannot hold more elements than
        // bytes follow.
        if (o[n] > b.remaining()) {
            throw new IllegalStateException(o[n] + " elements in " + b.remaining() + " bytes");
        }
        return o;
    }

    private static void need(ByteBuffer b, long count, int width) {
        if (count * width > b.remaining()) {
            throw new IllegalStateException(count + " values of " + width + " bytes in " + b.remaining());
        }
    }
}
