package fex.nearline;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.Optional;
import java.util.TreeSet;

import org.apache.flink.connector.file.src.FileSourceSplit;
import org.apache.flink.connector.file.src.assigners.FileSplitAssigner;

/**
 * Hands out a file source's splits in the order of their file names (then
 * paths and offsets), not Flink's default last-in-first-out order.
 *
 * <p>fex-server names its request logs by the time they were opened, so in
 * name order a reader sees requests roughly in time order and the event-time
 * watermark moves forward with them. In another order a whole file's
 * requests would arrive behind the watermark that a later file already
 * pushed forward.
 */
public final class OrderedSplitAssigner implements FileSplitAssigner {
    private static final Comparator<FileSourceSplit> ORDER =
            Comparator.comparing((FileSourceSplit s) -> s.path().getName())
                    .thenComparing(s -> s.path().toString())
                    .thenComparingLong(FileSourceSplit::offset)
                    .thenComparing(FileSourceSplit::splitId);

    private final TreeSet<FileSourceSplit> splits = new TreeSet<>(ORDER);

    public OrderedSplitAssigner(Collection<FileSourceSplit> initial) {
        splits.addAll(initial);
    }

    @Override
    public Optional<FileSourceSplit> getNext(String hostname) {
        return Optional.ofNullable(splits.pollFirst());
    }

    @Override
    public void addSplits(Collection<FileSourceSplit> more) {
        splits.addAll(more);
    }

    @Override
    public Collection<FileSourceSplit> remainingSplits() {
        return new ArrayList<>(splits);
    }

    /** The provider a FileSource builder takes. */
    public static FileSplitAssigner.Provider provider() {
        return OrderedSplitAssigner::new;
    }
}
