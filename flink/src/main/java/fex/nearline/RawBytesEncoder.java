package fex.nearline;

import java.io.IOException;
import java.io.OutputStream;
import org.apache.flink.api.common.serialization.Encoder;

/**
 * Writes each record's bytes as they are, with nothing between records: the job frames its own records, so a part
 * file of Flink's FileSink is a PBDataset file that {@code fex extract} reads.
 */
public final class RawBytesEncoder implements Encoder<Keyed> {
    private static final long serialVersionUID = 1L;

    @Override
    public void encode(Keyed element, OutputStream stream) throws IOException {
        stream.write(element.value);
    }
}
