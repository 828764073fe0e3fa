package fex.nearline;

import java.util.ArrayList;
import java.util.List;

/**
 * A logged request of one user, as the join holds it. A POJO (public fields, a no-argument constructor) so Flink's
 * own serializer keeps it in state.
 */
public class Request {
    public String requestId;
    public String userId;
    /** Event time: milliseconds since the Unix epoch. */
    public long timeMs;
    public boolean refresh;
    /** One per row ("" for a row without one). */
    public List<String> itemIds = new ArrayList<>();
    /** The LoggedRequest's bytes. */
    public byte[] logged = new byte[0];
    /** Where it was read (file or topic, record index, byte offset), for reports; "" when unknown. */
    public String source = "";
    public long index = -1;
    public long offset = -1;
    /** Set once the request is ordered: when it is due, by which rule, and whether it came behind the watermark. */
    public long dueMs = Long.MIN_VALUE;
    public String rule;
    public boolean late;
    /**
     * The join's, streaming, on the heap only (not in state: Flink's serializer skips transient fields): this waiting
     * request's list in {@link LabelJoin.Waiting#heldBy} once an action was held for it there. A request leaves the
     * waiting ones (emitted) when its list leaves that map, so the two never disagree.
     */
    transient List<byte[]> held;

    public Request() {}

    public Request(String requestId, String userId, long timeMs, boolean refresh, List<String> itemIds) {
        this.requestId = requestId;
        this.userId = userId;
        this.timeMs = timeMs;
        this.refresh = refresh;
        this.itemIds = new ArrayList<>(itemIds);
    }

    boolean ordered() {
        return rule != null;
    }
}
