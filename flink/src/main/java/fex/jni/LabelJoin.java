package fex.jni;

/** A model config's {@code label_join:} settings, durations in milliseconds. */
public record LabelJoin(
        int requestsBack, long afterMs, long watermarkDelayMs, long retentionMs, boolean hasRefresh, String lateActions) {}
