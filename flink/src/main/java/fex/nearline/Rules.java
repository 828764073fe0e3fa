package fex.nearline;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The label join's rules, apart from Flink: what one user's state holds and what each event does to it. The job keeps
 * this state per user in keyed state and calls these functions; nothing here imports Flink, so the rules are tested
 * (and read) on their own. Every case is decided by event time alone, so that streaming, batch and a restore agree:
 *
 * <ul>
 *   <li>A request is <em>due</em> at its emission time E. The event rule ({@code requests_back} > 0), requests taken
 *       in (time, request id) order: a refresh request makes every earlier pending request of its user due at its own
 *       time; a normal request makes the user's request {@code requests_back} before it due at its own time. The time
 *       rule: {@code after} past the request's own time, for a request no event made due first. On a tie (a
 *       request's time plus {@code after} equals a newer request's time) the event rule wins: ordering comes before
 *       emitting at the same moment.
 *   <li>Two requests of a user with the same time are ordered by request id.
 *   <li>A request older than the last one ordered came behind the watermark: it is marked {@code late}, takes the
 *       time rule only, and does not count toward {@code requests_back}.
 *   <li>A request is emitted with every action for it whose event time is at most E. Of the actions held for it, in
 *       (time, request, item, action) order: one more than {@code retention} before the request's own time waited too
 *       long and is {@code unmatched}; one after E is {@code late}; one naming no item of the request is
 *       {@code unknown_item} (late wins over unknown item); the rest join every row with their item id.
 *   <li>An action for a request already emitted at E: {@code unmatched} when its time is more than {@code retention}
 *       after E (the join forgets an emitted request {@code retention} after its emission, in event time, whether or
 *       not the state still holds it), else {@code late}: because its time is after E, or, with a time at most E,
 *       because it arrived behind the watermark.
 * </ul>
 *
 * Times are event times in milliseconds since the Unix epoch, below 2^62.
 */
public final class Rules {
    public static final String REFRESH = "refresh";
    public static final String REQUESTS_BACK = "requests_back";
    public static final String TIME = "time";

    /** Why an action is late: its time is after its request's emission, or it arrived after the emission. */
    public static final String LATE_TIME = "event_time_after_emission";
    public static final String LATE_ARRIVAL = "arrived_after_emission";

    private Rules() {}

    /** What the rules need of a model's {@code label_join:} section. */
    public record Settings(int requestsBack, long afterMs, long retentionMs) implements java.io.Serializable {}

    /** An ordered request of the user's recent ones (a POJO for Flink's serializer). */
    public static class Recent {
        public String requestId;
        public long timeMs;

        public Recent() {}

        Recent(String requestId, long timeMs) {
            this.requestId = requestId;
            this.timeMs = timeMs;
        }
    }

    /** Order of requests: time, then request id. */
    static final Comparator<Request> ORDER =
            Comparator.comparingLong((Request r) -> r.timeMs).thenComparing(r -> r.requestId);

    /** Order of due requests: due time, then request order. */
    static final Comparator<Request> DUE = Comparator.comparingLong((Request r) -> r.dueMs).thenComparing(ORDER);

    /**
     * Takes {@code request} as the user's newest: applies the event rule to the pending requests, then makes
     * {@code request} pending under the time rule. {@code recent} is the user's last {@code requestsBack + 1} ordered
     * requests.
     */
    static void order(Settings s, Request request, Map<String, Request> pending, List<Recent> recent) {
        request.dueMs = request.timeMs + s.afterMs();
        request.rule = TIME;
        pending.put(request.requestId, request);
        if (!recent.isEmpty() && request.timeMs < recent.get(recent.size() - 1).timeMs) {
            request.late = true;
            return;
        }
        if (s.requestsBack() > 0 && request.refresh) {
            List<Request> earlier = new ArrayList<>(pending.values());
            earlier.sort(ORDER);
            for (Request r : earlier) {
                if (TIME.equals(r.rule) && r != request) {
                    r.dueMs = request.timeMs;
                    r.rule = REFRESH;
                }
            }
        }
        recent.add(new Recent(request.requestId, request.timeMs));
        while (recent.size() > s.requestsBack() + 1) {
            recent.remove(0);
        }
        if (s.requestsBack() > 0 && !request.refresh && recent.size() > s.requestsBack()) {
            Request back = pending.get(recent.get(0).requestId);
            if (back != null && TIME.equals(back.rule) && back != request) {
                back.dueMs = request.timeMs;
                back.rule = REQUESTS_BACK;
            }
        }
    }

    /**
     * Moves one user's state forward to event time {@code upTo}, one event at a time in time order: the next request
     * to order or the next request due, whichever is earlier (ordering first on a tie), and returns the requests
     * emitted, in order. Depends only on {@code upTo}, never on the order timers fire in.
     */
    public static List<Request> advance(
            Settings s, long upTo, Map<String, Request> arrived, Map<String, Request> pending, List<Recent> recent) {
        List<Request> emitted = new ArrayList<>();
        while (true) {
            Request first = null;
            for (Request r : arrived.values()) {
                if (r.timeMs <= upTo && (first == null || ORDER.compare(r, first) < 0)) {
                    first = r;
                }
            }
            Request dueFirst = null;
            for (Request r : pending.values()) {
                if (r.dueMs <= upTo && (dueFirst == null || DUE.compare(r, dueFirst) < 0)) {
                    dueFirst = r;
                }
            }
            if (first != null && (dueFirst == null || first.timeMs <= dueFirst.dueMs)) {
                arrived.remove(first.requestId);
                order(s, first, pending, recent);
            } else if (dueFirst != null) {
                pending.remove(dueFirst.requestId);
                emitted.add(dueFirst);
            } else {
                return emitted;
            }
        }
    }

    /** A request leaving the join: its actions per row, and the held actions by what became of them. */
    public record Emitted(
            Request request, int[][] actions, List<Action> joined, List<Action> late, List<Action> unknownItem,
            List<Action> unmatched) {}

    /** The request's rows with the held actions for it attached (see the class comment for which join). */
    public static Emitted join(Settings s, Request request, List<Action> held) {
        if (!request.ordered()) {
            throw new IllegalStateException("request " + request.requestId + " was never ordered");
        }
        List<List<Integer>> rows = new ArrayList<>();
        Map<String, List<Integer>> byItem = new HashMap<>();
        for (int i = 0; i < request.itemIds.size(); i++) {
            rows.add(new ArrayList<>());
            byItem.computeIfAbsent(request.itemIds.get(i), k -> new ArrayList<>()).add(i);
        }
        List<Action> sorted = new ArrayList<>(held);
        sorted.sort(Action.ORDER);
        List<Action> joined = new ArrayList<>();
        List<Action> late = new ArrayList<>();
        List<Action> unknown = new ArrayList<>();
        List<Action> unmatched = new ArrayList<>();
        for (Action a : sorted) {
            List<Integer> at = byItem.get(a.itemId);
            if (a.eventTime + s.retentionMs() < request.timeMs) {
                unmatched.add(a);
            } else if (a.eventTime > request.dueMs) {
                late.add(a);
            } else if (at == null || a.itemId.isEmpty()) {
                unknown.add(a);
            } else {
                for (int i : at) {
                    rows.get(i).add(a.action);
                }
                joined.add(a);
            }
        }
        int[][] actions = new int[rows.size()][];
        for (int i = 0; i < rows.size(); i++) {
            actions[i] = rows.get(i).stream().mapToInt(Integer::intValue).toArray();
        }
        return new Emitted(request, actions, joined, late, unknown, unmatched);
    }

    /**
     * What an action for a request emitted at {@code emittedAt} is: {@code null} for unmatched (more than
     * {@code retention} after the emission), else the reason it is late.
     */
    public static String afterEmission(Settings s, Action a, long emittedAt) {
        if (a.eventTime - emittedAt > s.retentionMs()) {
            return null;
        }
        return a.eventTime > emittedAt ? LATE_TIME : LATE_ARRIVAL;
    }
}
