package fex.nearline;

import java.io.IOException;
import java.io.OutputStream;
import org.apache.flink.api.common.serialization.Encoder;

/** Writes each record's bytes (a manifest or correction line, UTF-8) followed by a line end. */
public final class LineEncoder implements Encoder<byte[]> {
    private static final long serialVersionUID = 1L;

    @Override
    public void encode(byte[] line, OutputStream stream) throws IOException {
        stream.write(line);
        stream.write('\n');
    }
}
