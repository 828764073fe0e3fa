package fex.nearline;

import java.io.IOException;
import java.util.List;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.KafkaSourceEnumState;
import org.apache.flink.connector.kafka.source.split.KafkaPartitionSplit;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * A bounded Kafka source that also ends after a restore. Flink's Kafka connector (flink-connector-kafka 5.0.0-2.2,
 * KafkaSourceEnumerator.checkPartitionChanges) tells its readers that no more splits will come only when the
 * partition discovery finds a partition it had not seen; a restored enumerator already knows every partition, so its
 * readers finish their splits and then wait for ever (seen here: `--bounded --restore` never ended). In bounded mode
 * the partitions are discovered once, so once the restored enumerator has handed a reader its splits (which it does
 * inside {@code addReader}), that reader gets no more: this wrapper says so. A source that starts afresh is left to the
 * connector.
 */
final class BoundedRestore<T>
        implements Source<T, KafkaPartitionSplit, KafkaSourceEnumState>, ResultTypeQueryable<T> {
    private static final long serialVersionUID = 1L;
    private final KafkaSource<T> source;

    BoundedRestore(KafkaSource<T> source) {
        this.source = source;
    }

    @Override
    public Boundedness getBoundedness() {
        return source.getBoundedness();
    }

    @Override
    public SourceReader<T, KafkaPartitionSplit> createReader(SourceReaderContext context) throws Exception {
        return source.createReader(context);
    }

    @Override
    public SplitEnumerator<KafkaPartitionSplit, KafkaSourceEnumState> createEnumerator(
            SplitEnumeratorContext<KafkaPartitionSplit> context) {
        return source.createEnumerator(context);
    }

    @Override
    public SplitEnumerator<KafkaPartitionSplit, KafkaSourceEnumState> restoreEnumerator(
            SplitEnumeratorContext<KafkaPartitionSplit> context, KafkaSourceEnumState state) throws IOException {
        SplitEnumerator<KafkaPartitionSplit, KafkaSourceEnumState> restored = source.restoreEnumerator(context, state);
        if (source.getBoundedness() != Boundedness.BOUNDED) {
            return restored;
        }
        return new SplitEnumerator<>() {
            @Override
            public void start() {
                restored.start();
            }

            @Override
            public void handleSplitRequest(int subtask, String host) {
                restored.handleSplitRequest(subtask, host);
            }

            @Override
            public void addSplitsBack(List<KafkaPartitionSplit> splits, int subtask) {
                restored.addSplitsBack(splits, subtask);
            }

            @Override
            public void addReader(int subtask) {
                restored.addReader(subtask);
                context.signalNoMoreSplits(subtask);
            }

            @Override
            public KafkaSourceEnumState snapshotState(long checkpoint) throws Exception {
                return restored.snapshotState(checkpoint);
            }

            @Override
            public void close() throws IOException {
                restored.close();
            }

            @Override
            public void notifyCheckpointComplete(long checkpoint) throws Exception {
                restored.notifyCheckpointComplete(checkpoint);
            }

            @Override
            public void handleSourceEvent(int subtask, SourceEvent event) {
                restored.handleSourceEvent(subtask, event);
            }
        };
    }

    @Override
    public SimpleVersionedSerializer<KafkaPartitionSplit> getSplitSerializer() {
        return source.getSplitSerializer();
    }

    @Override
    public SimpleVersionedSerializer<KafkaSourceEnumState> getEnumeratorCheckpointSerializer() {
        return source.getEnumeratorCheckpointSerializer();
    }

    @Override
    public TypeInformation<T> getProducedType() {
        return source.getProducedType();
    }
}
