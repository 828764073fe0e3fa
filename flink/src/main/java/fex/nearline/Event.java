package fex.nearline;

import org.apache.flink.api.common.typeinfo.TypeInfo;

/**
 * What the join is keyed on and fed: a request, an action, or (batch execution) the end of a user's input. Flink
 * serializes it with {@link EventType}'s encoding.
 */
@TypeInfo(EventType.Factory.class)
public class Event {
    public static final String REQUEST = "r";
    public static final String ACTION = "a";
    public static final String END = "end";
    /** A record that did not parse: {@link #bad} is its manifest line. */
    public static final String BAD = "bad";

    public String kind;
    public String userId;
    /** Event time in milliseconds. */
    public long time;
    public Request request;
    public Action action;
    public String bad;

    public Event() {}

    public static Event of(Request r) {
        Event e = new Event();
        e.kind = REQUEST;
        e.userId = r.userId;
        e.time = r.timeMs;
        e.request = r;
        return e;
    }

    public static Event of(Action a) {
        Event e = new Event();
        e.kind = ACTION;
        e.userId = a.userId;
        e.time = a.eventTime;
        e.action = a;
        return e;
    }

    public static Event bad(String manifestLine) {
        Event e = new Event();
        e.kind = BAD;
        e.userId = "";
        e.time = Long.MIN_VALUE;
        e.bad = manifestLine;
        return e;
    }

    /** The end of this user's input, sorted after every record of theirs. */
    public static Event end(String userId) {
        Event e = new Event();
        e.kind = END;
        e.userId = userId;
        e.time = LabelJoin.END_OF_TIME;
        return e;
    }
}
