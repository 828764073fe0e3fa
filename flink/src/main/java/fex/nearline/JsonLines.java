package fex.nearline;

import java.io.IOException;
import java.util.Arrays;
import org.apache.flink.connector.file.src.FileSourceSplit;

/**
 * Text files of one record per line (the action files: JSON lines) as a Flink file source of {@link LocatedRecords}
 * elements: the line's bytes without its end ({@code \n} or {@code \r\n}), its index (0 for the first line) and the
 * byte offset it starts at, so a bad line is reported where it is. Empty lines are passed over (they still count). A
 * line longer than the limit fails the source with its place.
 */
public final class JsonLines extends LocatedRecords {
    private static final long serialVersionUID = 1L;

    public JsonLines(long maxRecordBytes) {
        super(maxRecordBytes);
    }

    @Override
    Reader reader(FileSourceSplit split) throws IOException {
        return new Lines(split, maxRecordBytes);
    }

    private static final class Lines extends Reader {
        /** Bytes read ahead of the lines handed out: a line that lies wholly in it is packed from it, uncopied. */
        private final byte[] buf = new byte[1 << 16];
        private int pos;
        private int lim;
        /** A line that runs past the end of {@code buf}, gathered here. */
        private byte[] carry = new byte[1 << 10];
        // The line read last: lineLength bytes at lineFrom of lineBytes, taken bytes with its end.
        private byte[] lineBytes;
        private int lineFrom;
        private int lineLength;
        private long taken;

        Lines(FileSourceSplit split, long maxRecordBytes) throws IOException {
            super(split, maxRecordBytes);
        }

        /** Reads the next line (without its {@code \n}); false at the end of the file. */
        private boolean read() throws IOException {
            int carried = 0;
            while (true) {
                if (pos == lim) {
                    pos = 0;
                    lim = Math.max(0, in.read(buf, 0, buf.length));
                    if (lim == 0) {
                        if (carried == 0) {
                            return false;
                        }
                        lineBytes = carry;
                        lineFrom = 0;
                        lineLength = carried;
                        taken = carried;
                        return true;
                    }
                }
                int end = pos;
                while (end < lim && buf[end] != '\n') {
                    end++;
                }
                int n = end - pos;
                if ((long) carried + n > maxRecordBytes) {
                    throw fail("the line is longer than the limit of " + maxRecordBytes + " bytes");
                }
                boolean whole = end < lim;
                if (whole && carried == 0) {
                    lineBytes = buf;
                    lineFrom = pos;
                    lineLength = n;
                    taken = n + 1L;
                    pos = end + 1;
                    return true;
                }
                if (carried + n > carry.length) {
                    carry = Arrays.copyOf(carry, Math.max(carried + n, 2 * carry.length));
                }
                System.arraycopy(buf, pos, carry, carried, n);
                carried += n;
                pos = end;
                if (whole) {
                    pos++;
                    lineBytes = carry;
                    lineFrom = 0;
                    lineLength = carried;
                    taken = carried + 1L;
                    return true;
                }
            }
        }

        @Override
        byte[] next() throws IOException {
            while (read()) {
                int n = lineLength > 0 && lineBytes[lineFrom + lineLength - 1] == '\r' ? lineLength - 1 : lineLength;
                long at = offset;
                long i = index;
                offset += taken;
                index++;
                if (n > 0) {
                    return pack(pathBytes, i, at, lineBytes, lineFrom, n);
                }
            }
            return null;
        }
    }
}
