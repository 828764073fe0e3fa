package fex.nearline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A user's index of waiting requests ({@link LabelJoin.Waiting#find}): it finds exactly the ids of {@code arrived} and
 * {@code pending}, by scanning hashes or, past its threshold, through a map, and keeps a request's held list until the
 * requests change.
 */
class WaitingTest {
    private static Request request(String id) {
        Request r = new Request();
        r.requestId = id;
        return r;
    }

    @Test
    void findsExactlyTheWaitingIdsAtEverySize() {
        Random random = new Random(3);
        for (int n : new int[] {0, 1, 4, 5, 31, 32, 33, 100}) {
            LabelJoin.Waiting w = new LabelJoin.Waiting();
            List<String> ids = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                // Ids with equal hashes ("Aa" and "BB") and non-ASCII ones.
                String id = (i % 2 == 0 ? "Aa" : "BB") + i + (i % 3 == 0 ? "\u00e9" : "");
                ids.add(id);
                (random.nextBoolean() ? w.arrived : w.pending).add(request(id));
            }
            // Each id at a position of its own.
            java.util.Set<Integer> positions = new java.util.HashSet<>();
            for (String id : ids) {
                int at = w.find(id);
                assertEquals(true, at >= 0 && positions.add(at), id + " at " + at);
            }
            assertEquals(-1, w.find("AaBB"));
            assertEquals(-1, w.find("nobody"));
            // A request added after the index was built is found; the others still are.
            Request lateComer = request("late-comer");
            w.arrived.add(lateComer);
            w.added(lateComer);
            assertEquals(true, w.has("late-comer"));
            for (String id : ids) {
                assertEquals(true, w.has(id), id);
            }
            // Removed and rebuilt: a request that left is no longer found.
            if (n > 0) {
                String gone = ids.get(n / 2);
                w.arrived.removeIf(r -> r.requestId.equals(gone));
                w.pending.removeIf(r -> r.requestId.equals(gone));
                w.changed();
                assertEquals(-1, w.find(gone));
            }
        }
    }

    /** The held list given for a request comes back while it waits, the index built again or not. */
    @Test
    void keepsAHeldListWhileTheRequestWaits() {
        LabelJoin.Waiting w = new LabelJoin.Waiting();
        for (int i = 0; i < 40; i++) {
            w.arrived.add(request("r" + i));
        }
        int at = w.find("r7");
        assertNull(w.heldOf(at));
        List<byte[]> list = new ArrayList<>();
        w.heldOf(at, list);
        assertSame(list, w.heldOf(w.find("r7")));
        w.changed();
        assertSame(list, w.heldOf(w.find("r7")));
        assertNull(w.heldOf(w.find("r8")));
        // Ordered: it moves to the pending ones, and its list with it.
        Request r7 = w.arrived.remove(7);
        w.pending.add(r7);
        w.changed();
        assertSame(list, w.heldOf(w.find("r7")));
    }
}
