package fex.nearline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The file outputs' buffer: what goes in comes out, in order, whatever the sizes, once flushed. */
class BufferedRecordsTest {
    @Test
    void writesEveryByteInOrderAcrossTheBuffer() throws Exception {
        Random rng = new Random(5);
        for (int round = 0; round < 20; round++) {
            ByteArrayOutputStream file = new ByteArrayOutputStream();
            ByteArrayOutputStream expected = new ByteArrayOutputStream();
            BufferedRecords.Buffer buffer = new BufferedRecords.Buffer(file);
            for (int i = 0; i < 200; i++) {
                // Mostly small records, some about the buffer's size and larger, and single bytes (a line's end).
                int len = switch (rng.nextInt(4)) {
                    case 0 -> rng.nextInt(100);
                    case 1 -> BufferedRecords.BUFFER_BYTES - 50 + rng.nextInt(100);
                    case 2 -> rng.nextInt(3 * BufferedRecords.BUFFER_BYTES);
                    default -> -1;
                };
                if (len < 0) {
                    int b = rng.nextInt(256);
                    buffer.write(b);
                    expected.write(b);
                    continue;
                }
                byte[] record = new byte[len + 4];
                rng.nextBytes(record);
                buffer.write(record, 2, len);
                expected.write(record, 2, len);
                if (rng.nextInt(50) == 0) {
                    buffer.flush();
                    assertArrayEquals(expected.toByteArray(), file.toByteArray(), "flushed, round " + round);
                }
            }
            buffer.drain();
            assertEquals(expected.size(), file.size());
            assertArrayEquals(expected.toByteArray(), file.toByteArray(), "round " + round);
        }
    }

    @Test
    void aManifestLineAndItsEndGoOutTogether() throws Exception {
        ByteArrayOutputStream file = new ByteArrayOutputStream();
        var writer = new BufferedRecords<>(new LineEncoder()).create(new org.apache.flink.core.fs.FSDataOutputStream() {
            @Override
            public long getPos() {
                return file.size();
            }

            @Override
            public void write(int b) {
                file.write(b);
            }

            @Override
            public void write(byte[] b, int off, int len) {
                file.write(b, off, len);
            }

            @Override
            public void flush() {}

            @Override
            public void sync() {}

            @Override
            public void close() {}
        });
        writer.addElement("{\"kind\": \"emitted\"}".getBytes());
        writer.addElement("{}".getBytes());
        assertEquals(0, file.size(), "buffered until flushed");
        writer.finish();
        assertEquals("{\"kind\": \"emitted\"}\n{}\n", file.toString());
    }
}
