package fex.nearline;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.apache.flink.connector.file.src.FileSourceSplit;

/**
 * PBDataset-framed files ([u64 little-endian length][payload], the request logs fex-server writes) as a Flink file
 * source of {@link LocatedRecords} elements. A length over the limit, or a file that ends inside a record, fails the
 * source naming the file, the record's index and its offset: the bytes are not guessed at.
 */
public final class FramedRecords extends LocatedRecords {
    private static final long serialVersionUID = 1L;

    public FramedRecords(long maxRecordBytes) {
        super(maxRecordBytes);
    }

    @Override
    Reader reader(FileSourceSplit split) throws IOException {
        return new Framed(split, maxRecordBytes);
    }

    private static final class Framed extends Reader {
        Framed(FileSourceSplit split, long maxRecordBytes) throws IOException {
            super(split, maxRecordBytes);
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
                throw fail("length " + Long.toUnsignedString(length) + " is over the limit of " + maxRecordBytes
                        + " bytes");
            }
            return length;
        }

        @Override
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
                        throw fail("the file ends inside its payload (" + (length - remaining) + " of " + length
                                + " bytes)");
                    }
                    n = 1;
                }
                remaining -= n;
            }
            offset += 8 + length;
            index++;
            return true;
        }

        @Override
        byte[] next() throws IOException {
            long length = length();
            if (length < 0) {
                return null;
            }
            byte[] payload = in.readNBytes((int) length);
            if (payload.length < length) {
                throw fail("the file ends inside its payload (" + payload.length + " of " + length + " bytes)");
            }
            byte[] element = pack(pathBytes, index, offset, payload, 0, payload.length);
            offset += 8 + length;
            index++;
            return element;
        }
    }
}
