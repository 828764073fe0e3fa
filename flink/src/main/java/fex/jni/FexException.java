package fex.jni;

/** An error from fex's library, with its message; {@link #offset()} is the byte of the logged request where decoding stopped, or -1. */
public final class FexException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final long offset;

    public FexException(String message, long offset) {
        super(message);
        this.offset = offset;
    }

    /** The byte of the logged request where decoding stopped, or -1 when the error is not about its bytes. */
    public long offset() {
        return offset;
    }
}
