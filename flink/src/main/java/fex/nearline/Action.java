package fex.nearline;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Comparator;
import java.util.Objects;

/**
 * One action event of a user on an item of a request. It crosses the job inside an {@link Event} ({@link EventType})
 * and is kept in state as its own bytes ({@link #encode}).
 */
public class Action implements Comparable<Action> {
    /** Event time: milliseconds since the Unix epoch. */
    public long eventTime;
    public String requestId;
    public String itemId;
    public int action;
    public String userId;

    /** The join's order of actions: time, then request, item, action, user. */
    static final Comparator<Action> ORDER = Comparator.comparingLong((Action a) -> a.eventTime)
            .thenComparing(a -> a.requestId)
            .thenComparing(a -> a.itemId)
            .thenComparingInt(a -> a.action)
            .thenComparing(a -> a.userId);

    public Action() {}

    public Action(long eventTime, String requestId, String itemId, int action, String userId) {
        this.eventTime = eventTime;
        this.requestId = requestId;
        this.itemId = itemId;
        this.action = action;
        this.userId = userId;
    }

    /** The encoding's version, the first byte of {@link #encode}. */
    static final byte VERSION = 1;

    /**
     * The bytes the join keeps a held action as: its own encoding (version, time, action, then the three ids as UTF-8
     * with an int length), because Flink's POJO serializer goes field by field through reflection, once per action.
     */
    byte[] encode() {
        byte[] request = requestId.getBytes(StandardCharsets.UTF_8);
        byte[] item = itemId.getBytes(StandardCharsets.UTF_8);
        byte[] user = userId.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(1 + 8 + 4 + 12 + request.length + item.length + user.length);
        b.put(VERSION).putLong(eventTime).putInt(action);
        b.putInt(request.length).put(request).putInt(item.length).put(item).putInt(user.length).put(user);
        return b.array();
    }

    /** The bytes, past their version byte, which must be this job's. */
    private static ByteBuffer open(byte[] bytes) {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        byte version = b.get();
        if (version != VERSION) {
            throw new IllegalStateException("a held action in state is of encoding " + version + ", this job reads "
                    + VERSION);
        }
        return b;
    }

    static Action decode(byte[] bytes) {
        ByteBuffer b = open(bytes);
        Action a = new Action();
        a.eventTime = b.getLong();
        a.action = b.getInt();
        a.requestId = string(b);
        a.itemId = string(b);
        a.userId = string(b);
        return a;
    }

    /** The request id of an action in {@link #encode}'s bytes, without decoding the rest. */
    static String requestIdOf(byte[] bytes) {
        ByteBuffer b = open(bytes);
        b.position(1 + 8 + 4);
        return string(b);
    }

    private static String string(ByteBuffer b) {
        int n = b.getInt();
        String s = new String(b.array(), b.position(), n, StandardCharsets.UTF_8);
        b.position(b.position() + n);
        return s;
    }

    @Override
    public int compareTo(Action o) {
        return ORDER.compare(this, o);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Action a && eventTime == a.eventTime && action == a.action
                && Objects.equals(requestId, a.requestId) && Objects.equals(itemId, a.itemId)
                && Objects.equals(userId, a.userId);
    }

    @Override
    public int hashCode() {
        return Objects.hash(eventTime, requestId, itemId, action, userId);
    }

    @Override
    public String toString() {
        return "Action(" + userId + ", " + requestId + ", " + itemId + ", " + action + ", " + eventTime + ")";
    }
}
