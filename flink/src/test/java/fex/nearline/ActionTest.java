package fex.nearline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Random;
import org.junit.jupiter.api.Test;

/** The held actions' own encoding: what goes in comes back, and a request id is read without the rest. */
class ActionTest {
    @Test
    void encodedActionsDecodeAndNameTheirRequest() {
        Random r = new Random(5);
        for (int i = 0; i < 1_000; i++) {
            String request = "r" + r.nextInt() + (i % 3 == 0 ? "\u00e9\u4e2d" : "");
            Action a = new Action(r.nextLong(), request, i % 5 == 0 ? "" : "item" + r.nextInt(), r.nextInt(), "u" + i);
            byte[] bytes = a.encode();
            assertEquals(a, Action.decode(bytes));
            assertEquals(request, Action.requestIdOf(bytes));
        }
    }

    @Test
    void anotherEncodingIsRefusedByName() {
        byte[] bytes = new Action(1, "r", "i", 1, "u").encode();
        bytes[0] = 9;
        var e = assertThrows(IllegalStateException.class, () -> Action.requestIdOf(bytes));
        assertEquals("a held action in state is of encoding 9, this job reads 1", e.getMessage());
    }
}
