package fex.nearline;

import java.io.IOException;
import java.io.OutputStream;
import org.apache.flink.api.common.serialization.BulkWriter;
import org.apache.flink.api.common.serialization.Encoder;
import org.apache.flink.core.fs.FSDataOutputStream;

/**
 * The file outputs' format: each record through its {@link Encoder}, into a buffer that reaches the part file when full
 * and when the sink flushes or finishes the file (on each checkpoint, and at the end). Flink's row format instead hands
 * the encoder the part file's stream itself, which on the local file system is a {@code FileChannel} without a buffer:
 * a write system call per record, two per manifest line, most of the manifest writer's time.
 */
final class BufferedRecords<T> implements BulkWriter.Factory<T> {
    private static final long serialVersionUID = 1L;
    static final int BUFFER_BYTES = 64 << 10;

    private final Encoder<T> encoder;

    BufferedRecords(Encoder<T> encoder) {
        this.encoder = encoder;
    }

    @Override
    public BulkWriter<T> create(FSDataOutputStream out) {
        Buffer buffer = new Buffer(out);
        return new BulkWriter<>() {
            @Override
            public void addElement(T element) throws IOException {
                encoder.encode(element, buffer);
            }

            @Override
            public void flush() throws IOException {
                buffer.flush();
            }

            @Override
            public void finish() throws IOException {
                // The sink closes the stream itself.
                buffer.drain();
            }
        };
    }

    /** A plain buffer in front of the part file (the JDK's BufferedOutputStream takes a lock per write). */
    static final class Buffer extends OutputStream {
        private final OutputStream out;
        private final byte[] bytes = new byte[BUFFER_BYTES];
        private int used;

        Buffer(OutputStream out) {
            this.out = out;
        }

        @Override
        public void write(int b) throws IOException {
            if (used == bytes.length) {
                drain();
            }
            bytes[used++] = (byte) b;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            if (len > bytes.length - used) {
                drain();
                if (len > bytes.length) {
                    out.write(b, off, len);
                    return;
                }
            }
            System.arraycopy(b, off, bytes, used, len);
            used += len;
        }

        /** What is buffered, to the part file. */
        void drain() throws IOException {
            if (used > 0) {
                out.write(bytes, 0, used);
                used = 0;
            }
        }

        @Override
        public void flush() throws IOException {
            drain();
            out.flush();
        }

        @Override
        public void close() throws IOException {
            // Not the part file's: the sink closes that.
            drain();
        }
    }
}
