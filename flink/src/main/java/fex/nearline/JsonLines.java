package fex.nearline;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
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
        private final ByteArrayOutputStream line = new ByteArrayOutputStream();

        Lines(FileSourceSplit split, long maxRecordBytes) throws IOException {
            super(split, maxRecordBytes);
        }

        /** Reads the next line into {@code line}; its length with its end, or -1 at the end of the file. */
        private long read() throws IOException {
            line.reset();
            long taken = 0;
            for (int c = in.read(); c >= 0; c = in.read()) {
                taken++;
                if (c == '\n') {
                    return taken;
                }
                if (line.size() >= maxRecordBytes) {
                    throw fail("the line is longer than the limit of " + maxRecordBytes + " bytes");
                }
                line.write(c);
            }
            return taken == 0 ? -1 : taken;
        }

        @Override
        byte[] next() throws IOException {
            while (true) {
                long taken = read();
                if (taken < 0) {
                    return null;
                }
                byte[] bytes = line.toByteArray();
                int n = bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
                long at = offset;
                long i = index;
                offset += taken;
                index++;
                if (n > 0) {
                    return pack(pathBytes, i, at, bytes, 0, n);
                }
            }
        }
    }
}
