package fex.nearline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import fex.nearline.Rules.Recent;
import fex.nearline.Rules.Settings;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** The rules without Flink, against an independent statement of them (tests/nearline/data.py's reference). */
class RulesTest {
    static final long MINUTE = 60_000;

    static Request req(String id, long time, boolean refresh, String... items) {
        return new Request(id, "u", time, refresh, List.of(items));
    }

    /** One user's state. */
    static final class User {
        final Map<String, Request> arrived = new HashMap<>();
        final Map<String, Request> pending = new HashMap<>();
        final List<Recent> recent = new ArrayList<>();

        List<String> advance(Settings s, long upTo) {
            List<String> out = new ArrayList<>();
            for (Request r : Rules.advance(s, upTo, arrived, pending, recent)) {
                out.add(r.requestId + " " + r.rule + " " + r.dueMs);
            }
            return out;
        }

        void add(Request r) {
            arrived.put(r.requestId, r);
        }
    }

    @Test
    void aRequestBehindTheWatermarkTakesTheTimeRuleOnly() {
        // A request read behind the watermark (another server's log read late) takes the time rule only.
        Settings s = new Settings(1, 600_000, 3_600_000);
        User u = new User();
        u.add(req("A", 0, false, "1"));
        u.add(req("C", 20, false, "1"));
        assertEquals(List.of("A requests_back 20"), u.advance(s, 20));
        u.add(req("B", 10, false, "1"));
        assertEquals(List.of(), u.advance(s, 30));
        Request b = u.pending.get("B");
        assertTrue(b.late);
        assertEquals(Rules.TIME, b.rule);
        assertEquals(600_010, b.dueMs);
        assertEquals(600_020, u.pending.get("C").dueMs);
        u.add(req("D", 40, false, "1"));
        assertEquals(List.of("C requests_back 40"), u.advance(s, 40));
    }

    @Test
    void onATieTheEventRuleWins() {
        // A's time rule falls at 600_000, the moment B arrives one request later.
        Settings s = new Settings(1, 600_000, 3_600_000);
        User u = new User();
        u.add(req("A", 0, false, "1"));
        u.add(req("B", 600_000, false, "1"));
        assertEquals(List.of("A requests_back 600000"), u.advance(s, 600_000));
    }

    @Test
    void requestsOfTheSameTimeAreOrderedByRequestId() {
        Settings s = new Settings(1, 600_000, 3_600_000);
        User u = new User();
        u.add(req("b", 5, false, "1"));
        u.add(req("a", 5, false, "1"));
        // "a" is ordered first, so "b" makes it due.
        assertEquals(List.of("a requests_back 5"), u.advance(s, 5));
    }

    @Test
    void aRefreshMakesEveryEarlierPendingRequestDue() {
        Settings s = new Settings(5, 600_000, 3_600_000);
        User u = new User();
        u.add(req("A", 0, false, "1"));
        u.add(req("B", 10, false, "1"));
        u.add(req("R", 20, true, "1"));
        assertEquals(List.of("A refresh 20", "B refresh 20"), u.advance(s, 20));
        assertEquals(List.of("R time 600020"), u.advance(s, Long.MAX_VALUE >> 1));
    }

    @Test
    void requestsBackZeroTurnsTheEventRuleOff() {
        Settings s = new Settings(0, 600_000, 3_600_000);
        User u = new User();
        u.add(req("A", 0, false, "1"));
        u.add(req("R", 20, true, "1"));
        assertEquals(List.of("A time 600000", "R time 600020"), u.advance(s, 1_000_000));
    }

    @Test
    void theHeldActionsOfARequestAreJoinedByEventTime() {
        Settings s = new Settings(1, 600_000, 3_600_000);
        Request r = req("r", 4_000_000, false, "5", "6", "5");
        r.dueMs = 4_600_000;
        r.rule = Rules.TIME;
        Action joined = new Action(4_100_000, "r", "5", 2, "u");
        Action first = new Action(4_000_000, "r", "6", 1, "u");
        Action late = new Action(4_600_001, "r", "5", 1, "u");
        Action lateAndUnknown = new Action(4_700_000, "r", "9", 1, "u");
        Action unknown = new Action(4_200_000, "r", "9", 1, "u");
        Action waitedTooLong = new Action(399_999, "r", "5", 1, "u");
        Action waitedJustLongEnough = new Action(400_000, "r", "6", 3, "u");
        Rules.Emitted e = Rules.join(
                s, r, List.of(late, joined, unknown, lateAndUnknown, first, waitedTooLong, waitedJustLongEnough));
        assertEquals(List.of(List.of(2), List.of(3, 1), List.of(2)), rows(e.actions()));
        assertEquals(List.of(waitedJustLongEnough, first, joined), e.joined());
        assertEquals(List.of(late, lateAndUnknown), e.late());
        assertEquals(List.of(unknown), e.unknownItem());
        assertEquals(List.of(waitedTooLong), e.unmatched());
    }

    @Test
    void anActionAfterTheEmissionIsLateForRetentionThenUnmatched() {
        Settings s = new Settings(1, 600_000, 3_600_000);
        long at = 1_000_000;
        assertEquals(Rules.LATE_ARRIVAL, Rules.afterEmission(s, new Action(at, "r", "1", 1, "u"), at));
        assertEquals(Rules.LATE_TIME, Rules.afterEmission(s, new Action(at + 1, "r", "1", 1, "u"), at));
        assertEquals(Rules.LATE_TIME, Rules.afterEmission(s, new Action(at + 3_600_000, "r", "1", 1, "u"), at));
        assertNull(Rules.afterEmission(s, new Action(at + 3_600_001, "r", "1", 1, "u"), at));
    }

    static List<List<Integer>> rows(int[][] actions) {
        List<List<Integer>> out = new ArrayList<>();
        for (int[] row : actions) {
            List<Integer> r = new ArrayList<>();
            for (int a : row) {
                r.add(a);
            }
            out.add(r);
        }
        return out;
    }

    /**
     * tests/nearline/data.py's reference_emission: per user, requests by (time, id): the first later refresh
     * request, or the request REQUESTS_BACK after it when that one is normal, makes it due at that request's time,
     * if no later than its time rule; else the time rule.
     */
    static Map<String, String> reference(List<Request> requests, int back, long after) {
        Map<String, List<Request>> byUser = new TreeMap<>();
        for (Request r : requests) {
            byUser.computeIfAbsent(r.userId, k -> new ArrayList<>()).add(r);
        }
        Map<String, String> out = new HashMap<>();
        for (List<Request> rs : byUser.values()) {
            rs.sort(Rules.ORDER);
            for (int i = 0; i < rs.size(); i++) {
                Request r = rs.get(i);
                long timeout = r.timeMs + after;
                String trigger = null;
                for (int j = i + 1; j < rs.size(); j++) {
                    Request later = rs.get(j);
                    if (later.timeMs > timeout) {
                        break;
                    }
                    if (later.refresh) {
                        trigger = "refresh " + later.timeMs;
                        break;
                    }
                    if (j - i == back) {
                        trigger = "requests_back " + later.timeMs;
                        break;
                    }
                }
                out.put(r.requestId, trigger != null ? trigger : "time " + timeout);
            }
        }
        return out;
    }

    @Test
    void generatedUsersGetTheReferencesEmissionsAtAnyWatermarks() {
        // data.py's generator's shape: steps between requests that make the
        // time rule tie with the event rule, refreshes, 3 back, 10 minutes.
        Settings s = new Settings(3, 10 * MINUTE, 2 * 60 * MINUTE);
        long[] steps = {5_000, 20_000, 40_000, 90_000, 2 * MINUTE, 4 * MINUTE, 12 * MINUTE};
        for (long seed = 1; seed <= 20; seed++) {
            Random rng = new Random(seed);
            List<Request> requests = new ArrayList<>();
            for (int u = 0; u < 30; u++) {
                long t = 1_760_000_000_000L + rng.nextInt(5 * 60_000);
                for (int n = 0; n < 12; n++) {
                    t += steps[rng.nextInt(steps.length)];
                    Request r = new Request("r" + u + "-" + n, "user" + u, t, n > 0 && rng.nextDouble() < 0.15,
                            List.of("1"));
                    requests.add(r);
                }
            }
            Map<String, String> want = reference(requests, s.requestsBack(), s.afterMs());
            Map<String, String> got = new LinkedHashMap<>();
            Map<String, User> users = new HashMap<>();
            Map<String, List<Long>> times = new HashMap<>();
            for (Request r : requests) {
                users.computeIfAbsent(r.userId, k -> new User()).add(r);
                times.computeIfAbsent(r.userId, k -> new ArrayList<>()).add(r.timeMs);
            }
            for (Map.Entry<String, User> e : users.entrySet()) {
                // Watermarks at every k-th request time, k drawn per user, then the end.
                List<Long> ts = times.get(e.getKey());
                ts.sort(null);
                int k = 1 + rng.nextInt(4);
                List<Long> marks = new ArrayList<>();
                for (int i = 0; i < ts.size(); i += k) {
                    marks.add(ts.get(i));
                }
                marks.add(1L << 62);
                for (long mark : marks) {
                    for (String line : e.getValue().advance(s, mark)) {
                        String[] p = line.split(" ");
                        got.put(p[0], p[1] + " " + p[2]);
                    }
                }
            }
            assertEquals(new TreeMap<>(want), new TreeMap<>(got), "seed " + seed);
            for (String rule : List.of(Rules.REFRESH, Rules.REQUESTS_BACK, Rules.TIME)) {
                assertTrue(got.values().stream().anyMatch(v -> v.startsWith(rule + " ")), rule + ", seed " + seed);
            }
        }
    }
}
