package fex.nearline;

import fex.nearline.Rules.Recent;
import fex.nearline.Rules.Settings;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.TimerService;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * One user's requests and actions, keyed by user id. The rules are {@link Rules}; this class keeps their state in
 * Flink's keyed state (RocksDB in production) and fires them on event-time timers. The state is laid out so that the
 * common event, an action for a request that waits, costs one small read and one append:
 *
 * <ul>
 *   <li>{@code waiting} (one value): the user's requests not yet emitted, without their bytes or items ({@code arrived}
 *       ones wait for the watermark to order them, {@code pending} ones for their emission time), the recent ordered
 *       ones ({@code requests_back}), and the times the user is next due or has something to forget.
 *   <li>{@code bodies}: each waiting request as it was read (logged bytes, item ids, where it was read), read once, when
 *       it is emitted.
 *   <li>{@code held}: the actions waiting for their request, appended to; read back whole when a request is emitted or
 *       something is to be forgotten.
 *   <li>{@code emitted}: the emission time of each emitted request for {@code retention}, to tell late actions from
 *       unmatched ones.
 * </ul>
 *
 * <p>Streaming, run by {@link Operator}, the join keeps the users it saw last on the heap and writes their state
 * behind: what changed reaches RocksDB once per user before each checkpoint's barrier (or when the user leaves the
 * heap, or at the end), not at every event. A request that arrives and is emitted between two checkpoints never
 * reaches RocksDB at all. The checkpoint has all of it, so a restore reads state as it would have been written through.
 *
 * <p>In batch execution ({@code batch}) Flink sorts each user's records by time and timers are not needed: before each
 * record the state advances to just before its time, and the user's {@link Event#END} records close it.
 */
public class LabelJoin extends KeyedProcessFunction<String, Event, Joined> {
    private static final long serialVersionUID = 1L;

    public static final long END_OF_TIME = Long.MAX_VALUE;
    /** Manifest and correction lines: UTF-8 JSON, one object per line, without the line end. */
    public static final OutputTag<byte[]> MANIFEST =
            new OutputTag<>("manifest", PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
    public static final OutputTag<byte[]> CORRECTIONS =
            new OutputTag<>("corrections", PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);

    // Kinds of manifest lines.
    public static final String EMITTED = "emitted";
    public static final String LATE = "late";
    public static final String UNMATCHED = "unmatched";
    public static final String UNKNOWN_ITEM = "unknown_item";
    public static final String DUPLICATE = "duplicate_request";

    /**
     * A user's requests that wait, as the rules need them (no bytes, no items), and the user's horizon. Kept in state
     * as bytes of its own encoding ({@link #encode}, {@link #decode}): it is read for every event of the user, and
     * Flink's POJO serializer (reflection, field by field) was a tenth of the job's time doing that.
     */
    public static class Waiting {
        /** The encoding's version, its first byte. */
        static final byte VERSION = 1;

        public List<Request> arrived = new ArrayList<>();
        public List<Request> pending = new ArrayList<>();
        public List<Recent> recent = new ArrayList<>();
        /** The earliest time a request is to be ordered or is due. */
        public long nextEvent = END_OF_TIME;
        /** The earliest time something is to be forgotten. */
        public long nextCleanup = END_OF_TIME;
        /**
         * Streaming only, not encoded: the user's held actions by request id, in the order they came, as the same
         * byte arrays {@code held} has ({@link Action#encode}), or null when not on the heap (a user read back from
         * state). Kept while the user is cached, so an emission neither reads the list from RocksDB nor decodes the
         * actions of other requests; a change reaches {@code held} later, as {@link #unwritten} (an append) or
         * {@link #rewrite} (a removal) says, when the join runs in {@link Operator}, else at once. Bytes, not
         * decoded actions: one small array per action lives long on the heap instead of seven objects.
         */
        transient Map<String, List<byte[]>> heldBy;
        /**
         * Held actions appended on the heap ({@link #heldBy}) and not yet to {@code held}: run by {@link Operator},
         * the join writes them in one append per user before each checkpoint's barrier, when the user leaves the
         * cache, and at the end, instead of one RocksDB merge per action. Null when none.
         */
        transient List<byte[]> unwritten;
        /**
         * {@code held} is to be written whole from {@link #heldBy} (an emission or a cleanup took actions out of it),
         * at the same times as {@link #unwritten}, which it then includes: one rewrite per user per checkpoint instead
         * of one per emission (each rewrote the user's other waiting requests' actions, RocksDB's largest write).
         */
        transient boolean rewrite;
        /**
         * Streaming only, not encoded: the user's emitted request ids with their emission times when all of them are
         * on the heap, else null (read {@code emitted}). A user with nothing in {@code waiting} has none (the state
         * is cleared only when nothing is left), so the heap knows a user's ids from their first request on, or from
         * the first cleanup that reads them all. Removes are written through; puts wait in {@link #emittedUnwritten}
         * when the join runs in {@link Operator}.
         */
        transient Map<String, Long> emittedBy;
        /**
         * Run by {@link Operator}, write-behind like {@link #unwritten}: {@code waiting} is to be written from this
         * value ({@link #encode}) before the next checkpoint's barrier, when the user leaves the cache, or at the end,
         * instead of at each of the user's changes.
         */
        transient boolean waitingUnwritten;
        /**
         * Run by {@link Operator}: requests that arrived since {@code bodies} was last written for this user and wait
         * still, written at the same times as {@link #unwritten}. A request emitted before then is taken from here and
         * never reaches RocksDB (no put, get or delete of its logged bytes). Null when none.
         */
        transient Map<String, Request> bodiesUnwritten;
        /**
         * Run by {@link Operator}, with {@link #emittedBy} on the heap: emissions not yet put to {@code emitted},
         * written at the same times as {@link #unwritten}. Always a part of {@link #emittedBy}. Null when none.
         */
        transient Map<String, Long> emittedUnwritten;
        /**
         * {@link #find}'s index of {@code arrived} and {@code pending}: their ids, each id's hash beside it, and the
         * requests themselves (each carries its list in {@link #heldBy} once an action was held for it on the heap,
         * {@link Request#held}, which outlives the index); null when to be built again. An action's lookup compares
         * ints in one array and follows one pointer, where walking the requests followed three per request (request,
         * id, bytes), each likely a cache miss: it was the join's largest cost.
         */
        private transient String[] ids;
        private transient int[] hashes;
        private transient Request[] requests;
        private transient int count;
        /** Beside the arrays once the requests are many. */
        private transient Map<String, Integer> positions;

        /** Past this many waiting requests, {@link #find} looks ids up in {@link #positions}. */
        private static final int SCANNED = 32;

        public Waiting() {}

        /**
         * The earliest time the user needs a wake-up. Streaming keeps one timer at it (registered when the horizon
         * moves earlier, and again after each advance), not one per request or action; a timer left behind at a
         * later time wakes the user for nothing.
         */
        long horizon() {
            return Math.min(nextEvent, nextCleanup);
        }

        /** Something of this user is on the heap only, to be written to state ({@link #unwritten} and the like). */
        boolean unwrittenAny() {
            return unwritten != null || rewrite || waitingUnwritten || bodiesUnwritten != null
                    || emittedUnwritten != null;
        }

        /**
         * After {@code arrived} or {@code pending} changed: {@link #find}'s index is built again when next needed.
         * The held lists are not in the index but on the requests ({@link Request#held}), so they outlive it; a
         * waiting request's list in {@link #heldBy} is never replaced or removed.
         */
        void changed() {
            ids = null;
            positions = null;
        }

        /** After a request was added to {@code arrived}. */
        void added(Request r) {
            if (ids != null) {
                index(r);
            }
        }

        private void index(Request r) {
            String requestId = r.requestId;
            if (count == ids.length) {
                int n = Math.max(8, count * 2);
                ids = java.util.Arrays.copyOf(ids, n);
                hashes = java.util.Arrays.copyOf(hashes, n);
                requests = java.util.Arrays.copyOf(requests, n);
            }
            requests[count] = r;
            ids[count] = requestId;
            hashes[count] = requestId.hashCode();
            if (positions == null && count >= SCANNED) {
                positions = new HashMap<>();
                for (int i = 0; i < count; i++) {
                    positions.put(ids[i], i);
                }
            }
            if (positions != null) {
                positions.putIfAbsent(requestId, count);
            }
            count++;
        }

        /** Where the request waits in {@link #find}'s index, or -1 when it does not wait. */
        int find(String requestId) {
            if (ids == null) {
                int n = Math.max(8, arrived.size() + pending.size());
                ids = new String[n];
                hashes = new int[n];
                requests = new Request[n];
                count = 0;
                for (Request r : arrived) {
                    index(r);
                }
                for (Request r : pending) {
                    index(r);
                }
            }
            if (positions != null) {
                Integer at = positions.get(requestId);
                return at == null ? -1 : at;
            }
            int h = requestId.hashCode();
            for (int i = 0; i < count; i++) {
                if (hashes[i] == h && ids[i].equals(requestId)) {
                    return i;
                }
            }
            return -1;
        }

        boolean has(String requestId) {
            return find(requestId) >= 0;
        }

        /** The held list of the request at {@code at} (from {@link #find}) in {@link #heldBy}, once known. */
        List<byte[]> heldOf(int at) {
            return requests[at].held;
        }

        void heldOf(int at, List<byte[]> list) {
            requests[at].held = list;
        }

        byte[] encode() {
            try {
                var bytes = new java.io.ByteArrayOutputStream(64 + 48 * (arrived.size() + pending.size() + recent.size()));
                var out = new java.io.DataOutputStream(bytes);
                out.writeByte(VERSION);
                out.writeLong(nextEvent);
                out.writeLong(nextCleanup);
                out.writeInt(arrived.size());
                for (Request r : arrived) {
                    writeString(out, r.requestId);
                    out.writeLong(r.timeMs);
                    out.writeBoolean(r.refresh);
                }
                out.writeInt(pending.size());
                for (Request r : pending) {
                    writeString(out, r.requestId);
                    out.writeLong(r.timeMs);
                    out.writeBoolean(r.refresh);
                    out.writeLong(r.dueMs);
                    writeString(out, r.rule);
                    out.writeBoolean(r.late);
                }
                out.writeInt(recent.size());
                for (Recent r : recent) {
                    writeString(out, r.requestId);
                    out.writeLong(r.timeMs);
                }
                return bytes.toByteArray();
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }

        /** UTF-8 with an int length (DataOutput's own writeUTF stops at 64 KiB). */
        private static void writeString(java.io.DataOutputStream out, String s) throws java.io.IOException {
            byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            out.writeInt(b.length);
            out.write(b);
        }

        private static String readString(java.io.DataInputStream in) throws java.io.IOException {
            byte[] b = new byte[in.readInt()];
            in.readFully(b);
            return new String(b, java.nio.charset.StandardCharsets.UTF_8);
        }

        static Waiting decode(byte[] bytes) {
            try {
                var in = new java.io.DataInputStream(new java.io.ByteArrayInputStream(bytes));
                byte version = in.readByte();
                if (version != VERSION) {
                    throw new IllegalStateException("a user's waiting requests in state are of encoding " + version
                            + ", this job reads " + VERSION);
                }
                Waiting w = new Waiting();
                w.nextEvent = in.readLong();
                w.nextCleanup = in.readLong();
                for (int i = in.readInt(); i > 0; i--) {
                    Request r = new Request();
                    r.requestId = readString(in);
                    r.timeMs = in.readLong();
                    r.refresh = in.readBoolean();
                    w.arrived.add(r);
                }
                for (int i = in.readInt(); i > 0; i--) {
                    Request r = new Request();
                    r.requestId = readString(in);
                    r.timeMs = in.readLong();
                    r.refresh = in.readBoolean();
                    r.dueMs = in.readLong();
                    r.rule = readString(in);
                    r.late = in.readBoolean();
                    w.pending.add(r);
                }
                for (int i = in.readInt(); i > 0; i--) {
                    String id = readString(in);
                    w.recent.add(new Recent(id, in.readLong()));
                }
                return w;
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
    }

    private final Settings settings;
    private final boolean correction;
    private final boolean batch;
    private final int cachedUsers;

    private transient ValueState<byte[]> waiting;
    private transient MapState<String, Request> bodies;
    private transient ListState<byte[]> held;
    private transient MapState<String, Long> emitted;
    private transient Map<String, Counter> counters;
    private transient Map<String, Waiting> cache;
    /** The operator running the join when it is {@link Operator}: held actions are then written in batches. */
    private transient AbstractStreamOperator<?> operator;
    /** The users with something on the heap only ({@link Waiting#unwrittenAny}). */
    private transient Map<String, Waiting> unwritten;

    /**
     * Users whose waiting requests, held actions and emitted ids are kept on the heap between events (see
     * {@link #load}).
     */
    static final int CACHED_USERS = 20_000;
    /** In {@link #cache}: a user with nothing waiting. */
    private static final Waiting NOTHING = new Waiting();

    public LabelJoin(Settings settings, boolean correction, boolean batch) {
        this(settings, correction, batch, CACHED_USERS);
    }

    /** {@code cachedUsers}: how many users streaming keeps on the heap (tests make it small). */
    LabelJoin(Settings settings, boolean correction, boolean batch, int cachedUsers) {
        this.settings = settings;
        this.correction = correction;
        this.batch = batch;
        this.cachedUsers = cachedUsers;
    }

    /**
     * The operator that runs the join: Flink's keyed process operator, which also has the join write the held actions
     * it kept on the heap ({@link Waiting#unwritten} appends, {@link Waiting#rewrite} lists) to state before each
     * checkpoint's barrier and when the input ends. Run by Flink's plain {@link KeyedProcessOperator} instead, the join
     * writes every change of the held actions to state as it comes.
     */
    public static final class Operator extends KeyedProcessOperator<String, Event, Joined> {
        private static final long serialVersionUID = 1L;

        public Operator(LabelJoin join) {
            super(join);
        }

        private LabelJoin join() {
            return (LabelJoin) userFunction;
        }

        @Override
        public void open() throws Exception {
            super.open();
            join().operator = this;
        }

        @Override
        public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
            join().writeUnwritten();
            super.prepareSnapshotPreBarrier(checkpointId);
        }

        @Override
        public void finish() throws Exception {
            join().writeUnwritten();
            super.finish();
        }
    }

    @Override
    public void open(OpenContext context) {
        var rc = getRuntimeContext();
        waiting = rc.getState(new ValueStateDescriptor<>("waiting", PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
        bodies = rc.getMapState(new MapStateDescriptor<>("bodies", Types.STRING, TypeInformation.of(Request.class)));
        held = rc.getListState(new ListStateDescriptor<>("held", PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
        emitted = rc.getMapState(new MapStateDescriptor<>("emitted", Types.STRING, Types.LONG));
        counters = new HashMap<>();
        if (!batch) {
            cache = lru();
            unwritten = new HashMap<>();
        }
        for (String name : List.of("emitted_" + Rules.REFRESH, "emitted_" + Rules.REQUESTS_BACK, "emitted_" + Rules.TIME,
                "actions_joined", "late_actions", "unmatched_actions", "unknown_item_actions", "duplicate_requests",
                "late_requests")) {
            counters.put(name, rc.getMetricGroup().counter(name));
        }
    }

    private Map<String, Waiting> lru() {
        return new LinkedHashMap<>(1024, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Waiting> eldest) {
                if (size() <= cachedUsers) {
                    return false;
                }
                if (eldest.getValue().unwrittenAny()) {
                    // Leaving the heap, where the only copy of some of its latest state is.
                    try {
                        writeUnwritten(eldest.getKey(), eldest.getValue());
                    } catch (Exception e) {
                        throw new IllegalStateException("writing user " + eldest.getKey() + "'s state", e);
                    }
                }
                return true;
            }
        };
    }

    /**
     * Writes what each user has on the heap only to state: {@link Waiting#unwritten} held actions or {@link
     * Waiting#rewrite}, {@link Waiting#waitingUnwritten}, {@link Waiting#bodiesUnwritten} and {@link
     * Waiting#emittedUnwritten}.
     */
    void writeUnwritten() throws Exception {
        if (unwritten == null || unwritten.isEmpty()) {
            return;
        }
        for (var e : unwritten.entrySet()) {
            append(e.getKey(), e.getValue());
        }
        unwritten.clear();
    }

    /** One user's {@link #writeUnwritten}. */
    private void writeUnwritten(String user, Waiting w) throws Exception {
        append(user, w);
        unwritten.remove(user);
    }

    private void append(String user, Waiting w) throws Exception {
        Object current = operator.getCurrentKey();
        operator.setCurrentKey(user);
        try {
            if (w.rewrite) {
                writeWhole(w.heldBy);
            } else if (w.unwritten != null) {
                held.addAll(w.unwritten);
            }
            if (w.waitingUnwritten) {
                waiting.update(w.encode());
            }
            if (w.bodiesUnwritten != null) {
                bodies.putAll(w.bodiesUnwritten);
            }
            if (w.emittedUnwritten != null) {
                emitted.putAll(w.emittedUnwritten);
            }
        } finally {
            operator.setCurrentKey(current);
        }
        w.unwritten = null;
        w.rewrite = false;
        w.waitingUnwritten = false;
        w.bodiesUnwritten = null;
        w.emittedUnwritten = null;
    }

    /** {@code held} for the current user: the actions of {@code by}, request by request, each in the order it came. */
    private void writeWhole(Map<String, List<byte[]>> by) throws Exception {
        List<byte[]> all = new ArrayList<>();
        for (List<byte[]> l : by.values()) {
            all.addAll(l);
        }
        if (all.isEmpty()) {
            held.clear();
        } else {
            held.update(all);
        }
    }

    /** After {@code held} was written whole from the user's {@link Waiting#heldBy}: none of it is left unwritten. */
    private void written(String user, Waiting w) {
        if (w.unwritten != null || w.rewrite) {
            w.unwritten = null;
            w.rewrite = false;
            if (!w.unwrittenAny()) {
                unwritten.remove(user);
            }
        }
    }

    /**
     * Whether the join writes its state behind ({@link Waiting#unwritten} and the like): streaming, run by {@link
     * Operator}, which writes it before each checkpoint's barrier and at the end.
     */
    private boolean behind() {
        return operator != null && cache != null;
    }

    /** The user is about to have something on the heap only: listed for the next {@link #writeUnwritten}. */
    private void unwrittenFrom(String user, Waiting w) {
        if (!w.unwrittenAny()) {
            unwritten.put(user, w);
        }
    }

    private Long emittedAt(Waiting w, String requestId) throws Exception {
        return w.emittedBy != null ? w.emittedBy.get(requestId) : emitted.get(requestId);
    }

    /**
     * The user's waiting requests as last written, or null when nothing waits. Streaming keeps the users it saw last
     * decoded ({@link #CACHED_USERS} of them, least recently used out), so an event reads RocksDB only for a user not
     * seen lately. A change reaches {@code waiting} at once, or, run by {@link Operator}, before the next checkpoint's
     * barrier or when the user leaves the cache ({@link Waiting#waitingUnwritten}); a restored job starts with none.
     */
    private Waiting load(String user) throws Exception {
        Waiting w = cache == null ? null : cache.get(user);
        if (w == null) {
            byte[] stored = waiting.value();
            w = stored == null ? NOTHING : Waiting.decode(stored);
            if (cache != null) {
                cache.put(user, w);
            }
        }
        return w == NOTHING ? null : w;
    }

    /**
     * A user with nothing waiting (no {@code waiting} value) has nothing held either: holding an action stores
     * {@code waiting} (its cleanup time), and the state is cleared only when nothing is held. So the new value starts
     * with its held actions known, and empty, when streaming.
     */
    private Waiting fresh() {
        Waiting w = new Waiting();
        if (cache != null) {
            w.heldBy = new HashMap<>();
            w.emittedBy = new HashMap<>();
        }
        return w;
    }

    /**
     * Appends an action to the user's held ones: on the heap when they are known there, to state now or (run by
     * {@link Operator}, see {@link Waiting#unwritten}) later. The caller stores {@code w} in the cache before it
     * returns. {@code waitingAt}: where the action's request waits ({@link Waiting#find}), or -1 when it does not.
     */
    private void hold(String user, Waiting w, Action a, int waitingAt) throws Exception {
        byte[] bytes = a.encode();
        if (w.heldBy == null) {
            held.add(bytes);
            return;
        }
        List<byte[]> list = waitingAt >= 0 ? w.heldOf(waitingAt) : null;
        if (list == null) {
            list = w.heldBy.computeIfAbsent(a.requestId, k -> new ArrayList<>());
            if (waitingAt >= 0) {
                w.heldOf(waitingAt, list);
            }
        }
        list.add(bytes);
        if (operator == null) {
            held.add(bytes);
            return;
        }
        if (w.rewrite) {
            // The heap's map, this action in it, is to be written whole already.
            return;
        }
        if (w.unwritten == null) {
            unwrittenFrom(user, w);
            w.unwritten = new ArrayList<>();
        }
        w.unwritten.add(bytes);
    }

    private void store(String user, Waiting w) throws Exception {
        if (behind()) {
            if (!w.waitingUnwritten) {
                unwrittenFrom(user, w);
                w.waitingUnwritten = true;
            }
        } else {
            waiting.update(w.encode());
        }
        if (cache != null) {
            cache.put(user, w);
        }
    }

    /** Keeps a request that arrived (its logged bytes) until it is emitted. */
    private void putBody(String user, Waiting w, Request r) throws Exception {
        if (!behind()) {
            bodies.put(r.requestId, r);
            return;
        }
        if (w.bodiesUnwritten == null) {
            unwrittenFrom(user, w);
            w.bodiesUnwritten = new HashMap<>();
        }
        w.bodiesUnwritten.put(r.requestId, r);
    }

    /** A request being emitted, as it arrived, no longer kept. */
    private Request takeBody(Waiting w, String requestId) throws Exception {
        if (w.bodiesUnwritten != null) {
            Request r = w.bodiesUnwritten.remove(requestId);
            if (r != null) {
                if (w.bodiesUnwritten.isEmpty()) {
                    w.bodiesUnwritten = null;
                }
                return r;
            }
        }
        Request r = bodies.get(requestId);
        bodies.remove(requestId);
        return r;
    }

    private void clear(String user) {
        waiting.clear();
        if (cache != null) {
            cache.put(user, NOTHING);
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
        String user = ctx.getCurrentKey();
        Waiting w = load(user);
        if (w == null) {
            w = fresh();
        }
        if (Event.REQUEST.equals(event.kind)) {
            Request r = event.request;
            if (w.has(r.requestId) || emittedAt(w, r.requestId) != null) {
                // The first copy stands; a duplicate is reported and counts toward nothing.
                counters.get("duplicate_requests").inc();
                ctx.output(MANIFEST, new Json().where(r).put("kind", DUPLICATE).put("request_id", r.requestId)
                        .put("user_id", r.userId).bytes());
                return;
            }
            putBody(user, w, r);
            Request light = new Request();
            light.requestId = r.requestId;
            light.userId = r.userId;
            light.timeMs = r.timeMs;
            light.refresh = r.refresh;
            long horizon = w.horizon();
            w.arrived.add(light);
            w.added(light);
            w.nextEvent = Math.min(w.nextEvent, r.timeMs);
            store(user, w);
            if (!batch && r.timeMs < horizon) {
                timers.registerEventTimeTimer(r.timeMs);
            }
            return;
        }
        Action a = event.action;
        int waitingAt = w.find(a.requestId);
        if (waitingAt >= 0) {
            hold(user, w, a, waitingAt);
            return;
        }
        Long at = emittedAt(w, a.requestId);
        if (at != null) {
            String reason = Rules.afterEmission(settings, a, at);
            if (reason == null) {
                unmatched(a, ctx);
            } else {
                late(List.of(a), reason, at, ctx);
            }
            return;
        }
        // Waits for its request at most `retention`: forgotten once the watermark is past that.
        hold(user, w, a, -1);
        long forget = forgetAfter(a.eventTime);
        long horizon = w.horizon();
        if (forget < w.nextCleanup) {
            w.nextCleanup = forget;
            store(user, w);
        }
        if (!batch && forget < horizon) {
            timers.registerEventTimeTimer(forget);
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

    private void late(List<Action> late, String reason, long emittedMs, Context ctx) {
        for (Action a : late) {
            counters.get("late_actions").inc();
            byte[] line = new Json().action(a).put("kind", LATE).put("reason", reason).put("emitted_at", emittedMs)
                    .bytes();
            ctx.output(MANIFEST, line);
            if (correction) {
                ctx.output(CORRECTIONS, line);
            }
        }
    }

    private void unmatched(Action a, Context ctx) {
        counters.get("unmatched_actions").inc();
        ctx.output(MANIFEST, new Json().action(a).put("kind", UNMATCHED).bytes());
    }

    /**
     * The held actions by request id (in the order they came), read once per advance that needs them: the heap's when
     * the user's are known there (the caller's changes to the map are then the heap's, and it has them written to
     * {@code held}, at once or later), else decoded from state and kept on the heap from then on.
     */
    private Map<String, List<byte[]>> heldByRequest(Waiting w) throws Exception {
        if (w.heldBy != null) {
            return w.heldBy;
        }
        Map<String, List<byte[]>> by = new HashMap<>();
        Iterable<byte[]> all = held.get();
        if (all != null) {
            for (byte[] bytes : all) {
                by.computeIfAbsent(Action.requestIdOf(bytes), k -> new ArrayList<>()).add(bytes);
            }
        }
        if (cache != null) {
            w.heldBy = by;
        }
        return by;
    }

    /** A held action decoded, beside the bytes it is kept as. */
    private record Held(Action action, byte[] bytes) {
        static final java.util.Comparator<Held> ORDER = java.util.Comparator.comparing(Held::action, Action.ORDER);
    }

    private static List<Action> decode(List<byte[]> bytes) {
        List<Action> actions = new ArrayList<>(bytes.size());
        for (byte[] b : bytes) {
            actions.add(Action.decode(b));
        }
        return actions;
    }

    private boolean heldIsEmpty(Waiting w) throws Exception {
        if (w.heldBy != null) {
            return w.heldBy.isEmpty();
        }
        Iterable<byte[]> all = held.get();
        return all == null || !all.iterator().hasNext();
    }

    /**
     * What one {@link #advance} changed, handed between its steps (kept apart so the JIT compiles, and after a
     * deoptimization recompiles, each step on its own instead of one large method).
     */
    private static final class Advance {
        final String user;
        final Waiting w;
        long nextEvent;
        long nextCleanup;
        /** The held actions by request, once read. */
        Map<String, List<byte[]>> heldNow;
        boolean heldChanged;

        Advance(String user, Waiting w) {
            this.user = user;
            this.w = w;
            this.nextEvent = w.nextEvent;
            this.nextCleanup = w.nextCleanup;
        }
    }

    private void advance(TimerService timers, long now, Context ctx, Collector<Joined> out) throws Exception {
        String user = ctx.getCurrentKey();
        Waiting w = load(user);
        if (w == null) {
            return;
        }
        boolean eventsDue = w.nextEvent < END_OF_TIME && now >= w.nextEvent;
        boolean cleanupDue = w.nextCleanup < END_OF_TIME && now >= w.nextCleanup;
        if (!(eventsDue || cleanupDue)) {
            return;
        }
        Advance a = new Advance(user, w);
        if (eventsDue) {
            emitDue(a, now, ctx, out);
        }
        if (cleanupDue) {
            forget(a, now, ctx);
        }
        if (a.heldChanged) {
            if (operator != null && a.heldNow == w.heldBy) {
                // The heap's map is the user's held actions: written whole later (Waiting#rewrite).
                w.rewrite = true;
                w.unwritten = null;
                unwritten.put(user, w);
            } else {
                writeWhole(a.heldNow);
                written(user, w);
            }
        }
        if (w.arrived.isEmpty() && w.pending.isEmpty()) {
            // Nothing waits to be ordered or emitted: the user's window starts again with their next request.
            w.recent = new ArrayList<>();
            boolean noneEmitted = w.emittedBy != null ? w.emittedBy.isEmpty() : emitted.isEmpty();
            if ((a.heldNow != null ? a.heldNow.isEmpty() : heldIsEmpty(w)) && noneEmitted) {
                // The user leaves state now, held actions too: nothing may be left to write later.
                if (w.unwrittenAny()) {
                    // Nothing waits or was emitted, so nothing of bodies or emitted is unwritten; held is written
                    // (empty, whole) and waiting cleared.
                    w.rewrite |= w.unwritten != null;
                    w.waitingUnwritten = false;
                    writeUnwritten(user, w);
                }
                clear(user);
                return;
            }
        }
        w.nextEvent = a.nextEvent;
        w.nextCleanup = a.nextCleanup;
        store(user, w);
        if (!batch && w.horizon() < END_OF_TIME) {
            // The timer for the new horizon (the one that fired, or an earlier one, woke us).
            timers.registerEventTimeTimer(w.horizon());
        }
    }

    /** Orders the requests that arrived and emits those due by {@code now}, with their held actions. */
    private void emitDue(Advance a, long now, Context ctx, Collector<Joined> out) throws Exception {
        Waiting w = a.w;
        Map<String, Request> arrivedNow = new LinkedHashMap<>();
        for (Request r : w.arrived) {
            arrivedNow.put(r.requestId, r);
        }
        Map<String, Request> pendingNow = new LinkedHashMap<>();
        for (Request r : w.pending) {
            pendingNow.put(r.requestId, r);
        }
        List<Request> emittedNow = Rules.advance(settings, now, arrivedNow, pendingNow, w.recent);
        w.arrived = new ArrayList<>(arrivedNow.values());
        w.pending = new ArrayList<>(pendingNow.values());
        w.changed();
        long nextEvent = END_OF_TIME;
        for (Request r : w.arrived) {
            nextEvent = Math.min(nextEvent, r.timeMs);
        }
        for (Request r : w.pending) {
            nextEvent = Math.min(nextEvent, r.dueMs);
        }
        a.nextEvent = nextEvent;
        if (emittedNow.isEmpty()) {
            return;
        }
        a.heldNow = heldByRequest(w);
        for (Request ordered : emittedNow) {
            emit(a, ordered, ctx, out);
        }
    }

    /** Emits one request that is due: joins its held actions and reports those it does not take. */
    private void emit(Advance a, Request ordered, Context ctx, Collector<Joined> out) throws Exception {
        Request r = takeBody(a.w, ordered.requestId);
        r.dueMs = ordered.dueMs;
        r.rule = ordered.rule;
        r.late = ordered.late;
        List<byte[]> forIt = a.heldNow.remove(r.requestId);
        a.heldChanged |= forIt != null;
        Rules.Emitted e = Rules.join(settings, r, forIt == null ? List.of() : decode(forIt));
        counters.get("emitted_" + r.rule).inc();
        counters.get("actions_joined").inc(e.joined().size());
        Waiting w = a.w;
        if (w.emittedBy != null) {
            w.emittedBy.put(r.requestId, r.dueMs);
        }
        if (behind() && w.emittedBy != null) {
            if (w.emittedUnwritten == null) {
                unwrittenFrom(a.user, w);
                w.emittedUnwritten = new HashMap<>();
            }
            w.emittedUnwritten.put(r.requestId, r.dueMs);
        } else {
            emitted.put(r.requestId, r.dueMs);
        }
        a.nextCleanup = Math.min(a.nextCleanup, forgetAfter(r.dueMs));
        late(e.late(), Rules.LATE_TIME, r.dueMs, ctx);
        for (Action u : e.unknownItem()) {
            counters.get("unknown_item_actions").inc();
            ctx.output(MANIFEST, new Json().action(u).put("kind", UNKNOWN_ITEM).bytes());
        }
        for (Action u : e.unmatched()) {
            unmatched(u, ctx);
        }
        if (r.late) {
            counters.get("late_requests").inc();
        }
        out.collect(joined(r, e));
    }

    /**
     * Forgets emitted requests past retention, and reports actions that waited that long for a request that never
     * came.
     */
    private void forget(Advance a, long now, Context ctx) throws Exception {
        Waiting w = a.w;
        long nextCleanup = forgetEmitted(w, now);
        if (a.heldNow == null) {
            a.heldNow = heldByRequest(w);
        }
        // Actions held for requests that do not wait (most held ones are for requests that do).
        List<String> orphans = null;
        for (String requestId : a.heldNow.keySet()) {
            if (!w.has(requestId)) {
                if (orphans == null) {
                    orphans = new ArrayList<>();
                }
                orphans.add(requestId);
            }
        }
        if (orphans != null) {
            // In request id order, so the lines come out in the same order every run.
            orphans.sort(null);
            for (String requestId : orphans) {
                nextCleanup = Math.min(nextCleanup, forgetHeld(a, requestId, now, ctx));
            }
        }
        a.nextCleanup = nextCleanup;
    }

    /** Forgets the emitted ids past retention; the next time one is to be forgotten. */
    private long forgetEmitted(Waiting w, long now) throws Exception {
        long nextCleanup = END_OF_TIME;
        Map<String, Long> all = w.emittedBy;
        if (all == null) {
            all = new HashMap<>();
            for (var e : emitted.entries()) {
                all.put(e.getKey(), e.getValue());
            }
            if (cache != null) {
                w.emittedBy = all;
            }
        }
        for (var it = all.entrySet().iterator(); it.hasNext(); ) {
            var e = it.next();
            if (forgetAfter(e.getValue()) <= now) {
                if (w.emittedUnwritten == null || w.emittedUnwritten.remove(e.getKey()) == null) {
                    emitted.remove(e.getKey());
                } else if (w.emittedUnwritten.isEmpty()) {
                    w.emittedUnwritten = null;
                }
                it.remove();
            } else {
                nextCleanup = Math.min(nextCleanup, forgetAfter(e.getValue()));
            }
        }
        return nextCleanup;
    }

    /**
     * Reports the actions held for a request that does not wait, and has waited past retention, as unmatched; the
     * next time one of the rest is to be forgotten.
     */
    private long forgetHeld(Advance a, String requestId, long now, Context ctx) {
        Map<String, List<byte[]>> heldNow = a.heldNow;
        List<byte[]> bytes = heldNow.get(requestId);
        List<Held> gone = new ArrayList<>(bytes.size());
        for (byte[] b : bytes) {
            gone.add(new Held(Action.decode(b), b));
        }
        gone.sort(Held.ORDER);
        List<byte[]> rest = new ArrayList<>();
        long earliest = END_OF_TIME;
        for (Held h : gone) {
            if (forgetAfter(h.action().eventTime) <= now) {
                unmatched(h.action(), ctx);
            } else {
                rest.add(h.bytes());
                earliest = Math.min(earliest, h.action().eventTime);
            }
        }
        boolean forgot = rest.size() < bytes.size();
        a.heldChanged |= forgot;
        if (rest.isEmpty()) {
            heldNow.remove(requestId);
            return END_OF_TIME;
        }
        if (forgot) {
            // Written to `held` in this order; untouched, a list keeps the order `held` has.
            heldNow.put(requestId, rest);
        }
        return forgetAfter(earliest);
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
        j.actionsJoined = e.joined().size();
        j.lateRequest = r.late;
        j.source = r.source;
        j.index = r.index;
        j.offset = r.offset;
        return j;
    }
}
