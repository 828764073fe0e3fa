package fex.nearline;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;

import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.file.src.reader.SimpleStreamFormat;
import org.apache.flink.connector.file.src.reader.StreamFormat;
import org.apache.flink.core.fs.FSDataInputStream;

/**
 * Reads PBDataset-framed files ([u64 little-endian length][payload], the
 * request logs fex-server writes) as a Flink file source: one element per
 * record, its payload. A file is read whole by one reader (the format is
 * not splittable); on restore, Flink skips the records read before the
 * checkpoint.
 *
 * <p>A length over the limit, or a file that ends inside a record, fails the
 * source with the record's index and byte offset: the bytes are not guessed
 * at.
 */
public final class FramedRecordFormat extends SimpleStreamFormat<byte[]> {
    private static final long serialVersionUID = 1L;

    private final long maxRecordBytes;

    public FramedRecordFormat(long maxRecordBytes) {
        this.maxRecordBytes = maxRecordBytes;
    }

    @Override
    public StreamFormat.Reader<byte[]> createReader(Configuration config, FSDataInputStream stream)
            throws IOException {
        return new Reader(new BufferedInputStream(stream, 1 << 16), maxRecordBytes);
    }

    @Override
    public TypeInformation<byte[]> getProducedType() {
        return PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO;
    }

    private static final class Reader implements StreamFormat.Reader<byte[]> {
        private final InputStream in;
        private final long maxRecordBytes;
        private long offset;
        private long index;

        Reader(InputStream in, long maxRecordBytes) {
            this.in = in;
            this.maxRecordBytes = maxRecordBytes;
        }

        @Override
        public byte[] read() throws IOException {
            byte[] header = in.readNBytes(8);
            if (header.length == 0) {
                return null;
            }
            if (header.length < 8) {
                throw new IOException(String.format(
                        "record %d at byte %d: the file ends inside its 8-byte length (%d bytes)",
                        index, offset, header.length));
            }
            long length = 0;
            for (int i = 7; i >= 0; i--) {
                length = (length << 8) | (header[i] & 0xffL);
            }
            // Compared unsigned: a length with the top bit set is over any limit.
            if (Long.compareUnsigned(length, maxRecordBytes) > 0) {
                throw new IOException(String.format(
                        "record %d at byte %d: length %s is over the limit of %d bytes",
                        index, offset, Long.toUnsignedString(length), maxRecordBytes));
            }
            byte[] payload = in.readNBytes((int) length);
            if (payload.length < length) {
                throw new IOException(String.format(
                        "record %d at byte %d: the file ends inside its payload (%d of %d bytes)",
                        index, offset, payload.length, length));
            }
            offset += 8 + length;
            index++;
            return payload;
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }
}
