package fex.nearline;

import java.io.IOException;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.serialization.SerializerConfig;
import org.apache.flink.api.common.typeinfo.TypeInfoFactory;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * {@link Event}'s type for Flink (named on the class by {@code @TypeInfo}): every event crosses the keyed shuffle by
 * user, and Flink's POJO serializer wrote and read it field by field through reflection, a tenth of the join task's
 * time and of the action source's. The events are never kept in state, so the encoding is only the wire's between the
 * job's own tasks, written and read by the same jar; its snapshot names the serializer's class only.
 */
public final class EventType extends TypeInformation<Event> {
    private static final long serialVersionUID = 1L;

    /** Named by {@code @TypeInfo} on {@link Event}. */
    public static final class Factory extends TypeInfoFactory<Event> {
        @Override
        public TypeInformation<Event> createTypeInfo(Type t, Map<String, TypeInformation<?>> genericParameters) {
            return new EventType();
        }
    }

    @Override
    public boolean isBasicType() {
        return false;
    }

    @Override
    public boolean isTupleType() {
        return false;
    }

    @Override
    public int getArity() {
        return 1;
    }

    @Override
    public int getTotalFields() {
        return 1;
    }

    @Override
    public Class<Event> getTypeClass() {
        return Event.class;
    }

    @Override
    public boolean isKeyType() {
        return false;
    }

    @Override
    public TypeSerializer<Event> createSerializer(SerializerConfig config) {
        return Serializer.INSTANCE;
    }

    @Override
    public String toString() {
        return "fex.nearline.Event";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof EventType;
    }

    @Override
    public int hashCode() {
        return EventType.class.hashCode();
    }

    @Override
    public boolean canEqual(Object o) {
        return o instanceof EventType;
    }

    /**
     * An event as bytes: its kind (one byte), user and time, then the request's or the action's fields or the bad
     * record's line. Strings are UTF-8 after an int length, -1 for null.
     */
    public static final class Serializer extends TypeSerializerSingleton<Event> {
        private static final long serialVersionUID = 1L;
        static final Serializer INSTANCE = new Serializer();

        private static final byte REQUEST = 0;
        private static final byte ACTION = 1;
        private static final byte END = 2;
        private static final byte BAD = 3;

        @Override
        public boolean isImmutableType() {
            return false;
        }

        @Override
        public Event createInstance() {
            return new Event();
        }

        @Override
        public Event copy(Event from) {
            Event e = new Event();
            e.kind = from.kind;
            e.userId = from.userId;
            e.time = from.time;
            e.bad = from.bad;
            if (from.action != null) {
                Action a = from.action;
                e.action = new Action(a.eventTime, a.requestId, a.itemId, a.action, a.userId);
            }
            if (from.request != null) {
                Request f = from.request;
                Request r = new Request();
                r.requestId = f.requestId;
                r.userId = f.userId;
                r.timeMs = f.timeMs;
                r.refresh = f.refresh;
                r.itemIds = f.itemIds == null ? null : new ArrayList<>(f.itemIds);
                r.logged = f.logged == null ? null : f.logged.clone();
                r.source = f.source;
                r.index = f.index;
                r.offset = f.offset;
                r.dueMs = f.dueMs;
                r.rule = f.rule;
                r.late = f.late;
                e.request = r;
            }
            return e;
        }

        @Override
        public Event copy(Event from, Event reuse) {
            return copy(from);
        }

        @Override
        public int getLength() {
            return -1;
        }

        @Override
        public void serialize(Event e, DataOutputView out) throws IOException {
            if (e.kind == null) {
                throw new IOException("an event without a kind");
            }
            byte kind = switch (e.kind) {
                case Event.REQUEST -> REQUEST;
                case Event.ACTION -> ACTION;
                case Event.END -> END;
                case Event.BAD -> BAD;
                default -> throw new IOException("an event of unknown kind " + e.kind);
            };
            out.writeByte(kind);
            writeString(out, e.userId);
            out.writeLong(e.time);
            switch (kind) {
                case REQUEST -> {
                    Request r = e.request;
                    writeString(out, r.requestId);
                    writeString(out, r.userId);
                    out.writeLong(r.timeMs);
                    out.writeBoolean(r.refresh);
                    if (r.itemIds == null) {
                        out.writeInt(-1);
                    } else {
                        out.writeInt(r.itemIds.size());
                        for (String item : r.itemIds) {
                            writeString(out, item);
                        }
                    }
                    if (r.logged == null) {
                        out.writeInt(-1);
                    } else {
                        out.writeInt(r.logged.length);
                        out.write(r.logged);
                    }
                    writeString(out, r.source);
                    out.writeLong(r.index);
                    out.writeLong(r.offset);
                    out.writeLong(r.dueMs);
                    writeString(out, r.rule);
                    out.writeBoolean(r.late);
                }
                case ACTION -> {
                    Action a = e.action;
                    out.writeLong(a.eventTime);
                    writeString(out, a.requestId);
                    writeString(out, a.itemId);
                    out.writeInt(a.action);
                    writeString(out, a.userId);
                }
                case BAD -> writeString(out, e.bad);
                default -> {}
            }
        }

        @Override
        public Event deserialize(DataInputView in) throws IOException {
            Event e = new Event();
            byte kind = in.readByte();
            e.kind = switch (kind) {
                case REQUEST -> Event.REQUEST;
                case ACTION -> Event.ACTION;
                case END -> Event.END;
                case BAD -> Event.BAD;
                default -> throw new IOException("an event of unknown kind " + kind + " in the stream");
            };
            e.userId = readString(in);
            e.time = in.readLong();
            switch (kind) {
                case REQUEST -> {
                    Request r = new Request();
                    r.requestId = readString(in);
                    r.userId = readString(in);
                    r.timeMs = in.readLong();
                    r.refresh = in.readBoolean();
                    int items = in.readInt();
                    if (items == -1) {
                        r.itemIds = null;
                    } else {
                        List<String> itemIds = new ArrayList<>(Math.min(count(items), 1 << 16));
                        for (int i = 0; i < items; i++) {
                            itemIds.add(readString(in));
                        }
                        r.itemIds = itemIds;
                    }
                    int logged = in.readInt();
                    if (logged == -1) {
                        r.logged = null;
                    } else {
                        r.logged = new byte[count(logged)];
                        in.readFully(r.logged);
                    }
                    r.source = readString(in);
                    r.index = in.readLong();
                    r.offset = in.readLong();
                    r.dueMs = in.readLong();
                    r.rule = readString(in);
                    r.late = in.readBoolean();
                    e.request = r;
                }
                case ACTION -> {
                    Action a = new Action();
                    a.eventTime = in.readLong();
                    a.requestId = readString(in);
                    a.itemId = readString(in);
                    a.action = in.readInt();
                    a.userId = readString(in);
                    e.action = a;
                }
                case BAD -> e.bad = readString(in);
                default -> {}
            }
            return e;
        }

        @Override
        public Event deserialize(Event reuse, DataInputView in) throws IOException {
            return deserialize(in);
        }

        @Override
        public void copy(DataInputView in, DataOutputView out) throws IOException {
            serialize(deserialize(in), out);
        }

        @Override
        public TypeSerializerSnapshot<Event> snapshotConfiguration() {
            return new Snapshot();
        }

        private static void writeString(DataOutputView out, String s) throws IOException {
            if (s == null) {
                out.writeInt(-1);
                return;
            }
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            out.writeInt(b.length);
            out.write(b);
        }

        private static String readString(DataInputView in) throws IOException {
            int n = in.readInt();
            if (n == -1) {
                return null;
            }
            byte[] b = new byte[count(n)];
            in.readFully(b);
            return new String(b, StandardCharsets.UTF_8);
        }

        private static int count(int n) throws IOException {
            if (n < 0) {
                throw new IOException("a negative length (" + n + ") in an event: the stream is not this encoding");
            }
            return n;
        }
    }

    /** The serializer's snapshot (Flink's simple one: the serializer's class, nothing of the encoding). */
    public static final class Snapshot extends SimpleTypeSerializerSnapshot<Event> {
        public Snapshot() {
            super(() -> Serializer.INSTANCE);
        }
    }
}
