package fex.jni;

import java.util.List;

/**
 * What a logged request is joined on, read with the model's {@code label_join:} keys: {@code itemIds} has one entry per
 * row ("" for a row without one); {@code payload} is "batch" or "examples".
 */
public record RequestKeys(
        String requestId,
        String userId,
        long timeMs,
        boolean refresh,
        List<String> itemIds,
        String payload,
        int rows,
        String model) {
    RequestKeys(
            String requestId,
            String userId,
            long timeMs,
            boolean refresh,
            String[] itemIds,
            String payload,
            int rows,
            String model) {
        this(requestId, userId, timeMs, refresh, List.of(itemIds), payload, rows, model);
    }
}
