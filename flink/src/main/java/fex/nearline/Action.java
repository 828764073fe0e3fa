package fex.nearline;

import java.util.Comparator;
import java.util.Objects;

/** One action event of a user on an item of a request. A POJO for Flink's serializer. */
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
