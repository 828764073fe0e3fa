package fex.nearline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.FloatType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.junit.jupiter.api.Test;

/**
 * Sample rows for the Iceberg table, encoded by hand and read back: bytes cut short anywhere, or counts larger than the
 * bytes, are an error naming where, never a read past the end or an allocation from an unchecked count. (A request
 * through the library: {@code fex.jni.TablePlanTest}.)
 */
class TableRowsTest {
    private static final RowType SMALL = RowType.of(new LogicalType[] {
        new VarCharType(true, VarCharType.MAX_LENGTH), new ArrayType(false, new BigIntType(false)), new FloatType(false)
    }, new String[] {"id", "fids", "w"});

    /** Two rows of {@link #SMALL}: ("a", [1, 2], 0.5) and (null, [], 1.5). */
    private static byte[] small() {
        ByteBuffer b = ByteBuffer.allocate(256).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(2);
        b.put((byte) 1).put((byte) 1).put((byte) 0).putInt(0).putInt(1).putInt(1).put((byte) 'a');
        b.put((byte) 0).putInt(0).putInt(2).putInt(2).put((byte) 0).putLong(1).putLong(2);
        b.put((byte) 0).putFloat(0.5f).putFloat(1.5f);
        return Arrays.copyOf(b.array(), b.position());
    }

    @Test
    void handEncodedRowsReadBack() {
        RowData[] rows = TableRows.decode(SMALL, small());
        assertEquals(2, rows.length);
        assertEquals("a", rows[0].getString(0).toString());
        assertTrue(rows[1].isNullAt(0));
        assertArrayEquals(new long[] {1, 2}, rows[0].getArray(1).toLongArray());
        assertEquals(0, rows[1].getArray(1).size());
        assertEquals(1.5f, rows[1].getFloat(2));
    }

    @Test
    void everyCutIsAnErrorThatSaysWhere() {
        byte[] whole = small();
        for (int len = 0; len < whole.length; len++) {
            byte[] cut = Arrays.copyOf(whole, len);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> TableRows.decode(SMALL, cut));
            assertTrue(e.getMessage().contains("the row count") || e.getMessage().contains("column "), e.getMessage());
        }
        byte[] longer = Arrays.copyOf(whole, whole.length + 1);
        assertTrue(assertThrows(IllegalStateException.class, () -> TableRows.decode(SMALL, longer)).getMessage()
                .contains("1 bytes after the last column"));
    }

    @Test
    void countsLargerThanTheBytesAreRefusedBeforeAnyAllocation() {
        byte[] huge = small();
        ByteBuffer.wrap(huge).order(ByteOrder.LITTLE_ENDIAN).putInt(0, Integer.MAX_VALUE);
        assertTrue(assertThrows(IllegalStateException.class, () -> TableRows.decode(SMALL, huge)).getMessage()
                .contains("a row count of " + Integer.MAX_VALUE));
        // The list's last offset says two billion elements.
        byte[] list = small();
        int lastOffset = 4 + 1 + 2 + 4 * 3 + 1 + 1 + 4 * 2;
        ByteBuffer.wrap(list).order(ByteOrder.LITTLE_ENDIAN).putInt(lastOffset, 2_000_000_000);
        String m = assertThrows(IllegalStateException.class, () -> TableRows.decode(SMALL, list)).getMessage();
        assertTrue(m.contains("column fids") && m.contains("2000000000 elements"), m);
    }
}
