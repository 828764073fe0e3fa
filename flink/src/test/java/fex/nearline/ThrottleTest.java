package fex.nearline;

import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ThrottleTest {
    @Test
    void eventsPassUnchangedAndNoFasterThanTheRate() throws Exception {
        Throttle t = new Throttle(1000);
        Event e = new Event();
        long start = System.nanoTime();
        for (int i = 0; i < 101; i++) {
            assertSame(e, t.map(e));
        }
        long tookMs = (System.nanoTime() - start) / 1_000_000;
        // The 101st event is due 100 ms after the first; it may go up to 1 ms early. A lower bound only: a slow
        // machine takes longer, never less.
        assertTrue(tookMs >= 99, "101 events at 1,000 a second passed in " + tookMs + " ms");
    }

    @Test
    void aRateMustBeAboveZero() {
        assertThrows(IllegalArgumentException.class, () -> new Throttle(0));
        assertThrows(IllegalArgumentException.class, () -> new Throttle(Double.NaN));
    }
}
