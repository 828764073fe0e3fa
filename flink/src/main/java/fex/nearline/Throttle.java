package fex.nearline;

import org.apache.flink.api.common.functions.MapFunction;

/**
 * Passes events on at no more than a given rate ({@code --max-rate-per-input}): chained to its source, its sleeps hold
 * the source back, so a topic replayed from its start or a directory of old logs does not flood the outputs, and a run
 * lasts long enough for checkpoints to commit part of it (the kill-and-restore tests). Each subtask gets its share of
 * the input's rate; one sleep is never longer than the time to one event at that share, so checkpoint barriers wait
 * at most that long.
 */
final class Throttle implements MapFunction<Event, Event> {
    private static final long serialVersionUID = 1L;

    private final double nanosPerEvent;
    private transient long start;
    private transient long passed;

    /** {@code perSecond}: events a second through this subtask (the input's rate over its parallelism). */
    Throttle(double perSecond) {
        if (!(perSecond > 0)) {
            throw new IllegalArgumentException("a rate must be above 0, not " + perSecond);
        }
        this.nanosPerEvent = 1e9 / perSecond;
    }

    @Override
    public Event map(Event e) throws InterruptedException {
        long now = System.nanoTime();
        if (passed == 0) {
            start = now;
        }
        // The event goes when its place in an even spacing from the first event is due.
        long due = start + (long) (passed * nanosPerEvent);
        passed++;
        long ahead = due - now;
        if (ahead > 1_000_000) {
            Thread.sleep(ahead / 1_000_000, (int) (ahead % 1_000_000));
        }
        return e;
    }
}
