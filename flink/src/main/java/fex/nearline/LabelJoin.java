package fex.nearline;

import fex.nearline.Rules.Recent;
import fex.nearline.Rules.Settings;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeHint;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.TimerService;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * One user's requests and actions, keyed by user id: {@code arrived} requests wait for the watermark to order them,
 * {@code pending} ones for their emission time; {@code held} actions wait for their request; {@code emitted} keeps the
 * emission time of emitted requests for {@code retention}, to tell late actions from unmatched ones. The rules are
 * {@link Rules}; this class keeps their state in Flink's keyed state (RocksDB in production) and fires them on
 * event-time timers.
 *
 * <p>In batch execution ({@code batch}) Flink sorts each user's records by time and timers are not needed: before each
 * record the state advances to just before its time, and the user's {@link Event#END} records close it.
 */
public class LabelJoin extends KeyedProcessFunction<String, Event, Joined> {
    private static final long serialVersionUID = 1L;

    public static final long END_OF_TIME = Long.MAX_VALUE;
    public static final OutputTag<String> MANIFEST = new OutputTag<>("manifest", Types.STRING);
    public static final OutputTag<String> CORRECTIONS = new OutputTag<>("corrections", Types.STRING);

    // Kinds of manifest lines.
    public static final String EMITTED = "emitted";
    public static final String LATE = "late";
    public static final String UNMATCHED = "unmatched";
    public static final String UNKNOWN_ITEM = "unknown_item";
    public static final String DUPLICATE = "duplicate_request";

    private final Settings settings;
    private final boolean correction;
    private final boolean batch;

    private transient MapState<String, Request> arrived;
    private transient MapState<String, Request> pending;
    private transient MapState<String, Long> emitted;
    private transient MapState<String, List<Action>> held;
    private transient ValueState<List<Recent>> recent;
    /** (the earliest time a request is to be ordered or is due, the earliest time something is to be forgotten). */
    private transient ValueState<long[]> next;
    private transient Map<String, Counter> counters;

    public LabelJoin(Settings settings, boolean correction, boolean batch) {
        this.settings = settings;
        this.correction = correction;
        this.batch = batch;
    }

    @Override
    public void open(OpenContext context) {
        var rc = getRuntimeContext();
        TypeInformation<Request> request = TypeInformation.of(Request.class);
        arrived = rc.getMapState(new MapStateDescriptor<>("arrived", Types.STRING, request));
        pending = rc.getMapState(new MapStateDescriptor<>("pending", Types.STRING, request));
        emitted = rc.getMapState(new MapStateDescriptor<>("emitted", Types.STRING, Types.LONG));
        held = rc.getMapState(new MapStateDescriptor<>("held", Types.STRING, new TypeHint<List<Action>>() {}.getTypeInfo()));
        recent = rc.getState(new ValueStateDescriptor<>("recent", new TypeHint<List<Recent>>() {}.getTypeInfo()));
        next = rc.getState(new ValueStateDescriptor<>("next", PrimitiveArrayTypeInfo.LONG_PRIMITIVE_ARRAY_TYPE_INFO));
        counters = new HashMap<>();
        for (String name : List.of("emitted_" + Rules.REFRESH, "emitted_" + Rules.REQUESTS_BACK, "emitted_" + Rules.TIME,
                "actions_joined", "late_actions", "unmatched_actions", "unknown_item_actions", "duplicate_requests",
                "late_requests")) {
            counters.put(name, rc.getMetricGroup().counter(name));
        }
    }

    @Override
    public void processElement(Event event, Context ctx, Collector<Joined> out) throws Exception {
        TimerService timers = ctx.timerService();
        if (batch) {
            advance(timers, Event.END.equals(event.kind) ? END_OF_TIME : event.time - 1, ctx, out);
            if (Event.END.equals(event.kind)) {
                return;
            }
        }
        if (Event.REQUEST.equals(event.kind)) {
            Request r = event.request;
            if (arrived.contains(r.requestId) || pending.contains(r.requestId) || emitted.contains(r.requestId)) {
                // The first copy stands; a duplicate is reported and counts toward nothing.
                counters.get("duplicate_requests").inc();
                ctx.output(MANIFEST, new Json().where(r).put("kind", DUPLICATE).put("request_id", r.requestId)
                        .put("user_id", r.userId).toString());
                return;
            }
            arrived.put(r.requestId, r);
            sooner(r.timeMs, END_OF_TIME);
            if (!batch) {
                timers.registerEventTimeTimer(r.timeMs);
            }
            return;
        }
        Action a = event.action;
        Long at = emitted.get(a.requestId);
        if (at != null) {
            String reason = Rules.afterEmission(settings, a, at);
            if (reason == null) {
                unmatched(a, ctx);
            } else {
                late(List.of(a), reason, at, ctx);
            }
            return;
        }
        List<Action> list = held.get(a.requestId);
        list = list == null ? new ArrayList<>() : new ArrayList<>(list);
        list.add(a);
        held.put(a.requestId, list);
        if (!(arrived.contains(a.requestId) || pending.contains(a.requestId))) {
            // Waits for its request at most `retention`: forgotten once the watermark is past that.
            long forget = forgetAfter(a.eventTime);
            sooner(END_OF_TIME, forget);
            if (!batch) {
                timers.registerEventTimeTimer(forget);
            }
        }
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<Joined> out) throws Exception {
        // Everything up to the watermark, in event-time order, whichever timer woke us.
        TimerService timers = ctx.timerService();
        advance(timers, Math.max(timestamp, timers.currentWatermark()), ctx, out);
    }

    /** The first time something that happened at {@code t} is past {@code retention}: strictly after t + retention. */
    private long forgetAfter(long t) {
        return t + settings.retentionMs() + 1;
    }

    private long[] horizon() throws Exception {
        long[] n = next.value();
        return n == null ? new long[] {END_OF_TIME, END_OF_TIME} : n;
    }

    private void sooner(long event, long cleanup) throws Exception {
        long[] h = horizon();
        if (event < h[0] || cleanup < h[1]) {
            next.update(new long[] {Math.min(h[0], event), Math.min(h[1], cleanup)});
        }
    }

    private void late(List<Action> late, String reason, long emittedMs, Context ctx) {
        for (Action a : late) {
            counters.get("late_actions").inc();
            String line = new Json().action(a).put("kind", LATE).put("reason", reason).put("emitted_at", emittedMs)
                    .toString();
            ctx.output(MANIFEST, line);
            if (correction) {
                ctx.output(CORRECTIONS, line);
            }
        }
    }

    private void unmatched(Action a, Context ctx) {
        counters.get("unmatched_actions").inc();
        ctx.output(MANIFEST, new Json().action(a).put("kind", UNMATCHED).toString());
    }

    private void advance(TimerService timers, long now, Context ctx, Collector<Joined> out) throws Exception {
        long[] h = horizon();
        long nextEvent = h[0];
        long nextCleanup = h[1];
        boolean eventsDue = nextEvent < END_OF_TIME && now >= nextEvent;
        boolean cleanupDue = nextCleanup < END_OF_TIME && now >= nextCleanup;
        if (!(eventsDue || cleanupDue)) {
            return;
        }
        Map<String, Request> arrivedNow = null;
        Map<String, Request> pendingNow = null;
        if (eventsDue) {
            arrivedNow = new HashMap<>();
            for (var e : arrived.entries()) {
                arrivedNow.put(e.getKey(), e.getValue());
            }
            pendingNow = new HashMap<>();
            Map<String, String> was = new HashMap<>();
            for (var e : pending.entries()) {
                pendingNow.put(e.getKey(), e.getValue());
                was.put(e.getKey(), e.getValue().dueMs + " " + e.getValue().rule);
            }
            Set<String> arrivedBefore = new HashSet<>(arrivedNow.keySet());
            List<Recent> recentNow = recent.value() == null ? new ArrayList<>() : new ArrayList<>(recent.value());
            Rules.Advanced advanced = Rules.advance(settings, now, arrivedNow, pendingNow, recentNow);
            if (!batch) {
                for (long t : new HashSet<>(advanced.wake())) {
                    timers.registerEventTimeTimer(t);
                }
            }
            // Only what changed goes back to the state backend.
            recent.update(recentNow);
            for (String k : was.keySet()) {
                if (!pendingNow.containsKey(k)) {
                    pending.remove(k);
                }
            }
            for (String k : arrivedBefore) {
                if (!arrivedNow.containsKey(k)) {
                    arrived.remove(k);
                }
            }
            for (var e : pendingNow.entrySet()) {
                Request r = e.getValue();
                if (!(r.dueMs + " " + r.rule).equals(was.get(e.getKey()))) {
                    pending.put(e.getKey(), r);
                }
            }
            nextEvent = END_OF_TIME;
            for (Request r : arrivedNow.values()) {
                nextEvent = Math.min(nextEvent, r.timeMs);
            }
            for (Request r : pendingNow.values()) {
                nextEvent = Math.min(nextEvent, r.dueMs);
            }
            for (Request r : advanced.emitted()) {
                List<Action> forIt = held.get(r.requestId);
                held.remove(r.requestId);
                Rules.Emitted e = Rules.join(settings, r, forIt == null ? List.of() : forIt);
                counters.get("emitted_" + r.rule).inc();
                counters.get("actions_joined").inc(e.joined().size());
                emitted.put(r.requestId, r.dueMs);
                long forget = forgetAfter(r.dueMs);
                nextCleanup = Math.min(nextCleanup, forget);
                if (!batch) {
                    timers.registerEventTimeTimer(forget);
                }
                late(e.late(), Rules.LATE_TIME, r.dueMs, ctx);
                for (Action a : e.unknownItem()) {
                    counters.get("unknown_item_actions").inc();
                    ctx.output(MANIFEST, new Json().action(a).put("kind", UNKNOWN_ITEM).toString());
                }
                for (Action a : e.unmatched()) {
                    unmatched(a, ctx);
                }
                if (r.late) {
                    counters.get("late_requests").inc();
                }
                out.collect(joined(r, e));
            }
        }
        if (cleanupDue) {
            nextCleanup = END_OF_TIME;
            // Forget emitted requests past retention, and report actions that waited that long for a request
            // that never came.
            List<String> forgotten = new ArrayList<>();
            for (var e : emitted.entries()) {
                if (forgetAfter(e.getValue()) <= now) {
                    forgotten.add(e.getKey());
                } else {
                    nextCleanup = Math.min(nextCleanup, forgetAfter(e.getValue()));
                }
            }
            for (String k : forgotten) {
                emitted.remove(k);
            }
            List<Map.Entry<String, List<Action>>> waiting = new ArrayList<>();
            for (var e : held.entries()) {
                waiting.add(Map.entry(e.getKey(), e.getValue()));
            }
            for (var e : waiting) {
                String rid = e.getKey();
                if (arrived.contains(rid) || pending.contains(rid)) {
                    continue;
                }
                List<Action> rest = new ArrayList<>();
                List<Action> gone = new ArrayList<>(e.getValue());
                gone.sort(Action.ORDER);
                for (Action a : gone) {
                    if (forgetAfter(a.eventTime) <= now) {
                        unmatched(a, ctx);
                    } else {
                        rest.add(a);
                    }
                }
                if (rest.isEmpty()) {
                    held.remove(rid);
                } else {
                    if (rest.size() < e.getValue().size()) {
                        held.put(rid, rest);
                    }
                    long earliest = rest.stream().mapToLong(a -> a.eventTime).min().getAsLong();
                    nextCleanup = Math.min(nextCleanup, forgetAfter(earliest));
                }
            }
        }
        if (arrivedNow != null && arrivedNow.isEmpty() && pendingNow.isEmpty()) {
            // Nothing waits to be ordered or emitted: the user's window starts again with their next request.
            recent.clear();
            if (held.isEmpty() && emitted.isEmpty()) {
                next.clear();
                return;
            }
        }
        next.update(new long[] {nextEvent, nextCleanup});
        if (!batch && Math.min(nextEvent, nextCleanup) < END_OF_TIME) {
            // A wake-up for the horizon itself, whatever the timers set per item.
            timers.registerEventTimeTimer(Math.min(nextEvent, nextCleanup));
        }
    }

    private static Joined joined(Request r, Rules.Emitted e) {
        Joined j = new Joined();
        j.requestId = r.requestId;
        j.userId = r.userId;
        j.timeMs = r.timeMs;
        j.dueMs = r.dueMs;
        j.rule = r.rule;
        j.logged = r.logged;
        int[][] rows = e.actions();
        j.rowLengths = new int[rows.length];
        int n = 0;
        for (int i = 0; i < rows.length; i++) {
            j.rowLengths[i] = rows[i].length;
            n += rows[i].length;
        }
        j.actions = new int[n];
        int at = 0;
        for (int[] row : rows) {
            System.arraycopy(row, 0, j.actions, at, row.length);
            at += row.length;
        }
        j.joinedJson = Json.actions(e.joined());
        j.lateRequest = r.late;
        j.source = r.source;
        j.index = r.index;
        j.offset = r.offset;
        return j;
    }
}
