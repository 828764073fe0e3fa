package fex.nearline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.flink.connector.file.src.FileSourceSplit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The line reader against the plainest reading of its contract: split at {@code \n}, drop one {@code \r} before it,
 * pass over empty lines but count them, a last line without an end is a line. Lines are made to cross the reader's
 * 64 KiB buffer and to sit exactly at the length limit.
 */
class JsonLinesTest {
    @TempDir
    Path dir;

    private List<Parse.Located> read(byte[] file, long max) throws IOException {
        Path p = dir.resolve("lines-" + System.nanoTime());
        Files.write(p, file);
        var split = new FileSourceSplit("0", new org.apache.flink.core.fs.Path(p.toUri()), 0, file.length, 0, file.length);
        List<Parse.Located> out = new ArrayList<>();
        try (LocatedRecords.Reader r = new JsonLines(max).reader(split)) {
            for (byte[] e = r.next(); e != null; e = r.next()) {
                out.add(Parse.located(e));
            }
        }
        return out;
    }

    /** What the reader should give for {@code file}: (index, offset, payload) per non-empty line. */
    private static List<Object[]> expected(byte[] file) {
        List<Object[]> out = new ArrayList<>();
        int start = 0;
        long index = 0;
        while (start < file.length) {
            int end = start;
            while (end < file.length && file[end] != '\n') {
                end++;
            }
            int n = end - start;
            if (n > 0 && file[end - 1] == '\r') {
                n--;
            }
            if (n > 0) {
                out.add(new Object[] {index, (long) start, Arrays.copyOfRange(file, start, start + n)});
            }
            index++;
            start = end + 1;
        }
        return out;
    }

    private void agrees(byte[] file) throws IOException {
        List<Parse.Located> got = read(file, 1 << 20);
        List<Object[]> want = expected(file);
        assertEquals(want.size(), got.size());
        for (int i = 0; i < want.size(); i++) {
            assertEquals(want.get(i)[0], got.get(i).index(), "index of line " + i);
            assertEquals(want.get(i)[1], got.get(i).offset(), "offset of line " + i);
            assertArrayEquals((byte[]) want.get(i)[2], got.get(i).payload(), "bytes of line " + i);
        }
    }

    @Test
    void linesEndsAndEmptyLines() throws IOException {
        agrees("a\nbb\r\n\n\r\nccc".getBytes());
        agrees("\n\n".getBytes());
        agrees(new byte[0]);
        agrees("one line, no end".getBytes());
        agrees("x\r".getBytes());
    }

    @Test
    void linesAcrossTheBuffer() throws IOException {
        Random random = new Random(34);
        for (int round = 0; round < 20; round++) {
            byte[] file = new byte[random.nextInt(300_000)];
            for (int i = 0; i < file.length; i++) {
                int k = random.nextInt(round % 2 == 0 ? 50 : 100_000);
                file[i] = k == 0 ? (byte) '\n' : k == 1 ? (byte) '\r' : (byte) ('a' + k % 26);
            }
            agrees(file);
        }
    }

    @Test
    void theLimitIsTheLineWithoutItsEnd() throws IOException {
        byte[] ok = "aaaa\nbbbb\r\ncc\n".getBytes();
        assertEquals(3, read(ok, 5).size(), "a line of 4 bytes and its CR is within 5");
        IOException e = assertThrows(IOException.class, () -> read("aaaa\nbbbbbb\n".getBytes(), 5));
        assertTrue(e.getMessage().endsWith(": record 1 at byte 5: the line is longer than the limit of 5 bytes"),
                e.getMessage());
        byte[] big = new byte[200_000];
        Arrays.fill(big, (byte) 'z');
        big[0] = '\n';
        e = assertThrows(IOException.class, () -> read(big, 150_000));
        assertTrue(e.getMessage().endsWith(": record 1 at byte 1: the line is longer than the limit of 150000 bytes"),
                e.getMessage());
    }
}
