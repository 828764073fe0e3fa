package fex.nearline;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.file.src.FileSourceSplit;
import org.apache.flink.connector.file.src.reader.BulkFormat;
import org.apache.flink.connector.file.src.util.ArrayResultIterator;
import org.apache.flink.connector.file.src.util.CheckpointedPosition;
import org.apache.flink.core.fs.FSDataInputStream;

/**
 * A file source format whose elements are records with where they were:
 *
 * <pre>[u32 LE source length][source, UTF-8][u64 LE index][u64 LE byte offset][payload]</pre>
 *
 * ({@link #pack}, {@link Parse#located}), so a record the job cannot use is reported by file, index and offset. Kafka
 * records take the same form ({@link KafkaInput}: source {@code kafka:TOPIC}, index the partition). A file is read
 * whole by one reader (not splittable). A checkpoint keeps the number of records read; a restored reader reads the
 * file again from its start and skips them.
 */
abstract class LocatedRecords implements BulkFormat<byte[], FileSourceSplit> {
    private static final long serialVersionUID = 1L;
    /** A batch ends at this many records or bytes, whichever comes first. */
    private static final int BATCH = 64;
    private static final long BATCH_BYTES = 16L << 20;

    final long maxRecordBytes;

    LocatedRecords(long maxRecordBytes) {
        // An element is the payload plus its location, in one Java array.
        if (maxRecordBytes <= 0 || maxRecordBytes > Integer.MAX_VALUE - (1 << 16)) {
            throw new IllegalArgumentException("maxRecordBytes must be in 1.." + (Integer.MAX_VALUE - (1 << 16))
                    + ", not " + maxRecordBytes);
        }
        this.maxRecordBytes = maxRecordBytes;
    }

    /** One element: {@code length} bytes of {@code payload} from {@code from}, with its place. */
    static byte[] pack(byte[] source, long index, long offset, byte[] payload, int from, int length) {
        int head = 4 + source.length + 16;
        byte[] element = new byte[Math.addExact(head, length)];
        ByteBuffer.wrap(element, 0, head).order(ByteOrder.LITTLE_ENDIAN)
                .putInt(source.length).put(source).putLong(index).putLong(offset);
        System.arraycopy(payload, from, element, head, length);
        return element;
    }

    /** A reader of one file: {@link Reader#next} and {@link Reader#skip} are the format's own. */
    abstract Reader reader(FileSourceSplit split) throws IOException;

    @Override
    public BulkFormat.Reader<byte[]> createReader(Configuration config, FileSourceSplit split) throws IOException {
        return reader(split);
    }

    @Override
    public BulkFormat.Reader<byte[]> restoreReader(Configuration config, FileSourceSplit split) throws IOException {
        long skip = split.getReaderPosition().map(CheckpointedPosition::getRecordsAfterOffset).orElse(0L);
        Reader reader = reader(split);
        try {
            for (long i = 0; i < skip; i++) {
                if (!reader.skipOne()) {
                    throw new IOException(split.path() + ": has fewer records than the checkpoint read (" + skip + ")");
                }
            }
        } catch (IOException | RuntimeException e) {
            reader.close();
            throw e;
        }
        return reader;
    }

    @Override
    public boolean isSplittable() {
        return false;
    }

    @Override
    public TypeInformation<byte[]> getProducedType() {
        return PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO;
    }

    abstract static class Reader implements BulkFormat.Reader<byte[]> {
        final InputStream in;
        final String path;
        final byte[] pathBytes;
        final long maxRecordBytes;
        /** The next record's byte offset and index in the file. */
        long offset;
        long index;
        /** Elements given so far (a format may pass over records, as JsonLines does empty lines). */
        private long records;

        Reader(FileSourceSplit split, long maxRecordBytes) throws IOException {
            FSDataInputStream stream = split.path().getFileSystem().open(split.path());
            this.in = new BufferedInputStream(stream, 1 << 16);
            this.path = split.path().toString();
            this.pathBytes = path.getBytes(StandardCharsets.UTF_8);
            this.maxRecordBytes = maxRecordBytes;
        }

        /** The next record with its location, or null at the end. */
        abstract byte[] next() throws IOException;

        /** Passes over the next record (a restore's skip); false at the end. */
        boolean skip() throws IOException {
            return next() != null;
        }

        private boolean skipOne() throws IOException {
            if (!skip()) {
                return false;
            }
            records++;
            return true;
        }

        IOException fail(String what) {
            return new IOException(path + ": record " + index + " at byte " + offset + ": " + what);
        }

        @Override
        public RecordIterator<byte[]> readBatch() throws IOException {
            long first = records;
            byte[][] batch = new byte[BATCH][];
            int n = 0;
            long bytes = 0;
            while (n < BATCH && bytes < BATCH_BYTES) {
                byte[] element = next();
                if (element == null) {
                    break;
                }
                batch[n++] = element;
                bytes += element.length;
            }
            if (n == 0) {
                return null;
            }
            records += n;
            ArrayResultIterator<byte[]> it = new ArrayResultIterator<>();
            // Positions count elements from the file's start: after the i-th of this batch, first + i + 1 have
            // been given.
            it.set(batch, n, CheckpointedPosition.NO_OFFSET, first);
            return it;
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }
}
