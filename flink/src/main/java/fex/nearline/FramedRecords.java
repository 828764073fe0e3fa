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
 * Reads PBDataset-framed files ([u64 little-endian length][payload], the
 * request logs fex-server writes) as a Flink file source. Each element is
 * one record with where it was:
 *
 * <pre>[u32 LE path length][path, UTF-8][u64 LE index][u64 LE byte offset][payload]</pre>
 *
 * so a record the job cannot use is reported by file, index and offset. A
 * file is read whole by one reader (not splittable). A checkpoint keeps the
 * number of records read; a restored reader reads the file again from its
 * start and skips them.
 *
 * <p>A length over the limit, or a file that ends inside a record, fails the
 * source naming the file, the record's index and its offset: the bytes are
 * not guessed at.
 */
public final class FramedRecords implements BulkFormat<byte[], FileSourceSplit> {
    private static final long serialVersionUID = 1L;
    /** A batch ends at this many records or bytes, whichever comes first. */
    private static final int BATCH = 64;
    private static final long BATCH_BYTES = 16L << 20;

    private final long maxRecordBytes;

    public FramedRecords(long maxRecordBytes) {
        // An element is the payload plus its location, in one Java array.
        if (maxRecordBytes <= 0 || maxRecordBytes > Integer.MAX_VALUE - (1 << 16)) {
            throw new IllegalArgumentException("maxRecordBytes must be in 1.." + (Integer.MAX_VALUE - (1 << 16))
                    + ", not " + maxRecordBytes);
        }
        this.maxRecordBytes = maxRecordBytes;
    }

    @Override
    public BulkFormat.Reader<byte[]> createReader(Configuration config, FileSourceSplit split) throws IOException {
        return new Reader(split, 0, maxRecordBytes);
    }

    @Override
    public BulkFormat.Reader<byte[]> restoreReader(Configuration config, FileSourceSplit split) throws IOException {
        long skip = split.getReaderPosition().map(CheckpointedPosition::getRecordsAfterOffset).orElse(0L);
        Reader reader = new Reader(split, 0, maxRecordBytes);
        try {
            for (long i = 0; i < skip; i++) {
                if (!reader.skip()) {
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

    private static final class Reader implements BulkFormat.Reader<byte[]> {
        private final FSDataInputStream stream;
        private final InputStream in;
        private final String path;
        private final byte[] pathBytes;
        private final long maxRecordBytes;
        private long offset;
        private long index;

        Reader(FileSourceSplit split, long start, long maxRecordBytes) throws IOException {
            this.stream = split.path().getFileSystem().open(split.path());
            this.stream.seek(start);
            this.in = new BufferedInputStream(stream, 1 << 16);
            this.path = split.path().toString();
            this.pathBytes = path.getBytes(StandardCharsets.UTF_8);
            this.maxRecordBytes = maxRecordBytes;
            this.offset = start;
        }

        /** The next record's length, checked, or -1 at the end. */
        private long length() throws IOException {
            byte[] header = in.readNBytes(8);
            if (header.length == 0) {
                return -1;
            }
            if (header.length < 8) {
                throw fail("the file ends inside its 8-byte length (" + header.length + " bytes)");
            }
            long length = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN).getLong();
            // Compared unsigned: a length with the top bit set is over any limit.
            if (Long.compareUnsigned(length, maxRecordBytes) > 0) {
                throw fail("length " + Long.toUnsignedString(length) + " is over the limit of " + maxRecordBytes + " bytes");
            }
            return length;
        }

        /** Passes over the next record (a restore's skip); false at the end. */
        boolean skip() throws IOException {
            long length = length();
            if (length < 0) {
                return false;
            }
            long remaining = length;
            while (remaining > 0) {
                long n = in.skip(remaining);
                if (n <= 0) {
                    if (in.read() < 0) {
                        throw fail("the file ends inside its payload (" + (length - remaining) + " of " + length + " bytes)");
                    }
                    n = 1;
                }
                remaining -= n;
            }
            offset += 8 + length;
            index++;
            return true;
        }

        /** The next record with its location, or null at the end. */
        byte[] next() throws IOException {
            long length = length();
            if (length < 0) {
                return null;
            }
            int head = 4 + pathBytes.length + 16;
            byte[] element = new byte[Math.addExact(head, (int) length)];
            int read = in.readNBytes(element, head, (int) length);
            if (read < length) {
                throw fail("the file ends inside its payload (" + read + " of " + length + " bytes)");
            }
            ByteBuffer.wrap(element, 0, head).order(ByteOrder.LITTLE_ENDIAN)
                    .putInt(pathBytes.length).put(pathBytes).putLong(index).putLong(offset);
            offset += 8 + length;
            index++;
            return element;
        }

        private IOException fail(String what) {
            return new IOException(path + ": record " + index + " at byte " + offset + ": " + what);
        }

        @Override
        public RecordIterator<byte[]> readBatch() throws IOException {
            long first = index;
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
            ArrayResultIterator<byte[]> records = new ArrayResultIterator<>();
            // Positions count records from the file's start: after the i-th
            // of this batch, first + i + 1 have been read.
            records.set(batch, n, CheckpointedPosition.NO_OFFSET, first);
            return records;
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }
}
