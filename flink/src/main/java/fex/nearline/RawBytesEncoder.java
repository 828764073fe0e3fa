package fex.nearline;

import java.io.IOException;
import java.io.OutputStream;

import org.apache.flink.api.common.serialization.Encoder;

/**
 * Writes each element's bytes as they are, with nothing between elements:
 * the job frames its own records, so a part file of Flink's FileSink is a
 * PBDataset file that `fex extract` reads.
 */
public final class RawBytesEncoder implements Encoder<byte[]> {
    private static final long serialVersionUID = 1L;

    @Override
    public void encode(byte[] element, OutputStream stream) throws IOException {
        stream.write(element);
    }
}
