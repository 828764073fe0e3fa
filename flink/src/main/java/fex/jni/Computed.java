package fex.jni;

/**
 * An emitted request's output: {@code joined}, its samples with the actions attached, framed as record files hold them
 * (u64 little-endian length, then the record); {@code samples}, framed {@code fex.v1.ExtractResponse} records, the bytes
 * {@code fex extract --format responses} writes for {@code joined}; {@code rowsWritten}, rows after the transforms.
 */
public record Computed(String payload, byte[] joined, byte[] samples, long rowsWritten) {}
